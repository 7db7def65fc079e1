package cli

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/train"
)

// KernelSession is a session whose attention kernels inspect -kernels can draw.
type KernelSession interface {
	// Kernel returns the model's (unbound) attention Kernel.
	Kernel() (layers.ContentKernel, error)
	// LayerBandwidths returns every attention layer's bandwidth per head, by the layer's
	// scope; per-query bandwidths by their median on a validation batch.
	LayerBandwidths(m *autodiff.Model) (map[string][]float64, error)
}

// The built-in sessions draw their kernels; the assertions keep them doing so.
var (
	_ KernelSession   = (*transformerSession)(nil)
	_ KernelSession   = (*daeSession)(nil)
	_ bandwidthKinder = (*transformerSession)(nil)
	_ bandwidthKinder = (*daeSession)(nil)
)

// bandwidthKinder is a KernelSession that names the bandwidths LayerBandwidths
// returns, e.g. "fixed bandwidth" or "learned bandwidth"; others' are "bandwidth".
type bandwidthKinder interface{ bandwidthKind() string }

// bandwidthKindOf names a KernelSession's bandwidths.
func bandwidthKindOf(ks KernelSession) string {
	if b, ok := ks.(bandwidthKinder); ok {
		return b.bandwidthKind()
	}
	return "bandwidth"
}

func (s *transformerSession) bandwidthKind() string {
	switch s.cfg.Bandwidth {
	case layers.BandwidthFixed:
		return "fixed bandwidth"
	case layers.BandwidthLayer:
		return "learned bandwidth (one per layer)"
	case layers.BandwidthHead:
		return "learned bandwidth"
	case layers.BandwidthQuery:
		return "per-query bandwidth (learned; the median on a validation batch)"
	case layers.BandwidthKNN:
		return "kNN bandwidth (the median on a validation batch)"
	}
	return "bandwidth (" + s.cfg.Bandwidth.String() + ")"
}

func (s *daeSession) bandwidthKind() string { return "learned bandwidth" }

func (s *transformerSession) Kernel() (layers.ContentKernel, error) { return s.cfg.Kernel.Value(), nil }

func (s *transformerSession) LayerBandwidths(m *autodiff.Model) (map[string][]float64, error) {
	per, err := s.queryBandwidths(m, exampleSeed)
	if err != nil {
		return nil, err
	}
	out := map[string][]float64{}
	for layer, heads := range per {
		for _, vals := range heads {
			out[layer] = append(out[layer], quantiles(vals)[2])
		}
	}
	if per == nil {
		for k, v := range s.model.Bandwidths() {
			out[strings.TrimSuffix(k, ".bandwidth")] = v
		}
	}
	return out, nil
}

func (s *daeSession) Kernel() (layers.ContentKernel, error) {
	if s.cfg.Kind != dae.KindLocalized || s.cfg.Kernel == nil {
		return nil, fmt.Errorf("the MLP DAE has no kernel to draw (train -model ldae)")
	}
	return s.cfg.Kernel.Value(), nil
}

func (s *daeSession) LayerBandwidths(*autodiff.Model) (map[string][]float64, error) {
	out := map[string][]float64{}
	for k, v := range s.Bandwidths() {
		out[strings.TrimSuffix(k, ".bandwidth")] = v
	}
	return out, nil
}

// kernelParts splits a kernel into its content kernels (the components of a mixture)
// and whether it has a position part.
func kernelParts(k layers.ContentKernel) []layers.ContentKernel {
	switch k := k.(type) {
	case layers.Product:
		return kernelParts(k.Content)
	case *layers.Product:
		return kernelParts(k.Content)
	case layers.Mixture:
		return k.Kernels
	case *layers.Mixture:
		return k.Kernels
	}
	return []layers.ContentKernel{k}
}

// dotKernel reports whether a kernel is a function of q·k (the exponential kernel)
// rather than of the distance ‖q − k‖.
func dotKernel(k layers.ContentKernel) bool {
	_, ok := k.(layers.Exponential)
	return ok
}

// profile returns K of kernel k at bandwidth h on xs: of q·k = x for a dot kernel, of
// the distance ‖q − k‖ = x otherwise.
func profile(k layers.ContentKernel, h float64, xs []float64) plotter.XYs {
	out := make(plotter.XYs, len(xs))
	for i, x := range xs {
		q, key := []float64{0}, []float64{x}
		if dotKernel(k) {
			q, key = []float64{1}, []float64{x}
		}
		out[i] = plotter.XY{X: x, Y: math.Exp(k.LogK(q, key, h))}
	}
	return out
}

// kernelFigure is what kernels.png draws: a row of panels per attention layer, one per
// content kernel (the components of a mixture) at each head's bandwidth, then one of the
// position factors where the kernel has any.
type kernelFigure struct {
	Layers   []string
	Rows     [][]*train.Chart
	Subtitle string
}

// kernelCharts builds the panels of kernels.png.
func kernelCharts(ld *loaded) (*kernelFigure, error) {
	ks, ok := ld.sess.(KernelSession)
	if !ok {
		return nil, fmt.Errorf("the model family %s has no kernels to draw", ld.family)
	}
	kern, err := ks.Kernel()
	if err != nil {
		return nil, err
	}
	bws, err := ks.LayerBandwidths(ld.run)
	if err != nil {
		return nil, err
	}
	if len(bws) == 0 {
		return nil, fmt.Errorf("%s: no bandwidths to draw the kernel at", ld.ck.Dir)
	}
	kind := bandwidthKindOf(ks)
	fig := &kernelFigure{Subtitle: "kernel profiles K at each head's " + kind}
	layerNames := slices.Sorted(maps.Keys(bws))
	sort.Slice(layerNames, func(i, j int) bool { return naturalLess(layerNames[i], layerNames[j]) })
	parts := kernelParts(kern)
	pos := positionParts(kern)
	if len(pos) > 0 {
		fig.Subtitle += " · right: the position factor K(t, s) against the offset s − t"
	}
	for _, l := range layerNames {
		hs := bws[l]
		hmax := 0.0
		for _, h := range hs {
			hmax = math.Max(hmax, h)
		}
		weights := mixtureWeights(ld.ck, l, len(parts))
		var row []*train.Chart
		for pi, part := range parts {
			c := train.NewChart()
			p := c.Plot
			p.Title.Text = fmt.Sprintf("%s: %s", l, part.Name())
			if weights != nil {
				p.Title.Text += fmt.Sprintf(" (mixture weight %.3f)", weights[pi])
			}
			var xs []float64
			if dotKernel(part) {
				p.X.Label.Text = "q·k (score units)"
				for i := range 121 {
					xs = append(xs, -2*hmax+4*hmax*float64(i)/120)
				}
			} else {
				p.X.Label.Text = "distance ‖q − k‖"
				for i := range 121 {
					xs = append(xs, 3*hmax*float64(i)/120)
				}
			}
			p.Y.Label.Text = "K"
			panelStyle(c)
			for j, h := range hs {
				xy := profile(part, h, xs)
				line, err := plotter.NewLine(xy)
				if err != nil {
					return nil, err
				}
				line.Color, line.Width = headColor(j), vg.Points(1.3)
				p.Add(line)
				name := fmt.Sprintf("h = %.3g", h)
				if len(hs) > 1 {
					name = fmt.Sprintf("head %d: h = %.3g", j, h)
				}
				c.Add(name, xy, line)
			}
			row = append(row, c)
		}
		if len(pos) > 0 {
			c, err := positionChart(ld.ck, l, pos)
			if err != nil {
				return nil, err
			}
			row = append(row, c)
		}
		fig.Layers = append(fig.Layers, l)
		fig.Rows = append(fig.Rows, row)
	}
	return fig, nil
}

// panelStyle sets the small fonts and ticks of a panel of a figure.
func panelStyle(c *train.Chart) {
	p := c.Plot
	p.Title.TextStyle.Font.Size = 9
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = 8
		ax.Tick.Label.Font.Size = 7
		ax.Tick.Marker = train.NiceTicks{}
	}
	p.Add(plotter.NewGrid())
	p.Legend.TextStyle.Font.Size = 7
	p.Legend.ThumbnailWidth = vg.Points(12)
}

// renderKernels draws each attention layer's kernel profile at its bandwidths (a line
// per head), the mixture weights of a mixture kernel, and the position factors (boxes,
// distance penalties, learned relative-position biases) where the kernel has them, and
// returns the PNG.
func renderKernels(ld *loaded, title string) ([]byte, error) {
	fig, err := kernelCharts(ld)
	if err != nil {
		return nil, err
	}
	cols := 0
	for _, row := range fig.Rows {
		cols = max(cols, len(row))
	}
	const tileW, tileH = 9 * vg.Centimeter, 6 * vg.Centimeter
	w := max(vg.Length(cols)*tileW, 18*vg.Centimeter)
	hd := newFigureHeader(title, fig.Subtitle, w)
	h := vg.Length(len(fig.Layers))*tileH + hd.height
	return drawFigure(w, h, func(dc draw.Canvas) {
		hd.draw(dc)
		body := draw.Crop(dc, 0, 0, 0, -hd.height)
		tiles := draw.Tiles{Rows: len(fig.Layers), Cols: cols, PadX: 0.5 * vg.Centimeter, PadY: 0.4 * vg.Centimeter, PadLeft: 0.2 * vg.Centimeter, PadRight: 0.2 * vg.Centimeter, PadBottom: 0.1 * vg.Centimeter}
		for r, row := range fig.Rows {
			for c, p := range row {
				p.Draw(tiles.At(body, c, r))
			}
		}
	})
}

// positionParts returns the position factors of a kernel (nil: a content kernel alone).
func positionParts(k layers.ContentKernel) []layers.PositionKernel {
	var pos layers.PositionKernel
	switch k := k.(type) {
	case layers.Product:
		pos = k.Position
	case *layers.Product:
		pos = k.Position
	}
	switch pk := pos.(type) {
	case nil:
		return nil
	case layers.PositionProduct:
		return pk
	}
	return []layers.PositionKernel{pos}
}

// positionChart draws the position factor K(t, s) of a layer's kernel, the product of
// its position factors (a box is 1 inside and 0 outside, distance(S) is e^(−S·|s − t|),
// relbias(M) is e^(b_head[clip(s − t)]) with the learned biases of the checkpoint),
// against the offset s − t: a line per head where a factor has per-head parameters.
func positionChart(ck *train.Checkpoint, layer string, parts []layers.PositionKernel) (*train.Chart, error) {
	reach := 0
	for _, f := range parts {
		switch f := f.(type) {
		case layers.Box:
			reach = max(reach, f.Window+2)
		case layers.RelativeBias:
			reach = max(reach, f.MaxDistance+2)
		case layers.DistancePenalty:
			if f.Slope > 0 {
				reach = max(reach, min(int(math.Ceil(4.6/f.Slope)), 32)) // down to 1 %
			}
		}
	}
	if reach == 0 {
		reach = 8
	}
	reach = min(max(reach, 3), 64)
	heads := 1
	logK := [][]float64{make([]float64, 2*reach+1)} // [head][offset + reach]
	names := make([]string, len(parts))
	for i, f := range parts {
		names[i] = f.Name()
		switch f := f.(type) {
		case layers.Box:
			for r := -reach; r <= reach; r++ {
				if (f.Causal && r > 0) || (f.Window > 0 && abs(r) >= f.Window) {
					for h := range logK {
						logK[h][r+reach] = math.Inf(-1)
					}
				}
			}
		case layers.DistancePenalty:
			for r := -reach; r <= reach; r++ {
				for h := range logK {
					logK[h][r+reach] -= f.Slope * float64(abs(r))
				}
			}
		case layers.RelativeBias:
			prefix := ".kernel.position"
			if len(parts) > 1 {
				prefix += fmt.Sprintf(".%d", i)
			}
			t := kernelParam(ck, layer, prefix, ".weight")
			m := f.MaxDistance
			if t == nil || len(t.Shape()) != 2 || t.Shape()[1] != 2*m+1 {
				return nil, fmt.Errorf("%s: %s: no relative-position bias table [heads, %d] in the checkpoint", ck.Dir, layer, 2*m+1)
			}
			b := floats(t)
			if n := t.Shape()[0]; n != heads {
				if heads != 1 {
					return nil, fmt.Errorf("%s: %s: relative-position biases for %d heads and %d", ck.Dir, layer, heads, n)
				}
				for len(logK) < n {
					logK = append(logK, slices.Clone(logK[0]))
				}
				heads = n
			}
			for h := range heads {
				for r := -reach; r <= reach; r++ {
					logK[h][r+reach] += b[h*(2*m+1)+min(max(r, -m), m)+m]
				}
			}
		default:
			return nil, fmt.Errorf("%s: the position kernel %s cannot be drawn", layer, f.Name())
		}
	}
	c := train.NewChart()
	p := c.Plot
	p.Title.Text = fmt.Sprintf("%s: %s", layer, strings.Join(names, " * "))
	p.X.Label.Text = "key offset s − t (positions)"
	p.Y.Label.Text = "position factor K(t, s)"
	panelStyle(c)
	for h := range heads {
		xy := make(plotter.XYs, 2*reach+1)
		for i := range xy {
			xy[i] = plotter.XY{X: float64(i - reach), Y: math.Exp(logK[h][i])}
		}
		line, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		line.Color, pts.Color, pts.Radius, pts.Shape = headColor(h), headColor(h), vg.Points(1.8), draw.CircleGlyph{}
		p.Add(line, pts)
		name := "all heads"
		if heads > 1 {
			name = fmt.Sprintf("head %d", h)
		}
		c.Add(name, xy, line, pts)
	}
	return c, nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// mixtureWeights returns softmax of a layer's mixture logits from the checkpoint, or nil.
func mixtureWeights(ck *train.Checkpoint, layer string, n int) []float64 {
	t := kernelParam(ck, layer, ".kernel.", ".logits")
	if t == nil {
		return nil
	}
	a := floats(t)
	if len(a) != n {
		return nil
	}
	mx := math.Inf(-1)
	for _, v := range a {
		mx = math.Max(mx, v)
	}
	var s float64
	w := make([]float64, n)
	for i, v := range a {
		w[i] = math.Exp(v - mx)
		s += w[i]
	}
	for i := range w {
		w[i] /= s
	}
	return w
}

// kernelParam returns the first of a layer's kernel parameters (in name order) whose
// name starts with layer+prefix and ends with suffix, or nil.
func kernelParam(ck *train.Checkpoint, layer, prefix, suffix string) *tensor.Dense {
	for _, name := range slices.Sorted(maps.Keys(ck.Params)) {
		if strings.HasPrefix(name, layer+prefix) && strings.HasSuffix(name, suffix) {
			return ck.Params[name]
		}
	}
	return nil
}
