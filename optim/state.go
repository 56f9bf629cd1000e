package optim

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
)

// StateTensor is one tensor of optimizer state under a stable name.
type StateTensor struct {
	Name string
	T    *backend.Tensor
}

// StateTensors lists every tensor of the split optimizer's state, each
// under a name that identifies it across runs:
//
//	muon/<param>            Muon momentum buffer
//	adam_embed/<param>/m    first moment of the embedding's Adam
//	adam_embed/<param>/v    second moment
//	adam_scalar/<param>/m   (and /v) of the scalar Adam
//
// Scratch tensors (Muon's geff and Newton–Schulz output) are not state:
// every step overwrites them before reading.
func (s *Split) StateTensors() []StateTensor {
	var out []StateTensor
	for i, p := range s.Muon.params {
		out = append(out, StateTensor{"muon/" + p.Name, s.Muon.bufs[i]})
	}
	for _, g := range []struct {
		prefix string
		a      *Adam
	}{{"adam_embed/", s.Embed}, {"adam_scalar/", s.Scalar}} {
		for i, p := range g.a.params {
			out = append(out,
				StateTensor{g.prefix + p.Name + "/m", g.a.m[i]},
				StateTensor{g.prefix + p.Name + "/v", g.a.v[i]})
		}
	}
	return out
}

// SplitSteps are the step counters of the two Adams (bias correction).
type SplitSteps struct {
	Embed  int `json:"adam_embed"`
	Scalar int `json:"adam_scalar"`
}

// Steps returns the Adam step counters.
func (s *Split) Steps() SplitSteps { return SplitSteps{s.Embed.t, s.Scalar.t} }

// SetSteps restores the Adam step counters.
func (s *Split) SetSteps(st SplitSteps) error {
	if st.Embed < 0 || st.Scalar < 0 {
		return fmt.Errorf("optim: negative Adam step counters %+v", st)
	}
	s.Embed.t, s.Scalar.t = st.Embed, st.Scalar
	return nil
}

// ScalerState is what a GradScaler carries from one step to the next.
type ScalerState struct {
	Enabled bool    `json:"enabled"`
	Scale   float64 `json:"scale"`
	Tracker int     `json:"growth_tracker"`
}

// State returns the scaler's state.
func (s *GradScaler) State() ScalerState {
	return ScalerState{Enabled: s.Enabled, Scale: s.scale, Tracker: s.tracker}
}

// SetState restores a state saved by State from a scaler of the same kind.
func (s *GradScaler) SetState(st ScalerState) error {
	if st.Enabled != s.Enabled {
		return fmt.Errorf("optim: loss scaler: saved dynamic=%v, this run dynamic=%v", st.Enabled, s.Enabled)
	}
	if !(st.Scale > 0) || st.Scale > 3.4028234663852886e38 || st.Tracker < 0 {
		return fmt.Errorf("optim: loss scaler: invalid saved scale %g / growth tracker %d", st.Scale, st.Tracker)
	}
	if !s.Enabled && st.Scale != s.scale {
		return fmt.Errorf("optim: loss scaler: saved static scale %g, this run %g", st.Scale, s.scale)
	}
	s.scale, s.tracker = st.Scale, st.Tracker
	return nil
}
