package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// majorTicks are the labelled ticks gonum/plot draws on the axis: what its
// Ticker gives for the axis's range.
func majorTicks(a plot.Axis) []plot.Tick { return majorOf(a.Tick.Marker.Ticks(a.Min, a.Max)) }

// checkTicks asserts that an axis's tick labels say their values: at
// least two, distinct, each parsing back to its tick's value within half
// its last digit, and the values round (the label is the value, not a
// rounding of it), 1, 2 or 5 times a power of ten apart, inside the axis.
func checkTicks(t *testing.T, what string, a plot.Axis) {
	t.Helper()
	ticks := majorTicks(a)
	require.GreaterOrEqual(t, len(ticks), 2, "%s: %v", what, ticks)
	seen := map[string]bool{}
	for i, tk := range ticks {
		assert.False(t, seen[tk.Label], "%s: label %q twice in %v", what, tk.Label, ticks)
		seen[tk.Label] = true
		v, err := strconv.ParseFloat(tk.Label, 64)
		require.NoError(t, err, "%s: label %q", what, tk.Label)
		digits := 0
		if dot := strings.IndexByte(tk.Label, '.'); dot >= 0 {
			digits = len(tk.Label) - dot - 1
		}
		assert.Less(t, math.Abs(v-tk.Value), 0.5*math.Pow10(-digits), "%s: label %q for tick %v", what, tk.Label, tk.Value)
		assert.InDelta(t, tk.Value, v, 1e-9*math.Max(1, math.Abs(v)), "%s: tick %v is not the round value its label %q says", what, tk.Value, tk.Label)
		assert.True(t, tk.Value >= a.Min && tk.Value <= a.Max, "%s: tick %v outside [%v, %v]", what, tk.Value, a.Min, a.Max)
		if i > 0 {
			gap := tk.Value - ticks[i-1].Value
			m := gap / math.Pow10(int(math.Floor(math.Log10(gap)+1e-9)))
			assert.True(t, math.Abs(m-1) < 1e-6 || math.Abs(m-2) < 1e-6 || math.Abs(m-5) < 1e-6, "%s: ticks %v apart", what, gap)
		}
	}
}

func labels(ticks []plot.Tick) []string {
	var out []string
	for _, t := range ticks {
		out = append(out, t.Label)
	}
	return out
}

// The ticks for ranges worked out by hand: 0.13 wide, the round spacings
// 0.05, 0.02 and 0.01 give 3, 7 and 14 ticks, and 7 is nearest the 6
// wanted; 0.0003 wide, 0.0001 gives 3 and 0.00005 gives 7.
func TestRoundTicks(t *testing.T) {
	assert.Equal(t, []string{"3.24", "3.26", "3.28", "3.30", "3.32", "3.34", "3.36"}, labels(majorOf(RoundTicks{}.Ticks(3.23, 3.36))))
	assert.Equal(t, []string{"3.35005", "3.35010", "3.35015", "3.35020", "3.35025", "3.35030", "3.35035"},
		labels(majorOf(RoundTicks{}.Ticks(3.35005, 3.35035))))
	// 0 to 20.8 steps: every 5 (5 ticks; every 2 gives 11, every 10 gives 3).
	assert.Equal(t, []string{"0", "5", "10", "15", "20"}, labels(majorOf(RoundTicks{Integer: true}.Ticks(0, 20.8))))
	// Steps 0 to 2.2: no half steps.
	assert.Equal(t, []string{"0", "1", "2"}, labels(majorOf(RoundTicks{Integer: true}.Ticks(0, 2.2))))
	// Around zero, no "-0".
	assert.Equal(t, []string{"-0.4", "-0.2", "0.0", "0.2", "0.4"}, labels(majorOf(RoundTicks{Target: 5}.Ticks(-0.5, 0.5))))
	// Minor ticks between, unlabelled: 0.02 apart splits in 4 (0.005).
	minor := 0
	for _, tk := range (RoundTicks{}).Ticks(3.23, 3.36) {
		if tk.Label == "" {
			minor++
			assert.InDelta(t, 0, math.Mod(tk.Value*1000+1e-6, 5), 1e-5, "minor tick %v", tk.Value)
		}
	}
	assert.Equal(t, 27-7, minor, "3.230 to 3.360 every 0.005, less the 7 majors")
}

func majorOf(ticks []plot.Tick) []plot.Tick {
	var out []plot.Tick
	for _, t := range ticks {
		if t.Label != "" {
			out = append(out, t)
		}
	}
	return out
}

// writeRuns writes one minimal log per val_bpb into a new folder.
func writeRuns(t *testing.T, name string, seeds []int, bpb []float64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	for i, b := range bpb {
		writeLog(t, dir, fmt.Sprintf("%s_seed%d.txt", name, seeds[i]), seeds[i], b*1.8, b)
	}
	return dir
}

// The plot: three runs at val_bpb 3.347 to 3.352 against two at
// 3.237 labelled the val_bpb axis 3.2, 3.3, 3.4 at gridlines 3.25, 3.30,
// 3.35; one group of close values labelled every tick 3.35.
func TestPlotTickLabels(t *testing.T) {
	opts := DefaultOptions()
	opts.AgainstRuns = []string{writeRuns(t, "base", []int{1337, 42}, []float64{3.237, 3.2372})}
	rep, err := Build([]string{writeRuns(t, "lr08", []int{1337, 42, 7}, []float64{3.347, 3.352, 3.349})}, opts)
	require.NoError(t, err)
	fig, err := rep.figure()
	require.NoError(t, err)
	val := fig.panels[2].Y
	checkTicks(t, "val_bpb", val)
	assert.Less(t, val.Min, 3.237, "padded below the lowest point")
	assert.Greater(t, val.Max, 3.352, "padded above the highest point")
	for i, p := range fig.panels {
		checkTicks(t, fmt.Sprintf("panel %d y", i), p.Y)
		if i < 2 {
			checkTicks(t, fmt.Sprintf("panel %d x", i), p.X)
		}
	}

	rep, err = Build([]string{writeRuns(t, "base", []int{1, 2, 3}, []float64{3.3501, 3.3502, 3.3503})}, DefaultOptions())
	require.NoError(t, err)
	fig, err = rep.figure()
	require.NoError(t, err)
	checkTicks(t, "close val_bpb", fig.panels[2].Y)
	assert.Less(t, fig.panels[2].Y.Min, 3.3501)
	assert.Greater(t, fig.panels[2].Y.Max, 3.3503)
}

// The plot of a golf --seeds series against another: a legend line per run
// named by its seed under its group's name, a line style and marker per
// seed, axes padded past the data, and, each run validated once, the
// val_bpb panel one point per run with its value.
func TestPlotLayout(t *testing.T) {
	opts := DefaultOptions()
	opts.AgainstRuns = []string{"testdata/golf"}
	rep, err := Build([]string{"testdata/golf_series"}, opts)
	require.NoError(t, err)
	fig, err := rep.figure()
	require.NoError(t, err)

	var names []string
	type style struct {
		dashes string
		glyph  string
	}
	styles := map[string]style{}
	for _, e := range fig.legend {
		names = append(names, e.text)
		if !e.run {
			assert.Empty(t, e.thumbs, "%s: a group's name", e.text)
			continue
		}
		var st style
		for _, th := range e.thumbs {
			switch v := th.(type) {
			case *plotter.Line:
				st.dashes = fmt.Sprint(v.Dashes)
			case *plotter.Scatter:
				st.glyph = fmt.Sprintf("%T", v.Shape)
			}
		}
		assert.NotEmpty(t, st.glyph, "%s: its val_bpb marker", e.text)
		styles[e.text] = st
	}
	assert.Equal(t, []string{"runs: lr08", "seed 1337", "seed 42", "seed 7", "against runs: x", "seed 1", "seed 2", "seed 3"}, names)
	assert.Len(t, styles, 6, "six seeds, six legend lines")
	seen := map[style]string{}
	for n, st := range styles {
		assert.Empty(t, seen[st], "%s draws like %s", n, seen[st])
		seen[st] = n
	}

	// Padded: steps 1 to 20, train_loss 5.2668 to 11.9213 (the logs'
	// lowest and highest), val_bpb 2.9468 to 3.1964.
	step := fig.panels[0]
	assert.Equal(t, 0.0, step.X.Min)
	assert.Greater(t, step.X.Max, 20.5)
	assert.Less(t, step.Y.Min, 5.2668-0.3)
	assert.Greater(t, step.Y.Max, 11.9213+0.3)
	assert.Equal(t, []string{"0", "5", "10", "15", "20"}, labels(majorTicks(step.X)))

	assert.True(t, fig.valPerRun)
	val := fig.panels[2]
	assert.Equal(t, "val_bpb of each run (its one validation, step 20)", val.Title.Text)
	assert.Equal(t, []string{"seed 1337", "seed 42", "seed 7", "seed 1", "seed 2", "seed 3"}, labels(majorTicks(val.X)))
	assert.Equal(t, []string{"2.9468", "2.9666", "2.9762", "3.1964", "3.1949", "3.1910"}, fig.valLabels)
	assert.Less(t, val.Y.Min, 2.9468)
	assert.Greater(t, val.Y.Max, 3.1964)
	checkTicks(t, "val_bpb", val.Y)

	// Logs with several validations: val_bpb against step.
	opts.AgainstRuns = []string{leakyReLU}
	rep, err = Build([]string{valCalib}, opts)
	require.NoError(t, err)
	fig, err = rep.figure()
	require.NoError(t, err)
	assert.False(t, fig.valPerRun)
	assert.Equal(t, "val_bpb against step", fig.panels[2].Title.Text)
	assert.Empty(t, fig.valLabels)
	for i, p := range fig.panels {
		checkTicks(t, fmt.Sprintf("panel %d x", i), p.X)
		checkTicks(t, fmt.Sprintf("panel %d y", i), p.Y)
	}
}
