// Package backend defines the contract every compute backend of golf
// fulfils: tensor handles, dtypes, and the op-level forward and backward
// functions the GPT and its optimizers are written against (llm.c style: no
// autograd, every op a pair of explicit functions).
//
// Dimension legend used in every doc comment below:
//
//	N  = rows (tokens, B·T)        T  = sequence length (seqLen)
//	C  = model width               H  = query heads, Hkv = key/value heads
//	D  = head dim (C/H)            V  = vocabulary
//	I  = linear input width        O  = linear output width
//
// Conventions, stated once:
//   - "CD" marks a tensor stored in the model's compute dtype (F32, BF16 or
//     F16: activations, activation gradients, the per-step weight copies).
//     "F32" marks a tensor that is always float32 (master weights, parameter
//     gradients, optimizer state, statistics saved for the backward pass).
//     An op accepts any float dtype where the doc says CD; all CD tensors of
//     one call share a dtype.
//   - Every op computes in float32 (accumulating in float32 or better) and
//     rounds once, on store, to the destination's dtype with round to
//     nearest even.
//   - Parameter gradients (arguments named dw, dgain, ds, dmix, dx0) are
//     accumulated: the op adds (+=) into them, so gradient accumulation over
//     microbatches is free and the caller zeroes them once per step.
//     Activation gradients (dx, dq, ...) are overwritten unless the doc says
//     otherwise.
//   - Ops are asynchronous: they enqueue work. Sync waits for all of it;
//     Download syncs.
//   - Unless a doc says an argument may alias another, outputs must not alias
//     inputs.
//   - Programmer errors (wrong shapes or dtypes) panic with the op's name.
package backend

import "fmt"

// Tensor is a handle to backend-owned storage: a contiguous row-major array
// of Shape in DType, starting Offset elements into the storage Data.
// A Tensor made by Rows shares Data with its parent.
type Tensor struct {
	Shape  []int
	DType  DType
	Offset int // in elements, from the start of Data
	Data   any // the backend's own storage object
}

// Len is the number of elements.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Dim returns Shape[i]; negative i counts from the end.
func (t *Tensor) Dim(i int) int {
	if i < 0 {
		i += len(t.Shape)
	}
	return t.Shape[i]
}

// Rows is a view of rows [start, start+count) along the leading dimension.
func (t *Tensor) Rows(start, count int) *Tensor {
	if len(t.Shape) == 0 || start < 0 || count < 0 || start+count > t.Shape[0] {
		panic(fmt.Sprintf("backend: Rows(%d, %d) of shape %v", start, count, t.Shape))
	}
	rowLen := t.Len() / max(t.Shape[0], 1)
	shape := append([]int{count}, t.Shape[1:]...)
	return &Tensor{Shape: shape, DType: t.DType, Offset: t.Offset + start*rowLen, Data: t.Data}
}

// Reshape is a view with the same elements and another shape.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	v := &Tensor{Shape: append([]int(nil), shape...), DType: t.DType, Offset: t.Offset, Data: t.Data}
	if v.Len() != t.Len() {
		panic(fmt.Sprintf("backend: Reshape %v to %v", t.Shape, shape))
	}
	return v
}

func (t *Tensor) String() string { return fmt.Sprintf("%v%v", t.DType, t.Shape) }

// ReduceKind selects what Reduce adds into its scalar.
type ReduceKind int

const (
	ReduceSum        ReduceKind = iota // Σ x
	ReduceSumSquares                   // Σ x²
	ReduceNonFinite                    // number of elements that are ±Inf or NaN
)

// AdamParams are the hyperparameters of one Adam step. Step counts from 1.
type AdamParams struct {
	LR, Beta1, Beta2, Eps float32
	Step                  int
}

// Newton–Schulz quintic coefficients of Muon (Keller Jordan), and the
// epsilon of its Frobenius normalisation.
const (
	NSA   = 3.4445
	NSB   = -4.7750
	NSC   = 2.0315
	NSEps = 1e-7
)

// AttentionDSFloats is the size of the dS scratch a backend's attention
// backward may keep (see AttentionBackward) for B sequences of T rows and
// H query heads: per (sequence, head) the causal half of the T×T matrix in
// blocks of 64 query rows, block qb holding 64 rows of 64·(qb+1) keys.
// AttentionDSMaxBytes is its bound (512 MiB): 143 MB at the baseline's
// 8,192-token chunks of 1,024-row sequences; past the bound (long
// sequences: the scratch grows as T² per sequence) the backward
// recomputes dS instead, so attention's memory stays linear in T.
func AttentionDSFloats(B, T, H int) int {
	nb := (T + 63) / 64
	return B * H * 64 * 64 * nb * (nb + 1) / 2
}

// AttentionDSMaxBytes bounds AttentionDSFloats' scratch, in bytes.
const AttentionDSMaxBytes = 512 << 20

// RMSNormEps is the epsilon of every RMSNorm in the model.
const RMSNormEps = 1e-6

// Backend is the contract. See the package doc for conventions.
type Backend interface {
	// Name is a short identifier: "cpu", "metal", "cuda".
	Name() string
	// Device describes the hardware in a human-readable line.
	Device() string
	// Supports reports whether op (one of Ops) runs in dtype dt (the CD of
	// the call, or F32 for optimizer ops). A test of an unsupported pair
	// reports "not supported" instead of passing or failing.
	Supports(op Op, dt DType) bool

	// New allocates a zero-filled tensor.
	New(dt DType, shape ...int) *Tensor
	// Free releases t's storage (t must not be a view). Using t afterwards is
	// a programmer error.
	Free(t *Tensor)
	// Upload copies src ([]float32 for float tensors, rounded to t.DType; or
	// []int32 for I32) into t. len(src) == t.Len().
	Upload(t *Tensor, src any)
	// Download syncs and returns t's elements widened to float32 (I32
	// converted exactly up to 2^24).
	Download(t *Tensor) []float32
	// Sync waits for all enqueued work and returns the first error a device
	// reported since the last Sync.
	Sync() error

	// --- elementwise and reductions -------------------------------------

	// Zero sets every element of t to 0.
	Zero(t *Tensor)
	// Cast: dst = round_dst(src), any float dtypes, same number of elements.
	Cast(dst, src *Tensor)
	// Scale: x *= s in place (x F32).
	Scale(x *Tensor, s float32)
	// Axpy: dst += alpha·x, dst F32, x any float dtype, same number of elements.
	Axpy(dst, x *Tensor, alpha float32)
	// Reduce adds the reduction of x (any float dtype) into dst[0]
	// (F32 [1]), summing in float32 or better.
	Reduce(dst, x *Tensor, kind ReduceKind)

	// Accumulate adds alpha·Σ x (x any float dtype, summed in float32 or
	// better) into acc, a device accumulator: F32 [2] holding a running sum
	// and its compensation, whose value is
	//	acc[0] − acc[1]
	// Each addition is compensated (Kahan), so a total built from many
	// additions is within a few float32 roundings of the exact one (plain
	// float32 adds lose every term below half an ulp of the total). Zero
	// resets it. Nothing waits: a training loop adds each chunk's summed
	// loss on the device and reads the total once per logged step with
	// ReadScalar, instead of a host read per chunk.
	Accumulate(acc, x *Tensor, alpha float32)
	// ReadScalar waits for the work that last used acc (an accumulator of
	// Accumulate) and returns its value acc[0] − acc[1] in float64, with
	// the error Sync would return (which it then clears, as Sync does).
	// It is the one host read of a step that logs.
	ReadScalar(acc *Tensor) (float64, error)

	// --- model ops (forward and backward pairs) -------------------------

	// EmbeddingForward gathers rows: out[n,:] = w[ids[n],:].
	//	out CD [N,C], ids I32 [N], w CD [V,C]
	EmbeddingForward(out, ids, w *Tensor)
	// EmbeddingBackward scatter-adds: dw[ids[n],:] += dout[n,:], in a
	// deterministic order.
	//	dw F32 [V,C], ids I32 [N], dout CD [N,C]
	EmbeddingBackward(dw, ids, dout *Tensor)

	// RMSNormForward normalises each row without a weight:
	//	rstd[n] = 1/sqrt(mean_c x[n,c]² + RMSNormEps)
	//	out[n,c] = x[n,c]·rstd[n]
	//	out CD [N,C], rstd F32 [N], x CD [N,C]
	RMSNormForward(out, rstd, x *Tensor)
	// RMSNormBackward, with x̂ = x·rstd:
	//	dx[n,c] = dres[n,c] + rstd[n]·(dout[n,c] − x̂[n,c]·mean_c'(dout[n,c']·x̂[n,c']))
	// dres (CD [N,C]) may be nil (then 0) and dx may alias dres.
	//	dx CD [N,C], dout CD [N,C], x CD [N,C], rstd F32 [N]
	RMSNormBackward(dx, dout, x, rstd, dres *Tensor)

	// ResidMixForward: out[n,c] = mix[0,c]·x[n,c] + mix[1,c]·x0[n,c].
	//	out, x, x0 CD [N,C], mix F32 [2,C]
	ResidMixForward(out, x, x0, mix *Tensor)
	// ResidMixBackward:
	//	dx[n,c] = mix[0,c]·dout[n,c]                 (overwritten, CD)
	//	dx0[n,c] += mix[1,c]·dout[n,c]                (F32 [N,C])
	//	dmix[0,c] += Σn dout·x, dmix[1,c] += Σn dout·x0 (F32 [2,C])
	ResidMixBackward(dx, dx0, dmix, dout, x, x0, mix *Tensor)

	// LinearForward: out = x·wᵀ, out[n,o] = Σi x[n,i]·w[o,i].
	//	out CD [N,O], x CD [N,I], w CD [O,I]
	LinearForward(out, x, w *Tensor)
	// LinearBackward:
	//	dx = dout·w (+ dx when accumulate)     dx CD [N,I], may be nil
	//	dw += doutᵀ·x                          dw F32 [O,I], may be nil
	//	dout CD [N,O], x CD [N,I], w CD [O,I]
	LinearBackward(dx, dw, dout, x, w *Tensor, accumulate bool)

	// QKNormRopeForward applies, per row n and head h of x [N,Hx,D], an
	// RMSNorm over D, then rotary embedding (non-interleaved halves, position
	// p = n mod seqLen, θ_i = base^(−2i/D), i < D/2), then a per-head gain:
	//	rstd[n,h] = 1/sqrt(mean_d x[n,h,d]² + RMSNormEps);  u = x·rstd
	//	out[i]     = g[h]·(u[i]·cos(pθ_i) − u[i+D/2]·sin(pθ_i))
	//	out[i+D/2] = g[h]·(u[i]·sin(pθ_i) + u[i+D/2]·cos(pθ_i))
	// gain (F32 [Hx]) may be nil, meaning g = 1.
	//	out CD [N,Hx,D], rstd F32 [N,Hx], x CD [N,Hx,D]
	QKNormRopeForward(out, rstd, x, gain *Tensor, seqLen int, base float32)
	// QKNormRopeBackward: dx = ∂out/∂x ᵀ·dout (overwritten, CD [N,Hx,D]);
	// dgain[h] += Σ_{n,d} dout[n,h,d]·r[n,h,d] where r is the rotated u
	// before the gain (F32 [Hx]; nil to skip, and nil when gain is nil).
	QKNormRopeBackward(dx, dgain, dout, x, rstd, gain *Tensor, seqLen int, base float32)

	// AttentionForward is causal grouped-query attention over sequences of
	// seqLen rows (N = B·seqLen); query head h reads key/value head
	// h/(H/Hkv); scale = 1/sqrt(D). Softmax in float32:
	//	s[t,u] = scale·q[t,h]·k[u,hk] for u ≤ t (same sequence)
	//	lse[t,h] = log Σu exp(s[t,u]);  out[t,h] = Σu exp(s[t,u]−lse)·v[u,hk]
	//	out, q CD [N,H,D], k, v CD [N,Hkv,D], lse F32 [N,H]
	// No backend may materialise an N×T score matrix in device memory.
	AttentionForward(out, lse, q, k, v *Tensor, seqLen int)
	// AttentionBackward, with P = exp(s − lse) and δ[t,h] = Σd dout·out:
	//	dv[u] = Σt P[t,u]·dout[t];  dP = dout·vᵀ;  dS = P·(dP − δ)
	//	dq[t] = scale·Σu dS[t,u]·k[u];  dk[u] = scale·Σt dS[t,u]·q[t]
	// summed over the query heads of each group for dk and dv.
	// dq CD [N,H,D], dk, dv CD [N,Hkv,D] (overwritten).
	// A backend may keep dS in a scratch of its own between its kernels
	// (float, the causal half: B·H·T²/2 elements) so that dq does not
	// recompute it, within a fixed bound on that scratch, past which it
	// recomputes.
	AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse *Tensor, seqLen int)

	// ScaledAddForward: out[n,c] = x[n,c] + s[c]·y[n,c]; s (F32 [C]) nil
	// means 1. out may alias x. out, x, y CD [N,C].
	ScaledAddForward(out, x, y, s *Tensor)
	// ScaledAddBackward: dy = s⊙dout (overwritten; nil to skip);
	// ds[c] += Σn dout[n,c]·y[n,c] (nil to skip). The gradient with respect
	// to x is dout itself.
	//	dy CD [N,C], ds F32 [C], dout, y CD [N,C], s F32 [C] or nil
	ScaledAddBackward(dy, ds, dout, y, s *Tensor)

	// ReluSqForward: out = max(x,0)².  out, x CD, any shape.
	ReluSqForward(out, x *Tensor)
	// ReluSqBackward: dx = 2·max(x,0)·dout.  dx, dout, x CD.
	ReluSqBackward(dx, dout, x *Tensor)

	// SoftcapCEForward: per row, z = cap·tanh(logits/cap) in float32, then
	//	loss[n] = logsumexp(z[n,:]) − z[n,targets[n]]
	//	loss F32 [N], logits CD [N,V], targets I32 [N]
	SoftcapCEForward(loss, logits, targets *Tensor, cap float32)
	// SoftcapCEBackward, with p = softmax(z):
	//	dlogits[n,v] = scale·(p[n,v] − [v = targets[n]])·(1 − tanh²(logits[n,v]/cap))
	// scale is dLoss/dloss[n] (e.g. lossScale/total tokens).
	//	dlogits CD [N,V] (overwritten), logits CD [N,V], targets I32 [N]
	SoftcapCEBackward(dlogits, logits, targets *Tensor, cap, scale float32)

	// --- fused ops ---------------------------------------------------------
	//
	// Each fused op is, bit for bit, the sequence of unfused ops its doc
	// names, in one pass over memory: an intermediate the sequence stores
	// in CD is rounded exactly as the sequence rounds it, and what follows
	// is computed from the rounded value, so a model may call either form
	// and get the same bits. An intermediate the sequence stores only for
	// the next op of the sequence (and nobody else reads) is not stored.
	// The Op of every fused op is its own (OpResidMixRMSNorm, ...), and
	// Supports(op, dt) implies Supports of each op of its sequence.

	// ResidMixRMSNormForward is
	//	ResidMixForward(mix, x, x0, mixW); RMSNormForward(h, rstd, mix)
	// with mix stored (it is the residual stream).
	//	mix, h, x, x0 CD [N,C], rstd F32 [N], mixW F32 [2,C]
	ResidMixRMSNormForward(mix, h, rstd, x, x0, mixW *Tensor)
	// ScaledAddRMSNormForward is
	//	ScaledAddForward(out, x, y, s); RMSNormForward(h, rstd, out)
	// with out stored. out may alias x; s (F32 [C]) nil means 1.
	//	out, h, x, y CD [N,C], rstd F32 [N]
	ScaledAddRMSNormForward(out, h, rstd, x, y, s *Tensor)
	// QKNormRopePairForward is, in one launch over the rows of q and k,
	//	QKNormRopeForward(qOut, qRstd, q, qGain, seqLen, base)
	//	QKNormRopeForward(kOut, kRstd, k, kGain, seqLen, base)
	// q and k have the same rows N and head dim D (head counts may differ).
	QKNormRopePairForward(qOut, qRstd, q, qGain, kOut, kRstd, k, kGain *Tensor, seqLen int, base float32)
	// QKNormRopePairBackward is, in one launch,
	//	QKNormRopeBackward(dq, dqGain, dqOut, q, qRstd, qGain, seqLen, base)
	//	QKNormRopeBackward(dk, dkGain, dkOut, k, kRstd, kGain, seqLen, base)
	QKNormRopePairBackward(dq, dqGain, dqOut, q, qRstd, qGain, dk, dkGain, dkOut, k, kRstd, kGain *Tensor, seqLen int, base float32)
	// RMSNormResidMixBackward is, with dm a CD [N,C] intermediate that is
	// not stored,
	//	RMSNormBackward(dm, dout, xm, rstd, dres)
	//	ResidMixBackward(dx, dx0, dmix, dm, x, x0, mixW)
	// the backward of xm = ResidMix(x, x0) followed by RMSNorm(xm), where
	// dres (CD [N,C], may be nil) is the gradient reaching xm by the
	// residual path. No output may alias an input or another output.
	//	dx CD [N,C] (overwritten), dx0 F32 [N,C], dmix F32 [2,C] (added into)
	//	dout, xm, x, x0 CD [N,C], rstd F32 [N], mixW F32 [2,C]
	RMSNormResidMixBackward(dx, dx0, dmix, dout, xm, rstd, dres, x, x0, mixW *Tensor)
	// SoftcapCEForwardBackward is
	//	SoftcapCEForward(loss, logits, targets, cap)
	//	SoftcapCEBackward(dlogits, logits, targets, cap, scale)
	// in one pass over the logits: the row's log-sum-exp is computed once.
	//	loss F32 [N], dlogits CD [N,V] (overwritten), logits CD [N,V], targets I32 [N]
	SoftcapCEForwardBackward(loss, dlogits, logits, targets *Tensor, cap, scale float32)
	// LinearReluSqForward is
	//	LinearForward(h, x, w); ReluSqForward(a, h)
	// with h stored (the backward reads it): a is computed from the
	// rounded h.
	//	h, a CD [N,O], x CD [N,I], w CD [O,I]
	LinearReluSqForward(h, a, x, w *Tensor)
	// LinearReluSqBackward is, with da a CD [N,I] intermediate that is not
	// stored,
	//	LinearBackward(da, dw, dout, a, w, false)
	//	ReluSqBackward(dh, da, h)
	// the backward of a = relu(h)² followed by out = a·wᵀ: dh is computed
	// from the rounded da. No output may alias an input or another output.
	//	dh, a, h CD [N,I], dout CD [N,O], w CD [O,I]
	//	dw F32 [O,I] (added into; nil to skip)
	LinearReluSqBackward(dh, dw, dout, a, h, w *Tensor)
	// LinearScaledAddForward is
	//	LinearForward(y, x, w); ScaledAddForward(out, res, y, s)
	// with y stored (the backward of the scaled add reads it): out is
	// computed from the rounded y. out may alias res; s (F32 [O]) nil
	// means 1. y may alias no other argument.
	//	y, out, res CD [N,O], x CD [N,I], w CD [O,I]
	LinearScaledAddForward(y, out, x, w, res, s *Tensor)

	// --- optimizers (all F32; NewtonSchulz also accepts other float
	// dtypes for g and out and computes in float32) ----------------------

	// AdamStep updates p in place (Adam with bias correction, as MLX):
	//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
	//	p −= lr·(m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + eps)
	AdamStep(p, g, m, v *Tensor, hp AdamParams)
	// MuonMomentum: buf = μ·buf + g; geff = g + μ·buf (Nesterov).
	MuonMomentum(buf, geff, g *Tensor, momentum float32)
	// NewtonSchulz writes the quintic Newton–Schulz orthogonalisation of
	// g [R,C] into out [R,C]:
	//	X = g/(‖g‖_F + NSEps); if R > C work on Xᵀ
	//	repeat steps: A = X·Xᵀ; B = NSB·A + NSC·A·A; X = NSA·X + B·X
	NewtonSchulz(out, g *Tensor, steps int)
}

// MuonBatcher is implemented by a backend that can run Muon's update of
// several matrices side by side. MuonUpdate is, for every i and bitwise,
//
//	MuonMomentum(bufs[i], geff, gs[i], momentum)
//	NewtonSchulz(x, geff, steps)
//	Axpy(ws[i], x, alphas[i])
//
// with geff and x F32 scratch of gs[i]'s shape that the backend keeps to
// itself. ws, gs and bufs are F32 and 2-D.
type MuonBatcher interface {
	MuonUpdate(ws, gs, bufs []*Tensor, momentum float32, alphas []float32, steps int)
}
