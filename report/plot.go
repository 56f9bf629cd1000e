package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"regexp"

	"github.com/golf-ml/golf/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// GroupColors are the plot's colours: the runs, then the --against-runs.
var GroupColors = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// seedDashes and seedGlyphs tell a group's runs apart: the n-th seed of
// the plot (counted over both groups, so a seed looks the same in each)
// has the n-th line style and marker; the legend names them.
var (
	seedDashes = [][]vg.Length{
		nil,
		{vg.Points(6), vg.Points(3)},
		{vg.Points(1.5), vg.Points(2.5)},
		{vg.Points(7), vg.Points(2.5), vg.Points(1.5), vg.Points(2.5)},
		{vg.Points(12), vg.Points(4)},
	}
	seedGlyphs = []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.RingGlyph{}, draw.PlusGlyph{},
	}
)

// The plot's size: three panels and, at the right, the legend.
const (
	plotWidth   = 17 * vg.Inch
	plotHeight  = 5 * vg.Inch
	legendWidth = 2 * vg.Inch
)

// figure is the report's plot before it is drawn, with what the tests
// check of it.
type figure struct {
	panels []*plot.Plot // train_loss by step, by train time, val_bpb
	// legend is drawn beside the panels: each group's name, then one line
	// per run, named by its seed, with its line style and marker.
	legend []legendEntry
	// valPerRun: every run was validated once, so the val_bpb panel has
	// one point per run, at its own place on the x axis and labelled with
	// its value, rather than points against step.
	valPerRun bool
	valLabels []string // the values written beside the per-run points
}

// WritePlot draws the runs' curves into a PNG at path, atomically: three
// panels, train_loss against step, train_loss against train time, and
// val_bpb (against step, or one point per run when each run was validated
// once), and a legend beside them. Each group (the runs, the
// --against-runs) has a colour; each seed a line style and marker.
func (rep *Report) WritePlot(path string) error {
	fig, err := rep.figure()
	if err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	img := vgimg.New(plotWidth, plotHeight)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Millimeter * 6, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{fig.panels}, tiles, draw.Crop(dc, 0, -legendWidth, 0, 0))
	for i, p := range fig.panels {
		p.Draw(canvases[0][i])
	}
	drawLegend(fig.legend, draw.Crop(dc, plotWidth-legendWidth, -vg.Millimeter*3, 0, -vg.Millimeter*12))
	_, err = atomicfile.Write(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
	return err
}

// legendEntry is a line of the legend: a group's name (no thumbs), or a
// run with its line and marker.
type legendEntry struct {
	text   string
	run    bool
	thumbs []plot.Thumbnailer
}

// drawLegend draws the entries in a framed box at the top of c, as wide as
// c: group names at the left, runs indented below their group.
func drawLegend(entries []legendEntry, c draw.Canvas) {
	pad, lineH, thumbW := vg.Millimeter*2.5, vg.Points(16), vg.Points(34)
	if avail := (c.Max.Y - c.Min.Y - 2*pad) / vg.Length(len(entries)); avail < lineH {
		lineH = avail // many runs: smaller lines, all in the picture
	}
	heading := text.Style{Font: font.From(plot.DefaultFont, lineH*0.75), Handler: plot.DefaultTextHandler}
	run := text.Style{Font: font.From(plot.DefaultFont, lineH*0.69), Handler: plot.DefaultTextHandler}
	height := vg.Length(len(entries))*lineH + 2*pad
	box := vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: c.Max.Y - height}, Max: c.Max}
	DrawFrame(c, box)
	y := c.Max.Y - pad
	for _, e := range entries {
		y -= lineH
		if len(e.thumbs) == 0 && !e.run {
			c.FillText(heading, vg.Point{X: c.Min.X + pad, Y: y + lineH/4}, e.text)
			continue
		}
		x := c.Min.X + pad + vg.Points(8)
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y + lineH/8}, Max: vg.Point{X: x + thumbW, Y: y + lineH*7/8}}}
		for _, t := range e.thumbs {
			t.Thumbnail(&icon)
		}
		c.FillText(run, vg.Point{X: x + thumbW + vg.Points(6), Y: y + lineH/4}, e.text)
	}
}

// DrawFrame draws box on c filled white in a thin grey frame: the box of a
// legend.
func DrawFrame(c draw.Canvas, box vg.Rectangle) {
	corners := []vg.Point{box.Min, {X: box.Max.X, Y: box.Min.Y}, box.Max, {X: box.Min.X, Y: box.Max.Y}}
	c.FillPolygon(color.White, corners)
	c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 0x80}, Width: vg.Points(0.75)}, append(corners, box.Min))
}

// figure builds the plot's panels and legend.
func (rep *Report) figure() (*figure, error) {
	fig := &figure{panels: []*plot.Plot{plot.New(), plot.New(), plot.New()}}
	labels := [][3]string{
		{"train_loss against step", "step", "train_loss (nats)"},
		{"train_loss against train time", "train time (s)", "train_loss (nats)"},
		{"val_bpb against step", "step", "val_bpb"},
	}
	for i, p := range fig.panels {
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = labels[i][0], labels[i][1], labels[i][2]
		p.X.Tick.Marker, p.Y.Tick.Marker = RoundTicks{}, RoundTicks{}
		p.Add(plotter.NewGrid())
	}
	fig.panels[0].X.Tick.Marker = RoundTicks{Integer: true}
	fig.panels[2].X.Tick.Marker = RoundTicks{Integer: true}

	groups := []*Group{rep.Runs}
	names := []string{"runs"}
	if rep.Baseline != nil {
		groups, names = append(groups, rep.Baseline), append(names, "against runs")
	}
	seedStyle := map[string]int{}
	var all []*Run
	for _, g := range groups {
		for _, r := range g.Runs {
			if _, ok := seedStyle[r.SeedKey()]; !ok {
				seedStyle[r.SeedKey()] = len(seedStyle)
			}
			all = append(all, r)
		}
	}
	fig.valPerRun = true
	for _, r := range all {
		if len(r.Val) > 1 {
			fig.valPerRun = false
		}
	}

	var ranges [3]DataRange
	var valTicks []plot.Tick
	var valPts plotter.XYs
	drawn := false
	pos := 0.0 // the x of the next run's point in the per-run val_bpb panel
	for gi, g := range groups {
		col := GroupColors[gi%len(GroupColors)]
		heading := names[gi]
		if n := groupName(g.Runs); n != "" {
			heading += ": " + n
		}
		fig.legend = append(fig.legend, legendEntry{text: heading})
		for _, r := range g.Runs {
			style := seedStyle[r.SeedKey()]
			// 25 seeds before a line style and marker repeat.
			dashes, glyph := seedDashes[style%len(seedDashes)], seedGlyphs[(style+style/len(seedDashes))%len(seedGlyphs)]
			byStep, byTime, val := curves(r)
			var thumbs []plot.Thumbnailer
			for i, xy := range []plotter.XYs{byStep, byTime} {
				if len(xy) == 0 {
					continue
				}
				l, err := plotter.NewLine(xy)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", r.Path, err)
				}
				l.Color, l.Width, l.Dashes = col, vg.Points(1.4), dashes
				fig.panels[i].Add(l)
				ranges[i].Add(xy)
				if i == 0 {
					thumbs = append(thumbs, l)
				}
				drawn = true
			}
			if len(val) > 0 {
				if fig.valPerRun {
					val = plotter.XYs{{X: pos, Y: val[0].Y}}
					valTicks = append(valTicks, plot.Tick{Value: pos, Label: seedTick(r, len(all))})
					valPts = append(valPts, val[0])
					fig.valLabels = append(fig.valLabels, fmt.Sprintf("%.4f", val[0].Y))
					pos++
				} else if len(val) > 1 {
					l, err := plotter.NewLine(val)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", r.Path, err)
					}
					l.Color, l.Width, l.Dashes = col, vg.Points(1), dashes
					fig.panels[2].Add(l)
				}
				s, err := plotter.NewScatter(val)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", r.Path, err)
				}
				s.Color, s.Radius, s.Shape = col, vg.Points(4), glyph
				fig.panels[2].Add(s)
				ranges[2].Add(val)
				thumbs = append(thumbs, s)
				drawn = true
			}
			label := seedLabel(r)
			if !r.Scored() {
				label += " (not scored)"
			}
			fig.legend = append(fig.legend, legendEntry{text: label, run: true, thumbs: thumbs})
		}
		pos++ // a gap between the groups
	}
	if !drawn {
		return nil, fmt.Errorf("the logs have no step lines to plot")
	}
	for i, p := range fig.panels {
		ranges[i].Apply(p, i != 2 || !fig.valPerRun, 0.06)
	}
	if fig.valPerRun && len(valPts) > 0 {
		p := fig.panels[2]
		p.Title.Text = "val_bpb of each run (one validation each)"
		if s := sameStep(all); s > 0 {
			p.Title.Text = fmt.Sprintf("val_bpb of each run (its one validation, step %d)", s)
		}
		p.X.Label.Text = "run (seed)"
		p.X.Tick.Marker = plot.ConstantTicks(valTicks)
		if len(valTicks) > 10 {
			p.X.Tick.Label.Rotation = math.Pi / 2
			p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
		}
		p.X.Min, p.X.Max = -0.7, pos-1-0.3
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: valPts, Labels: fig.valLabels})
		if err != nil {
			return nil, err
		}
		// Above each point; upright when more than 6 would overlap.
		upright, room := len(valPts) > 6, 0.08
		for i := range lb.TextStyle {
			lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YBottom
			lb.TextStyle[i].Font.Size = vg.Points(9)
			if upright {
				lb.TextStyle[i].Rotation = math.Pi / 2
				lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XLeft, draw.YCenter
				room = 0.25
			}
		}
		lb.Offset = vg.Point{Y: vg.Points(7)}
		p.Add(lb)
		// Room above the highest point for its label.
		_, top := PadRange(p.Y.Min, p.Y.Max, room)
		p.Y.Max = top
	}
	return fig, nil
}

// DataRange is the extent of a panel's finite data points.
type DataRange struct {
	xmin, xmax, ymin, ymax float64
	any                    bool
}

// Add takes the finite points of xy into the range.
func (d *DataRange) Add(xy plotter.XYs) {
	for _, p := range xy {
		if math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
			continue
		}
		if !d.any {
			d.xmin, d.xmax, d.ymin, d.ymax, d.any = p.X, p.X, p.Y, p.Y, true
			continue
		}
		d.xmin, d.xmax = math.Min(d.xmin, p.X), math.Max(d.xmax, p.X)
		d.ymin, d.ymax = math.Min(d.ymin, p.Y), math.Max(d.ymax, p.Y)
	}
}

// Apply sets the plot's axes to the range padded, so that no point sits
// on the frame: y by yPad of the span either side and, with x, x from 0
// (steps and train time start there) to 4% past the last point.
func (d *DataRange) Apply(p *plot.Plot, x bool, yPad float64) {
	if !d.any {
		return
	}
	p.Y.Min, p.Y.Max = PadRange(d.ymin, d.ymax, yPad)
	if x {
		p.X.Min, p.X.Max = PadRange(d.xmin, d.xmax, 0.04)
		if d.xmin > 0 {
			p.X.Min = 0
		}
	}
}

// sameStep is the step of the runs' validations when they share one, else 0.
func sameStep(runs []*Run) int {
	step := 0
	for _, r := range runs {
		for _, v := range r.Val {
			if step != 0 && v.Step != step {
				return 0
			}
			step = v.Step
		}
	}
	return step
}

// seedLabel names a run in the legend: "seed N", or its file name when its
// seed is unknown.
func seedLabel(r *Run) string {
	if r.SeedFrom == "" {
		return r.SeedKey()
	}
	return fmt.Sprintf("seed %d", r.Seed)
}

// seedTick names a run under the per-run val_bpb panel: as in the legend,
// or only its seed's number when n runs share the axis and more than 6
// names would overlap.
func seedTick(r *Run, n int) string {
	if n > 6 && r.SeedFrom != "" {
		return fmt.Sprint(r.Seed)
	}
	return seedLabel(r)
}

var seedSuffix = regexp.MustCompile(`[_-]?seed[_-]?\d+$`)

// groupName is the run id the group's runs share once their seeds are
// taken off (lr08 for lr08_seed1337, lr08_seed42); "" when they share none
// or a log has no run_id line.
func groupName(runs []*Run) string {
	name := ""
	for i, r := range runs {
		id := seedSuffix.ReplaceAllString(r.RunID, "")
		if id == "" || i > 0 && id != name {
			return ""
		}
		name = id
	}
	return name
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
