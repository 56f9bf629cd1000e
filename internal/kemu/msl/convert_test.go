//go:build cgo

package msl

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// TestConversions checks the shim's half and bfloat against the Go
// backend's conversions bit for bit: widening every one of the 65,536
// patterns, and rounding a sweep of float32 inputs (every 4099th pattern,
// the neighbourhood of every half/bfloat rounding boundary of a random
// sample, and special values).
func TestConversions(t *testing.T) {
	var xs []uint32
	for u := uint64(0); u < 1<<32; u += 4099 {
		xs = append(xs, uint32(u))
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 20000; i++ {
		u := rng.Uint32()
		// Ties and near-ties of half (13 dropped bits) and bfloat (16).
		for _, tie := range []uint32{u&^0x1fff | 0x1000, u&^0xffff | 0x8000} {
			xs = append(xs, tie-1, tie, tie+1)
		}
	}
	xs = append(xs, 0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffbfffff,
		0x477fefff, 0x477ff000, 0x477ff001, // around the half overflow threshold 65520
		0x33000000, 0x33000001, 0x32ffffff, // around half of the smallest half subnormal
		0x7f7fffff, 0x7f7f8000, 0x00000001, 0x807fffff)
	n := max(len(xs), 1<<16)
	x := make([]uint32, n)
	copy(x, xs)
	hin := make([]byte, 2*n)
	for i := 0; i < 1<<16; i++ {
		binary.LittleEndian.PutUint16(hin[2*i:], uint16(i))
	}
	h, b, hf, bf := poisoned(2*n), poisoned(2*n), poisoned(4*n), poisoned(4*n)
	args := selftestArgs{N: uint32(n)}
	dispatch(t, "emu_convert", [3]int{64, 1, 1}, [3]int{256, 1, 1},
		encodeU32(x), h, b, hin, hin, hf, bf, structBytes(&args))
	gh, gb, ghf, gbf := decodeU16(h), decodeU16(b), decodeU32(hf), decodeU32(bf)
	// Compared here first; the first 10 mismatches are reported.
	bad := 0
	report := func(want, got any, format string, args ...any) {
		if bad++; bad <= 10 {
			assert.Equal(t, want, got, append([]any{format}, args...)...)
		}
	}
	for i := 0; i < n; i++ {
		f := math.Float32frombits(x[i])
		if want := backend.F16Bits(f); gh[i] != want {
			report(want, gh[i], "half(%#08x)", x[i])
		}
		if want := backend.BF16Bits(f); gb[i] != want {
			report(want, gb[i], "bfloat(%#08x)", x[i])
		}
	}
	for i := 0; i < 1<<16; i++ {
		if want := math.Float32bits(backend.F16Float(uint16(i))); ghf[i] != want {
			report(want, ghf[i], "float(half %#04x) (bits)", i)
		}
		if want := math.Float32bits(backend.BF16Float(uint16(i))); gbf[i] != want {
			report(want, gbf[i], "float(bfloat %#04x) (bits)", i)
		}
	}
}

// TestHalfArithmetic: half op half and bfloat op bfloat give the correctly
// rounded result of the exact operation (computed here in float64 and
// rounded once by the Go backend).
func TestHalfArithmetic(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, dt := range []backend.DType{backend.F16, backend.BF16} {
		const n = 20000
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			// Wide exponents, including overflow, underflow and exact ties.
			x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.Intn(40)-20)))
			y[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.Intn(40)-20)))
		}
		backend.RoundSlice(dt, x)
		backend.RoundSlice(dt, y)
		out := poisoned(4 * n * dt.Size())
		args := selftestArgs{N: n}
		dispatch(t, "emu_arith_"+dtypeName(dt), [3]int{(n + 255) / 256, 1, 1}, [3]int{256, 1, 1},
			encode(dt, x), encode(dt, y), out, structBytes(&args))
		got := decode(dt, out)
		bad := 0
		for i := 0; i < n; i++ {
			a, b := float64(x[i]), float64(y[i])
			for k, exact := range []float64{a + b, a - b, a * b, a / b} {
				want := backend.Round(dt, roundF64(exact))
				g := got[4*i+k]
				if g != want && !(g != g && want != want) {
					if bad++; bad <= 10 { // the first 10 mismatches of dt
						assert.Equal(t, want, g, "%v: %v op%d %v", dt, a, k, b)
					}
				}
			}
		}
	}
}

// roundF64 rounds the float64 result of one operation on two half or
// bfloat values to float32. Each rounding of the chain float64 → float32 →
// half/bfloat keeps the result correctly rounded, because every precision
// is at least twice the next plus two bits (53 ≥ 2·24+2, 24 ≥ 2·11+2).
func roundF64(v float64) float32 { return float32(v) }

// TestVectorsAndMath runs vector arithmetic, swizzles and the math
// functions on float4 values against Go.
func TestVectorsAndMath(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const n = 500
	in := make([]float32, 8*n)
	for i := range in {
		in[i] = float32(rng.NormFloat64() * 2)
	}
	out := poisoned(4 * 32 * n)
	args := selftestArgs{N: n}
	dispatch(t, "emu_vector", [3]int{(n + 63) / 64, 1, 1}, [3]int{64, 1, 1}, encode(backend.F32, in), out, structBytes(&args))
	got := decode(backend.F32, out)
	f64 := func(f float32) float64 { return float64(f) }
	for i := 0; i < n; i++ {
		v, w := in[4*i:4*i+4], in[4*(i+n):4*(i+n)+4]
		o := got[32*i : 32*i+32]
		exact := []float32{
			v[0] + float32(w[0]*2), v[1] + float32(w[1]*2), v[2] + float32(w[2]*2), v[3] + float32(w[3]*2),
			w[2], w[3], v[1], v[0],
			v[0] * v[2], v[1] * v[1], w[2] * v[0], w[3] * 1,
			pick(v[0], w[0]), pick(v[3], w[3]), float32(math.Abs(f64(v[0] - w[0]))),
			((float32(v[0]*w[0]) + float32(v[1]*w[1])) + float32(v[2]*w[2])) + float32(v[3]*w[3]),
		}
		for k, want := range exact {
			require.Equal(t, want, o[k], "element %d value %d", i, k)
		}
		approx := []float64{
			math.Exp(f64(v[0])), math.Log(math.Abs(f64(v[1]))), math.Sqrt(math.Abs(f64(v[2]))),
			math.Tanh(f64(v[3])), math.Sin(f64(w[0])), math.Cos(f64(w[1])), 1 / math.Sqrt(math.Abs(f64(w[2]))),
			math.Pow(math.Abs(f64(v[0])), f64(w[1])),
		}
		for k, want := range approx {
			require.InDelta(t, want, f64(o[16+k]), 4*0x1p-24*math.Max(math.Abs(want), 1), "element %d math function %d", i, k)
		}
		for k := 0; k < 4; k++ {
			require.Equal(t, backend.Round(backend.F16, v[k]), o[24+k], "element %d: float4(half4(v))[%d]", i, k)
			// simd_sum over the lanes of i's simdgroup below n, in lane order.
			first := i / 32 * 32
			sum := in[4*first+k]
			for l := first + 1; l < min(first+32, n); l++ {
				sum += in[4*l+k]
			}
			require.Equal(t, sum, o[28+k], "element %d: simd_sum(v)[%d]", i, k)
		}
	}
}

// TestAtomics: device atomic_uint and atomic_float, threadgroup atomics,
// fetch_max and fetch_min, from threadgroups running on several workers.
func TestAtomics(t *testing.T) {
	const groups, threads = 37, 100
	total, sum, counts := make([]byte, 4), make([]byte, 4), poisoned(4*groups)
	ext := encodeU32([]uint32{0, math.MaxUint32})
	dispatch(t, "emu_atomics", [3]int{groups, 1, 1}, [3]int{threads, 1, 1}, total, sum, counts, ext)
	assert.Equal(t, uint32(groups*threads), decodeU32(total)[0], "atomic_uint total")
	assert.Equal(t, float32(0.5*groups*threads), decode(backend.F32, sum)[0], "atomic_float sum")
	for g, c := range decodeU32(counts) {
		assert.Equal(t, uint32(threads), c, "threads threadgroup %d counted", g)
	}
	assert.Equal(t, []uint32{groups*threads - 1, 0}, decodeU32(ext), "fetch_max, fetch_min")
}

// pick is select(v, w, v > w) for one element.
func pick(v, w float32) float32 {
	if v > w {
		return w
	}
	return v
}

// TestScalarMath: numeric_limits, as_type, fma, clamp, saturate, mix, half
// and bfloat arithmetic and literals, precise:: and fast::, classification.
func TestScalarMath(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	const n = 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 2)
		y[i] = float32(rng.NormFloat64() * 2)
	}
	y[0] = 0 // a/0: not finite
	out := poisoned(4 * 12 * n)
	args := selftestArgs{N: n}
	dispatch(t, "emu_scalar_math", [3]int{(n + 127) / 128, 1, 1}, [3]int{128, 1, 1},
		encode(backend.F32, x), encode(backend.F32, y), out, structBytes(&args))
	got := decode(backend.F32, out)
	h := func(v float32) float32 { return backend.Round(backend.F16, v) }
	bf := func(v float32) float32 { return backend.Round(backend.BF16, v) }
	for i := 0; i < n; i++ {
		a, b := x[i], y[i]
		f64 := func(v float32) float64 { return float64(v) }
		classify := 0.0
		if q := f64(a) / f64(b); !math.IsInf(q, 0) && !math.IsNaN(q) {
			classify++
		}
		if a < 0 {
			classify += 2 + 4
		}
		want := []struct {
			v   float64
			tol float64 // relative, in units of 2^-24, or 0 for exact
		}{
			{65504, 0},
			{0x1p-7, 0},
			{f64(a), 0},
			{f64(h(float32(math.Exp(f64(h(a)))))), 0x1p13}, // one half ulp of exp's float error
			{math.FMA(f64(a), f64(b), 0.25), 1},
			{math.Max(-0.5, math.Min(0.5, f64(a))), 0},
			{math.Max(0, math.Min(1, f64(a))) + (f64(a) + (f64(b)-f64(a))*0.25), 4},
			{f64(h(h(h(a)*h(b)) + 1.5)), 0},
			{f64(bf(bf(a) - bf(b))), 0},
			{f64(h(h(h(a)*h(b)) + h(h(b)*h(a)))), 0},
			{math.Sqrt(math.Abs(f64(a))) + math.Exp(f64(b)), 4},
			{classify, 0},
		}
		for k, w := range want {
			require.InDelta(t, w.v, f64(got[12*i+k]), w.tol*0x1p-24*math.Max(math.Abs(w.v), 1), "x=%v y=%v: value %d", a, b, k)
		}
	}
}
