package report

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// TTest is the outcome of a one-sided t-test of H1 "the mean is lower".
type TTest struct {
	T  float64 // the t statistic
	DF float64 // degrees of freedom
	P  float64 // one-sided p-value: P(T_df <= t)
}

// errZeroSpread is returned when every value is the same, so the standard
// error is zero and t is undefined.
var errZeroSpread = errors.New("all the scores are equal, so the standard error is zero and t is undefined")

// OneSampleLess is Student's one-sample t-test of H1 "mean(x) < mu":
//
//	t  = (mean(x) − mu) / (s / √n)
//	df = n − 1
//	p  = F_df(t)
//
// with s the sample standard deviation (divisor n − 1) and F_df Student's t
// CDF: scipy.stats.ttest_1samp(x, mu, alternative='less').
func OneSampleLess(x []float64, mu float64) (TTest, error) {
	n := len(x)
	if n < 2 {
		return TTest{}, fmt.Errorf("a t-test needs at least 2 scored runs, got %d", n)
	}
	mean, variance := stat.MeanVariance(x, nil)
	se := math.Sqrt(variance / float64(n))
	if se == 0 {
		return TTest{}, errZeroSpread
	}
	t := (mean - mu) / se
	df := float64(n - 1)
	return TTest{T: t, DF: df, P: studentCDF(t, df)}, nil
}

// WelchLess is Welch's two-sample t-test of H1 "mean(a) < mean(b) − shift",
// that is, of a against b's values lowered by shift:
//
//	v_a = s_a² / n_a,  v_b = s_b² / n_b
//	t   = (mean(a) − (mean(b) − shift)) / √(v_a + v_b)
//	df  = (v_a + v_b)² / (v_a² / (n_a − 1) + v_b² / (n_b − 1))   (Welch–Satterthwaite)
//	p   = F_df(t)
//
// scipy.stats.ttest_ind(a, b − shift, equal_var=False, alternative='less').
func WelchLess(a, b []float64, shift float64) (TTest, error) {
	if len(a) < 2 || len(b) < 2 {
		return TTest{}, fmt.Errorf("Welch's test needs at least 2 scored runs in each group, got %d and %d", len(a), len(b))
	}
	na, nb := float64(len(a)), float64(len(b))
	ma, sa2 := stat.MeanVariance(a, nil)
	mb, sb2 := stat.MeanVariance(b, nil)
	va, vb := sa2/na, sb2/nb
	if va+vb == 0 {
		return TTest{}, errZeroSpread
	}
	t := (ma - (mb - shift)) / math.Sqrt(va+vb)
	df := (va + vb) * (va + vb) / (va*va/(na-1) + vb*vb/(nb-1))
	return TTest{T: t, DF: df, P: studentCDF(t, df)}, nil
}

// seedsNeededOne is the smallest run count, up to 64, at which runs with
// the mean and standard deviation of x would pass OneSampleLess(·, mu) at
// alpha; -1 if none.
func seedsNeededOne(x []float64, mu, alpha float64) int {
	mean, s := meanStd(x)
	for m := len(x) + 1; m <= 64; m++ {
		t := (mean - mu) / (s / math.Sqrt(float64(m)))
		if studentCDF(t, float64(m-1)) < alpha {
			return m
		}
	}
	return -1
}

// seedsNeededWelch is seedsNeededOne for WelchLess(·, b, shift): a grows,
// b stays as it is (so the answer may be -1 however many runs a gets).
func seedsNeededWelch(a, b []float64, shift, alpha float64) int {
	ma, sa := meanStd(a)
	mb, sb := meanStd(b)
	nb := float64(len(b))
	for m := len(a) + 1; m <= 64; m++ {
		va, vb := sa*sa/float64(m), sb*sb/nb
		t := (ma - (mb - shift)) / math.Sqrt(va+vb)
		df := (va + vb) * (va + vb) / (va*va/float64(m-1) + vb*vb/(nb-1))
		if studentCDF(t, df) < alpha {
			return m
		}
	}
	return -1
}

// studentCDF is Student's t CDF with df degrees of freedom.
func studentCDF(t, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(t)
}

// meanStd is the mean and sample standard deviation (divisor n − 1; NaN
// for fewer than two values).
func meanStd(x []float64) (mean, std float64) {
	switch len(x) {
	case 0:
		return math.NaN(), math.NaN()
	case 1:
		return x[0], math.NaN()
	}
	return stat.MeanStdDev(x, nil)
}
