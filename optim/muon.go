package optim

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// Muon is SGD with Nesterov momentum whose update is orthogonalised by
// Newton–Schulz before it is applied (the reference's Muon class). Every
// parameter is a 2-D matrix [R,C]; its momentum buffer is F32, allocated
// once, zero.
//
//	buf  = μ·buf + g
//	geff = g + μ·buf
//	X    = NewtonSchulz(geff, steps)
//	p   −= lr·sqrt(max(1, R/C))·X
type Muon struct {
	b        backend.Backend
	params   []*model.Param
	bufs     []*backend.Tensor // F32, shaped like each parameter
	geff, ns *backend.Tensor   // F32 (maxLen): scratch shared by every parameter
	geffs    []*backend.Tensor // F32 (R, C) views of geff, one per parameter
	nss      []*backend.Tensor // F32 (R, C) views of ns, one per parameter
	LR       float64           // base learning rate; Step multiplies it by lrMul
	NSSteps  int               // Newton–Schulz iterations

	// For a backend.MuonBatcher: the weights, gradients and each step's
	// alphas, gathered once.
	ws, gs []*backend.Tensor
	alphas []float32
}

// NewMuon allocates the momentum buffers of params (each 2-D) and one pair
// of scratch tensors as large as the largest of them.
func NewMuon(b backend.Backend, params []*model.Param, lr float64, steps int) *Muon {
	mu := &Muon{b: b, params: params, LR: lr, NSSteps: steps}
	maxLen := 0
	for _, p := range params {
		if len(p.W.Shape) != 2 {
			panic("optim.NewMuon: parameter " + p.Name + " is not 2-D")
		}
		mu.bufs = append(mu.bufs, b.New(backend.F32, p.W.Shape...))
		maxLen = max(maxLen, p.W.Len())
	}
	if maxLen > 0 {
		mu.geff = b.New(backend.F32, maxLen)
		mu.ns = b.New(backend.F32, maxLen)
	}
	for _, p := range params {
		r, c := p.W.Shape[0], p.W.Shape[1]
		mu.geffs = append(mu.geffs, mu.geff.Rows(0, r*c).Reshape(r, c))
		mu.nss = append(mu.nss, mu.ns.Rows(0, r*c).Reshape(r, c))
	}
	return mu
}

// Step updates every matrix with momentum μ and learning rate LR·lrMul: on
// a backend.MuonBatcher in one call (the same bits), else matrix by matrix.
func (mu *Muon) Step(momentum, lrMul float64) {
	lr := mu.LR * lrMul
	if mb, ok := mu.b.(backend.MuonBatcher); ok && len(mu.params) > 0 {
		if mu.ws == nil {
			n := len(mu.params)
			mu.ws, mu.gs, mu.alphas = make([]*backend.Tensor, n), make([]*backend.Tensor, n), make([]float32, n)
		}
		for i, p := range mu.params {
			mu.ws[i], mu.gs[i] = p.W, p.G
			mu.alphas[i] = float32(-lr * muonScale(p.W))
		}
		mb.MuonUpdate(mu.ws, mu.gs, mu.bufs, float32(momentum), mu.alphas, mu.NSSteps)
		return
	}
	for i, p := range mu.params {
		mu.b.MuonMomentum(mu.bufs[i], mu.geffs[i], p.G, float32(momentum))
		mu.b.NewtonSchulz(mu.nss[i], mu.geffs[i], mu.NSSteps)
		mu.b.Axpy(p.W, mu.nss[i], float32(-lr*muonScale(p.W)))
	}
}

// muonScale is the reference's sqrt(max(1, R/C)) of a weight (R, C).
func muonScale(w *backend.Tensor) float64 {
	return math.Sqrt(max(1, float64(w.Shape[0])/float64(w.Shape[1])))
}

// Free releases the buffers and the scratch.
func (mu *Muon) Free() {
	for _, t := range mu.bufs {
		mu.b.Free(t)
	}
	if mu.geff != nil {
		mu.b.Free(mu.geff)
		mu.b.Free(mu.ns)
	}
	mu.bufs, mu.geff, mu.ns, mu.geffs, mu.nss = nil, nil, nil, nil, nil
	mu.ws, mu.gs, mu.alphas = nil, nil, nil
}
