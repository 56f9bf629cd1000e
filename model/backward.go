package model

// The backward pass, the forward's op list reversed (legend in forward.go).
// Every backward op adds (+=) into the parameter gradients Param.G, so
// gradient accumulation over microbatches is free: zero the gradients once
// per optimizer step (ZeroGrads), then for each microbatch
//
//	m.Forward(ids, targets, seqLen)
//	m.Backward(lossScale / tokensInStep)
//
// (or LossAndGrad, which does both and returns the summed loss).

import (
	"github.com/golf-ml/golf/backend"
)

// grads is the backward scratch of a training workspace, shared by all
// blocks (the activations' gradients live only while their block is
// processed).
type grads struct {
	d, dIn  *backend.Tensor   // CD (N,C)  gradient at a block's output / input (swapped per block)
	dh      *backend.Tensor   // CD (N,C)  gradient at h1, h2 and the final norm's output
	dproj   *backend.Tensor   // CD (N,C)  gradient at ao and at mo
	dy      *backend.Tensor   // CD (N,C)  gradient at the attention output
	dact    *backend.Tensor   // CD (N,F)
	dfc     *backend.Tensor   // CD (N,F)
	dqr, dq *backend.Tensor   // CD (N,C)
	dkr, dk *backend.Tensor   // CD (N,KV)
	dv      *backend.Tensor   // CD (N,KV)
	dx0     *backend.Tensor   // F32 (N,C) gradient at x0 from every block's resid_mix
	dskip   []*backend.Tensor // CD (N,C) ×E: skip-add gradients waiting for their encoder output
	dlogits *backend.Tensor   // CD (K,V)
}

func (m *Model) newGrads(ws *workspace, n int) *grads {
	b, cd, c := m.B, m.DType, m.Cfg
	C, KV, F := c.ModelDim, c.KVDim(), c.MLPMult*c.ModelDim
	g := &grads{
		d: ws.alloc(b, cd, n, C), dIn: ws.alloc(b, cd, n, C), dh: ws.alloc(b, cd, n, C),
		dproj: ws.alloc(b, cd, n, C), dy: ws.alloc(b, cd, n, C),
		dact: ws.alloc(b, cd, n, F), dfc: ws.alloc(b, cd, n, F),
		dqr: ws.alloc(b, cd, n, C), dq: ws.alloc(b, cd, n, C),
		dkr: ws.alloc(b, cd, n, KV), dk: ws.alloc(b, cd, n, KV), dv: ws.alloc(b, cd, n, KV),
		dx0:     ws.alloc(b, backend.F32, n, C),
		dlogits: ws.alloc(b, cd, ws.logits.Dim(0), c.VocabSize),
	}
	// Encoder output j is skipped into decoder block E−1−j when j ≥ E−S.
	E, S := c.NumEncoderLayers(), c.NumSkipWeights()
	g.dskip = make([]*backend.Tensor, E)
	for j := E - S; j < E; j++ {
		g.dskip[j] = ws.alloc(b, cd, n, C)
	}
	return g
}

// LossAndGrad runs Forward then Backward(gradScale) and returns Σ_n loss[n]
// over the N rows (a sync).
func (m *Model) LossAndGrad(ids, targets *backend.Tensor, seqLen int, gradScale float32) float64 {
	m.ForwardBackward(ids, targets, seqLen, gradScale)
	return m.LossSum()
}

// Backward adds the gradient of gradScale·Σ_n loss[n] (the rows of the
// latest Forward) into every Param.G. With logit chunks the softcapped
// cross-entropy is differentiated chunk by chunk, recomputing each chunk's
// logits; with one chunk the forward's logits are still in place.
func (m *Model) Backward(gradScale float32) {
	ws := m.last
	if ws == nil {
		panic("model.Backward: no Forward has run")
	}
	b, c, g := m.B, m.Cfg, ws.g
	L, E, S := c.NumLayers, c.NumEncoderLayers(), c.NumSkipWeights()
	T := ws.seqLen

	// Head: dxf = ∂/∂xf of the chunks' cross-entropy; tok_emb.G += dlogitsᵀ·xf
	// (already done by the forward pass of ForwardBackward).
	k := ws.logits.Dim(0)
	for s := 0; s < ws.n && !ws.headGrad; s += k {
		r := min(k, ws.n-s)
		logits, dlogits, xf := m.rows(ws.logits, 0, r), m.rows(g.dlogits, 0, r), m.rows(ws.xf, s, r) // (r,V), (r,V), (r,C)
		if k < ws.n {
			b.LinearForward(logits, xf, m.embCD)
		}
		b.SoftcapCEBackward(dlogits, logits, m.rows(ws.targets, s, r), float32(c.LogitSoftcap), gradScale)
		b.LinearBackward(m.rows(g.dh, s, r), m.tokEmb.G, dlogits, xf, m.embCD, false)
	}
	b.RMSNormBackward(g.d, g.dh, ws.blocks[L-1].out, ws.rstdf, nil) // (N,C)

	b.Zero(g.dx0)
	for l := L - 1; l >= 0; l-- {
		a := &ws.blocks[l]
		if l < E && g.dskip[l] != nil {
			// Encoder output l also fed decoder block E−1−l's skip add.
			b.ScaledAddForward(g.d, g.d, g.dskip[l], nil)
		}
		m.blockBackward(&m.blocks[l], a, g, ws.x0, T)
		if m.OnBlockGrads != nil {
			m.OnBlockGrads(l)
		}
		if i := l - E; i >= 0 && i < S {
			// in = prev + skip_weights[i]⊙skip: prev's gradient is dIn itself.
			b.ScaledAddBackward(g.dskip[E-1-i], m.skipRow(m.skipW.G, i), g.dIn, ws.blocks[E-1-i].out, m.skipRow(m.skipW.W, i))
		}
		g.d, g.dIn = g.dIn, g.d
	}

	// Block 0's input is x0: its gradient joins the resid_mix paths, then
	// flows through the first rmsnorm into the embedding rows.
	b.Axpy(g.dx0, g.d, 1)
	b.Cast(g.d, g.dx0)
	b.RMSNormBackward(g.dh, g.d, ws.emb, ws.rstd0, nil) // (N,C)
	b.EmbeddingBackward(m.tokEmb.G, ws.ids, g.dh)
	ws.headGrad = false // a second Backward differentiates the head itself
}

// blockBackward takes g.d, the gradient at a.out, and writes the gradient at
// a.in into g.dIn, adding into the block's parameter gradients and into
// g.dx0. g.d is consumed.
func (m *Model) blockBackward(bl *block, a *acts, g *grads, x0 *backend.Tensor, seqLen int) {
	b, base := m.B, float32(m.Cfg.RopeBase)
	// out = x1 + mlp_scale⊙mo
	b.ScaledAddBackward(g.dproj, bl.mlpScale.G, g.d, a.mo, bl.mlpScale.W)
	if m.Unfused {
		b.LinearBackward(g.dact, bl.mlpProj.G, g.dproj, a.act, bl.wmp, false) // (N,F)
		b.ReluSqBackward(g.dfc, g.dact, a.fc)
	} else {
		b.LinearReluSqBackward(g.dfc, bl.mlpProj.G, g.dproj, a.act, a.fc, bl.wmp) // (N,F)
	}
	b.LinearBackward(g.dh, bl.fc.G, g.dfc, a.h2, bl.wfc, false) // (N,C)
	b.RMSNormBackward(g.d, g.dh, a.x1, a.rstd2, g.d)            // g.d = ∂/∂x1
	// x1 = mix + attn_scale⊙ao
	b.ScaledAddBackward(g.dproj, bl.attnScale.G, g.d, a.ao, bl.attnScale.W)
	b.LinearBackward(g.dy, bl.proj.G, g.dproj, a.y, bl.wo, false)
	b.AttentionBackward(m.heads(g.dqr), m.heads(g.dkr), m.heads(g.dv), m.heads(g.dy),
		m.heads(a.qr), m.heads(a.kr), m.heads(a.v), m.heads(a.y), a.lse, seqLen)
	if m.Unfused {
		b.QKNormRopeBackward(m.heads(g.dq), bl.qGain.G, m.heads(g.dqr), m.heads(a.q), a.qrstd, bl.qGain.W, seqLen, base)
		b.QKNormRopeBackward(m.heads(g.dk), nil, m.heads(g.dkr), m.heads(a.k), a.krstd, nil, seqLen, base)
	} else {
		b.QKNormRopePairBackward(m.heads(g.dq), bl.qGain.G, m.heads(g.dqr), m.heads(a.q), a.qrstd, bl.qGain.W,
			m.heads(g.dk), nil, m.heads(g.dkr), m.heads(a.k), a.krstd, nil, seqLen, base)
	}
	b.LinearBackward(g.dh, bl.cq.G, g.dq, a.h1, bl.wq, false)
	b.LinearBackward(g.dh, bl.ck.G, g.dk, a.h1, bl.wk, true)
	b.LinearBackward(g.dh, bl.cv.G, g.dv, a.h1, bl.wv, true)
	// mix = resid_mix[0]⊙in + resid_mix[1]⊙x0, then h1 = rmsnorm(mix); g.d
	// holds the residual path's ∂/∂mix.
	if m.Unfused {
		b.RMSNormBackward(g.d, g.dh, a.mix, a.rstd1, g.d) // g.d = ∂/∂mix
		b.ResidMixBackward(g.dIn, g.dx0, bl.residMix.G, g.d, a.in, x0, bl.residMix.W)
	} else {
		b.RMSNormResidMixBackward(g.dIn, g.dx0, bl.residMix.G, g.dh, a.mix, a.rstd1, g.d, a.in, x0, bl.residMix.W)
	}
}
