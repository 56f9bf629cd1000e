package report

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// RoundTicks is a plot.Ticker for golf's plots. Its major ticks are round
// values, 1, 2 or 5 times a power of ten apart, about Target of them (6
// when Target < 2) over the axis; each is labelled with exactly the
// decimals that spacing needs, so the labels are distinct and each reads
// back as its tick's value (gonum's DefaultTicks rounds 3.25 to "3.2" and
// 3.35 to "3.4" when it picks too few digits). Minor ticks, unlabelled,
// split each spacing in 4 or 5. Integer keeps the spacing at least 1, for
// an axis of steps.
type RoundTicks struct {
	Target  int
	Integer bool
}

var _ plot.Ticker = RoundTicks{}

// Ticks returns the ticks for the axis range [min, max].
func (t RoundTicks) Ticks(min, max float64) []plot.Tick {
	if math.IsNaN(min) || math.IsNaN(max) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return nil
	}
	if max < min {
		min, max = max, min
	}
	if max == min {
		min, max = min-1, max+1
	}
	target := t.Target
	if target < 2 {
		target = 6
	}
	m, k := t.spacing(min, max, target)
	var ticks []plot.Tick
	for _, v := range roundValues(min, max, m, k) {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', max0(-k), 64)})
	}
	// Minor ticks: a fifth of 1 or 5 times 10^k, a quarter of 2 times 10^k.
	mm, mk := 2, k-1
	switch m {
	case 2:
		mm = 5
	case 5:
		mm, mk = 1, k
	}
	if t.Integer && mk < 0 {
		return ticks
	}
	for _, v := range roundValues(min, max, mm, mk) {
		major := false
		for _, tk := range ticks {
			if tk.Value == v {
				major = true
				break
			}
		}
		if !major {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

// spacing picks the round spacing m × 10^k (m = 1, 2 or 5) whose count of
// ticks in [min, max] is nearest target, at least 2; of two as near, the
// wider spacing.
func (t RoundTicks) spacing(min, max float64, target int) (m, k int) {
	top := int(math.Floor(math.Log10(max-min))) + 1
	bestM, bestK, bestScore := 1, top, math.Inf(1)
	for kk := top; kk >= top-4; kk-- {
		for _, mm := range []int{5, 2, 1} {
			if t.Integer && kk < 0 {
				continue
			}
			n := roundCount(min, max, mm, kk)
			score := math.Abs(float64(n - target))
			if n < 2 {
				score += 1000 // one tick cannot show a scale: only if nothing else fits
			}
			if score < bestScore {
				bestM, bestK, bestScore = mm, kk, score
			}
		}
	}
	return bestM, bestK
}

// multiples are the first and last i with i·m × 10^k in [min, max].
func multiples(min, max float64, m, k int) (lo, hi float64) {
	step := float64(m) * math.Pow10(k)
	return math.Ceil(min/step - 1e-9), math.Floor(max/step + 1e-9)
}

// roundCount is how many multiples of m × 10^k lie in [min, max].
func roundCount(min, max float64, m, k int) int {
	lo, hi := multiples(min, max, m, k)
	return int(math.Max(0, math.Min(hi-lo+1, 1e6)))
}

// roundValues are the multiples of m × 10^k in [min, max], each the double
// nearest its decimal value (i·m / 10^-k, not i · 0.05, which drifts).
func roundValues(min, max float64, m, k int) []float64 {
	lo, hi := multiples(min, max, m, k)
	var out []float64
	for i := lo; i <= hi; i++ {
		v := i * float64(m)
		if k < 0 {
			v /= math.Pow10(-k)
		} else {
			v *= math.Pow10(k)
		}
		out = append(out, v+0) // +0: no "-0" label
	}
	return out
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// PadRange widens [min, max] by frac of its span on each side, so that no
// point or peak sits on the plot's frame; a range of one value is widened
// by frac of the value (1 when the value is 0).
func PadRange(min, max, frac float64) (float64, float64) {
	span := max - min
	if span == 0 {
		span = math.Abs(min)
		if span == 0 {
			span = 1 / frac
		}
	}
	return min - frac*span, max + frac*span
}
