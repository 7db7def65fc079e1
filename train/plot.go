package train

import (
	"fmt"
	"image/color"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// smoothAbove is the number of recorded points above which a curve is drawn smoothed,
// with the raw values faint behind it.
const smoothAbove = 60

// Curve colours: training blue, validation orange (Okabe–Ito, readable by colour-blind
// readers).
var (
	trainColor = color.NRGBA{0x00, 0x72, 0xb2, 0xff}
	valColor   = color.NRGBA{0xd5, 0x5e, 0x00, 0xff}
)

// plot redraws the loss curves of the run in Dir.
func (l *Loop) plot() error {
	val := metricValLoss
	if _, ok := lastValue(l.history, val); !ok && strings.HasPrefix(l.Best, ValPrefix) {
		val = l.Best // a family without a validation loss plots its selection metric (the DAE's MSE)
	}
	label := l.LossLabel
	if label == "" {
		label = "loss"
	}
	run := filepath.Base(filepath.Clean(l.Dir))
	if err := PlotLoss(filepath.Join(l.Dir, PlotFile), run+": training and validation loss", label, l.history, val); err != nil {
		return err
	}
	bw := l.BandwidthLabel
	if bw == "" {
		bw = DefaultBandwidthLabel
	}
	c, err := BandwidthChart(run+": learned bandwidths at each evaluation", bw, l.history)
	if err != nil || c == nil {
		return err
	}
	return saveChart(c, filepath.Join(l.Dir, BandwidthPlotFile))
}

func lastValue(history []Record, name string) (float64, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		if v, ok := history[i].Metrics[name]; ok {
			return v, true
		}
	}
	return 0, false
}

// PlotLoss writes a PNG of the training loss and the validation metric val (e.g.
// "val_loss") against the step, with the title and the y-axis label (name and unit)
// given (see LossChart). A history with neither writes nothing.
func PlotLoss(path, title, yLabel string, history []Record, val string) error {
	c, err := LossChart(title, yLabel, history, val)
	if err != nil || c == nil {
		return err
	}
	return saveChart(c, path)
}

// LossChart draws the training loss and the validation metric val (e.g. "val_loss")
// of history against the step, with the title and the y-axis label (name and unit)
// given, or returns nil when history holds neither. Axes carry enough ticks to read a
// value; losses spanning more than a decade are drawn on a log scale; runs with many
// records are drawn smoothed, the raw values faint behind. Its Series are the recorded
// values (at most maxPlottedPoints of each, evenly thinned).
func LossChart(title, yLabel string, history []Record, val string) (*Chart, error) {
	train, valid := series(history, MetricLoss), series(history, val)
	if len(train) == 0 && len(valid) == 0 {
		return nil, nil
	}
	c := NewChart()
	p := c.Plot
	p.Title.Text = title
	p.X.Label.Text = "step (optimizer updates)"
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = NiceTicks{}
	p.Y.Tick.Marker = NiceTicks{}
	drawTrain, drawValid := train, valid
	if lo, hi := yRange(train, valid); lo > 0 && hi/lo > 10 {
		// Losses spanning decades read better on a log scale: the curves are drawn as
		// log10 values on a linear axis labelled with the values themselves (gonum's
		// LogScale places the axis label by the arithmetic midpoint, which pads the plot).
		drawTrain, drawValid = log10s(train), log10s(valid)
		p.Y.Tick.Marker = log10Ticks{}
		p.Y.Label.Text = yLabel + ", log scale"
	}
	if err := addCurve(c, drawTrain, train, trainColor, "training ("+MetricLoss+")", false); err != nil {
		return nil, fmt.Errorf("plot %q: %w", title, err)
	}
	if err := addCurve(c, drawValid, valid, valColor, "validation ("+strings.TrimPrefix(val, ValPrefix)+")", true); err != nil {
		return nil, fmt.Errorf("plot %q: %w", title, err)
	}
	c.Plot.Legend.TextStyle.Font.Size = 9
	return c, nil
}

// saveChart writes c as a PNG at path, atomically.
func saveChart(c *Chart, path string) error {
	png, err := c.PNG(plotWidth, plotHeight)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(png)
		return err
	}); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// addCurve adds a series: a line with point marks for a few points (evaluations), a
// smoothed line over the faint raw one for many. xy is drawn; values (the same points,
// before a change of scale) are what the chart records.
func addCurve(c *Chart, xy, values plotter.XYs, col color.NRGBA, name string, points bool) error {
	if len(xy) == 0 {
		return nil
	}
	p := c.Plot
	if len(xy) > smoothAbove {
		raw, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		faint := col
		faint.A = 0x50
		raw.Color, raw.Width = faint, vg.Points(0.8)
		p.Add(raw)
		xy = smooth(xy, max(3, len(xy)/40))
		name += ", smoothed"
	}
	line, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	line.Color, line.Width = col, vg.Points(1.6)
	p.Add(line)
	c.Add(name, values, line)
	if points && len(xy) <= smoothAbove {
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = col, draw.CircleGlyph{}, vg.Points(2.5)
		p.Add(sc)
	}
	return nil
}

// smooth returns the centred moving average of the y values over 2·half+1 points
// (fewer at the ends).
func smooth(xy plotter.XYs, half int) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i := range xy {
		lo, hi := max(0, i-half), min(len(xy), i+half+1)
		var s float64
		for _, p := range xy[lo:hi] {
			s += p.Y
		}
		out[i] = plotter.XY{X: xy[i].X, Y: s / float64(hi-lo)}
	}
	return out
}

// log10s returns the series with log10 of its values.
func log10s(xy plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i, p := range xy {
		out[i] = plotter.XY{X: p.X, Y: math.Log10(p.Y)}
	}
	return out
}

// log10Ticks are LogTicks for an axis of log10 values.
type log10Ticks struct{}

func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	ticks := LogTicks{}.Ticks(math.Pow(10, lo), math.Pow(10, hi))
	for i := range ticks {
		ticks[i].Value = math.Log10(ticks[i].Value)
	}
	return ticks
}

// yRange returns the smallest and largest values of the series.
func yRange(ss ...plotter.XYs) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s {
			lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
		}
	}
	return lo, hi
}

// NiceTicks is a plot.Ticker with about 8 labelled ticks at round values (1, 2 or 5
// times a power of ten) and unlabelled ticks between them.
type NiceTicks struct{}

// Ticks returns the ticks of [lo, hi].
func (NiceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: formatTick(lo, 0)}}
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	minor := step / 5
	if step/mag == 2.5 || step/mag == 2 {
		minor = step / 2
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/minor) * minor; v <= hi+minor*1e-9; v += minor {
		major := math.Abs(math.Remainder(v, step)) < minor*1e-6
		t := plot.Tick{Value: v}
		if major {
			t.Label = formatTick(v, step)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// formatTick prints v with as many decimals as the step needs.
func formatTick(v, step float64) string {
	if math.Abs(v) < step*1e-9 {
		return "0"
	}
	if a := math.Abs(v); a >= 1e5 || (a < 1e-3 && a > 0) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	// As many decimals as the step has: 0.05 needs 2, 2.5 needs 1 (7.5 is not "8").
	dec := 0
	for step > 0 && dec < 12 {
		scaled := step * math.Pow(10, float64(dec))
		if math.Abs(scaled-math.Round(scaled)) <= 1e-9*scaled {
			break
		}
		dec++
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// LogTicks is a plot.Ticker for a log axis: a tick at every 1..9 × 10^k, labelled at
// 1, 2 and 5 × 10^k over up to 2.5 decades (every one within a decade, fewer over more).
type LogTicks struct{}

// Ticks returns the ticks of [lo, hi], lo > 0.
func (LogTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return NiceTicks{}.Ticks(lo, hi)
	}
	decades := math.Log10(hi / lo)
	labelled := map[int]bool{1: true, 2: true, 5: true}
	switch {
	case decades < 1:
		labelled = map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true}
	case decades > 5:
		labelled = map[int]bool{1: true}
	case decades > 2.5:
		labelled = map[int]bool{1: true, 3: true}
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if labelled[m] {
				t.Label = strconv.FormatFloat(v, 'g', 3, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// BandwidthPrefix starts the names of bandwidth metrics: BandwidthPrefix +
// "<layer>.head<j>" for a learned bandwidth, with a suffix BandwidthStats names for
// the distribution of per-query bandwidths over a batch.
const BandwidthPrefix = "bandwidth."

// BandwidthStats are the statistics of a distribution of bandwidths, suffixes of their
// metric names.
var BandwidthStats = []string{"min", "q1", "median", "q3", "max"}

// DefaultBandwidthLabel is the y-axis label of BandwidthPlotFile of a Loop without a
// BandwidthLabel: the bandwidth's unit is the model's (the units of what its kernel
// divides by h).
const DefaultBandwidthLabel = "bandwidth h"

// PlotBandwidths draws the bandwidth metrics of history, if any, into path (see
// BandwidthChart), with the y-axis label DefaultBandwidthLabel.
func PlotBandwidths(path, title string, history []Record) error {
	c, err := BandwidthChart(title, DefaultBandwidthLabel, history)
	if err != nil || c == nil {
		return err
	}
	return saveChart(c, path)
}

// BandwidthChart draws the bandwidth metrics of history against the step: one line per
// layer and head (the median for per-query bandwidths, with the quartiles faint), with
// the y-axis label given (the bandwidth's name and unit). It returns nil when history
// has no bandwidth metrics.
func BandwidthChart(title, yLabel string, history []Record) (*Chart, error) {
	names := map[string]bool{}
	for _, r := range history {
		for k := range r.Metrics {
			if strings.HasPrefix(k, BandwidthPrefix) {
				names[k] = true
			}
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	c := NewChart()
	p := c.Plot
	p.Title.Text = title
	p.X.Label.Text = "step (optimizer updates)"
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = NiceTicks{}
	p.Y.Tick.Marker = NiceTicks{}
	layerIndex := map[string]int{}
	for _, k := range slices.Sorted(maps.Keys(names)) {
		base, stat := k, ""
		for _, s := range BandwidthStats {
			if strings.HasSuffix(k, "."+s) {
				base, stat = strings.TrimSuffix(k, "."+s), s
			}
		}
		if stat == "min" || stat == "max" || stat == "q1" || stat == "q3" {
			continue // drawn with their median
		}
		// A colour per head, a line style and mark per layer.
		layer, head := strings.TrimPrefix(base, BandwidthPrefix), 0
		if j := strings.LastIndex(layer, ".head"); j >= 0 {
			if n, err := strconv.Atoi(layer[j+len(".head"):]); err == nil {
				layer, head = layer[:j], n
			}
		}
		li, ok := layerIndex[layer]
		if !ok {
			li = len(layerIndex)
			layerIndex[layer] = li
		}
		col := curveColors[head%len(curveColors)]
		xy := series(history, k)
		line, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("plot %q: %w", title, err)
		}
		line.Color, line.Width, line.Dashes = col, vg.Points(1.4), layerDashes[li%len(layerDashes)]
		pts.Color, pts.Radius, pts.Shape = col, vg.Points(2.2), layerGlyphs[li%len(layerGlyphs)]
		p.Add(line, pts)
		label := strings.TrimPrefix(base, BandwidthPrefix)
		if stat == "median" {
			p.Title.Text = title + "\n(per-query bandwidths on a validation batch: median, quartiles dashed)"
			for _, q := range []string{"q1", "q3"} {
				qs, err := plotter.NewLine(series(history, base+"."+q))
				if err != nil {
					continue
				}
				faint := col
				faint.A = 0x60
				qs.Color, qs.Width, qs.Dashes = faint, vg.Points(1), []vg.Length{vg.Points(3), vg.Points(2)}
				p.Add(qs)
			}
			label += " (median)"
		}
		c.Add(label, xy, line, pts)
	}
	p.Legend.TextStyle.Font.Size = 8
	return c, nil
}

// curveColors tell apart up to 8 curves (Okabe–Ito).
var curveColors = []color.NRGBA{
	{0x00, 0x72, 0xb2, 0xff}, {0xd5, 0x5e, 0x00, 0xff}, {0x00, 0x9e, 0x73, 0xff}, {0xcc, 0x79, 0xa7, 0xff},
	{0x56, 0xb4, 0xe9, 0xff}, {0xe6, 0x9f, 0x00, 0xff}, {0x00, 0x00, 0x00, 0xff}, {0xf0, 0xe4, 0x42, 0xff},
}

// Bandwidth curves tell layers apart by line style and mark.
var (
	layerDashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1.5), vg.Points(1.5)}, {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}}
	layerGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
)
