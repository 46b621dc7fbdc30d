package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"uraid/bench"
)

// chart is one PNG: a metric of a scenario, a group of bars per case, one
// bar per array.
type chart struct {
	scenario, metric string
}

// drawPlots draws one bar chart per scenario and metric into dir.
func drawPlots(s *bench.Suite, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var charts []chart
	for _, r := range s.Results {
		c := chart{r.Scenario, r.Metric}
		if r.Metric != "discards" && !slices.Contains(charts, c) {
			charts = append(charts, c)
		}
	}
	for _, c := range charts {
		if err := drawChart(s, c, filepath.Join(dir, c.scenario+"-"+c.metric+".png")); err != nil {
			return fmt.Errorf("plot %s %s: %w", c.scenario, c.metric, err)
		}
	}
	return nil
}

func drawChart(s *bench.Suite, c chart, path string) error {
	var cases, systems []string
	unit, better := "", ""
	for _, r := range s.Results {
		if r.Scenario != c.scenario || r.Metric != c.metric {
			continue
		}
		if !slices.Contains(cases, r.Case) {
			cases = append(cases, r.Case)
		}
		if !slices.Contains(systems, r.System) {
			systems = append(systems, r.System)
		}
		unit, better = r.Unit, r.Better
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s (median, %s is better)", c.scenario, c.metric, better)
	p.Y.Label.Text = unit
	width := vg.Points(80 / float64(len(systems)))
	for i, sys := range systems {
		vals := make(plotter.Values, len(cases))
		for j, cs := range cases {
			for _, r := range s.Results {
				if r.Scenario == c.scenario && r.Metric == c.metric && r.Case == cs && r.System == sys {
					vals[j] = r.Median
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = systemColor(sys, i)
		bars.Offset = width * vg.Length(float64(i)-float64(len(systems)-1)/2)
		p.Add(bars)
		p.Legend.Add(sys, bars)
	}
	p.NominalX(cases...)
	// Room above the bars for the legend, and beside the outer groups.
	p.Y.Min = 0
	p.Y.Max *= 1.35
	p.X.Min -= 0.6
	p.X.Max += 0.6
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Millimeter * 5
	return p.Save(vg.Length(100+45*len(cases))*vg.Millimeter, 100*vg.Millimeter, path)
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
