package main

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/denorm/denorm/internal/bench"
)

var (
	colDenorm   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colBaseline = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colFloor    = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
)

// WritePNG draws three panels from the report, each Denorm beside the baseline on a log
// scale, since the figures span orders of magnitude: records per second one shard drains
// (by the latency model, when the run had one), dollars per million source writes, and lag
// p50/p99 from a source write to its derived value. A workload the baseline did not run
// (NoBaseline) has no baseline bars and no labels for them.
func writePNG(r *bench.Report, w io.Writer) error {
	var names []string
	var rpsD, rpsB, usdD, usdB, p50D, p50B, p99D, p99B plotter.Values
	for _, wr := range r.Workloads {
		names = append(names, wr.Name)
		if wr.NoBaseline {
			nan := math.NaN()
			wr.Baseline = bench.Summary{ModelRecordsPerSec: nan, RecordsPerSec: nan, DollarsPerMillion: nan, LagP50: nan, LagP99: nan}
		}
		d, b := wr.Denorm.ModelRecordsPerSec, wr.Baseline.ModelRecordsPerSec
		if r.LatencyModel == nil {
			d, b = wr.Denorm.RecordsPerSec, wr.Baseline.RecordsPerSec
		}
		rpsD = append(rpsD, d)
		rpsB = append(rpsB, b)
		usdD = append(usdD, wr.Denorm.DollarsPerMillion)
		usdB = append(usdB, wr.Baseline.DollarsPerMillion)
		p50D = append(p50D, wr.Denorm.LagP50)
		p50B = append(p50B, wr.Baseline.LagP50)
		p99D = append(p99D, wr.Denorm.LagP99)
		p99B = append(p99B, wr.Baseline.LagP99)
	}
	speed := "Records per second, one shard (log scale)"
	if r.LatencyModel != nil {
		speed = "Records per second, one shard, by the latency model (log scale)"
	}
	left, err := barPanel(speed, "records/s (rename: copies/s)", 1, names, []series{
		{"Denorm", rpsD, colDenorm}, {"baseline", rpsB, colBaseline},
	})
	if err != nil {
		return err
	}
	middle, err := barPanel("Dollars per million source writes (log scale)", "US$ (rename: per million copies)", 0.01, names, []series{
		{"Denorm", usdD, colDenorm}, {"baseline", usdB, colBaseline},
	})
	if err != nil {
		return err
	}
	right, err := barPanel("Lag from write to derived value (log scale)", "milliseconds", 1, names, []series{
		{"Denorm p50", p50D, colDenorm}, {"Denorm p99", p99D, lighter(colDenorm)},
		{"baseline p50", p50B, colBaseline}, {"baseline p99", p99B, lighter(colBaseline)},
	})
	if err != nil {
		return err
	}
	const width, height = 24 * vg.Inch, 6 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 4,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{{left, middle, right}}, tiles, dc)
	left.Draw(canvases[0][0])
	middle.Draw(canvases[0][1])
	right.Draw(canvases[0][2])
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

type series struct {
	name   string
	values plotter.Values
	color  color.Color
}

// barPanel draws grouped bars on a log scale, standing on base; the value is printed above
// each bar.
func barPanel(title, ylabel string, base float64, names []string, ss []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(15)
	p.Y.Label.Text = ylabel
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	p.X.Tick.Label.Font.Size = vg.Points(11)
	hi := base
	for _, s := range ss {
		for _, v := range s.values {
			if !math.IsNaN(v) {
				hi = math.Max(hi, v)
			}
		}
	}
	width := vg.Points(72 / float64(len(ss)))
	for i, s := range ss {
		off := width * vg.Length(float64(i)-float64(len(ss)-1)/2)
		bars := &logBars{vals: s.values, base: base, width: width, offset: off, color: s.color}
		p.Add(bars)
		p.Legend.Add(s.name, bars)
		var pts plotter.XYs
		var labels []string
		for j, v := range s.values {
			pts = append(pts, plotter.XY{X: float64(j), Y: base * 1.15})
			if !math.IsNaN(v) {
				pts[j].Y = math.Max(v, base) * 1.15
			}
			labels = append(labels, short(v))
		}
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
		if err != nil {
			return nil, err
		}
		for k := range l.TextStyle {
			l.TextStyle[k].Font.Size = vg.Points(8)
			l.TextStyle[k].XAlign = draw.XCenter
		}
		l.Offset.X = off
		p.Add(l)
	}
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = base, hi*8 // after Add, which widens the range to the bars' base; room for the legend
	return p, nil
}

// short is a bar's label; none for a value the run does not have (NaN).
func short(v float64) string {
	switch {
	case math.IsNaN(v):
		return ""
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.1fk", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func lighter(c color.RGBA) color.RGBA {
	mix := func(x uint8) uint8 { return uint8((int(x) + 2*255) / 3) }
	return color.RGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 0xff}
}

// logBars are bars standing on base (a log scale has no 0; gonum's BarChart starts at 0): a
// value of base or less, or NaN (none), shows as no bar.
type logBars struct {
	vals   plotter.Values
	base   float64
	width  vg.Length
	offset vg.Length
	color  color.Color
}

func (b *logBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for i, v := range b.vals {
		if v <= b.base || math.IsNaN(v) {
			continue
		}
		x := trX(float64(i)) + b.offset
		y0, y1 := trY(b.base), trY(v)
		c.FillPolygon(b.color, c.ClipPolygonY([]vg.Point{
			{X: x - b.width/2, Y: y0}, {X: x - b.width/2, Y: y1}, {X: x + b.width/2, Y: y1}, {X: x + b.width/2, Y: y0}}))
	}
}

func (b *logBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymax = 1
	for _, v := range b.vals {
		if !math.IsNaN(v) {
			ymax = math.Max(ymax, v)
		}
	}
	return 0, float64(len(b.vals) - 1), 1, ymax
}

// Thumbnail draws the legend's swatch.
func (b *logBars) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, c.ClipPolygonY([]vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}))
}
