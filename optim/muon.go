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

	// Shared solves (Share): this rank's place, the all-reduce, the
	// arena of every matrix's update (F32) and its views, and the first
	// error of the all-reduce.
	rank, size int
	reduce     func(*backend.Tensor) error
	upd        *backend.Tensor
	upds       []*backend.Tensor
	shareErr   error
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

// Share spreads the Newton–Schulz solves over the size ranks of a
// data-parallel run, as train_gpt.py's Muon does: every rank updates every
// momentum buffer (they stay replicated, and rank 0 saves them), rank r
// orthogonalises the matrices i with i mod size = r into an arena of
// updates that is zero elsewhere, reduce sums the arena over the ranks,
// and every rank applies every update. Adding zeros is exact, so the
// weights are those of the unshared step, bit for bit. (train_gpt.py
// rounds its update arena to bf16; golf keeps it in float32, as its
// one-device step does.)
func (mu *Muon) Share(rank, size int, reduce func(*backend.Tensor) error) {
	if size <= 1 || len(mu.params) == 0 {
		return
	}
	mu.rank, mu.size, mu.reduce = rank, size, reduce
	total := 0
	for _, p := range mu.params {
		total += p.W.Len()
	}
	mu.upd = mu.b.New(backend.F32, total)
	off := 0
	for _, p := range mu.params {
		r, c := p.W.Shape[0], p.W.Shape[1]
		mu.upds = append(mu.upds, mu.upd.Rows(off, r*c).Reshape(r, c))
		off += r * c
	}
}

// ShareErr is the first failure of the shared solves' all-reduce (nil:
// none).
func (mu *Muon) ShareErr() error { return mu.shareErr }

// Step updates every matrix with momentum μ and learning rate LR·lrMul: on
// a backend.MuonBatcher in one call (the same bits), else matrix by matrix;
// shared among ranks after Share.
func (mu *Muon) Step(momentum, lrMul float64) {
	lr := mu.LR * lrMul
	if mu.upd != nil {
		mu.sharedStep(momentum, lr)
		return
	}
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

// sharedStep is Step after Share.
func (mu *Muon) sharedStep(momentum, lr float64) {
	mu.b.Zero(mu.upd)
	for i, p := range mu.params {
		mu.b.MuonMomentum(mu.bufs[i], mu.geffs[i], p.G, float32(momentum))
		if i%mu.size == mu.rank {
			mu.b.NewtonSchulz(mu.upds[i], mu.geffs[i], mu.NSSteps)
		}
	}
	if err := mu.reduce(mu.upd); err != nil && mu.shareErr == nil {
		mu.shareErr = err
	}
	for i, p := range mu.params {
		mu.b.Axpy(p.W, mu.upds[i], float32(-lr*muonScale(p.W)))
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
	if mu.upd != nil {
		mu.b.Free(mu.upd)
	}
	mu.bufs, mu.geff, mu.ns, mu.geffs, mu.nss = nil, nil, nil, nil, nil
	mu.upd, mu.upds = nil, nil
	mu.ws, mu.gs, mu.alphas = nil, nil, nil
}
