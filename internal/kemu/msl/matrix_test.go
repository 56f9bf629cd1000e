//go:build cgo

package msl

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// TestSimdgroupMatrix checks simdgroup_load (device and threadgroup
// memory, stride, origin, transpose), simdgroup_multiply_accumulate,
// simdgroup_multiply, make_filled_simdgroup_matrix and simdgroup_store
// (plain and transposed) in float, half and bfloat against naive 8×8
// products: bit for bit against the documented float32 accumulation order,
// and within float32 rounding error of the float64 product.
func TestSimdgroupMatrix(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	const groups, mats = 3, 6 // two simdgroups per threadgroup
	for _, dt := range backend.FloatDTypes {
		a := make([]float32, mats*96) // per matrix: 8 rows of 12
		b := make([]float32, mats*64) // per matrix: Bᵀ, 8×8
		c := make([]float32, mats*64)
		for _, xs := range [][]float32{a, b, c} {
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
		}
		backend.RoundSlice(dt, a)
		backend.RoundSlice(dt, b)
		d, dtr, p, f := poisoned(4*len(c)), poisoned(4*len(c)), poisoned(dt.Size()*len(c)), poisoned(4*len(c))
		dispatch(t, "emu_mma_"+dtypeName(dt), [3]int{groups, 1, 1}, [3]int{64, 1, 1},
			encode(dt, a), encode(dt, b), encode(backend.F32, c), d, dtr, p, f)
		gd, gdt, gp, gf := decode(backend.F32, d), decode(backend.F32, dtr), decode(dt, p), decode(backend.F32, f)
		for m := 0; m < mats; m++ {
			A := func(i, k int) float32 { return a[96*m+12*i+2+k] }
			B := func(k, j int) float32 { return b[64*m+8*j+k] }
			C := func(i, j int) float32 { return c[64*m+8*i+j] }
			o := 64 * m
			for i := 0; i < 8; i++ {
				for j := 0; j < 8; j++ {
					acc, prod, fill := C(i, j), float32(0), float32(1.5)
					var exact, mag float64
					for k := 0; k < 8; k++ {
						ab := float32(A(i, k) * B(k, j)) // explicit: no fused multiply-add
						acc += ab
						prod += ab
						fill += ab
						exact += float64(A(i, k)) * float64(B(k, j))
						mag += math.Abs(float64(A(i, k)) * float64(B(k, j)))
					}
					c64 := float64(C(i, j))
					checkElem(t, dt, "d", m, gd[o+8*i+j], acc, exact+c64, mag+math.Abs(c64))
					checkElem(t, dt, "dt", m, gdt[o+8*j+i], acc, exact+c64, mag+math.Abs(c64))
					checkElem(t, dt, "f", m, gf[o+8*i+j], fill, exact+1.5, mag+1.5)
					checkElem(t, dt, "p", m, gp[o+8*i+j], backend.Round(dt, prod), exact, mag)
				}
			}
		}
	}
}

// checkElem compares got with the float32 model exactly, and with the
// float64 value within the float32 error of an 8-term sum (plus the
// storage rounding of p).
func checkElem(t *testing.T, dt backend.DType, name string, m int, got, model float32, exact, mag float64) {
	t.Helper()
	require.Equal(t, model, got, "%v %s matrix %d: against the float32 model", dt, name, m)
	tol := 9 * 0x1p-24 * mag
	if name == "p" {
		tol += dt.Eps() * math.Abs(exact)
	}
	require.InDelta(t, exact, float64(got), tol, "%v %s matrix %d: against the float64 value", dt, name, m)
}

// TestThreadElements checks thread_elements() against the layout Apple
// GPUs use (and MLX's Steel kernels address): lane l holds elements
// (row, col) and (row, col + 1) with q = l/4, row = (q&4) + (l/2)%4,
// col = (q&2)·2 + (l%2)·2. It reads each lane's pair after a load, writes
// a product out through them, scales each lane's pair before a product
// (which must see the scaled elements), and stores a matrix filled with a
// different value on every lane (each element its owner's value).
func TestThreadElements(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	const groups, mats = 2, 4
	rowOf := func(l int) int { q := l / 4; return (q & 4) + (l/2)%4 }
	colOf := func(l int) int { q := l / 4; return (q&2)*2 + (l%2)*2 }
	// Every (row, col) pair has exactly one lane.
	seen := map[[2]int]int{}
	for l := 0; l < 32; l++ {
		seen[[2]int{rowOf(l), colOf(l)}]++
	}
	require.Len(t, seen, 32)
	for _, dt := range backend.FloatDTypes {
		a := make([]float32, mats*64)
		b := make([]float32, mats*64)
		for _, xs := range [][]float32{a, b} {
			for i := range xs {
				xs[i] = float32(rng.Intn(17) - 8) // small integers: every product exact
			}
		}
		e, d, p, f := poisoned(dt.Size()*len(a)), poisoned(4*len(a)), poisoned(dt.Size()*len(a)), poisoned(4*len(a))
		dispatch(t, "emu_thread_elements_"+dtypeName(dt), [3]int{groups, 1, 1}, [3]int{64, 1, 1},
			encode(dt, a), encode(dt, b), e, d, p, f)
		ge, gd, gp, gf := decode(dt, e), decode(backend.F32, d), decode(dt, p), decode(backend.F32, f)
		for m := 0; m < mats; m++ {
			A := func(i, j int) float64 { return float64(a[64*m+8*i+j]) }
			B := func(i, j int) float64 { return float64(b[64*m+8*i+j]) }
			scale := map[[2]int]float64{}
			for l := 0; l < 32; l++ {
				r, c := rowOf(l), colOf(l)
				for k := 0; k < 2; k++ {
					require.Equal(t, A(r, c+k), float64(ge[64*m+2*l+k]), "%v matrix %d lane %d element %d", dt, m, l, k)
					scale[[2]int{r, c + k}] = float64(l + 1)
					require.Equal(t, float64(l), float64(gf[64*m+8*r+c+k]), "%v matrix %d: filled (%d, %d)", dt, m, r, c+k)
				}
			}
			for i := 0; i < 8; i++ {
				for j := 0; j < 8; j++ {
					var prod, scaled float64
					for k := 0; k < 8; k++ {
						prod += A(i, k) * B(k, j)
						// A' rounded to T: (l+1)·A is an integer below 2^8 in magnitude, exact in every dtype.
						scaled += scale[[2]int{i, k}] * A(i, k) * B(k, j)
					}
					require.Equal(t, float64(backend.Round(dt, float32(prod))), float64(gp[64*m+8*i+j]), "%v matrix %d: p(%d, %d)", dt, m, i, j)
					require.Equal(t, scaled, float64(gd[64*m+8*i+j]), "%v matrix %d: d(%d, %d)", dt, m, i, j)
				}
			}
		}
	}
}
