package optim

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// GradScaler is loss scaling with the semantics of torch.amp.GradScaler.
// The loss (in practice the backward seed, SoftcapCEBackward's scale) is
// multiplied by S so that small gradients survive fp16 storage; the fp32
// parameter gradients are divided by S before clipping and the optimizer.
//
// Dynamic (Enabled, the fp16 default): S starts at 2^16; a step whose
// gradients hold any ±Inf or NaN is skipped and S halves; after
// GrowthInterval (2000) consecutive finite steps S doubles (while it stays
// a finite float32).
//
// Static (Enabled false, bf16/fp32): S is fixed (1 by default, or the
// --loss-scale value); gradients are unscaled but never checked and S never
// changes, so the step is never skipped, as in the reference.
//
// One training step:
//
//	gradScale := scaler.Scale() / float64(tokens) // SoftcapCEBackward's scale
//	... forward, backward (gradients accumulate into Param.G) ...
//	found := scaler.UnscaleAndCheck(params)
//	if !found {
//		optim.ClipGradNorm(b, params, h.GradClipNorm)
//		opt.Step(step, lrMul)
//	}
//	scaler.Update(found)
type GradScaler struct {
	Enabled        bool    // dynamic scaling with skip on non-finite gradients
	GrowthFactor   float64 // 2
	BackoffFactor  float64 // 0.5
	GrowthInterval int     // 2000

	b       backend.Backend
	scale   float64
	tracker int             // consecutive finite steps since the last change
	count   *backend.Tensor // F32 [1]: non-finite element count
}

// InitLossScale is the initial dynamic scale, torch's default 2^16.
const InitLossScale = 65536.0

// NewGradScaler returns a dynamic scaler with torch's defaults
// (2^16, ×2 every 2000 finite steps, ×0.5 on overflow).
func NewGradScaler(b backend.Backend) *GradScaler {
	return &GradScaler{
		Enabled: true, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000,
		b: b, scale: InitLossScale, count: b.New(backend.F32, 1),
	}
}

// NewStaticScaler returns a disabled scaler with the fixed scale s (> 0,
// finite; a programmer error otherwise, see ScalerFor).
func NewStaticScaler(b backend.Backend, s float64) *GradScaler {
	if !(s > 0) || math.IsInf(s, 0) {
		panic(fmt.Sprintf("optim.NewStaticScaler: scale %g", s))
	}
	return &GradScaler{GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000, b: b, scale: s}
}

// ScalerFor is the precision policy: lossScale > 0 gives a static scaler of
// that value in any dtype; lossScale = 0 gives the dynamic scaler for fp16
// and a static scale of 1 for bf16 and fp32.
func ScalerFor(b backend.Backend, dt backend.DType, lossScale float64) (*GradScaler, error) {
	switch {
	case math.IsNaN(lossScale) || math.IsInf(lossScale, 0) || lossScale < 0:
		return nil, fmt.Errorf("--loss-scale must be a finite value >= 0 (0: dynamic for fp16, 1 otherwise), got %g", lossScale)
	case lossScale > 0:
		return NewStaticScaler(b, lossScale), nil
	case dt == backend.F16:
		return NewGradScaler(b), nil
	}
	return NewStaticScaler(b, 1), nil
}

// Scale is the current loss scale S.
func (s *GradScaler) Scale() float64 { return s.scale }

// GrowthTracker is the number of consecutive finite steps counted towards
// the next growth.
func (s *GradScaler) GrowthTracker() int { return s.tracker }

// Unscale divides every gradient by S in place (nothing when S = 1).
//
//	G *= 1/S
func (s *GradScaler) Unscale(params []*model.Param) {
	if s.scale == 1 {
		return
	}
	inv := float32(1 / s.scale)
	if g := model.GradArena(params); g != nil {
		s.b.Scale(g, inv)
		return
	}
	for _, p := range params {
		s.b.Scale(p.G, inv)
	}
}

// FoundNonFinite reports whether any gradient element is ±Inf or NaN
// (one reduction into one scalar, one sync).
func (s *GradScaler) FoundNonFinite(params []*model.Param) bool {
	if s.count == nil {
		s.count = s.b.New(backend.F32, 1)
	}
	s.b.Zero(s.count)
	if g := model.GradArena(params); g != nil {
		s.b.Reduce(s.count, g, backend.ReduceNonFinite) // a count: any order gives it
	} else {
		for _, p := range params {
			s.b.Reduce(s.count, p.G, backend.ReduceNonFinite)
		}
	}
	return s.b.Download(s.count)[0] != 0
}

// UnscaleAndCheck, for a dynamic scaler, checks the gradients for ±Inf/NaN
// and, when all are finite, divides them by S; it returns whether a
// non-finite value was found (the step must then be skipped). A static
// scaler only unscales and returns false.
func (s *GradScaler) UnscaleAndCheck(params []*model.Param) (foundInf bool) {
	if s.Enabled && s.FoundNonFinite(params) {
		return true
	}
	s.Unscale(params)
	return false
}

// Update adjusts a dynamic scale after a step (torch's update):
//
//	found:      S *= BackoffFactor; tracker = 0
//	otherwise:  tracker += 1; if tracker = GrowthInterval { S *= GrowthFactor
//	            (kept only if finite in float32); tracker = 0 }
//
// A static scaler ignores it.
func (s *GradScaler) Update(foundInf bool) {
	if !s.Enabled {
		return
	}
	if foundInf {
		s.scale *= s.BackoffFactor
		s.tracker = 0
		return
	}
	s.tracker++
	if s.tracker == s.GrowthInterval {
		if grown := s.scale * s.GrowthFactor; grown <= math.MaxFloat32 {
			s.scale = grown
		}
		s.tracker = 0
	}
}

// Free releases the scaler's scratch scalar.
func (s *GradScaler) Free() {
	if s.count != nil {
		s.b.Free(s.count)
		s.count = nil
	}
}
