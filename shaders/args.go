package shaders

// The Go mirrors of the argument structs of golf_args.h, field by field
// (C snake_case names in CamelCase). Package internal/kemu/msl's tests check every
// size and offset against the C++ compiler's layout of the header.

// EltwiseArgs mirrors struct EltwiseArgs: an elementwise kernel over N
// elements.
type EltwiseArgs struct {
	N uint32
}

// RMSNormArgs mirrors struct RMSNormArgs: Rows × Cols, normalised along
// Cols, with epsilon Eps.
type RMSNormArgs struct {
	Rows uint32
	Cols uint32
	Eps  float32
}

// ScalarArgs mirrors struct ScalarArgs: Scale (x *= alpha) and Axpy (dst += alpha·x) over n elements.
type ScalarArgs struct {
	N     uint32
	Alpha float32
}

// ReduceArgs mirrors struct ReduceArgs: Reduce of n elements into dst[0]; kind as backend.ReduceKind (0 sum, 1 sum of squares, 2 non-finite count).
type ReduceArgs struct {
	N    uint32
	Kind uint32
}

// RMSNormBwdArgs mirrors struct RMSNormBwdArgs: RMSNorm backward: rows × cols; has_res = 1 adds dres.
type RMSNormBwdArgs struct {
	Rows   uint32
	Cols   uint32
	HasRes uint32
}

// ResidMixArgs mirrors struct ResidMixArgs: resid-mix: rows × cols.
type ResidMixArgs struct {
	Rows uint32
	Cols uint32
}

// ScaledAddArgs mirrors struct ScaledAddArgs: scaled add: rows × cols; has_s = 0 means s = 1; has_dy/has_ds select the backward outputs.
type ScaledAddArgs struct {
	Rows  uint32
	Cols  uint32
	HasS  uint32
	HasDy uint32
	HasDs uint32
}

// AddNormArgs mirrors struct AddNormArgs: scaled add + RMSNorm of the sum: rows × cols, epsilon eps; has_s = 0 means s = 1.
type AddNormArgs struct {
	Rows uint32
	Cols uint32
	Eps  float32
	HasS uint32
}

// EmbeddingArgs mirrors struct EmbeddingArgs: embedding: rows tokens of width cols from a vocab × cols table.
type EmbeddingArgs struct {
	Rows  uint32
	Cols  uint32
	Vocab uint32
}

// GemmArgs mirrors struct GemmArgs: C = alpha·op(A)·op(B) + beta·C, row-major, op(A) m×k, op(B) k×n, row strides lda/ldb/ldc in elements; batch products (0 is 1) along the grid's z, matrix z at z·stride_a, z·stride_b, z·stride_c (c and d) elements.
type GemmArgs struct {
	M       uint32
	N       uint32
	K       uint32
	Lda     uint32
	Ldb     uint32
	Ldc     uint32
	TransA  uint32
	TransB  uint32
	Alpha   float32
	Beta    float32
	Batch   uint32
	StrideA uint32
	StrideB uint32
	StrideC uint32
	Aligned uint32
	SliceK  uint32
}

// RopeArgs mirrors struct RopeArgs: q/k RMSNorm + RoPE + gain: rows tokens × heads × head_dim; position = row mod seq_len.
type RopeArgs struct {
	Rows    uint32
	Heads   uint32
	HeadDim uint32
	SeqLen  uint32
	Base    float32
	Eps     float32
	HasGain uint32
}

// RopePairArgs mirrors struct RopePairArgs: RopeArgs for q (q_heads) and k (k_heads) of the same rows × head_dim in one launch; has_*_gain as RopeArgs.has_gain; has_*_dgain select the dgain sums.
type RopePairArgs struct {
	Rows      uint32
	QHeads    uint32
	KHeads    uint32
	HeadDim   uint32
	SeqLen    uint32
	Eps       float32
	QHasGain  uint32
	KHasGain  uint32
	QHasDgain uint32
	KHasDgain uint32
}

// AttentionArgs mirrors struct AttentionArgs: causal GQA attention: batch sequences of seq_len rows, heads query heads over kv_heads key/value heads of head_dim.
type AttentionArgs struct {
	Batch    uint32
	SeqLen   uint32
	Heads    uint32
	KvHeads  uint32
	HeadDim  uint32
	Scale    float32
	OwnDelta uint32
}

// CEArgs mirrors struct CEArgs: softcapped cross-entropy: rows × vocab logits, softcap cap, gradient scale.
type CEArgs struct {
	Rows  uint32
	Vocab uint32
	Cap   float32
	Scale float32
}

// AdamArgs mirrors struct AdamArgs: Adam over n elements; bias1 = 1−β1^t and bias2 = 1−β2^t computed on the host.
type AdamArgs struct {
	N     uint32
	Lr    float32
	Beta1 float32
	Beta2 float32
	Eps   float32
	Bias1 float32
	Bias2 float32
}

// MomentumArgs mirrors struct MomentumArgs: Muon momentum over n elements.
type MomentumArgs struct {
	N        uint32
	Momentum float32
}

// MuonSumsqArgs mirrors struct MuonSumsqArgs: Muon momentum over the n elements of matrix z of a Newton–Schulz batch, with the sums of squares of its parts threadgroups.
type MuonSumsqArgs struct {
	N        uint32
	Momentum float32
	Z        uint32
	Parts    uint32
}

// MuonAxpyArgs mirrors struct MuonAxpyArgs: w (rows × cols) += alpha·Xᵀ, X matrix z of a transposed Newton–Schulz batch (cols × rows each).
type MuonAxpyArgs struct {
	Rows  uint32
	Cols  uint32
	Z     uint32
	Alpha float32
}

// NSArgs mirrors struct NSArgs: Newton–Schulz element-wise steps over count matrices (the grid's z) of rows × cols, one after another (a, b, c the quintic's coefficients; parts the partial sums of ‖g‖² per matrix).
type NSArgs struct {
	Rows  uint32
	Cols  uint32
	A     float32
	B     float32
	C     float32
	Count uint32
	Parts uint32
}

// Mirrors holds a zero value of every mirror type above, for the layout
// checks (the emulator's against g++, the strict front end's against clang
// for arm64); a test checks that it lists every struct type of this file.
var Mirrors = []any{
	EltwiseArgs{}, RMSNormArgs{}, ScalarArgs{}, ReduceArgs{}, RMSNormBwdArgs{}, ResidMixArgs{},
	ScaledAddArgs{}, AddNormArgs{}, EmbeddingArgs{}, GemmArgs{}, RopeArgs{}, RopePairArgs{}, AttentionArgs{},
	CEArgs{}, AdamArgs{}, MomentumArgs{}, MuonSumsqArgs{}, MuonAxpyArgs{}, NSArgs{},
}
