package backendtest

import (
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// The cases of Accumulate (and ReadScalar, its one reader).
func init() {
	suiteCases = append(suiteCases,
		accumulateCase{n: 1, calls: 1, alpha: 1},
		accumulateCase{n: 33, calls: 3, alpha: -0.5},
		accumulateCase{n: 4099, calls: 2, alpha: 1e-3},
		accumulateCase{n: 2, calls: 200, alpha: 1, tiny: true},
	)
}

// accumulateCase adds alpha·Σ x_k for calls fresh inputs x_k of n elements
// into an accumulator that starts at a value with a non-zero compensation,
// then reads it once. With tiny, the accumulator starts near 1e6 and every
// term is 0.02, below half a float32 ulp of the total (0.03125): a plain
// float32 sum loses all 200 of them (4 in total), a compensated one none.
type accumulateCase struct {
	n, calls int
	alpha    float32
	tiny     bool
}

func (c accumulateCase) op() backend.Op { return backend.OpAccumulate }
func (c accumulateCase) name() string {
	return fmt.Sprintf("n%d_calls%d_alpha%g_tiny%v", c.n, c.calls, c.alpha, c.tiny)
}

func (c accumulateCase) run(h *harness) {
	start := []float64{h.normal(1, 100)[0], 0.25}
	if c.tiny {
		start[0] = 1e6 + 0.5
	}
	acc, a0 := h.accum("acc", backend.F32, start, 2)
	want := a0[0] - a0[1]
	eps := backend.F32.Eps()
	// Error bound of a correct implementation: each call's float32 sum of
	// n terms and its scaling, (n+1)·ε·|alpha|·Σ|x|; the compensated
	// additions, 2·ε·|total| plus ε² times the terms added.
	terms, added := 0.0, math.Abs(want)
	for k := range c.calls {
		vals := h.normal(c.n, 1)
		if c.tiny {
			for i := range vals {
				vals[i] = 0.01
			}
		}
		x, xv := h.input(fmt.Sprintf("x%d", k), h.dt, vals, c.n)
		h.b.Accumulate(acc, x, c.alpha)
		s, mag := 0.0, 0.0
		for _, v := range xv {
			s += v
			mag += math.Abs(v)
		}
		want += float64(c.alpha) * s
		terms += float64(c.n+1) * eps * math.Abs(float64(c.alpha)) * mag
		added += math.Abs(float64(c.alpha)) * mag
	}
	got, err := h.b.ReadScalar(acc)
	if h.twinMode {
		return
	}
	if err != nil {
		h.t.Errorf("ReadScalar: %v", err)
		return
	}
	tol := terms + 2*eps*math.Abs(want) + 4*float64(c.calls)*eps*eps*added
	if !(math.Abs(got-want) <= tol) {
		h.t.Errorf("Accumulate: ReadScalar = %.10g, want %.10g (error %.3g > %.3g)", got, want, got-want, tol)
	}
}
