package dae

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"gorgonia.org/tensor"
)

// Denoiser maps noisy images to denoised ones. Denoise reads len(noisy)/Dim() images and
// writes as many into dst, which has the same length.
type Denoiser interface {
	Dim() int
	Denoise(dst, noisy []float32) error
}

// Model is a trainable denoising autoencoder: an MLP or a localized DAE (Config.Kind).
// It is not safe for concurrent use.
type Model struct {
	cfg   Config
	ps    *autodiff.Params
	noise Corruption

	layers []*layers.Linear // MLP: In → Hidden… → In
	enc    *layers.Linear   // localized DAE: In → Width
	levels []level          // localized DAE
	dec    *layers.Linear   // localized DAE: Width → In

	net *autodiff.Model // built on first use by Net
}

// level is one level of the localized DAE: kernel attention over a learned memory, then a
// pointwise map.
type level struct {
	memory    *autodiff.Param // [Prototypes, Width]
	attn      *layers.KernelAttention
	pointwise *layers.Linear // Width → Width
}

// evalBatch is the number of images Denoise runs through the graph at once.
const evalBatch = 1000

// New creates the parameters of cfg under ps (names in Config's documentation) and
// returns the model. Weights and biases of Linear layers are initialised as PyTorch's
// nn.Linear, U(±1/sqrt(fan_in)); the prototype memories ~ N(0, 1).
func New(cfg Config, ps *autodiff.Params) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ps == nil {
		return nil, fmt.Errorf("dae: nil parameter registry")
	}
	cfg = cfg.withDefaults()
	noise, _ := NewCorruption(cfg.Noise, cfg.Sigma)
	cfg.Hidden = append([]int(nil), cfg.Hidden...)
	m := &Model{cfg: cfg, ps: ps, noise: noise}
	var err error
	switch cfg.Kind {
	case KindMLP:
		err = m.newMLP()
	case KindLocalized:
		err = m.newLocalized()
	}
	if err != nil {
		return nil, fmt.Errorf("dae: %w", err)
	}
	return m, nil
}

// newLinear creates the Linear layer in → out under s, initialised as PyTorch's nn.Linear.
func newLinear(s autodiff.Scope, in, out int) (*layers.Linear, error) {
	return layers.NewLinear(s, layers.LinearConfig{In: in, Out: out, Init: layers.InitTorch})
}

func (m *Model) newMLP() error {
	widths := append(append([]int{m.cfg.In}, m.cfg.Hidden...), m.cfg.In)
	neck := 0 // index in Hidden of the (first) narrowest layer
	for i, h := range m.cfg.Hidden {
		if h < m.cfg.Hidden[neck] {
			neck = i
		}
	}
	for i := 0; i+1 < len(widths); i++ {
		s := m.ps.Root().Subf("enc.%d", i)
		if i > neck {
			s = m.ps.Root().Subf("dec.%d", i-neck-1)
		}
		l, err := newLinear(s, widths[i], widths[i+1])
		if err != nil {
			return err
		}
		m.layers = append(m.layers, l)
	}
	return nil
}

func (m *Model) newLocalized() error {
	c := m.cfg
	var err error
	if m.enc, err = newLinear(m.ps.Root().Sub("enc"), c.In, c.Width); err != nil {
		return err
	}
	kernel := c.Kernel.Value()
	for l := range c.Levels {
		s := m.ps.Root().Subf("level.%d", l)
		var lv level
		if lv.memory, err = s.New("memory", []int{c.Prototypes, c.Width}, autodiff.Normal(0, 1)); err != nil {
			return err
		}
		lv.attn, err = layers.NewKernelAttention(s.Sub("attn"), layers.AttentionConfig{
			Dim: c.Width, Heads: c.Heads, Kernel: kernel,
			Bandwidth: layers.BandwidthConfig{Mode: layers.BandwidthHead, Init: c.InitBandwidth, Min: c.MinBandwidth},
		})
		if err != nil {
			return err
		}
		if lv.pointwise, err = newLinear(s.Sub("map"), c.Width, c.Width); err != nil {
			return err
		}
		m.levels = append(m.levels, lv)
	}
	m.dec, err = newLinear(m.ps.Root().Sub("dec"), c.Width, c.In)
	return err
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Params returns the model's parameter registry.
func (m *Model) Params() *autodiff.Params { return m.ps }

// Noise returns the training corruption of the configuration.
func (m *Model) Noise() Corruption { return m.noise }

// Dim returns the number of input coordinates.
func (m *Model) Dim() int { return m.cfg.In }

// Bandwidths returns the current bandwidth h = softplus(ρ) + MinBandwidth of every head,
// level by level; nil for the MLP.
func (m *Model) Bandwidths() [][]float64 {
	var out [][]float64
	for _, lv := range m.levels {
		for _, hs := range lv.attn.Bandwidths() {
			out = append(out, hs)
		}
	}
	return out
}

// WholeBatches reports whether an image's output depends on where it stands in its
// batch: a localized DAE whose kernel has position factors, which place the images of a
// batch as the query positions 0…B−1. Such a model's batches run whole, neither in parts
// on several cores (Builder declares no autodiff.Batch) nor split across the processes
// of a data-parallel run (Data.Split gives the whole batch to the first).
func (m *Model) WholeBatches() bool {
	return m.cfg.Kind == KindLocalized && m.cfg.Kernel != nil && layers.HasPositions(m.cfg.Kernel.Kernel)
}

// Builder returns the model's graph. Inputs: "noisy" [B, In] and, optionally, "clean"
// [B, In]; output "recon" [B, In] = g(noisy) in (0, 1); the loss, when "clean" is given,
// is the MSE mean((recon − clean)²) over all B·In values. The graph declares its images
// independent (autodiff.Batch), so that a batch may run as parts on several cores.
func (m *Model) Builder() autodiff.Builder {
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		x := g.Input("noisy")
		if err := g.Err(); err != nil {
			return autodiff.Outputs{}, err
		}
		if s := x.Shape(); len(s) != 2 || s[1] != m.cfg.In {
			return autodiff.Outputs{}, fmt.Errorf("dae: input \"noisy\" has shape %v, want [B, %d]", s, m.cfg.In)
		}
		var recon *autodiff.Node
		if m.cfg.Kind == KindMLP {
			recon = m.mlp(g, x)
		} else {
			recon = m.localized(g, x)
		}
		out := autodiff.Outputs{Values: map[string]*autodiff.Node{"recon": recon}}
		// Images never meet (the localized model's images attend only to the
		// prototypes) and the loss is a mean over all B·In values: a batch may run as
		// parts — unless the kernel has position factors, which place the images of a
		// batch as the query positions 0…B−1 against the prototypes' 0…P−1, so that an
		// image's output depends on where it stands in its batch.
		if !m.WholeBatches() {
			in := m.cfg.In
			out.Batch = &autodiff.Batch{Examples: x.Shape()[0], LossItems: func(inputs map[string]*tensor.Dense) float64 {
				return float64(inputs["noisy"].Shape()[0] * in)
			}}
		}
		if g.HasInput("clean") {
			out.Loss = g.MSE(recon, g.Input("clean"))
		}
		return out, g.Err()
	}
}

func (m *Model) mlp(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	for i, l := range m.layers {
		x = l.Forward(g, x)
		if i+1 < len(m.layers) {
			x = g.ReLU(x)
		}
	}
	return g.Sigmoid(x)
}

// localized is sigmoid(dec(h_L)) with h_0 = relu(enc(x)) and, level by level,
// h_l = relu(map_l(h_{l−1} + attn_l(h_{l−1}, memory_l))): a soft mean-shift step of each
// image's code towards the local mean of the level's prototype values, then a pointwise
// map. The B images of a batch are the queries of one attention call over the P
// prototypes, so images never attend to each other.
func (m *Model) localized(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	b := x.Shape()[0]
	w := m.cfg.Width
	h := g.Reshape(g.ReLU(m.enc.Forward(g, x)), []int{1, b, w})
	for _, lv := range m.levels {
		mem := g.Reshape(g.Param(lv.memory), []int{1, m.cfg.Prototypes, w})
		a := lv.attn.Attend(g, h, mem, layers.AttendOptions{})
		h = g.ReLU(lv.pointwise.Forward(g, g.Add(h, a)))
	}
	return g.Sigmoid(m.dec.Forward(g, g.Reshape(h, []int{b, w})))
}

// Net returns the autodiff model that runs Builder over the parameters, created on first
// use.
func (m *Model) Net() *autodiff.Model {
	if m.net == nil {
		m.net = autodiff.NewModel(m.ps, m.Builder(), 0)
	}
	return m.net
}

// batchTensor wraps n rows of the model's width as a tensor of the parameters' dtype;
// float32 data is shared, not copied.
func (m *Model) batchTensor(data []float32) *tensor.Dense {
	n := len(data) / m.cfg.In
	if m.ps.Dtype() == autodiff.Float32 {
		return tensor.New(tensor.WithShape(n, m.cfg.In), tensor.WithBacking(data))
	}
	d := make([]float64, len(data))
	for i, v := range data {
		d[i] = float64(v)
	}
	return tensor.New(tensor.WithShape(n, m.cfg.In), tensor.WithBacking(d))
}

func (m *Model) checkRows(what string, data []float32) error {
	if len(data) == 0 || len(data)%m.cfg.In != 0 {
		return fmt.Errorf("dae: %s has %d values, not a positive multiple of %d", what, len(data), m.cfg.In)
	}
	return nil
}

// Denoise writes g(noisy) into dst, running the graph in batches of up to 1000 images.
func (m *Model) Denoise(dst, noisy []float32) error {
	if err := m.checkRows("input", noisy); err != nil {
		return err
	}
	if len(dst) != len(noisy) {
		return fmt.Errorf("dae: denoise: dst has %d values, input %d", len(dst), len(noisy))
	}
	step := evalBatch * m.cfg.In
	for lo := 0; lo < len(noisy); lo += step {
		hi := min(lo+step, len(noisy))
		res, err := m.Net().Forward(map[string]*tensor.Dense{"noisy": m.batchTensor(noisy[lo:hi])})
		if err != nil {
			return fmt.Errorf("dae: denoise: %w", err)
		}
		switch d := res.Values["recon"].Data().(type) {
		case []float32:
			copy(dst[lo:hi], d)
		case []float64:
			for i, v := range d {
				dst[lo+i] = float32(v)
			}
		}
	}
	return nil
}

// BatchInputs returns the graph inputs "noisy" and "clean" for a batch of rows of
// m.Dim() values, for use with Net (Data uses it; so can another train.Data).
func BatchInputs(m *Model, noisy, clean []float32) (map[string]*tensor.Dense, error) {
	if err := m.checkRows("batch", clean); err != nil {
		return nil, err
	}
	if len(noisy) != len(clean) {
		return nil, fmt.Errorf("dae: %d noisy values for %d clean", len(noisy), len(clean))
	}
	return map[string]*tensor.Dense{"noisy": m.batchTensor(noisy), "clean": m.batchTensor(clean)}, nil
}
