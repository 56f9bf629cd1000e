//go:build cgo

package msl

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
)

// simdType is an element type of emu_simd_ops: its kernel suffix, size,
// rounding (the value a T holds after an operation) and encoding.
type simdType struct {
	name   string
	size   int
	round  func(float64) float64
	encode func(b []byte, v float64)
	decode func(b []byte) float64
}

var simdTypes = []simdType{
	{"float", 4, func(v float64) float64 { return float64(float32(v)) },
		func(b []byte, v float64) { binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v))) },
		func(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }},
	{"half", 2, func(v float64) float64 { return float64(backend.Round(backend.F16, float32(v))) },
		func(b []byte, v float64) { binary.LittleEndian.PutUint16(b, backend.F16Bits(float32(v))) },
		func(b []byte) float64 { return float64(backend.F16Float(binary.LittleEndian.Uint16(b))) }},
	{"int", 4, func(v float64) float64 { return float64(int32(v)) },
		func(b []byte, v float64) { binary.LittleEndian.PutUint32(b, uint32(int32(v))) },
		func(b []byte) float64 { return float64(int32(binary.LittleEndian.Uint32(b))) }},
}

const simdOps = 14

var simdOpNames = [simdOps]string{"simd_sum", "simd_max", "simd_min", "simd_prefix_inclusive_sum",
	"simd_prefix_exclusive_sum", "simd_shuffle", "simd_shuffle_down", "simd_shuffle_up", "simd_shuffle_xor",
	"simd_broadcast", "simd_broadcast_first", "simd_any", "simd_all", "simd_is_first"}

// simdModel computes emu_simd_ops in Go: want[k][gid], and whether thread
// gid writes at all. Reductions run over the active lanes in lane order,
// rounding after each operation; a source lane that is inactive or outside
// the simdgroup yields the caller's own value.
func simdModel(x []float64, threads, groups int, a selftestArgs, round func(float64) float64) ([simdOps][]float64, []bool) {
	n := threads * groups
	var want [simdOps][]float64
	for k := range want {
		want[k] = make([]float64, n)
	}
	writes := make([]bool, n)
	thr := math.Trunc(float64(a.Threshold))
	for g := 0; g < groups; g++ {
		for sg := 0; sg*32 < threads; sg++ {
			base := g*threads + sg*32
			lanes := min(32, threads-sg*32)
			active := func(l int) bool {
				tid := sg*32 + l
				return l >= 0 && l < lanes && !(a.Skip != 0 && tid%int(a.Skip) == int(a.Skip)-1)
			}
			src := func(l, s int) float64 {
				if s >= 0 && s < 32 && active(s) {
					return x[base+s]
				}
				return x[base+l]
			}
			var order []int
			for l := 0; l < lanes; l++ {
				if active(l) {
					order = append(order, l)
				}
			}
			if len(order) == 0 {
				continue
			}
			sum, mx, mn := x[base+order[0]], x[base+order[0]], x[base+order[0]]
			anyv, allv := false, true
			for i, l := range order {
				v := x[base+l]
				if i > 0 {
					sum = round(sum + v)
					mx, mn = math.Max(mx, v), math.Min(mn, v)
				}
				anyv = anyv || v > thr
				allv = allv && v > thr
			}
			acc := 0.0
			for i, l := range order {
				gid := base + l
				v := x[gid]
				writes[gid] = true
				want[0][gid], want[1][gid], want[2][gid] = sum, mx, mn
				if i == 0 {
					want[4][gid] = 0
					acc = v
				} else {
					want[4][gid] = acc
					acc = round(acc + v)
				}
				want[3][gid] = acc
				want[5][gid] = src(l, (l*7+3)%37)
				want[6][gid] = src(l, l+int(a.Delta))
				want[7][gid] = src(l, l-int(a.Delta))
				want[8][gid] = src(l, l^int(a.Mask))
				want[9][gid] = src(l, int(a.Lane))
				want[10][gid] = x[base+order[0]]
				want[11][gid] = b2f(anyv)
				want[12][gid] = b2f(allv)
				want[13][gid] = b2f(i == 0)
			}
		}
	}
	return want, writes
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestSimdFunctions runs every simdgroup function on random inputs, with
// partial last simdgroups and lanes that returned early, against simdModel.
func TestSimdFunctions(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cases := []struct {
		threads, groups int
		args            selftestArgs
	}{
		{80, 3, selftestArgs{Delta: 3, Mask: 5, Lane: 7, Threshold: 4}},            // 32+32+16
		{96, 2, selftestArgs{Delta: 1, Mask: 31, Lane: 20, Skip: 5, Threshold: 4}}, // inactive lanes
		{50, 2, selftestArgs{Delta: 17, Mask: 16, Lane: 30, Skip: 3, Threshold: 1}},
		{7, 4, selftestArgs{Delta: 0, Mask: 0, Lane: 2, Threshold: -20}},
		{32, 1, selftestArgs{Delta: 40, Mask: 33, Lane: 40, Threshold: 4}}, // out-of-range sources
	}
	for _, st := range simdTypes {
		for ci, tc := range cases {
			n := tc.threads * tc.groups
			x := make([]float64, n)
			in := make([]byte, st.size*n)
			for i := range x {
				v := math.Round(rng.Float64()*200-100) / 8 // exact in every type for the int case after trunc
				if st.name == "int" {
					v = math.Trunc(v * 8)
				}
				if (i/32)%2 == 1 {
					v = math.Abs(v) + 5 // simdgroups where simd_all is true
				}
				x[i] = st.round(v)
				st.encode(in[st.size*i:], x[i])
			}
			args := tc.args
			args.N = uint32(n)
			out := poisoned(simdOps * n * st.size)
			dispatch(t, "emu_simd_ops_"+st.name, [3]int{tc.groups, 1, 1}, [3]int{tc.threads, 1, 1}, in, out, structBytes(&args))
			want, writes := simdModel(x, tc.threads, tc.groups, args, st.round)
			bad := 0 // the first 8 wrong elements of the case are reported
			unwritten := bytes.Repeat([]byte{poison}, st.size)
			for k := 0; k < simdOps; k++ {
				for gid := 0; gid < n; gid++ {
					raw := out[st.size*(k*n+gid):][:st.size]
					if !writes[gid] {
						if !bytes.Equal(raw, unwritten) {
							if bad++; bad <= 8 {
								assert.Equal(t, unwritten, raw, "%s case %d: %s written by returned thread %d", st.name, ci, simdOpNames[k], gid)
							}
						}
						continue
					}
					if got := st.decode(raw); got != want[k][gid] {
						if bad++; bad <= 8 {
							assert.Equal(t, want[k][gid], got, "%s case %d: %s thread %d (lane %d)",
								st.name, ci, simdOpNames[k], gid, gid%tc.threads%32)
						}
					}
				}
			}
		}
	}
}
