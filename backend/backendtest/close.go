package backendtest

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/golf-ml/golf/backend"
)

// The tolerance policy, written down once. An output element stored in
// dtype dt whose float64 oracle value is w may differ from w by
//
//	allowed = storeULPs·eps(dt)·|w| + lambda·sqrt(K)·u32·mag + subnormal(dt)
//
// where K is the length of the longest float32 reduction behind the element
// and mag is Σ|terms| of the computation that produced it (|w| when the
// case gives none). The inputs are rounded to their dtype before upload, so
// the oracle sees exactly what the backend sees: every difference comes
// from the backend's own float32 arithmetic and its one rounding on store.
const (
	// storeULPs: the result is rounded once to the output dtype with
	// round-to-nearest-even, an error of at most ½ ulp ≤ ½·eps·|w|. One ulp
	// leaves room for a float32 result that an accumulation error has moved
	// across a rounding boundary.
	storeULPs = 1.0

	// u32 is the unit roundoff of the float32 arithmetic every op computes in.
	u32 = 0x1p-24

	// lambda: Higham & Mary's probabilistic bound for a K-term float32 sum
	// or dot product, |ŝ − s| ≤ λ·sqrt(K)·u·Σ|terms|, fails with probability
	// about 2K·exp(−λ²/2); λ = 6 makes that < 1e-4 even at K = 4099 and is
	// still a bound (sequential or blocked summation of these inputs stays
	// well inside it). With K = 1 it allows 6 float32 ulps of mag, which
	// also covers one call of a libm or GPU exp, log, tanh, sin, cos, sqrt
	// or pow (a few ulps each); a case whose value passes through such a
	// function multiplies mag by the function's amplification (1 + |x| for
	// exp, sin and cos of an argument x computed in float32: an absolute
	// error of the argument becomes a relative error of the result).
	lambda = 6.0
)

// subnormal is the smallest positive value of dt, the absolute rounding
// quantum below its normal range (F16's is large enough to matter).
func subnormal(dt backend.DType) float64 {
	switch dt {
	case backend.F32:
		return 0x1p-149
	case backend.BF16:
		return 0x1p-133
	case backend.F16:
		return 0x1p-24
	}
	panic(fmt.Sprintf("backendtest: subnormal of %v", dt))
}

// Tol describes how an output element was computed, from which Close
// derives its allowance (see the policy above).
type Tol struct {
	// K is the length of the longest float32 reduction behind one element
	// (0 or 1 for a single rounded operation).
	K int
	// Mag is, per element, Σ|terms| of that computation (times the
	// amplification of any transcendental function on the way). nil: |want|.
	Mag []float64
	// Abs is an absolute allowance added to every element's, for
	// comparisons that are not one op (the training step).
	Abs float64
	// Exact demands bit-identical results (NaN matching NaN): for ops that
	// only move or round values (cast, gather, counting).
	Exact bool
	// Inter is, per element (nil: none), Σ|terms| of values that were
	// rounded to InterDT on the way to it and are not stored: a fused op's
	// intermediate (RMSNormResidMixBackward's dm). The backend rounds its
	// float32 value, the oracle its float64 one, and where the two lie on
	// either side of a rounding boundary they part by an ulp of InterDT,
	// so each such term may move by InterDT's eps.
	Inter   []float64
	InterDT backend.DType
}

// Allowed is the largest |got − want| Close accepts for element i.
func (tol Tol) Allowed(dt backend.DType, want float64, i int) float64 {
	if tol.Exact {
		return 0
	}
	mag := math.Abs(want)
	if tol.Mag != nil {
		mag = tol.Mag[i]
	}
	k := math.Sqrt(float64(max(tol.K, 1)))
	inter := 0.0
	if tol.Inter != nil {
		inter = tol.InterDT.Eps() * tol.Inter[i]
	}
	return storeULPs*dt.Eps()*math.Abs(want) + lambda*k*u32*mag + subnormal(dt) + tol.Abs + inter
}

// Close reports (with t.Errorf) whether every got[i], stored in dt, is
// within the allowance of want[i]. On failure it prints the number of
// elements off, the largest absolute and relative errors, the element
// furthest outside its allowance, and the first few failing elements.
func Close(t testing.TB, name string, got []float32, want []float64, dt backend.DType, tol Tol) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d elements, want %d", name, len(got), len(want))
		return false
	}
	const show = 8
	var (
		bad            []int
		maxAbs, maxRel float64
		maxAbsI        = -1
		maxRelI        = -1
		worst          = -1
		worstRatio     float64
	)
	for i, w := range want {
		g := float64(got[i])
		if equalValues(g, w, tol.Exact) {
			continue
		}
		allowed := tol.Allowed(dt, w, i)
		diff := math.Abs(g - w)
		if math.IsInf(w, 0) || math.IsNaN(w) || !(diff <= allowed) {
			bad = append(bad, i)
		}
		if math.IsNaN(diff) || math.IsInf(diff, 0) {
			diff = math.Inf(1)
		}
		if diff > maxAbs || maxAbsI < 0 {
			maxAbs, maxAbsI = diff, i
		}
		if rel := diff / math.Abs(w); rel > maxRel || maxRelI < 0 {
			maxRel, maxRelI = rel, i
		}
		if ratio := diff / allowed; ratio > worstRatio || worst < 0 {
			worstRatio, worst = ratio, i
		}
	}
	if len(bad) == 0 {
		return true
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %d of %d elements off (dtype %v, K=%d, exact=%v)\n", name, len(bad), len(want), dt, tol.K, tol.Exact)
	fmt.Fprintf(&sb, "\tmax abs err %.3g at [%d]; max rel err %.3g at [%d]; worst err/allowed %.3g at [%d]\n",
		maxAbs, maxAbsI, maxRel, maxRelI, worstRatio, worst)
	for j, i := range bad {
		if j == show {
			fmt.Fprintf(&sb, "\t... %d more\n", len(bad)-show)
			break
		}
		fmt.Fprintf(&sb, "\t[%d] got %.9g want %.9g diff %.3g allowed %.3g\n",
			i, got[i], want[i], float64(got[i])-want[i], tol.Allowed(dt, want[i], i))
	}
	t.Error(sb.String())
	return false
}

// equalValues reports whether g and w are the same value: NaN matches NaN,
// and when exact the sign of zero must match too.
func equalValues(g, w float64, exact bool) bool {
	if math.IsNaN(g) || math.IsNaN(w) {
		return math.IsNaN(g) && math.IsNaN(w)
	}
	if exact {
		return g == w && math.Signbit(g) == math.Signbit(w)
	}
	return g == w
}
