package train

import (
	"bytes"
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// ChartWidth and ChartHeight are the size of the Loop's plots (PlotFile,
// BandwidthPlotFile).
const (
	ChartWidth  = plotWidth
	ChartHeight = plotHeight
)

// legendGap is the space between a Chart's data and its legend; titleTop and titleGap
// the space above and below its title.
const (
	legendGap = 0.25 * vg.Centimeter
	titleTop  = 0.2 * vg.Centimeter
	titleGap  = 0.3 * vg.Centimeter
)

// Chart is a plot whose legend is drawn beside the data, to the right of the axes, so
// that no entry sits on a curve, with a record of what it draws: the legend's entries
// and the points of each named curve, for tests and for callers that show the numbers.
// Add curves with Add (not Plot.Legend.Add).
type Chart struct {
	Plot *plot.Plot
	// Entries are the legend's names, in order.
	Entries []string
	// Series are the points drawn for each entry (the smoothed curve of a long series is
	// drawn from these points: they are the recorded values, not the smoothed ones).
	Series map[string]plotter.XYs
}

// NewChart returns an empty chart.
func NewChart() *Chart {
	return &Chart{Plot: plot.New(), Series: map[string]plotter.XYs{}}
}

// Add names the plotters thumbs in the legend, for the points xy.
func (c *Chart) Add(name string, xy plotter.XYs, thumbs ...plot.Thumbnailer) {
	c.Plot.Legend.Add(name, thumbs...)
	c.Entries = append(c.Entries, name)
	c.Series[name] = xy
}

// Draw draws the chart on dc: the plot on the left, the legend in a strip on the right,
// below the title.
func (c *Chart) Draw(dc draw.Canvas) {
	p := c.Plot
	// The title spans the whole chart, wrapped to its width, above the plot and the
	// legend.
	title := p.Title.Text
	top := vg.Length(0)
	if title != "" {
		st := p.Title.TextStyle
		st.XAlign, st.YAlign = draw.XCenter, draw.YTop
		lines := WrapText(title, st, dc.Max.X-dc.Min.X)
		y := dc.Max.Y - titleTop
		for _, l := range lines {
			dc.FillText(st, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: y}, l)
			y -= st.Rectangle(l).Size().Y
		}
		top = dc.Max.Y - y + p.Title.Padding + titleGap
		p.Title.Text = ""
		defer func() { p.Title.Text = title }()
	}
	legend := p.Legend
	legend.Left, legend.Top = true, true
	r := legend.Rectangle(dc)
	w := r.Max.X - r.Min.X + legendGap
	p.Legend = plot.NewLegend() // empty while the plot draws
	defer func() { p.Legend = legend }()
	if len(c.Entries) == 0 {
		w = 0
	}
	p.Draw(draw.Crop(dc, 0, -w, 0, -top))
	if w > 0 {
		legend.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-w+legendGap, 0, 0, -top))
	}
}

// WrapText breaks s into lines no wider than width in style st: at its newlines, then
// at spaces (a word wider than width alone on its line is cut short with "…").
func WrapText(s string, st text.Style, width vg.Length) []string {
	fits := func(l string) bool { return st.Width(l) <= width }
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		cur := ""
		for _, w := range strings.Fields(para) {
			if cur == "" {
				cur = w
			} else if fits(cur + " " + w) {
				cur += " " + w
				continue
			} else {
				lines = append(lines, cur)
				cur = w
			}
			for r := []rune(cur); !fits(cur) && len(r) > 1; r = r[:len(r)-1] {
				cur = string(r[:len(r)-1]) + "…"
			}
		}
		lines = append(lines, cur)
	}
	return lines
}

// PNG draws the chart on a white canvas of w × h.
func (c *Chart) PNG(w, h vg.Length) ([]byte, error) {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	c.Draw(draw.New(img))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("draw %q: %w", c.Plot.Title.Text, err)
	}
	return buf.Bytes(), nil
}
