package cli

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/locusml/locus/train"
)

// The look of inspect's pictures.
var (
	// viridis stops: dark for weight 0, yellow for the largest weight; monotonic in
	// luminance, readable in grey and by colour-blind readers.
	viridis = []color.Color{
		color.NRGBA{0x44, 0x01, 0x54, 0xff}, color.NRGBA{0x48, 0x28, 0x78, 0xff}, color.NRGBA{0x3e, 0x4a, 0x89, 0xff},
		color.NRGBA{0x31, 0x68, 0x8e, 0xff}, color.NRGBA{0x26, 0x82, 0x8e, 0xff}, color.NRGBA{0x1f, 0x9e, 0x89, 0xff},
		color.NRGBA{0x35, 0xb7, 0x79, 0xff}, color.NRGBA{0x6d, 0xcd, 0x59, 0xff}, color.NRGBA{0xb4, 0xde, 0x2c, 0xff},
		color.NRGBA{0xfd, 0xe7, 0x25, 0xff},
	}
	// maskedColor fills the cells that the box kernel or padding hides: not a weight.
	maskedColor = color.NRGBA{0xe4, 0xe4, 0xe4, 0xff}
	figureDPI   = 110
)

// weightColorMap returns the colour map of weights in [0, hi].
func weightColorMap(hi float64) (palette.ColorMap, error) {
	cm, err := moreland.NewLuminance(viridis)
	if err != nil {
		return nil, err
	}
	cm.SetMin(0)
	cm.SetMax(hi)
	return cm, nil
}

// matrixGrid is a [row][col] matrix as a heat map grid, row 0 drawn at the top; cells
// that are not visible are NaN (drawn in maskedColor).
type matrixGrid struct {
	w   [][]float64
	vis [][]bool
}

func (m matrixGrid) Dims() (c, r int)   { return len(m.w[0]), len(m.w) }
func (m matrixGrid) X(c int) float64    { return float64(c) }
func (m matrixGrid) Y(r int) float64    { return float64(r) }
func (m matrixGrid) row(r int) int      { return len(m.w) - 1 - r }
func (m matrixGrid) Z(c, r int) float64 { return m.at(m.row(r), c) }
func (m matrixGrid) at(q, k int) float64 {
	if m.vis != nil && !m.vis[q][k] {
		return math.NaN()
	}
	return m.w[q][k]
}

// labelTicks returns ticks at 0..n−1 labelled by labels, every stride-th one labelled so
// that labels of width chars fit in length (a tick without a label in between).
func labelTicks(labels []string, length vg.Length, fontSize vg.Length, reversed bool) plot.ConstantTicks {
	n := len(labels)
	maxLen := 1
	for _, l := range labels {
		maxLen = max(maxLen, len([]rune(l)))
	}
	need := fontSize * 1.1
	stride := 1
	for stride < n && length/vg.Length(n)*vg.Length(stride) < need {
		stride++
	}
	var ticks plot.ConstantTicks
	for i := range n {
		pos := float64(i)
		if reversed {
			pos = float64(n - 1 - i)
		}
		t := plot.Tick{Value: pos}
		if i%stride == 0 {
			t.Label = labels[i]
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// heatPanel returns one attention map as a plot.
func heatPanel(am attentionMap, pal palette.Palette, hi float64, side vg.Length) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s  head %d", am.Layer, am.Head)
	p.Title.TextStyle.Font.Size = 9
	hm := plotter.NewHeatMap(matrixGrid{w: am.Weights, vis: am.Visible}, pal)
	hm.Min, hm.Max, hm.NaN = 0, hi, maskedColor
	p.Add(hm)
	p.X.Label.Text = "key"
	p.Y.Label.Text = "query"
	const fs = 8
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = 8
		ax.Tick.Label.Font.Size = fs
		ax.Tick.Length = 2
	}
	p.X.Tick.Marker = labelTicks(am.Keys, side, fs, false)
	p.Y.Tick.Marker = labelTicks(am.Queries, side, fs, true)
	if longest(am.Keys) > 2 {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	return p
}

func longest(labels []string) int {
	n := 0
	for _, l := range labels {
		n = max(n, len([]rune(l)))
	}
	return n
}

// colorBar returns a vertical colour bar for weights in [0, hi].
func colorBar(cm palette.ColorMap) *plot.Plot {
	p := plot.New()
	p.Title.Text = "weight"
	p.Title.TextStyle.Font.Size = 9
	p.HideX()
	p.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	p.Y.Tick.Label.Font.Size = 7
	return p
}

// renderAttention draws every map of the view as a grid of heat maps, one row per layer
// and one column per head, with a shared colour bar, and returns the PNG.
func renderAttention(v *attentionView, title string) ([]byte, error) {
	if v.images != nil {
		return renderDAEAttention(v, title)
	}
	var layersOrder []string
	rows := map[string][]attentionMap{}
	hi := 0.0
	for _, m := range v.Maps {
		if _, ok := rows[m.Layer]; !ok {
			layersOrder = append(layersOrder, m.Layer)
		}
		rows[m.Layer] = append(rows[m.Layer], m)
		for q, r := range m.Weights {
			for k, w := range r {
				if m.Visible[q][k] {
					hi = math.Max(hi, w)
				}
			}
		}
	}
	if hi <= 0 {
		hi = 1
	}
	cols := 0
	tmax := 1
	for _, l := range layersOrder {
		cols = max(cols, len(rows[l]))
		tmax = max(tmax, len(rows[l][0].Keys), len(rows[l][0].Queries))
	}
	side := min(max(vg.Length(tmax)*0.3*vg.Centimeter, 5*vg.Centimeter), 11*vg.Centimeter)
	panel := side + 1.6*vg.Centimeter
	cm, err := weightColorMap(hi)
	if err != nil {
		return nil, err
	}
	pal := cm.Palette(256)
	const barW = 2.6 * vg.Centimeter
	w := vg.Length(cols)*panel + barW + 0.5*vg.Centimeter
	hd := newFigureHeader(title, "rows: layers · columns: heads · colour: local-mean weight · grey: hidden by the box kernel or padding", w)
	header := hd.height
	h := vg.Length(len(layersOrder))*(panel+0.3*vg.Centimeter) + header
	return drawFigure(w, h, func(dc draw.Canvas) {
		hd.draw(dc)
		body := draw.Crop(dc, 0, -barW, 0, -header)
		tiles := draw.Tiles{Rows: len(layersOrder), Cols: cols, PadX: 0.3 * vg.Centimeter, PadY: 0.3 * vg.Centimeter, PadLeft: 0.2 * vg.Centimeter, PadBottom: 0.1 * vg.Centimeter}
		for r, l := range layersOrder {
			for c, m := range rows[l] {
				heatPanel(m, pal, hi, side).Draw(tiles.At(body, c, r))
			}
		}
		bar := draw.Crop(dc, dc.Max.X-dc.Min.X-barW+0.4*vg.Centimeter, -0.3*vg.Centimeter, (dc.Max.Y-dc.Min.Y-header)/3, -header-0.2*vg.Centimeter)
		colorBar(cm).Draw(bar)
	})
}

// figureHeader is the title band of a figure: the lines of its title (the first larger)
// and a smaller subtitle, each wrapped at spaces to the figure's width so that no line
// is clipped at the sides.
type figureHeader struct {
	lines  []string
	sizes  []vg.Length
	height vg.Length
}

// Header text sizes and the margin a header line keeps from the sides of the figure.
const (
	titleSize, subtitleSize = 12, 9
	headerMargin            = 0.3 * vg.Centimeter
)

// newFigureHeader wraps title and sub to the width of a figure.
func newFigureHeader(title, sub string, width vg.Length) figureHeader {
	hd := figureHeader{height: 0.5 * vg.Centimeter}
	for i, line := range append(strings.Split(title, "\n"), sub) {
		size := vg.Length(subtitleSize)
		if i == 0 {
			size = titleSize
		}
		for _, l := range train.WrapText(line, headerStyle(size), width-2*headerMargin) {
			hd.lines = append(hd.lines, l)
			hd.sizes = append(hd.sizes, size)
			hd.height += size * 1.3
		}
	}
	return hd
}

func headerStyle(size vg.Length) text.Style {
	st := text.Style{Color: color.Black, Font: plot.DefaultFont, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	st.Font.Size = size
	return st
}

// draw writes the header in the top band of the canvas.
func (hd figureHeader) draw(dc draw.Canvas) {
	mid := (dc.Min.X + dc.Max.X) / 2
	y := dc.Max.Y - 0.2*vg.Centimeter
	for i, line := range hd.lines {
		dc.FillText(headerStyle(hd.sizes[i]), vg.Point{X: mid, Y: y}, line)
		y -= hd.sizes[i] * 1.3
	}
}

// drawFigure draws onto a white canvas of w × h and returns the PNG.
func drawFigure(w, h vg.Length, paint func(dc draw.Canvas)) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(figureDPI), vgimg.UseBackgroundColor(color.White))
	paint(draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// grayImage makes a square grey-scale image of values in [0, 1].
func grayImage(px []float32) image.Image {
	side := int(math.Round(math.Sqrt(float64(len(px)))))
	im := image.NewGray(image.Rect(0, 0, side, side))
	for i, v := range px[:side*side] {
		im.Pix[i] = uint8(math.Round(float64(min(max(v, 0), 1)) * 255))
	}
	return im
}

// imagePanel is a picture with a title and no axes.
func imagePanel(im image.Image, title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 8
	b := im.Bounds()
	p.Add(plotter.NewImage(im, 0, 0, float64(b.Dx()), float64(b.Dy())))
	p.HideAxes()
	return p
}

// topPrototypes is how many of the most weighted prototypes the DAE view draws per head.
const topPrototypes = 6

// renderDAEAttention draws a localized DAE's view: the test image (clean, noisy,
// denoised), then per level and head the weights over all prototypes and the most
// weighted prototypes as images.
func renderDAEAttention(v *attentionView, title string) ([]byte, error) {
	im := v.images
	const tile = 3 * vg.Centimeter
	cols := 3 + topPrototypes // a bar chart three tiles wide, then the prototypes
	rows := 1 + len(v.Maps)
	w := vg.Length(cols) * tile
	hd := newFigureHeader(title, "left: weights of the image over each level's prototypes · right: the most weighted prototypes, decoded as sigmoid(dec(memory))", w)
	header := hd.height
	h := vg.Length(rows)*(tile+0.4*vg.Centimeter) + header
	return drawFigure(w, h, func(dc draw.Canvas) {
		hd.draw(dc)
		body := draw.Crop(dc, 0, 0, 0, -header)
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 0.2 * vg.Centimeter, PadY: 0.4 * vg.Centimeter, PadLeft: 0.2 * vg.Centimeter}
		for i, p := range []struct {
			px    []float32
			title string
		}{{im.clean, "clean"}, {im.noisy, "noisy (input)"}, {im.denoised, "denoised"}} {
			imagePanel(grayImage(p.px), p.title).Draw(tiles.At(body, i, 0))
		}
		for r, m := range v.Maps {
			wts := m.Weights[0]
			level := 0
			fmt.Sscanf(m.Layer, "level.%d", &level)
			bars := plot.New()
			bars.Title.Text = fmt.Sprintf("%s  head %d", m.Layer, m.Head)
			bars.Title.TextStyle.Font.Size = 9
			bars.X.Label.Text = "prototype"
			bars.Y.Label.Text = "weight"
			for _, ax := range []*plot.Axis{&bars.X, &bars.Y} {
				ax.Label.TextStyle.Font.Size = 8
				ax.Tick.Label.Font.Size = 7
			}
			if bc, err := plotter.NewBarChart(plotter.Values(wts), 1); err == nil {
				bc.LineStyle.Width = 0
				bc.Color = viridis[2]
				bars.Add(bc)
			}
			bars.Y.Min = 0
			left := tiles.At(body, 0, r+1)
			right := tiles.At(body, 2, r+1)
			bars.Draw(draw.Canvas{Canvas: left.Canvas, Rectangle: vg.Rectangle{Min: left.Min, Max: right.Max}})
			order := make([]int, len(wts))
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(a, b int) bool { return wts[order[a]] > wts[order[b]] })
			for j := range min(topPrototypes, len(order)) {
				p := order[j]
				if level < len(im.prototypes) && p < len(im.prototypes[level]) {
					imagePanel(grayImage(im.prototypes[level][p]), fmt.Sprintf("#%d  w=%.3f", p, wts[p])).Draw(tiles.At(body, 3+j, r+1))
				}
			}
		}
	})
}

// headColor tells apart the heads of a layer (Okabe–Ito).
func headColor(j int) color.Color {
	c := []color.NRGBA{{0x00, 0x72, 0xb2, 0xff}, {0xd5, 0x5e, 0x00, 0xff}, {0x00, 0x9e, 0x73, 0xff}, {0xcc, 0x79, 0xa7, 0xff},
		{0x56, 0xb4, 0xe9, 0xff}, {0xe6, 0x9f, 0x00, 0xff}, {0x00, 0x00, 0x00, 0xff}, {0xf0, 0xe4, 0x42, 0xff}}
	return c[j%len(c)]
}
