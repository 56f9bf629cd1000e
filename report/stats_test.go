package report

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// golden is report/testdata/ttest_golden.json, written by
// scripts/report_golden.py with SciPy's ttest_1samp and ttest_ind.
type golden struct {
	SciPy     string `json:"scipy"`
	OneSample []struct {
		X                   []float64
		Against, Margin     float64
		Mean, Std, T, DF, P float64
		Alpha               float64
		SeedsNeeded         int `json:"seeds_needed"`
	} `json:"one_sample"`
	Welch []struct {
		A, B            []float64
		Margin          float64
		MA              float64 `json:"mean_a"`
		SA              float64 `json:"std_a"`
		MB              float64 `json:"mean_b"`
		SB              float64 `json:"std_b"`
		T, DF, P, Alpha float64
		SeedsNeeded     int `json:"seeds_needed"`
	} `json:"welch"`
}

func loadGolden(t *testing.T) golden {
	t.Helper()
	data, err := os.ReadFile("testdata/ttest_golden.json")
	require.NoError(t, err)
	var g golden
	require.NoError(t, json.Unmarshal(data, &g))
	require.Len(t, g.OneSample, 8, "n in {2,3,5,10} x margin in {0,0.005}")
	require.Len(t, g.Welch, 12)
	return g
}

// The relative tolerance against SciPy: the statistics are a few float64
// operations apart (SciPy shifts each baseline value by the margin; golf
// shifts the mean), the distributions are both Cephes' incomplete beta.
const tol = 1e-10

func TestOneSampleLessMatchesSciPy(t *testing.T) {
	for _, c := range loadGolden(t).OneSample {
		t.Run(fmt.Sprintf("n%d_margin%g", len(c.X), c.Margin), func(t *testing.T) {
			got, err := OneSampleLess(c.X, c.Against-c.Margin)
			require.NoError(t, err)
			assert.InEpsilon(t, c.T, got.T, tol, "t")
			assert.Equal(t, c.DF, got.DF, "df")
			assert.InEpsilon(t, c.P, got.P, tol, "p")
			mean, std := meanStd(c.X)
			assert.InEpsilon(t, c.Mean, mean, 1e-14)
			assert.InEpsilon(t, c.Std, std, 1e-10)
		})
	}
}

func TestWelchLessMatchesSciPy(t *testing.T) {
	for _, c := range loadGolden(t).Welch {
		t.Run(fmt.Sprintf("n%d_%d_margin%g", len(c.A), len(c.B), c.Margin), func(t *testing.T) {
			got, err := WelchLess(c.A, c.B, c.Margin)
			require.NoError(t, err)
			assert.InEpsilon(t, c.T, got.T, tol, "t")
			assert.InEpsilon(t, c.DF, got.DF, tol, "Welch-Satterthwaite df")
			assert.InEpsilon(t, c.P, got.P, tol, "p")
			ma, sa := meanStd(c.A)
			mb, sb := meanStd(c.B)
			assert.InEpsilon(t, c.MA, ma, 1e-14)
			assert.InEpsilon(t, c.MB, mb, 1e-14)
			assert.InEpsilon(t, c.SA, sa, 1e-10)
			assert.InEpsilon(t, c.SB, sb, 1e-10)
		})
	}
}

// The verdict's "about N runs would reach p < alpha" against SciPy's count
// (scipy.stats.t.cdf and ttest_ind_from_stats over growing n).
func TestSeedsNeededMatchesSciPy(t *testing.T) {
	g := loadGolden(t)
	checked := 0
	for _, c := range g.OneSample {
		if c.SeedsNeeded == 0 {
			assert.True(t, c.P < c.Alpha || c.Mean >= c.Against-c.Margin, "SciPy asks for no estimate only for passing or gainless runs")
			continue
		}
		assert.Equal(t, c.SeedsNeeded, seedsNeededOne(c.X, c.Against-c.Margin, c.Alpha), "n=%d margin=%g", len(c.X), c.Margin)
		checked++
	}
	for _, c := range g.Welch {
		if c.SeedsNeeded == 0 {
			continue
		}
		assert.Equal(t, c.SeedsNeeded, seedsNeededWelch(c.A, c.B, c.Margin, c.Alpha), "n=%d/%d margin=%g", len(c.A), len(c.B), c.Margin)
		checked++
	}
	assert.GreaterOrEqual(t, checked, 5, "the golden file has reachable and unreachable estimates")
}

func TestTTestRefusesTooFewRunsAndZeroSpread(t *testing.T) {
	_, err := OneSampleLess([]float64{1.9}, 2)
	assert.ErrorContains(t, err, "at least 2 scored runs, got 1")
	_, err = WelchLess([]float64{1.9, 1.91}, []float64{2}, 0.005)
	assert.ErrorContains(t, err, "at least 2 scored runs in each group, got 2 and 1")
	_, err = OneSampleLess([]float64{1.9, 1.9, 1.9}, 2)
	assert.ErrorIs(t, err, errZeroSpread)
	_, err = WelchLess([]float64{1.9, 1.9}, []float64{2, 2}, 0)
	assert.ErrorIs(t, err, errZeroSpread)
	// One group without spread is fine: df falls back to the other's n - 1.
	got, err := WelchLess([]float64{1.9, 1.9}, []float64{2, 2.01, 2.02}, 0)
	require.NoError(t, err)
	assert.InDelta(t, 2, got.DF, 1e-12)
}
