package train

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"

	"github.com/golf-ml/golf/internal/atomicfile"
	"github.com/golf-ml/golf/report"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Point is one (step, loss) sample of a curve.
type Point struct {
	Step int
	Loss float64
}

// pointJSON is a Point as JSON writes it: a non-finite loss (a step the
// fp16 loss scaler skipped) as null, which JSON numbers cannot hold.
type pointJSON struct {
	Step int
	Loss *float64
}

// MarshalJSON writes a non-finite Loss as null.
func (p Point) MarshalJSON() ([]byte, error) {
	j := pointJSON{Step: p.Step}
	if !math.IsNaN(p.Loss) && !math.IsInf(p.Loss, 0) {
		j.Loss = &p.Loss
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a null Loss as NaN.
func (p *Point) UnmarshalJSON(b []byte) error {
	var j pointJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	p.Step, p.Loss = j.Step, math.NaN()
	if j.Loss != nil {
		p.Loss = *j.Loss
	}
	return nil
}

// The loss plot's size: the axes and, at their right, the legend.
const (
	lossPlotWidth   = 9 * vg.Inch
	lossPlotHeight  = 5 * vg.Inch
	lossLegendWidth = 1.5 * vg.Inch
)

// lossFigure is the loss plot before it is drawn.
type lossFigure struct {
	plot   *plot.Plot
	legend plot.Legend
	// legendNames are the legend's entries, in order.
	legendNames []string
	// valLabel is the value written beside the last validation point.
	valLabel string
}

// WriteLossPlot draws the train loss curve (and the validation points, if
// any) into a PNG at path, atomically. The axes are padded past the data
// so that no point or peak sits on the frame, their ticks are round
// numbers, the last validation point is labelled with its value, and the
// legend sits in a box beside the axes, off the curves.
func WriteLossPlot(path, title string, trainPts, valPts []Point) error {
	fig, err := newLossFigure(title, trainPts, valPts)
	if err != nil {
		return fmt.Errorf("loss plot: %w", err)
	}
	img := vgimg.New(lossPlotWidth, lossPlotHeight)
	dc := draw.New(img)
	axes, legend := lossLayout(dc)
	fig.plot.Draw(axes)
	drawLegendBox(&fig.legend, legend)
	_, err = atomicfile.Write(path, func(f io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		return err
	})
	return err
}

// lossLayout splits the picture: the axes at the left, the legend's
// column at the right, below the title's height.
func lossLayout(dc draw.Canvas) (axes, legend draw.Canvas) {
	axes = draw.Crop(dc, 0, -lossLegendWidth, 0, -vg.Millimeter*2)
	legend = draw.Crop(dc, dc.Max.X-dc.Min.X-lossLegendWidth+vg.Millimeter*2, -vg.Millimeter*3, 0, -vg.Millimeter*10)
	return axes, legend
}

func newLossFigure(title string, trainPts, valPts []Point) (*lossFigure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = "loss (nats/token)"
	p.X.Tick.Marker = report.RoundTicks{Integer: true}
	p.Y.Tick.Marker = report.RoundTicks{}
	p.Add(plotter.NewGrid())
	fig := &lossFigure{plot: p, legend: plot.NewLegend()}
	fig.legend.TextStyle.Font.Size = vg.Points(11)
	fig.legend.ThumbnailWidth = vg.Points(26)
	fig.legend.Padding = vg.Points(3)
	var xy plotter.XYs
	if len(trainPts) > 0 {
		pts := toXY(trainPts)
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = plotColor(0), vg.Points(1.5)
		p.Add(l)
		fig.legend.Add("train_loss", l)
		fig.legendNames = append(fig.legendNames, "train_loss")
		xy = append(xy, pts...)
	}
	if len(valPts) > 0 {
		pts := toXY(valPts)
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		s.Color, s.Shape, s.Radius = plotColor(1), draw.CircleGlyph{}, vg.Points(4)
		p.Add(s)
		fig.legend.Add("val_loss", s)
		fig.legendNames = append(fig.legendNames, "val_loss")
		last := pts[len(pts)-1]
		fig.valLabel = fmt.Sprintf("%.4f", last.Y)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{last}, Labels: []string{fig.valLabel}})
		if err != nil {
			return nil, err
		}
		// Left of and above the point, so a point at the last step keeps
		// its label inside the axes.
		lb.TextStyle[0].XAlign, lb.TextStyle[0].YAlign = draw.XRight, draw.YBottom
		lb.TextStyle[0].Color = plotColor(1)
		lb.Offset = vg.Point{X: -vg.Points(5), Y: vg.Points(5)}
		p.Add(lb)
		xy = append(xy, pts...)
	}
	padAxes(p, xy)
	return fig, nil
}

// padAxes sets the axes to the finite points' range, padded: y by 8% of
// the span either side, x from step 0 to 4% of the span past the last
// step.
func padAxes(p *plot.Plot, xy plotter.XYs) {
	var d report.DataRange
	d.Add(xy)
	d.Apply(p, true, 0.08)
}

// drawLegendBox draws the legend at the top of c in a framed white box.
func drawLegendBox(l *plot.Legend, c draw.Canvas) {
	l.Left, l.Top = true, true
	pad := vg.Millimeter * 2
	r := l.Rectangle(c)
	report.DrawFrame(c, vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: c.Max.Y - (r.Max.Y - r.Min.Y) - 2*pad}, Max: c.Max})
	l.Draw(draw.Crop(c, pad, -pad, 0, -pad))
}

// toXY is the curve of pts, without the points of non-finite loss (steps
// the fp16 loss scaler skipped), which gonum's plotters refuse.
func toXY(pts []Point) plotter.XYs {
	xy := make(plotter.XYs, 0, len(pts))
	for _, p := range pts {
		if !math.IsNaN(p.Loss) && !math.IsInf(p.Loss, 0) {
			xy = append(xy, plotter.XY{X: float64(p.Step), Y: p.Loss})
		}
	}
	return xy
}

func plotColor(i int) color.Color {
	palette := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	}
	return palette[i%len(palette)]
}
