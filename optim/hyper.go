package optim

import "strings"

// DefaultControlPatterns is the reference's CONTROL_TENSOR_NAME_PATTERNS
// default: parameters whose flat name contains one of these substrings are
// "control" tensors (gains, scales, mixes) trained by the scalar Adam even
// when they are 2-D.
const DefaultControlPatterns = "attn_scale,attn_scales,mlp_scale,mlp_scales,resid_mix,resid_mixes,q_gain,skip_weight,skip_weights"

// Hyper holds every optimizer knob, named after the reference's environment
// variables (the CLI flag reads the same name), with its defaults in
// DefaultHyper.
type Hyper struct {
	TiedEmbedLR float64 // TIED_EMBED_LR (0.05): Adam on tok_emb.weight
	MatrixLR    float64 // MATRIX_LR (0.04): Muon on the 2-D block matrices
	ScalarLR    float64 // SCALAR_LR (0.04): Adam on block scalars, control tensors and skip_weights

	Beta1   float64 // BETA1 (0.9)
	Beta2   float64 // BETA2 (0.95)
	AdamEps float64 // ADAM_EPS (1e-8)

	MuonMomentum            float64 // MUON_MOMENTUM (0.95)
	MuonBackendSteps        int     // MUON_BACKEND_STEPS (5): Newton–Schulz iterations
	MuonMomentumWarmupStart float64 // MUON_MOMENTUM_WARMUP_START (0.85)
	MuonMomentumWarmupSteps int     // MUON_MOMENTUM_WARMUP_STEPS (500); 0 disables the warm-up

	GradClipNorm float64 // GRAD_CLIP_NORM (0): global-norm clipping; ≤ 0 disables it

	// ControlPatterns is CONTROL_TENSOR_NAME_PATTERNS split on commas
	// (empty entries dropped), see ParseControlPatterns.
	ControlPatterns []string
}

// DefaultHyper returns the reference's defaults.
func DefaultHyper() Hyper {
	return Hyper{
		TiedEmbedLR:             0.05,
		MatrixLR:                0.04,
		ScalarLR:                0.04,
		Beta1:                   0.9,
		Beta2:                   0.95,
		AdamEps:                 1e-8,
		MuonMomentum:            0.95,
		MuonBackendSteps:        5,
		MuonMomentumWarmupStart: 0.85,
		MuonMomentumWarmupSteps: 500,
		GradClipNorm:            0,
		ControlPatterns:         ParseControlPatterns(DefaultControlPatterns),
	}
}

// ParseControlPatterns splits a CONTROL_TENSOR_NAME_PATTERNS value on commas
// and drops empty entries, as the reference does.
func ParseControlPatterns(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// MuonMomentumAt is Muon's momentum at a step: a linear warm-up from
// MuonMomentumWarmupStart to MuonMomentum over MuonMomentumWarmupSteps
// steps, constant afterwards.
//
//	t = min(step/warmupSteps, 1)
//	μ = (1 − t)·warmupStart + t·momentum     (μ = momentum when warmupSteps = 0)
func (h Hyper) MuonMomentumAt(step int) float64 {
	if h.MuonMomentumWarmupSteps == 0 {
		return h.MuonMomentum
	}
	t := min(float64(step)/float64(h.MuonMomentumWarmupSteps), 1.0)
	return (1-t)*h.MuonMomentumWarmupStart + t*h.MuonMomentum
}

// isControl reports whether name contains one of the control patterns.
func (h Hyper) isControl(name string) bool {
	for _, p := range h.ControlPatterns {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}
