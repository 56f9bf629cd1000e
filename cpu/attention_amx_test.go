package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
)

// TestAttentionAMX runs bf16 attention, forward and backward, on AMX tiles
// and on the float32 loop (AMX off) on the same inputs, with the tiles
// shrunk (32 keys per block, one tile of query rows) so that sequences
// cross many key and query blocks: every output is within one bfloat16
// rounding of the float32 loop's (which TestRoundOnce pins to float32
// rounded once), and bitwise the same at one and at three participants.
func TestAttentionAMX(t *testing.T) {
	if !gemm.AMX() {
		t.Skip("no AMX-BF16 on this CPU: attention runs on the float32 loop only")
	}
	saved := attTile
	defer func() { attTile = saved }()
	attTile.keys, attTile.rowTiles = 32, 1
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer gemm.SetAMX(gemm.SetAMX(true))
	for _, sz := range [][5]int{{70, 2, 4, 2, 32}, {100, 1, 2, 1, 64}, {29, 3, 2, 2, 64}, {57, 1, 8, 2, 96}} {
		T, B, H, Hkv, D := sz[0], sz[1], sz[2], sz[3], sz[4]
		N := B * T
		t.Run(shapeName(sz[:]...), func(t *testing.T) {
			require.True(t, attAMX(backend.BF16, D))
			r := rand.New(rand.NewPCG(3, uint64(T)))
			b := New()
			q := upload(b, backend.BF16, randVals(r, N*H*D, 1.5), N, H, D)
			k := upload(b, backend.BF16, randVals(r, N*Hkv*D, 1), N, Hkv, D)
			v := upload(b, backend.BF16, randVals(r, N*Hkv*D, 1), N, Hkv, D)
			dout := upload(b, backend.BF16, randVals(r, N*H*D, 1), N, H, D)
			run := func(amx bool, procs int) [][]float32 {
				gemm.SetAMX(amx)
				runtime.GOMAXPROCS(procs)
				out, lse := poisoned(b, backend.BF16, N, H, D), poisoned(b, backend.F32, N, H)
				b.AttentionForward(out, lse, q, k, v, T)
				dq, dk, dv := poisoned(b, backend.BF16, N, H, D), poisoned(b, backend.BF16, N, Hkv, D), poisoned(b, backend.BF16, N, Hkv, D)
				b.AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, T)
				return [][]float32{b.Download(out), b.Download(lse), b.Download(dq), b.Download(dk), b.Download(dv)}
			}
			names := []string{"out", "lse", "dq", "dk", "dv"}
			want := run(false, 1)
			got := run(true, 1)
			for i, name := range names {
				w64 := make([]float64, len(want[i]))
				for j, x := range want[i] {
					w64[j] = float64(x)
				}
				scale := 0.0
				for _, x := range w64 {
					scale = math.Max(scale, math.Abs(x))
				}
				// One bfloat16 ulp of each element (lse is float32), plus
				// float32's error on the largest terms of a sum of T.
				rtol := 0x1p-7
				if name == "lse" {
					rtol = 1e-6
				}
				checkClose(t, name, got[i], w64, rtol, 1e-5*scale)
			}
			again := run(true, 3)
			for i, name := range names {
				sameBits(t, fmt.Sprintf("%s at 3 participants", name), again[i], got[i])
			}
		})
	}
}

// TestAttentionScratch: AttentionScratchBytes is what one participant's
// buffers hold after a forward and a backward pass, for every path and
// dtype, at the baseline's and the small model's shapes and an odd one.
func TestAttentionScratch(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, amx := range []bool{false, true} {
		if amx && !gemm.AMX() {
			continue
		}
		prev := gemm.SetAMX(amx)
		for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
			for _, sz := range [][4]int{{1024, 8, 4, 64}, {256, 4, 2, 64}, {100, 6, 3, 32}} {
				T, H, Hkv, D := sz[0], sz[1], sz[2], sz[3]
				t.Run(fmt.Sprintf("amx=%v/%v/T%d_H%d_Hkv%d_D%d", amx, dt, T, H, Hkv, D), func(t *testing.T) {
					b := New()
					a := newAttOperands(b, dt, rand.New(rand.NewPCG(5, uint64(T))), T, H, Hkv, D)
					a.forward(b, T)
					a.backward(b, T)
					require.Len(t, b.loops.scr, 1)
					s := &b.loops.scr[0]
					held := 8 * int64(cap(s.d))
					for _, f := range s.f {
						held += 4 * int64(cap(f))
					}
					require.Equal(t, held, AttentionScratchBytes(T, H, Hkv, D, dt))
				})
			}
		}
		gemm.SetAMX(prev)
	}
}
