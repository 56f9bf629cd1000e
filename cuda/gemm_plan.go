package cuda

import (
	"fmt"
	"sort"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// GEMM is one matrix product a training step issues, in the backend's
// row-major terms (linear.cu's contract):
//
//	D = alpha·op(A)·op(B) + beta·C     op(A) M×K, op(B) K×N, C and D M×N
//
// with dense row-major operands (lda = K, or M when TransA; ldb = N, or K
// when TransB; ldc = N). AB is the operands' dtype, CD that of C and D;
// every product accumulates in float32 (fp32 compute; TF32 only when
// TF32 is set). Beta ≠ 0 means C is read (C and D may be one buffer).
type GEMM struct {
	Name           string
	M, N, K        int
	TransA, TransB bool
	AB, CD         backend.DType
	Beta           float32
	TF32           bool
	// Count is how many times a training step issues this product.
	Count int
}

// Key identifies a cuBLASLt plan: everything but the name and count (a
// plan is created once per key and reused).
func (g GEMM) Key() string {
	return fmt.Sprintf("%dx%dx%d ta=%v tb=%v %v→%v beta=%v tf32=%v", g.M, g.N, g.K, g.TransA, g.TransB, g.AB, g.CD,
		g.Beta != 0, g.TF32)
}

// StepGEMMs lists the GEMMs of one training step of cfg: rows tokens per
// forward call (a microbatch chunk), chunks such calls per optimizer step,
// activations and weight copies in dt, and nsSteps Newton–Schulz
// iterations per Muon matrix. Per layer: q, k, v, proj, fc and the MLP
// projection, forward (out = x·wᵀ), input gradient (dx = dout·w; k and v
// add into q's dx, so beta = 1) and weight gradient (dw += doutᵀ·x, float
// D); the tied head likewise with the embedding (V×C); then, per Muon
// matrix (R×C of the six block weights, r = min, c = max), each
// Newton–Schulz step's three float products:
//
//	A = X·Xᵀ (r×r×c);  B = NSC·A·A + NSB·A (r×r×r, beta = NSB);
//	X' = B·X + NSA·X (r×c×r, beta = NSA)
//
// Equal products are listed once with their counts summed, sorted by name.
func StepGEMMs(cfg model.Config, rows, chunks int, dt backend.DType, nsSteps int) []GEMM {
	C, KV, F, V, L := cfg.ModelDim, cfg.KVDim(), cfg.MLPMult*cfg.ModelDim, cfg.VocabSize, cfg.NumLayers
	var out []GEMM
	linear := func(name string, in, outDim int, accumulate bool, count int) {
		beta := float32(0)
		if accumulate {
			beta = 1
		}
		n := count * chunks
		out = append(out,
			GEMM{Name: name + " forward", M: rows, N: outDim, K: in, TransB: true, AB: dt, CD: dt, Count: n},
			GEMM{Name: name + " dx", M: rows, N: in, K: outDim, AB: dt, CD: dt, Beta: beta, Count: n},
			GEMM{Name: name + " dw", M: outDim, N: in, K: rows, TransA: true, AB: dt, CD: backend.F32, Beta: 1, Count: n})
	}
	linear("attn.c_q", C, C, false, L)
	linear("attn.c_k", C, KV, true, L)
	linear("attn.c_v", C, KV, true, L)
	linear("attn.proj", C, C, false, L)
	linear("mlp.fc", C, F, false, L)
	linear("mlp.proj", F, C, false, L)
	linear("lm_head (tok_emb)", C, V, false, 1)
	ns := func(name string, r0, c0 int) {
		r, c := min(r0, c0), max(r0, c0)
		f := backend.F32
		out = append(out,
			GEMM{Name: name + " NS A=X·Xᵀ", M: r, N: r, K: c, TransB: true, AB: f, CD: f, Count: L * nsSteps},
			GEMM{Name: name + " NS B=c·A·A+b·A", M: r, N: r, K: r, AB: f, CD: f, Beta: backend.NSB, Count: L * nsSteps},
			GEMM{Name: name + " NS X=B·X+a·X", M: r, N: c, K: r, AB: f, CD: f, Beta: backend.NSA, Count: L * nsSteps})
	}
	ns("attn.c_q", C, C)
	ns("attn.c_k", KV, C)
	ns("attn.c_v", KV, C)
	ns("attn.proj", C, C)
	ns("mlp.fc", F, C)
	ns("mlp.proj", C, F)
	return mergeGEMMs(out)
}

// mergeGEMMs sums the counts of equal products (same Key and name) and
// sorts by name.
func mergeGEMMs(gs []GEMM) []GEMM {
	idx := map[string]int{}
	var out []GEMM
	for _, g := range gs {
		k := g.Name + "|" + g.Key()
		if i, ok := idx[k]; ok {
			out[i].Count += g.Count
			continue
		}
		idx[k] = len(out)
		out = append(out, g)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LtLayout is one cuBLASLt matrix layout: column-major (CUBLASLT_ORDER_COL)
// Rows × Cols with leading dimension LD, elements of Type (cudaDataType_t).
type LtLayout struct {
	Type       int32
	Rows, Cols uint64
	LD         int64
}

// LtMatmul is a GEMM in cuBLASLt's column-major terms: D = op(A)·op(B)
// (+ beta·C) with op(A) M×K. A row-major M×N result is a column-major N×M
// one, so the row-major D = op(a)·op(b) is computed as the column-major
// Dᵀ = op(b)ᵀ·op(a)ᵀ: cuBLASLt's A is the backend's b and its B the
// backend's a, with the same transposes, and M and N swap. No layout needs
// CUBLASLT_ORDER_ROW (which fewer cuBLASLt kernels support).
type LtMatmul struct {
	TransA, TransB int32 // cublasOperation_t
	M, N, K        int
	A, B, C, D     LtLayout
	ComputeType    int32 // cublasComputeType_t
	ScaleType      int32 // cudaDataType_t of alpha and beta: float
}

// Lt maps g to cuBLASLt.
func (g GEMM) Lt() LtMatmul {
	op := func(t bool) int32 {
		if t {
			return cublasOpT
		}
		return cublasOpN
	}
	ab, cd := ltType(g.AB), ltType(g.CD)
	// The backend's b (K×N, or N×K when TransB) is column-major N×K (or
	// K×N); its a (M×K, or K×M) is column-major K×M (or M×K).
	bRows, bCols := g.N, g.K
	if g.TransB {
		bRows, bCols = g.K, g.N
	}
	aRows, aCols := g.K, g.M
	if g.TransA {
		aRows, aCols = g.M, g.K
	}
	lay := func(t int32, r, c int) LtLayout {
		return LtLayout{Type: t, Rows: uint64(r), Cols: uint64(c), LD: int64(r)}
	}
	compute := int32(cublasCompute32F)
	if g.TF32 {
		compute = cublasCompute32FFastTF32
	}
	return LtMatmul{
		TransA: op(g.TransB), TransB: op(g.TransA),
		M: g.N, N: g.M, K: g.K,
		A: lay(ab, bRows, bCols), B: lay(ab, aRows, aCols),
		C: lay(cd, g.N, g.M), D: lay(cd, g.N, g.M),
		ComputeType: compute, ScaleType: cudaR32F,
	}
}

// ltType is the cudaDataType_t of a float dtype.
func ltType(dt backend.DType) int32 {
	switch dt {
	case backend.F32:
		return cudaR32F
	case backend.F16:
		return cudaR16F
	case backend.BF16:
		return cudaR16BF
	}
	panic(fmt.Sprintf("cuda: no cuBLASLt type for %v", dt))
}
