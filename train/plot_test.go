package train

import (
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The train_loss and val_loss lines of report/testdata/golf/x_seed1.txt, a
// 20-step smoke run: a spike to 11.8995 at step 2, the one validation at
// the last step.
var (
	smokeTrain = []Point{{1, 6.9370}, {2, 11.8995}, {3, 10.8155}, {4, 8.9500}, {5, 8.0864}, {6, 7.5267},
		{7, 7.0679}, {8, 6.5199}, {9, 6.6339}, {10, 6.1906}, {20, 5.6704}}
	smokeVal = []Point{{20, 5.7543}}
)

func tickLabels(a plot.Axis) []string {
	var out []string
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.Label != "" {
			out = append(out, t.Label)
			v, err := strconv.ParseFloat(t.Label, 64)
			if err != nil || v != t.Value {
				out = append(out, "(label of "+strconv.FormatFloat(t.Value, 'g', -1, 64)+")")
			}
		}
	}
	return out
}

// The loss plot of a smoke run: the axes padded past the data (the spike
// and the last step's point off the frame), round ticks, the last
// validation labelled with its value, the legend beside the axes.
func TestLossPlotLayout(t *testing.T) {
	fig, err := newLossFigure("golf x_seed1", smokeTrain, smokeVal)
	require.NoError(t, err)
	p := fig.plot
	assert.Equal(t, 0.0, p.X.Min, "steps from 0")
	assert.GreaterOrEqual(t, p.X.Max, 20.5, "room right of the last step's point")
	span := 11.8995 - 5.6704
	assert.LessOrEqual(t, p.Y.Min, 5.6704-0.05*span, "room below the lowest loss")
	assert.GreaterOrEqual(t, p.Y.Max, 11.8995+0.05*span, "room above the spike")
	// x 0 to 20.76: every 5; y 5.17 to 12.40: every 1 (7 ticks, every 2
	// gives 4, 6 are wanted).
	assert.Equal(t, []string{"0", "5", "10", "15", "20"}, tickLabels(p.X))
	assert.Equal(t, []string{"6", "7", "8", "9", "10", "11", "12"}, tickLabels(p.Y))
	assert.Equal(t, []string{"train_loss", "val_loss"}, fig.legendNames)
	assert.Equal(t, "5.7543", fig.valLabel)

	// The legend's column is right of the axes' canvas: it cannot cover
	// the data.
	dc := draw.New(vgimg.New(lossPlotWidth, lossPlotHeight))
	axes, legend := lossLayout(dc)
	assert.GreaterOrEqual(t, legend.Min.X, axes.Max.X)
	assert.Less(t, legend.Max.X, dc.Max.X)
	assert.Greater(t, legend.Max.X-legend.Min.X, fig.legend.Rectangle(legend).Max.X-fig.legend.Rectangle(legend).Min.X, "the legend fits its column")

	path := filepath.Join(t.TempDir(), "loss.png")
	require.NoError(t, WriteLossPlot(path, "golf x_seed1", smokeTrain, smokeVal))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, [2]int{864, 480}, [2]int{cfg.Width, cfg.Height}, "9 x 5 inches at 96 dpi")
}

// A run of one step, and one with no validation.
func TestLossPlotEdges(t *testing.T) {
	fig, err := newLossFigure("one", []Point{{1, 6.9}}, nil)
	require.NoError(t, err)
	assert.Less(t, fig.plot.X.Min, 1.0)
	assert.Greater(t, fig.plot.X.Max, 1.0)
	assert.Less(t, fig.plot.Y.Min, 6.9)
	assert.Greater(t, fig.plot.Y.Max, 6.9)
	assert.Equal(t, []string{"train_loss"}, fig.legendNames)
	assert.Empty(t, fig.valLabel)
	require.NoError(t, WriteLossPlot(filepath.Join(t.TempDir(), "one.png"), "one", []Point{{1, 6.9}}, nil))
}
