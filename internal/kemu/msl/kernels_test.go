//go:build cgo

package msl

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/shaders"
)

var flavours = []string{"simd", "portable"}

// specials are the first inputs of the elementwise tests.
var specials = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.Copysign(0, -1)), 0, 1e-30, -1e-30}

// randomInputs returns n normal values scaled by s, rounded to dt, the
// first ones special when withSpecials.
func randomInputs(rng *rand.Rand, dt backend.DType, n int, s float64, withSpecials bool) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64() * s)
	}
	if withSpecials {
		copy(xs, specials)
	}
	backend.RoundSlice(dt, xs)
	return xs
}

func widen(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// relu is max(x, 0) as the CPU backend computes it: NaN stays NaN.
func relu(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return x
}

// checkPad fails if the bytes of buf past n elements of dt were written.
func checkPad(t *testing.T, name string, buf []byte, n int, dt backend.DType) {
	t.Helper()
	for i, c := range buf[n*dt.Size():] {
		if c != poison {
			assert.Equal(t, byte(poison), c, "%s: byte %d past the last element written", name, i)
			return
		}
	}
}

// TestReluSq runs relu_sq forward and backward in every dtype and flavour
// on odd sizes (with NaN, ±Inf and ±0 among the inputs) against float64.
func TestReluSq(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	const threads = 256
	for _, dt := range backend.FloatDTypes {
		for _, fl := range flavours {
			for _, n := range []int{1, 31, 33, 4099} {
				groups := (n + threads - 1) / threads
				grid := groups * threads
				x := randomInputs(rng, dt, n, 2, n >= len(specials))
				dout := randomInputs(rng, dt, n, 1, false)
				args := shaders.EltwiseArgs{N: uint32(n)}

				name := fmt.Sprintf("relu_sq_fwd_%s_%s", fl, dtypeName(dt))
				out := poisoned(grid * dt.Size())
				dispatch(t, name, [3]int{groups, 1, 1}, [3]int{threads, 1, 1}, encode(dt, x), out, structBytes(&args))
				want := make([]float64, n)
				for i, v := range widen(x) {
					want[i] = relu(v) * relu(v)
				}
				backendtest.Close(t, fmt.Sprintf("%s n=%d", name, n), decode(dt, out[:n*dt.Size()]), want, dt, backendtest.Tol{K: 1})
				checkPad(t, name, out, n, dt)

				name = fmt.Sprintf("relu_sq_bwd_%s_%s", fl, dtypeName(dt))
				dx := poisoned(grid * dt.Size())
				dispatch(t, name, [3]int{groups, 1, 1}, [3]int{threads, 1, 1}, encode(dt, dout), encode(dt, x), dx, structBytes(&args))
				for i, v := range widen(x) {
					want[i] = 2 * relu(v) * float64(dout[i])
				}
				backendtest.Close(t, fmt.Sprintf("%s n=%d", name, n), decode(dt, dx[:n*dt.Size()]), want, dt, backendtest.Tol{K: 1})
				checkPad(t, name, dx, n, dt)
			}
		}
	}
}

// TestRMSNormForward runs rmsnorm_fwd in every dtype and flavour, one
// threadgroup per row, rows of 1, 31, 33 and 4099 elements, threadgroups of
// 1 to 1024 threads (some not a multiple of 32), against float64.
func TestRMSNormForward(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, dt := range backend.FloatDTypes {
		for _, fl := range flavours {
			name := fmt.Sprintf("rmsnorm_fwd_%s_%s", fl, dtypeName(dt))
			for _, c := range []int{1, 31, 33, 4099} {
				for _, threads := range []int{1, 96, 256, 1024} {
					const rows = 3
					x := randomInputs(rng, dt, rows*c, 1, false)
					for i := 0; i < c; i++ {
						x[2*c+i] = 0 // a zero row: rstd = 1/sqrt(eps)
					}
					args := shaders.RMSNormArgs{Rows: rows, Cols: uint32(c), Eps: backend.RMSNormEps}
					out, rstd := poisoned(rows*c*dt.Size()), poisoned(4*rows)
					dispatch(t, name, [3]int{rows, 1, 1}, [3]int{threads, 1, 1}, encode(dt, x), out, rstd, structBytes(&args))

					wantOut, wantRstd := make([]float64, rows*c), make([]float64, rows)
					xs := widen(x)
					for r := 0; r < rows; r++ {
						var ss float64
						for _, v := range xs[r*c : (r+1)*c] {
							ss += v * v
						}
						rs := 1 / math.Sqrt(ss/float64(c)+backend.RMSNormEps)
						wantRstd[r] = rs
						for i := r * c; i < (r+1)*c; i++ {
							wantOut[i] = xs[i] * rs
						}
					}
					label := fmt.Sprintf("%s C=%d threads=%d", name, c, threads)
					backendtest.Close(t, label+" rstd", decode(backend.F32, rstd), wantRstd, backend.F32, backendtest.Tol{K: c})
					backendtest.Close(t, label+" out", decode(dt, out), wantOut, dt, backendtest.Tol{K: c})
				}
			}
		}
	}
}
