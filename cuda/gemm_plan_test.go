package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// colMajorMatmul evaluates an LtMatmul the way cuBLASLt defines it, on raw
// buffers: X(i,j) = buf[i + j·LD] for a column-major layout, op(X) = X or
// Xᵀ, D = op(A)·op(B), written column-major into a fresh buffer.
func colMajorMatmul(t *testing.T, lt LtMatmul, a, b []float64) []float64 {
	t.Helper()
	at := func(l LtLayout, buf []float64, i, j int) float64 {
		require.Less(t, i, int(l.Rows))
		require.Less(t, j, int(l.Cols))
		return buf[i+j*int(l.LD)]
	}
	opA := func(i, k int) float64 {
		if lt.TransA == cublasOpT {
			return at(lt.A, a, k, i)
		}
		return at(lt.A, a, i, k)
	}
	opB := func(k, j int) float64 {
		if lt.TransB == cublasOpT {
			return at(lt.B, b, j, k)
		}
		return at(lt.B, b, k, j)
	}
	// The layouts must have op(A) M×K, op(B) K×N, D M×N.
	dimsA := [2]int{lt.M, lt.K}
	if lt.TransA == cublasOpT {
		dimsA = [2]int{lt.K, lt.M}
	}
	require.Equal(t, dimsA, [2]int{int(lt.A.Rows), int(lt.A.Cols)})
	dimsB := [2]int{lt.K, lt.N}
	if lt.TransB == cublasOpT {
		dimsB = [2]int{lt.N, lt.K}
	}
	require.Equal(t, dimsB, [2]int{int(lt.B.Rows), int(lt.B.Cols)})
	require.Equal(t, [2]uint64{uint64(lt.M), uint64(lt.N)}, [2]uint64{lt.D.Rows, lt.D.Cols})
	d := make([]float64, int(lt.D.LD)*lt.N)
	for i := 0; i < lt.M; i++ {
		for j := 0; j < lt.N; j++ {
			var s float64
			for k := 0; k < lt.K; k++ {
				s += opA(i, k) * opB(k, j)
			}
			d[i+j*int(lt.D.LD)] = s
		}
	}
	return d
}

// The column-major plan computes exactly the row-major product of the
// backend's contract, for every transpose combination and odd sizes.
func TestLtMappingComputesTheRowMajorProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			m, n, k := 5, 7, 3
			g := GEMM{M: m, N: n, K: k, TransA: ta, TransB: tb, AB: backend.BF16, CD: backend.F32}
			// Row-major a: M×K (K×M when TransA); b: K×N (N×K when TransB).
			a := make([]float64, m*k)
			b := make([]float64, k*n)
			for i := range a {
				a[i] = rng.Float64()*2 - 1
			}
			for i := range b {
				b[i] = rng.Float64()*2 - 1
			}
			opa := func(i, kk int) float64 {
				if ta {
					return a[kk*m+i]
				}
				return a[i*k+kk]
			}
			opb := func(kk, j int) float64 {
				if tb {
					return b[j*k+kk]
				}
				return b[kk*n+j]
			}
			lt := g.Lt()
			// cuBLASLt's A is the backend's b, its B the backend's a.
			got := colMajorMatmul(t, lt, b, a)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var want float64
					for kk := 0; kk < k; kk++ {
						want += opa(i, kk) * opb(kk, j)
					}
					// Row-major D[i][j] at i·N + j.
					assert.InDelta(t, want, got[i*n+j], 1e-12, "ta=%v tb=%v D[%d][%d]", ta, tb, i, j)
				}
			}
			assert.Equal(t, int32(cudaR16BF), lt.A.Type)
			assert.Equal(t, int32(cudaR32F), lt.D.Type)
			assert.Equal(t, int32(cublasCompute32F), lt.ComputeType)
		}
	}
	assert.Equal(t, int32(cublasCompute32FFastTF32), GEMM{M: 1, N: 1, K: 1, AB: backend.F32, CD: backend.F32, TF32: true}.Lt().ComputeType)
}

// The linear GEMMs of one chunk do 6·P_matrix·rows FLOPs (forward, input
// and weight gradients of every weight matrix, the tied head included),
// with P_matrix the model's parameters less its vectors and control
// tensors; Newton–Schulz adds its own per step.
func TestStepGEMMsFLOPs(t *testing.T) {
	cfg := model.Baseline()
	rows, chunks, steps := 8192, 8, 5
	gs := StepGEMMs(cfg, rows, chunks, backend.BF16, steps)
	var linear, ns float64
	for _, g := range gs {
		f := 2 * float64(g.M) * float64(g.N) * float64(g.K) * float64(g.Count)
		if strings.Contains(g.Name, " NS ") {
			ns += f
			assert.Equal(t, backend.F32, g.AB, g.Name)
			assert.Equal(t, cfg.NumLayers*steps, g.Count, g.Name)
		} else {
			linear += f
		}
	}
	C, H, L, S := cfg.ModelDim, cfg.NumHeads, cfg.NumLayers, cfg.NumSkipWeights()
	matrixParams := model.NumParams(cfg) - S*C - L*(H+4*C)
	assert.Equal(t, 6*float64(matrixParams)*float64(rows)*float64(chunks), linear)
	// Per Muon matrix r×c: 5 steps of (2r²c + 2r³ + 2r²c).
	var wantNS float64
	for _, rc := range [][2]int{{512, 512}, {256, 512}, {256, 512}, {512, 512}, {512, 1024}, {512, 1024}} {
		r, c := float64(rc[0]), float64(rc[1])
		wantNS += float64(L*steps) * (2*r*r*c + 2*r*r*r + 2*r*r*c)
	}
	assert.Equal(t, wantNS, ns)
	// c_q and attn.proj have the same shapes: their NS products share
	// plans, not entries.
	keys := map[string]bool{}
	for _, g := range gs {
		keys[g.Key()] = true
	}
	assert.Less(t, len(keys), len(gs))
	assert.False(t, math.IsNaN(ns))
}

func TestStepGEMMsShapes(t *testing.T) {
	cfg := model.Baseline()
	gs := StepGEMMs(cfg, 8192, 1, backend.F16, 5)
	byName := map[string]GEMM{}
	for _, g := range gs {
		byName[g.Name] = g
	}
	assert.Equal(t, GEMM{Name: "attn.c_k forward", M: 8192, N: 256, K: 512, TransB: true, AB: backend.F16, CD: backend.F16, Count: 9},
		byName["attn.c_k forward"])
	assert.Equal(t, float32(1), byName["attn.c_k dx"].Beta, "k's dx adds into q's")
	assert.Equal(t, float32(0), byName["attn.c_q dx"].Beta)
	assert.Equal(t, GEMM{Name: "lm_head (tok_emb) dw", M: 1024, N: 512, K: 8192, TransA: true, AB: backend.F16, CD: backend.F32, Beta: 1, Count: 1},
		byName["lm_head (tok_emb) dw"])
	assert.Equal(t, float32(backend.NSA), byName["mlp.fc NS X=B·X+a·X"].Beta)
	assert.Equal(t, 512, byName["mlp.fc NS X=B·X+a·X"].M)
	assert.Equal(t, 1024, byName["mlp.fc NS X=B·X+a·X"].N)
}
