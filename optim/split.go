package optim

import (
	"fmt"
	"strings"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// EmbedKey is the flat name of the tied embedding.
const EmbedKey = "tok_emb.weight"

// SkipWeightsKey is the flat name of the U-Net skip weights.
const SkipWeightsKey = "skip_weights"

// Groups is the reference's partition of parameter names (SplitOptimizers):
//
//	embed:  tok_emb.weight
//	matrix: "blocks.*", 2-D, no control pattern in the name      → Muon
//	scalar: "skip_weights", or "blocks.*" with ndim < 2 or a
//	        control pattern in the name                          → Adam
//
// Each list keeps the order of the parameters given.
type Groups struct {
	Embed  string
	Matrix []string
	Scalar []string
}

// Classify partitions params by name and shape as the reference does. It
// needs only Name and W.Shape. A parameter that falls in no group (the
// reference would silently never train it), a missing embedding, or a
// repeated name is an error.
func Classify(params []*model.Param, controlPatterns []string) (Groups, error) {
	h := Hyper{ControlPatterns: controlPatterns}
	var g Groups
	seen := map[string]bool{}
	for _, p := range params {
		if seen[p.Name] {
			return Groups{}, fmt.Errorf("optim: parameter %q appears twice", p.Name)
		}
		seen[p.Name] = true
		ndim := len(p.W.Shape)
		block := strings.HasPrefix(p.Name, "blocks.")
		control := h.isControl(p.Name)
		switch {
		case p.Name == EmbedKey:
			g.Embed = p.Name
		case block && ndim == 2 && !control:
			g.Matrix = append(g.Matrix, p.Name)
		case p.Name == SkipWeightsKey || (block && (ndim < 2 || control)):
			g.Scalar = append(g.Scalar, p.Name)
		default:
			return Groups{}, fmt.Errorf("optim: parameter %q (shape %v) belongs to no optimizer group", p.Name, p.W.Shape)
		}
	}
	if g.Embed == "" {
		return Groups{}, fmt.Errorf("optim: no %s parameter", EmbedKey)
	}
	return g, nil
}

// Split is the reference's SplitOptimizers: Adam (TiedEmbedLR) on the tied
// embedding, Muon (MatrixLR) on the block matrices, and a second, separate
// Adam (ScalarLR, its own step counter) on the block scalars, control
// tensors and skip weights. All optimizer state is F32 on the backend,
// allocated once by NewSplit.
type Split struct {
	Hyper  Hyper
	Groups Groups
	Muon   *Muon
	Embed  *Adam // tok_emb.weight
	Scalar *Adam // block scalars, control tensors, skip_weights
}

// NewSplit classifies params (see Classify) and allocates the optimizer
// state on b. Every W and G must be F32 tensors of the same shape.
func NewSplit(b backend.Backend, params []*model.Param, h Hyper) (*Split, error) {
	byName := map[string]*model.Param{}
	for _, p := range params {
		if p.W == nil || p.G == nil {
			return nil, fmt.Errorf("optim: parameter %q has no weight or gradient tensor", p.Name)
		}
		if p.W.DType != backend.F32 || p.G.DType != backend.F32 {
			return nil, fmt.Errorf("optim: parameter %q: weight %v and gradient %v must be fp32", p.Name, p.W, p.G)
		}
		if !sameShape(p.W.Shape, p.G.Shape) {
			return nil, fmt.Errorf("optim: parameter %q: weight shape %v != gradient shape %v", p.Name, p.W.Shape, p.G.Shape)
		}
		byName[p.Name] = p
	}
	g, err := Classify(params, h.ControlPatterns)
	if err != nil {
		return nil, err
	}
	if h.MuonBackendSteps < 0 {
		return nil, fmt.Errorf("optim: MUON_BACKEND_STEPS must be >= 0, got %d", h.MuonBackendSteps)
	}
	pick := func(names []string) []*model.Param {
		ps := make([]*model.Param, len(names))
		for i, n := range names {
			ps[i] = byName[n]
		}
		return ps
	}
	return &Split{
		Hyper:  h,
		Groups: g,
		Muon:   NewMuon(b, pick(g.Matrix), h.MatrixLR, h.MuonBackendSteps),
		Embed:  NewAdam(b, pick([]string{g.Embed}), h.TiedEmbedLR, h.Beta1, h.Beta2, h.AdamEps),
		Scalar: NewAdam(b, pick(g.Scalar), h.ScalarLR, h.Beta1, h.Beta2, h.AdamEps),
	}, nil
}

// MatrixKeys lists the parameters Muon trains.
func (s *Split) MatrixKeys() []string { return s.Groups.Matrix }

// ScalarKeys lists the parameters the scalar Adam trains.
func (s *Split) ScalarKeys() []string { return s.Groups.Scalar }

// Step applies one optimizer step from the gradients in every Param.G
// (already averaged over the batch, unscaled and clipped): Muon with
// momentum Hyper.MuonMomentumAt(step) and learning rate MatrixLR·lrMul, then
// both Adams with their learning rates times lrMul. step is the training
// step counting from 0, as in the reference's loop.
func (s *Split) Step(step int, lrMul float64) {
	s.Muon.Step(s.Hyper.MuonMomentumAt(step), lrMul)
	s.Embed.Step(lrMul)
	s.Scalar.Step(lrMul)
}

// Free releases all optimizer state.
func (s *Split) Free() {
	s.Muon.Free()
	s.Embed.Free()
	s.Scalar.Free()
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
