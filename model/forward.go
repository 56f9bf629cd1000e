package model

// The forward pass, written as a flat list of backend op calls (llm.c
// style). Legend, used in every shape comment of this package:
//
//	B   = sequences in the batch      T   = sequence length (seqLen)
//	N   = rows, B·T                   C   = ModelDim
//	H   = NumHeads                    Hkv = NumKVHeads
//	D   = head dim, C/H               KV  = Hkv·D
//	F   = MLP hidden, MLPMult·C       V   = VocabSize
//	L   = NumLayers                   E   = encoder blocks, L/2
//	S   = skip weights, min(E, L−E)   K   = logit rows per chunk
//
// "CD" tensors are stored in the model's compute dtype; "F32" tensors are
// always float32 (statistics saved for the backward pass, the loss).
//
// The network (train_gpt_mlx.py GPT.__call__ and GPT.loss):
//
//	x0 = rmsnorm(tok_emb[ids]);  x = x0
//	encoder block j < E:   x = block_j(x, x0);  push x
//	decoder block E+i:     if a skip is left: x = x + skip_weights[i]⊙pop()
//	                       x = block_{E+i}(x, x0)
//	loss[n] = softcap_ce(rmsnorm(x)[n]·tok_embᵀ, targets[n])
//
//	block(x, x0):
//	  x = resid_mix[0]⊙x + resid_mix[1]⊙x0
//	  h = rmsnorm(x);  q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ
//	  q = rope(rmsnorm_D(q))·q_gain;  k = rope(rmsnorm_D(k))
//	  x = x + attn_scale⊙(attention(q, k, v)·Wprojᵀ)
//	  h = rmsnorm(x)
//	  x = x + mlp_scale⊙(relu(h·Wfcᵀ)²·Wmlpprojᵀ)

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
)

// acts are one block's tensors. In a training workspace every block owns
// them (the backward pass reads them); in an evaluation workspace all blocks
// share one set except in and out.
type acts struct {
	in    *backend.Tensor // CD (N,C)   block input (after the skip add)
	mix   *backend.Tensor // CD (N,C)   resid_mix output: the residual stream
	rstd1 *backend.Tensor // F32 (N)    attention-norm statistics
	h1    *backend.Tensor // CD (N,C)   rmsnorm(mix)
	q     *backend.Tensor // CD (N,C)   = (N,H,D) before norm and RoPE
	k     *backend.Tensor // CD (N,KV)  = (N,Hkv,D)
	v     *backend.Tensor // CD (N,KV)
	qr    *backend.Tensor // CD (N,C)   q after norm, RoPE and gain
	qrstd *backend.Tensor // F32 (N,H)
	kr    *backend.Tensor // CD (N,KV)  k after norm and RoPE
	krstd *backend.Tensor // F32 (N,Hkv)
	y     *backend.Tensor // CD (N,C)   attention output
	lse   *backend.Tensor // F32 (N,H)  softmax log-sum-exp
	ao    *backend.Tensor // CD (N,C)   y·Wprojᵀ
	x1    *backend.Tensor // CD (N,C)   mix + attn_scale⊙ao
	rstd2 *backend.Tensor // F32 (N)    MLP-norm statistics
	h2    *backend.Tensor // CD (N,C)   rmsnorm(x1)
	fc    *backend.Tensor // CD (N,F)   h2·Wfcᵀ
	act   *backend.Tensor // CD (N,F)   relu(fc)²
	mo    *backend.Tensor // CD (N,C)   act·Wmlpprojᵀ
	out   *backend.Tensor // CD (N,C)   x1 + mlp_scale⊙mo
}

// workspace holds every buffer of one row count N, allocated once and
// reused by each call with that N.
type workspace struct {
	n     int
	owned []*backend.Tensor // everything allocated here

	emb    *backend.Tensor // CD (N,C)  tok_emb[ids]
	x0     *backend.Tensor // CD (N,C)  rmsnorm(emb)
	rstd0  *backend.Tensor // F32 (N)
	blocks []acts          // (L)
	xf     *backend.Tensor // CD (N,C)  final rmsnorm
	rstdf  *backend.Tensor // F32 (N)
	logits *backend.Tensor // CD (K,V)  one chunk of pre-softcap logits
	loss   *backend.Tensor // F32 (N)   per-row cross-entropy
	g      *grads          // backward scratch; nil in evaluation workspaces

	// The latest Forward's inputs, read again by Backward.
	ids, targets *backend.Tensor // I32 (N)
	seqLen       int
	// headGrad: the latest forward also ran the head's backward with
	// gradScale (ForwardBackward), so Backward starts at the final norm.
	headGrad  bool
	gradScale float32
}

func (ws *workspace) alloc(b backend.Backend, dt backend.DType, shape ...int) *backend.Tensor {
	t := b.New(dt, shape...)
	ws.owned = append(ws.owned, t)
	return t
}

func (ws *workspace) free(b backend.Backend) {
	for _, t := range ws.owned {
		b.Free(t)
	}
	ws.owned = nil
}

// chunkRows is K: the rows of one logits chunk for N rows. As the
// reference, LOGIT_CHUNK_TOKENS ≤ 0 or N ≤ LOGIT_CHUNK_TOKENS is one chunk.
func (m *Model) chunkRows(n int) int {
	if k := m.Cfg.LogitChunkTokens; k > 0 && n > k {
		return k
	}
	return n
}

// newWorkspace allocates the buffers for n rows; training workspaces keep
// every block's activations and the backward scratch.
func (m *Model) newWorkspace(n int, training bool) *workspace {
	b, cd, c := m.B, m.DType, m.Cfg
	C, KV, F, H, Hkv := c.ModelDim, c.KVDim(), c.MLPMult*c.ModelDim, c.NumHeads, c.NumKVHeads
	ws := &workspace{n: n}
	ws.emb = ws.alloc(b, cd, n, C)
	ws.x0 = ws.alloc(b, cd, n, C)
	ws.rstd0 = ws.alloc(b, backend.F32, n)
	ws.xf = ws.alloc(b, cd, n, C)
	ws.rstdf = ws.alloc(b, backend.F32, n)
	ws.logits = ws.alloc(b, cd, m.chunkRows(n), c.VocabSize)
	ws.loss = ws.alloc(b, backend.F32, n)

	newActs := func() acts {
		return acts{
			mix: ws.alloc(b, cd, n, C), rstd1: ws.alloc(b, backend.F32, n), h1: ws.alloc(b, cd, n, C),
			q: ws.alloc(b, cd, n, C), k: ws.alloc(b, cd, n, KV), v: ws.alloc(b, cd, n, KV),
			qr: ws.alloc(b, cd, n, C), qrstd: ws.alloc(b, backend.F32, n, H),
			kr: ws.alloc(b, cd, n, KV), krstd: ws.alloc(b, backend.F32, n, Hkv),
			y: ws.alloc(b, cd, n, C), lse: ws.alloc(b, backend.F32, n, H), ao: ws.alloc(b, cd, n, C),
			x1: ws.alloc(b, cd, n, C), rstd2: ws.alloc(b, backend.F32, n), h2: ws.alloc(b, cd, n, C),
			fc: ws.alloc(b, cd, n, F), act: ws.alloc(b, cd, n, F), mo: ws.alloc(b, cd, n, C),
		}
	}
	L, E, S := c.NumLayers, c.NumEncoderLayers(), c.NumSkipWeights()
	ws.blocks = make([]acts, L)
	if training {
		for l := range L {
			ws.blocks[l] = newActs()
			ws.blocks[l].out = ws.alloc(b, cd, n, C)
		}
		ws.g = m.newGrads(ws, n)
	} else {
		// Encoder outputs stay alive for their skips; decoder outputs
		// alternate between two buffers; one buffer takes the skip adds.
		shared := newActs()
		skipIn, pingPong := ws.alloc(b, cd, n, C), [2]*backend.Tensor{ws.alloc(b, cd, n, C), ws.alloc(b, cd, n, C)}
		for l := range L {
			ws.blocks[l] = shared
			if l < E {
				ws.blocks[l].out = ws.alloc(b, cd, n, C)
			} else {
				ws.blocks[l].out = pingPong[(l-E)%2]
				if l-E < S {
					ws.blocks[l].in = skipIn
				}
			}
		}
	}
	// Inputs: block 0 reads x0; a block with no skip add reads its
	// predecessor's output directly.
	for l := range L {
		switch {
		case l == 0:
			ws.blocks[l].in = ws.x0
		case l < E || l-E >= S:
			ws.blocks[l].in = ws.blocks[l-1].out
		case training:
			ws.blocks[l].in = ws.alloc(b, cd, n, C)
		}
	}
	return ws
}

// workspaceFor returns the cached workspace for n rows, allocating it on
// first use.
func (m *Model) workspaceFor(n int, training bool) *workspace {
	cache := m.eval
	if training {
		cache = m.train
	}
	ws := cache[n]
	if ws == nil {
		ws = m.newWorkspace(n, training)
		cache[n] = ws
	}
	return ws
}

// checkInputs panics unless ids and targets are I32 with N = B·seqLen
// elements each, and the CD weights have been cast.
func (m *Model) checkInputs(op string, ids, targets *backend.Tensor, seqLen int) int {
	n := ids.Len()
	switch {
	case ids.DType != backend.I32 || targets.DType != backend.I32:
		panic(fmt.Sprintf("model.%s: ids %v and targets %v must be i32", op, ids, targets))
	case targets.Len() != n:
		panic(fmt.Sprintf("model.%s: ids %v and targets %v differ in length", op, ids, targets))
	case seqLen <= 0 || n == 0 || n%seqLen != 0:
		panic(fmt.Sprintf("model.%s: %d rows are not a positive multiple of seqLen %d", op, n, seqLen))
	case !m.cast:
		panic(fmt.Sprintf("model.%s: CastWeights has not run since the weights were set", op))
	}
	return n
}

// Forward runs the network on ids (I32, N = B·seqLen elements, row-major
// [B,T]) and leaves the per-row losses against targets in RowLoss, keeping
// every activation the backward pass needs. ids and targets must stay
// unchanged until Backward. Enqueues work only; nothing syncs.
func (m *Model) Forward(ids, targets *backend.Tensor, seqLen int) {
	n := m.checkInputs("Forward", ids, targets, seqLen)
	ws := m.workspaceFor(n, true)
	ws.headGrad = false
	m.forward(ws, m.flat(ids, n), m.flat(targets, n), seqLen)
	m.last = ws
}

// ForwardBackward is Forward then Backward(gradScale), bit for bit, in
// fewer passes: knowing gradScale, the forward pass runs the head's
// backward on each logits chunk as soon as its losses are computed (the
// fused cross-entropy, one pass over the logits for the loss and its
// gradient), so Backward neither reads the logits again nor, with logit
// chunks, recomputes them. With Unfused it is Forward then Backward.
func (m *Model) ForwardBackward(ids, targets *backend.Tensor, seqLen int, gradScale float32) {
	if m.Unfused {
		m.Forward(ids, targets, seqLen)
		m.Backward(gradScale)
		return
	}
	n := m.checkInputs("ForwardBackward", ids, targets, seqLen)
	ws := m.workspaceFor(n, true)
	ws.headGrad, ws.gradScale = true, gradScale
	m.forward(ws, m.flat(ids, n), m.flat(targets, n), seqLen)
	m.last = ws
	m.Backward(gradScale)
}

// RowLoss is the per-row cross-entropy F32 (N) of the latest Forward.
func (m *Model) RowLoss() *backend.Tensor {
	if m.last == nil {
		panic("model.RowLoss: no Forward has run")
	}
	return m.last.loss
}

// LossSum downloads RowLoss (a sync) and sums it in float64.
func (m *Model) LossSum() float64 {
	s := 0.0
	for _, v := range m.B.Download(m.RowLoss()) {
		s += float64(v)
	}
	return s
}

// Loss is the forward-only path for validation: it returns Σ_n loss[n] over
// the N rows of ids (summed in float64 on the host), keeping no activations
// beyond one block's scratch and the encoder outputs.
func (m *Model) Loss(ids, targets *backend.Tensor, seqLen int) float64 {
	n := m.checkInputs("Loss", ids, targets, seqLen)
	ws := m.workspaceFor(n, false)
	m.forward(ws, m.flat(ids, n), m.flat(targets, n), seqLen)
	s := 0.0
	for _, v := range m.B.Download(ws.loss) {
		s += float64(v)
	}
	return s
}

// forward is the flat op list shared by training and evaluation.
func (m *Model) forward(ws *workspace, ids, targets *backend.Tensor, seqLen int) {
	b, c := m.B, m.Cfg
	E, S := c.NumEncoderLayers(), c.NumSkipWeights()
	ws.ids, ws.targets, ws.seqLen = ids, targets, seqLen

	b.EmbeddingForward(ws.emb, ids, m.embCD) // (N,C)
	b.RMSNormForward(ws.x0, ws.rstd0, ws.emb)
	for l := range c.NumLayers {
		a := &ws.blocks[l]
		if i := l - E; i >= 0 && i < S {
			// Decoder block i adds the i-th skip from the end of the stack.
			b.ScaledAddForward(a.in, ws.blocks[l-1].out, ws.blocks[E-1-i].out, m.skipRow(m.skipW.W, i))
		}
		// The last block's output add also makes the final norm (N,C).
		m.blockForward(&m.blocks[l], a, ws.x0, seqLen, l == c.NumLayers-1, ws.xf, ws.rstdf)
	}

	k := ws.logits.Dim(0)
	for s := 0; s < ws.n; s += k {
		r := min(k, ws.n-s)
		logits, xf := m.rows(ws.logits, 0, r), m.rows(ws.xf, s, r) // (r,V), (r,C)
		b.LinearForward(logits, xf, m.embCD)
		loss, tg := m.rows(ws.loss, s, r), m.rows(targets, s, r)
		if !ws.headGrad {
			b.SoftcapCEForward(loss, logits, tg, float32(c.LogitSoftcap))
			continue
		}
		// The head's backward while the chunk's logits are in place (see
		// ForwardBackward).
		dlogits := m.rows(ws.g.dlogits, 0, r)
		b.SoftcapCEForwardBackward(loss, dlogits, logits, tg, float32(c.LogitSoftcap), ws.gradScale)
		b.LinearBackward(m.rows(ws.g.dh, s, r), m.tokEmb.G, dlogits, xf, m.embCD, false)
	}
}

// skipRow is row i of a (S,C) tensor as a (C) vector.
func (m *Model) skipRow(t *backend.Tensor, i int) *backend.Tensor {
	return m.view(viewKey{t, viewSkipRow, i, 1}, func() *backend.Tensor { return t.Rows(i, 1).Reshape(m.Cfg.ModelDim) })
}

// heads views a (N, h·D) tensor as (N, h, D).
func (m *Model) heads(t *backend.Tensor) *backend.Tensor {
	D := m.Cfg.HeadDim()
	return m.view(viewKey{t, viewHeads, 0, 0}, func() *backend.Tensor { return t.Reshape(t.Dim(0), t.Dim(1)/D, D) })
}

// blockForward computes a.out from a.in and x0; with last, also the final
// norm of a.out into xf and rstdf.
func (m *Model) blockForward(bl *block, a *acts, x0 *backend.Tensor, seqLen int, last bool, xf, rstdf *backend.Tensor) {
	b, base := m.B, float32(m.Cfg.RopeBase)
	if m.Unfused {
		b.ResidMixForward(a.mix, a.in, x0, bl.residMix.W) // (N,C)
		b.RMSNormForward(a.h1, a.rstd1, a.mix)
	} else {
		b.ResidMixRMSNormForward(a.mix, a.h1, a.rstd1, a.in, x0, bl.residMix.W)
	}
	b.LinearForward(a.q, a.h1, bl.wq) // (N,C)
	b.LinearForward(a.k, a.h1, bl.wk) // (N,KV)
	b.LinearForward(a.v, a.h1, bl.wv) // (N,KV)
	if m.Unfused {
		b.QKNormRopeForward(m.heads(a.qr), a.qrstd, m.heads(a.q), bl.qGain.W, seqLen, base)
		b.QKNormRopeForward(m.heads(a.kr), a.krstd, m.heads(a.k), nil, seqLen, base)
	} else {
		b.QKNormRopePairForward(m.heads(a.qr), a.qrstd, m.heads(a.q), bl.qGain.W, m.heads(a.kr), a.krstd, m.heads(a.k), nil, seqLen, base)
	}
	b.AttentionForward(m.heads(a.y), a.lse, m.heads(a.qr), m.heads(a.kr), m.heads(a.v), seqLen)
	b.LinearForward(a.ao, a.y, bl.wo) // (N,C)
	if m.Unfused {
		b.ScaledAddForward(a.x1, a.mix, a.ao, bl.attnScale.W)
		b.RMSNormForward(a.h2, a.rstd2, a.x1)
	} else {
		b.ScaledAddRMSNormForward(a.x1, a.h2, a.rstd2, a.mix, a.ao, bl.attnScale.W)
	}
	if m.Unfused {
		b.LinearForward(a.fc, a.h2, bl.wfc) // (N,F)
		b.ReluSqForward(a.act, a.fc)
	} else {
		b.LinearReluSqForward(a.fc, a.act, a.h2, bl.wfc) // (N,F)
	}
	switch {
	case last && !m.Unfused:
		b.LinearForward(a.mo, a.act, bl.wmp) // (N,C)
		b.ScaledAddRMSNormForward(a.out, xf, rstdf, a.x1, a.mo, bl.mlpScale.W)
	case last:
		b.LinearForward(a.mo, a.act, bl.wmp)
		b.ScaledAddForward(a.out, a.x1, a.mo, bl.mlpScale.W)
		b.RMSNormForward(xf, rstdf, a.out)
	case m.Unfused:
		b.LinearForward(a.mo, a.act, bl.wmp)
		b.ScaledAddForward(a.out, a.x1, a.mo, bl.mlpScale.W)
	default:
		b.LinearScaledAddForward(a.mo, a.out, a.act, bl.wmp, a.x1, bl.mlpScale.W) // (N,C)
	}
}
