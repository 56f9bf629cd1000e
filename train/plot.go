package train

import (
	"fmt"
	"image/color"
	"io"

	"github.com/golf-ml/golf/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Point is one (step, loss) sample of a curve.
type Point struct {
	Step int
	Loss float64
}

// WriteLossPlot draws the train loss curve (and the validation points, if
// any) into a PNG at path, atomically.
func WriteLossPlot(path, title string, trainPts, valPts []Point) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = "loss (nats/token)"
	p.Add(plotter.NewGrid())
	if len(trainPts) > 0 {
		l, err := plotter.NewLine(toXY(trainPts))
		if err != nil {
			return err
		}
		l.Color = plotColor(0)
		p.Add(l)
		p.Legend.Add("train_loss", l)
	}
	if len(valPts) > 0 {
		s, err := plotter.NewScatter(toXY(valPts))
		if err != nil {
			return err
		}
		s.Color = plotColor(1)
		p.Add(s)
		p.Legend.Add("val_loss", s)
	}
	w, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("loss plot: %w", err)
	}
	_, err = atomicfile.Write(path, func(f io.Writer) error {
		_, err := w.WriteTo(f)
		return err
	})
	return err
}

func toXY(pts []Point) plotter.XYs {
	xy := make(plotter.XYs, len(pts))
	for i, p := range pts {
		xy[i].X, xy[i].Y = float64(p.Step), p.Loss
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
