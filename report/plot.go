package report

import (
	"fmt"
	"image/color"
	"io"

	"github.com/golf-ml/golf/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// GroupColors are the plot's colours: the runs, then the --against-runs.
var GroupColors = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// WritePlot draws the runs' curves into a PNG at path, atomically: three
// panels, train_loss against step, train_loss against train time, and
// val_bpb against step (points), one line per run, one colour per group
// (the runs, the --against-runs).
func (rep *Report) WritePlot(path string) error {
	panels := []*plot.Plot{plot.New(), plot.New(), plot.New()}
	labels := [][3]string{
		{"train_loss against step", "step", "train_loss (nats)"},
		{"train_loss against train time", "train time (s)", "train_loss (nats)"},
		{"val_bpb against step", "step", "val_bpb"},
	}
	for i, p := range panels {
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = labels[i][0], labels[i][1], labels[i][2]
		p.Add(plotter.NewGrid())
	}
	groups := []*Group{rep.Runs}
	names := []string{"runs"}
	if rep.Baseline != nil {
		groups, names = append(groups, rep.Baseline), append(names, "against runs")
	}
	drawn := false
	for gi, g := range groups {
		col := GroupColors[gi%len(GroupColors)]
		var legend plot.Thumbnailer
		for ri, r := range g.Runs {
			byStep, byTime, val := curves(r)
			dashes := []vg.Length{}
			if ri%2 == 1 {
				dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			for i, xy := range []plotter.XYs{byStep, byTime} {
				if len(xy) == 0 {
					continue
				}
				l, err := plotter.NewLine(xy)
				if err != nil {
					return fmt.Errorf("--plot %s: %s: %w", path, r.Path, err)
				}
				l.Color, l.Width, l.Dashes = col, vg.Points(1.2), dashes
				panels[i].Add(l)
				legend, drawn = l, true
			}
			if len(val) > 0 {
				s, err := plotter.NewScatter(val)
				if err != nil {
					return fmt.Errorf("--plot %s: %s: %w", path, r.Path, err)
				}
				s.Color, s.Radius, s.Shape = col, vg.Points(3), draw.CircleGlyph{}
				panels[2].Add(s)
				drawn = true
				if legend == nil {
					legend = s
				}
			}
		}
		if legend != nil {
			panels[0].Legend.Add(fmt.Sprintf("%s (%d logs)", names[gi], len(g.Runs)), legend)
		}
	}
	if !drawn {
		return fmt.Errorf("--plot %s: the logs have no step lines to plot", path)
	}
	panels[0].Legend.Top = true
	img := vgimg.New(15*vg.Inch, 5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	_, err := atomicfile.Write(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
	return err
}

// curves are a run's train_loss by step and by train time (seconds) and
// its val_bpb by step.
func curves(r *Run) (byStep, byTime, val plotter.XYs) {
	for _, p := range r.Train {
		byStep = append(byStep, plotter.XY{X: float64(p.Step), Y: p.Loss})
		if p.TrainTimeMs >= 0 {
			byTime = append(byTime, plotter.XY{X: p.TrainTimeMs / 1000, Y: p.Loss})
		}
	}
	for _, p := range r.Val {
		val = append(val, plotter.XY{X: float64(p.Step), Y: p.BPB})
	}
	return byStep, byTime, val
}
