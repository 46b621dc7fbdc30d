package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"uraid/bench"
)

// Layout of a chart, in the units of the page it is drawn on.
const (
	barWidth    = 10 * vg.Millimeter // one array's bar
	groupGap    = 14 * vg.Millimeter // between two cases' groups of bars
	plotMargin  = 34 * vg.Millimeter // the value axis and the plot's padding
	legendWidth = 46 * vg.Millimeter // the strip right of the plot
	chartHeight = 105 * vg.Millimeter
	// labelRoom is the share of the value axis kept free above the highest
	// whisker for the value labels.
	labelRoom = 0.1
)

// drawPlots draws every chart of the suite into dir as NAME.png, at dpi
// dots per inch.
func drawPlots(s *bench.Suite, dir string, dpi int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range s.Charts() {
		if err := drawChart(c, filepath.Join(dir, c.Name+".png"), dpi); err != nil {
			return fmt.Errorf("plot %s: %w", c.Name, err)
		}
	}
	return nil
}

func drawChart(c bench.Chart, path string, dpi int) error {
	p := plot.New()
	p.Title.Text = c.Title + "\n" + c.Note
	p.Title.TextStyle.Font = sans(11)
	p.Title.Padding = 3 * vg.Millimeter
	p.Y.Label.Text = c.YLabel
	p.Y.Label.TextStyle.Font = sans(10)
	p.Y.Tick.Label.Font = sans(9)
	p.X.Tick.Label.Font = sans(10)

	lo, hi := c.AxisRange(labelRoom)
	if c.Log {
		p.Y.Scale = plot.LogScale{}
		labelled, minor := bench.LogTicks(lo, hi)
		var ticks plot.ConstantTicks
		for _, v := range labelled {
			ticks = append(ticks, plot.Tick{Value: v, Label: bench.FormatTick(v)})
		}
		for _, v := range minor {
			ticks = append(ticks, plot.Tick{Value: v})
		}
		p.Y.Tick.Marker = ticks
	}
	p.Add(&bars{chart: c, base: lo, top: hi})
	p.NominalX(c.Cases...)
	p.X.Min, p.X.Max = -0.5, float64(len(c.Cases))-0.5
	p.Y.Min, p.Y.Max = lo, hi

	groupWidth := vg.Length(len(c.Systems))*barWidth + groupGap
	// Wide enough for the bars, and for the title over them.
	w := max(plotMargin+vg.Length(len(c.Cases))*groupWidth, p.Title.TextStyle.Width(p.Title.Text)+10*vg.Millimeter) + legendWidth
	img := vgimg.NewWith(vgimg.UseWH(w, chartHeight), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	drawLegend(draw.Crop(dc, w-legendWidth, 0, 0, 0), c)

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// bars draws a chart's bars: one group per case, a bar per array up from
// the axis's base to the median, a whisker over the repetitions' spread,
// and the median's value above it.
type bars struct {
	chart     bench.Chart
	base, top float64 // the value axis
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(b.chart.Systems)
	// The groups share the axis: each takes what its slot leaves beside the gap.
	width := (trX(1) - trX(0)) * 0.8 / vg.Length(n)
	line := draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}
	label := draw.TextStyle{Color: color.Black, Font: sans(8), XAlign: draw.XCenter, Handler: p.Title.TextStyle.Handler}
	for i, sys := range b.chart.Systems {
		for j, bar := range b.chart.Bars[i] {
			if bar.Runs == 0 {
				continue
			}
			mid := trX(float64(j)) + width*(vg.Length(i)-vg.Length(n-1)/2)
			left, right := mid-width/2, mid+width/2
			bottom, top := trY(b.base), trY(bar.Median)
			c.FillPolygon(systemColor(sys, i), []vg.Point{{X: left, Y: bottom}, {X: left, Y: top}, {X: right, Y: top}, {X: right, Y: bottom}})
			above := top
			if bar.Runs > 1 && bar.Max > bar.Min {
				lo, hi := trY(bar.Min), trY(bar.Max)
				cap := width / 4
				c.StrokeLine2(line, mid, lo, mid, hi)
				c.StrokeLine2(line, mid-cap, lo, mid+cap, lo)
				c.StrokeLine2(line, mid-cap, hi, mid+cap, hi)
				above = max(above, hi)
			}
			c.FillText(label, vg.Point{X: mid, Y: above + vg.Points(3)}, bench.FormatValue(bar.Median))
		}
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.5, float64(len(b.chart.Cases)) - 0.5, b.base, b.top
}

// drawLegend names each array of ch beside a swatch of its colour, from the
// top of the strip c, and says what a whisker is if the chart has any.
func drawLegend(c draw.Canvas, ch bench.Chart) {
	sty := draw.TextStyle{Color: color.Black, Font: sans(9), YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
	row := 6 * vg.Millimeter
	y := c.Max.Y - 18*vg.Millimeter
	x := c.Min.X + 2*vg.Millimeter
	sw := 4 * vg.Millimeter
	for i, sys := range ch.Systems {
		c.FillPolygon(systemColor(sys, i), []vg.Point{{X: x, Y: y - sw/2}, {X: x, Y: y + sw/2}, {X: x + sw, Y: y + sw/2}, {X: x + sw, Y: y - sw/2}})
		c.FillText(sty, vg.Point{X: x + sw + 2*vg.Millimeter, Y: y}, bench.SystemLabel(sys))
		y -= row
	}
	if !ch.HasSpread() {
		return
	}
	// What a whisker means, once.
	y -= row / 2
	line := draw.LineStyle{Color: color.Black, Width: vg.Points(0.8)}
	mid := x + sw/2
	c.StrokeLine2(line, mid, y-sw/2, mid, y+sw/2)
	c.StrokeLine2(line, mid-sw/4, y-sw/2, mid+sw/4, y-sw/2)
	c.StrokeLine2(line, mid-sw/4, y+sw/2, mid+sw/4, y+sw/2)
	c.FillText(sty, vg.Point{X: x + sw + 2*vg.Millimeter, Y: y}, "min–max of the runs")
}

// systemColor keeps an array's colour the same across charts: md in greys,
// uraid sync in blues, uraid async in greens.
func systemColor(sys string, i int) color.Color {
	switch sys {
	case "md-raid0":
		return color.RGBA{150, 150, 150, 255}
	case "md-raid10":
		return color.RGBA{90, 90, 90, 255}
	case "uraid-raid0-sync":
		return color.RGBA{120, 160, 230, 255}
	case "uraid-raid10-sync":
		return color.RGBA{40, 80, 180, 255}
	case "uraid-raid0-async":
		return color.RGBA{120, 210, 120, 255}
	case "uraid-raid10-async":
		return color.RGBA{30, 140, 50, 255}
	}
	return plotutil.Color(i)
}
