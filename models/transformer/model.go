package transformer

import (
	"fmt"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
)

// Config describes a Transformer. It is saved in checkpoints as JSON, so every field is
// a plain value and names are strings.
type Config struct {
	// Arch is "encoder" (bidirectional, one prediction per input position), "lm"
	// (decoder-only causal language model) or "encdec" (an encoder over a source
	// sequence and a causal decoder that cross-attends to it).
	Arch   string `json:"arch"`
	Vocab  int    `json:"vocab"`
	MaxLen int    `json:"max_len"` // longest sequence, source or target (the learned position table's size)
	Dim    int    `json:"dim"`
	Heads  int    `json:"heads"`
	Layers int    `json:"layers"` // blocks; for encdec, in the encoder and in the decoder each
	Hidden int    `json:"hidden"` // feed-forward width d_ff; 0 means 4·Dim
	// Kernel is a content kernel name (exponential, gaussian, laplacian, cauchy,
	// epanechnikov); exponential with the fixed bandwidth √d_head is the standard
	// Transformer.
	Kernel string `json:"kernel"`
	// Bandwidth is fixed, layer, head, query or knn (THEORY.md §4).
	Bandwidth string `json:"bandwidth"`
	// Positions is learned (absolute, PyTorch's pos_emb), sinusoidal or rotary.
	Positions  string  `json:"positions"`
	PostLN     bool    `json:"post_ln"`
	Tied       bool    `json:"tied"` // the output head reuses tok_emb.weight (no head.weight)
	Activation string  `json:"activation"`
	Dropout    float64 `json:"dropout"`
	Init       string  `json:"init"` // gpt or torch
}

// DefaultConfig is the reference workloads' model: d=64, 4 heads, 2 layers, d_ff=256,
// exponential kernel at √d_head, learned positions, pre-LN, GELU (tanh), GPT init.
func DefaultConfig(arch string, vocab, maxLen int) Config {
	return Config{Arch: arch, Vocab: vocab, MaxLen: maxLen, Dim: 64, Heads: 4, Layers: 2, Hidden: 256,
		Kernel: "exponential", Bandwidth: "fixed", Positions: "learned", Activation: "gelu_tanh", Init: "gpt"}
}

// Standard reports whether the configuration is the standard Transformer whose weights
// load into PyTorch's reference LM.
func (c Config) Standard() bool {
	return c.Arch != "encdec" && c.Kernel == "exponential" && c.Bandwidth == "fixed" && c.Positions == "learned" &&
		!c.PostLN && !c.Tied && c.Activation == "gelu_tanh"
}

var bandwidthModes = map[string]layers.BandwidthMode{
	"fixed": layers.BandwidthFixed, "layer": layers.BandwidthLayer, "head": layers.BandwidthHead,
	"query": layers.BandwidthQuery, "knn": layers.BandwidthKNN,
}

var activations = map[string]layers.Activation{
	"gelu_tanh": layers.GELUTanh, "gelu": layers.GELUExact, "relu": layers.ReLU,
}

// BandwidthNames lists the accepted Bandwidth values.
func BandwidthNames() []string { return []string{"fixed", "layer", "head", "query", "knn"} }

// Validate reports the first invalid field, naming it.
func (c Config) Validate() error {
	switch {
	case c.Arch != "encoder" && c.Arch != "lm" && c.Arch != "encdec":
		return fmt.Errorf("transformer: arch %q, want encoder, lm or encdec", c.Arch)
	case c.Vocab <= 0:
		return fmt.Errorf("transformer: vocab %d, want > 0", c.Vocab)
	case c.MaxLen <= 0:
		return fmt.Errorf("transformer: max_len %d, want > 0", c.MaxLen)
	case c.Dim <= 0 || c.Heads <= 0 || c.Dim%c.Heads != 0:
		return fmt.Errorf("transformer: dim %d and heads %d (dim must be a positive multiple of heads)", c.Dim, c.Heads)
	case c.Layers <= 0:
		return fmt.Errorf("transformer: layers %d, want > 0", c.Layers)
	case c.Hidden < 0:
		return fmt.Errorf("transformer: hidden %d, want >= 0", c.Hidden)
	case c.Dropout < 0 || c.Dropout >= 1:
		return fmt.Errorf("transformer: dropout %g, want 0 <= p < 1", c.Dropout)
	}
	if _, err := c.kernel(); err != nil {
		return err
	}
	if _, ok := bandwidthModes[c.Bandwidth]; !ok {
		return fmt.Errorf("transformer: unknown bandwidth %q (valid: %s)", c.Bandwidth, strings.Join(BandwidthNames(), ", "))
	}
	if _, ok := activations[c.Activation]; !ok {
		return fmt.Errorf("transformer: unknown activation %q (valid: gelu_tanh, gelu, relu)", c.Activation)
	}
	switch c.Positions {
	case "learned", "sinusoidal", "rotary":
	default:
		return fmt.Errorf("transformer: unknown positions %q (valid: learned, sinusoidal, rotary)", c.Positions)
	}
	if c.Init != "gpt" && c.Init != "torch" {
		return fmt.Errorf("transformer: unknown init %q (valid: gpt, torch)", c.Init)
	}
	return nil
}

func (c Config) kernel() (layers.ContentKernel, error) {
	k, err := layers.KernelByName(c.Kernel)
	if err != nil {
		return nil, fmt.Errorf("transformer: %w", err)
	}
	ck, ok := k.(layers.ContentKernel)
	if !ok {
		return nil, fmt.Errorf("transformer: kernel %q cannot be used in attention", c.Kernel)
	}
	return ck, nil
}

// Model is a Transformer built only from layers/: token embedding, positions, a stack of
// kernel-attention blocks (local means with learned kernels) and feed-forward maps, a
// final LayerNorm and the output head. Its parameter names are those of PyTorch's
// reference LM (tok_emb.weight, pos_emb.weight, blocks.0.ln1.weight, ..., ln_f.weight,
// head.weight, head.bias).
//
// An encoder–decoder (Arch "encdec") shares tok_emb and pos_emb between its two halves;
// its encoder is enc.blocks.N (bidirectional Blocks) and enc.ln_f, its decoder
// dec.blocks.N (DecoderBlocks: causal self-attention, cross-attention over the encoder
// output, feed-forward), then ln_f and head.
type Model struct {
	Config Config
	Params *autodiff.Params
	TokEmb *layers.Embedding
	PosEmb *layers.LearnedPositions // nil unless Positions is "learned"
	Blocks []*layers.Block          // encoder or lm; nil for encdec
	LNF    *layers.LayerNorm
	Head   *layers.Linear // nil when Tied

	EncBlocks []*layers.Block   // encdec: the encoder's bidirectional blocks
	EncLNF    *layers.LayerNorm // encdec: the encoder's final norm
	DecBlocks []*DecoderBlock   // encdec: the decoder's blocks
}

// New creates the model's parameters in ps.
func New(cfg Config, ps *autodiff.Params) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kern, _ := cfg.kernel()
	init := layers.InitGPT
	if cfg.Init == "torch" {
		init = layers.InitTorch
	}
	m := &Model{Config: cfg, Params: ps}
	root := ps.Root()
	var err error
	if m.TokEmb, err = layers.NewEmbedding(root.Sub("tok_emb"), layers.EmbeddingConfig{Vocab: cfg.Vocab, Dim: cfg.Dim, Init: init}); err != nil {
		return nil, err
	}
	if cfg.Positions == "learned" {
		if m.PosEmb, err = layers.NewLearnedPositions(root.Sub("pos_emb"), layers.PositionsConfig{MaxLen: cfg.MaxLen, Dim: cfg.Dim, Init: init}); err != nil {
			return nil, err
		}
	}
	blockCfg := func(causal bool) layers.BlockConfig {
		return layers.BlockConfig{
			Dim: cfg.Dim, Heads: cfg.Heads, Hidden: cfg.Hidden, Activation: activations[cfg.Activation],
			PostLN: cfg.PostLN, Dropout: cfg.Dropout, Init: init,
			Attention: layers.AttentionConfig{
				Kernel:    kern,
				Bandwidth: layers.BandwidthConfig{Mode: bandwidthModes[cfg.Bandwidth]},
				Causal:    causal,
				Rotary:    cfg.Positions == "rotary",
			},
		}
	}
	if cfg.Arch == "encdec" {
		if err := m.newEncDec(root, blockCfg); err != nil {
			return nil, err
		}
	} else {
		for i := range cfg.Layers {
			b, err := layers.NewBlock(root.Subf("blocks.%d", i), blockCfg(cfg.Arch == "lm"))
			if err != nil {
				return nil, err
			}
			m.Blocks = append(m.Blocks, b)
		}
	}
	if m.LNF, err = layers.NewLayerNorm(root.Sub("ln_f"), layers.NormConfig{Dim: cfg.Dim}); err != nil {
		return nil, err
	}
	if !cfg.Tied {
		if m.Head, err = layers.NewLinear(root.Sub("head"), layers.LinearConfig{In: cfg.Dim, Out: cfg.Vocab, Init: init}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// embed returns the input vectors of ids [B, T] at positions offset..offset+T−1.
func (m *Model) embed(g *autodiff.Graph, ids *autodiff.Node, offset int) *autodiff.Node {
	x := m.TokEmb.Forward(g, ids)
	switch m.Config.Positions {
	case "learned":
		x = m.PosEmb.Forward(g, x, offset)
	case "sinusoidal":
		x = layers.AddSinusoidal(g, x, offset)
	}
	if m.Config.Dropout > 0 {
		x = g.Dropout(x, m.Config.Dropout)
	}
	return x
}

// head maps hidden states [B, T, Dim] to logits [B·T, Vocab].
func (m *Model) head(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	x = m.LNF.Forward(g, x)
	if g.Err() != nil {
		return nil
	}
	s := x.Shape()
	flat := g.Reshape(x, []int{s[0] * s[1], s[2]})
	if m.Head != nil {
		return m.Head.Forward(g, flat)
	}
	return g.MatMul(flat, g.Transpose(g.Param(m.TokEmb.Weight), 1, 0))
}

// Logits returns the logits [B·T, Vocab] for ids [B, T] (an int tensor), row b·T+t
// predicting position t of sequence b.
func (m *Model) Logits(g *autodiff.Graph, ids *autodiff.Node) *autodiff.Node {
	if g.Err() != nil {
		return nil
	}
	if s := ids.Shape(); len(s) != 2 || s[1] > m.Config.MaxLen {
		return g.Fail(fmt.Errorf("transformer: ids %v, want [B, T] with T <= %d", s, m.Config.MaxLen))
	}
	if m.Config.Arch == "encdec" {
		return g.Fail(fmt.Errorf("transformer: an encdec model needs a source: use EncDecLogits"))
	}
	x := m.embed(g, ids, 0)
	for _, b := range m.Blocks {
		x = b.Forward(g, x)
	}
	return m.head(g, x)
}

// Input and output names of Builder's graphs.
const (
	InputIDs     = "ids"     // [B, T] int token ids (for encdec, the decoder's inputs)
	InputTargets = "targets" // [B·T] int targets, datasets.IgnoreIndex where not scored
	InputSource  = "src"     // [B, Ts] int source ids (encdec only)
	OutputLogits = "logits"  // [B·T, Vocab]
)

// Builder returns the training/evaluation graph: logits for InputIDs (and InputSource
// for an encdec model, whose decoder reads InputIDs with teacher forcing) and, when
// InputTargets is given, the mean cross-entropy over scored positions as the loss.
func (m *Model) Builder() autodiff.Builder {
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		var logits *autodiff.Node
		if m.Config.Arch == "encdec" {
			logits = m.EncDecLogits(g, g.Input(InputSource), g.Input(InputIDs))
		} else {
			logits = m.Logits(g, g.Input(InputIDs))
		}
		out := autodiff.Outputs{Values: map[string]*autodiff.Node{OutputLogits: logits}}
		if g.HasInput(InputTargets) {
			out.Loss = g.CrossEntropy(logits, g.Input(InputTargets), datasets.IgnoreIndex)
		}
		return out, g.Err()
	}
}

// Bandwidths returns every attention layer's current bandwidths, by parameter scope.
func (m *Model) Bandwidths() map[string][]float64 {
	out := map[string][]float64{}
	add := func(bw map[string][]float64) {
		for k, v := range bw {
			out[k] = v
		}
	}
	for _, b := range m.Blocks {
		add(b.Bandwidths())
	}
	for _, b := range m.EncBlocks {
		add(b.Bandwidths())
	}
	for _, b := range m.DecBlocks {
		add(b.Bandwidths())
	}
	return out
}
