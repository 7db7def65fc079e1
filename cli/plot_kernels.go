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
	_ KernelSession = (*transformerSession)(nil)
	_ KernelSession = (*daeSession)(nil)
)

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

// renderKernels draws each attention layer's kernel profile at its bandwidths (a line
// per head), the mixture weights of a mixture kernel, and the learned relative-position
// biases where the kernel has them, and returns the PNG.
func renderKernels(ld *loaded, title string) ([]byte, error) {
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
	layerNames := slices.Sorted(maps.Keys(bws))
	sort.Slice(layerNames, func(i, j int) bool { return naturalLess(layerNames[i], layerNames[j]) })
	parts := kernelParts(kern)
	hasBias := false
	for _, l := range layerNames {
		if kernelParam(ld.ck, l, ".kernel.position", ".weight") != nil {
			hasBias = true
		}
	}
	cols := len(parts)
	if hasBias {
		cols++
	}
	const tileW, tileH, header = 8 * vg.Centimeter, 6 * vg.Centimeter, 1.6 * vg.Centimeter
	var plots [][]*plot.Plot
	for _, l := range layerNames {
		hs := bws[l]
		hmax := 0.0
		for _, h := range hs {
			hmax = math.Max(hmax, h)
		}
		weights := mixtureWeights(ld.ck, l, len(parts))
		var row []*plot.Plot
		for pi, part := range parts {
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s: %s", l, part.Name())
			if weights != nil {
				p.Title.Text += fmt.Sprintf(" (mixture weight %.3f)", weights[pi])
			}
			p.Title.TextStyle.Font.Size = 9
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
			for _, ax := range []*plot.Axis{&p.X, &p.Y} {
				ax.Label.TextStyle.Font.Size = 8
				ax.Tick.Label.Font.Size = 7
				ax.Tick.Marker = train.NiceTicks{}
			}
			p.Add(plotter.NewGrid())
			for j, h := range hs {
				line, err := plotter.NewLine(profile(part, h, xs))
				if err != nil {
					return nil, err
				}
				line.Color, line.Width = headColor(j), vg.Points(1.3)
				p.Add(line)
				name := fmt.Sprintf("h = %.3g", h)
				if len(hs) > 1 {
					name = fmt.Sprintf("head %d: h = %.3g", j, h)
				}
				p.Legend.Add(name, line)
			}
			p.Legend.Top = true
			p.Legend.TextStyle.Font.Size = 7
			row = append(row, p)
		}
		if hasBias {
			row = append(row, biasPlot(ld.ck, l))
		}
		plots = append(plots, row)
	}
	w, h := max(vg.Length(cols)*tileW, 18*vg.Centimeter), vg.Length(len(layerNames))*tileH+header
	return drawFigure(w, h, func(dc draw.Canvas) {
		titleText(dc, title, "kernel profiles K at each head's learned bandwidth (per-query bandwidths: their median on a validation batch)", header)
		body := draw.Crop(dc, 0, 0, 0, -header)
		tiles := draw.Tiles{Rows: len(layerNames), Cols: cols, PadX: 0.4 * vg.Centimeter, PadY: 0.4 * vg.Centimeter, PadLeft: 0.2 * vg.Centimeter, PadRight: 0.2 * vg.Centimeter, PadBottom: 0.1 * vg.Centimeter}
		for r, row := range plots {
			for c, p := range row {
				if p != nil {
					p.Draw(tiles.At(body, c, r))
				}
			}
		}
	})
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

// biasPlot draws a layer's learned relative-position biases [heads, 2M+1] against the
// relative position s − t, or nil when the layer has none.
func biasPlot(ck *train.Checkpoint, layer string) *plot.Plot {
	t := kernelParam(ck, layer, ".kernel.position", ".weight")
	if t == nil {
		return nil
	}
	sh, d := t.Shape(), floats(t)
	heads, n := 1, len(d)
	if len(sh) == 2 {
		heads, n = sh[0], sh[1]
	}
	m := (n - 1) / 2
	p := plot.New()
	p.Title.Text = layer + ": relative-position bias"
	p.Title.TextStyle.Font.Size = 9
	p.X.Label.Text = "relative position s − t (clipped)"
	p.Y.Label.Text = "bias (log-kernel units)"
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = 8
		ax.Tick.Label.Font.Size = 7
		ax.Tick.Marker = train.NiceTicks{}
	}
	p.Add(plotter.NewGrid())
	for j := range heads {
		xy := make(plotter.XYs, n)
		for i := range n {
			xy[i] = plotter.XY{X: float64(i - m), Y: d[j*n+i]}
		}
		line, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil
		}
		line.Color, pts.Color, pts.Radius, pts.Shape = headColor(j), headColor(j), vg.Points(2), draw.CircleGlyph{}
		p.Add(line, pts)
		p.Legend.Add(fmt.Sprintf("head %d", j), line)
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = 7
	return p
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
