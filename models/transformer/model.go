package transformer

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/train"
)

// Arch is a Transformer's architecture.
type Arch int

const (
	// ArchEncoder is bidirectional, with one prediction per input position.
	ArchEncoder Arch = iota
	// ArchLM is a decoder-only causal language model.
	ArchLM
	// ArchEncDec is an encoder over a source sequence and a causal decoder that
	// cross-attends to it.
	ArchEncDec
)

var archNames = []string{"encoder", "lm", "encdec"}

// ArchNames returns the text forms of the architectures.
func ArchNames() []string { return append([]string(nil), archNames...) }

// String returns "encoder", "lm" or "encdec".
func (a Arch) String() string {
	if a >= 0 && int(a) < len(archNames) {
		return archNames[a]
	}
	return fmt.Sprintf("Arch(%d)", int(a))
}

// MarshalText returns the architecture's name.
func (a Arch) MarshalText() ([]byte, error) {
	if a < 0 || int(a) >= len(archNames) {
		return nil, fmt.Errorf("invalid architecture %d", int(a))
	}
	return []byte(archNames[a]), nil
}

// UnmarshalText parses an architecture's name.
func (a *Arch) UnmarshalText(b []byte) error {
	if i := slices.Index(archNames, string(b)); i >= 0 {
		*a = Arch(i)
		return nil
	}
	return fmt.Errorf("unknown architecture %s (valid: %s)", quote.Text(string(b)), strings.Join(archNames, ", "))
}

// Decodes reports whether the architecture generates tokens one at a time (lm, encdec).
func (a Arch) Decodes() bool { return a == ArchLM || a == ArchEncDec }

// Config describes a Transformer. Every choice is a typed value whose JSON is its text
// form (the kernel as its spec, e.g. "gaussian * window(16)"), so a checkpoint's
// configuration reads as words and rebuilds the model.
type Config struct {
	Arch   Arch `json:"arch"`
	Vocab  int  `json:"vocab"`
	MaxLen int  `json:"max_len"` // longest sequence, source or target (the learned position table's size)
	Dim    int  `json:"dim"`
	Heads  int  `json:"heads"`
	Layers int  `json:"layers"` // blocks; for encdec, in the encoder and in the decoder each
	Hidden int  `json:"hidden"` // feed-forward width d_ff; 0 means 4·Dim (FFNWidth), at build time
	// Kernel is the attention kernel, any spec of the layers kernel language; the
	// exponential kernel with the fixed bandwidth √d_head is the standard Transformer.
	Kernel layers.KernelSpec `json:"kernel"`
	// Bandwidth is the bandwidth mode of every attention layer (THEORY.md §4).
	Bandwidth  layers.BandwidthMode    `json:"bandwidth"`
	Positions  layers.PositionEncoding `json:"positions"`
	PostLN     bool                    `json:"post_ln"`
	Tied       bool                    `json:"tied"`              // the output head reuses tok_emb.weight (no head.weight)
	NoBias     bool                    `json:"no_bias,omitempty"` // no biases in the Linear maps and LayerNorms (GPT-2's bias=False); absent: biases
	Activation layers.Activation       `json:"activation"`
	Dropout    float64                 `json:"dropout"` // in training, GPT-2's placement (Model); zero is a valid setting, none
	Init       layers.Init             `json:"init"`
	// Tiling chooses the attention's local mean: auto (by length), never or always tiled
	// (O(T) memory); every choice computes the same function.
	Tiling layers.Tiling `json:"tiling,omitempty"`
	// RandomFeatures m > 0 approximates the exponential or Gaussian kernel of every
	// attention layer by m positive random features (layers.AttentionConfig.
	// RandomFeatures, FAVOR+); 0 is exact attention.
	RandomFeatures int `json:"random_features,omitempty"`
}

// Size limits of Validate: far above any model Locus trains on one machine, low enough
// that a mistyped size is an error instead of an out-of-memory crash.
const (
	MaxVocab  = 1 << 24
	MaxLen    = 1 << 20
	MaxDim    = 1 << 15
	MaxLayers = 1 << 10
)

// DefaultConfig is the reference workloads' model: d=64, 4 heads, 2 layers, d_ff=4·d
// (256), exponential kernel at √d_head, learned positions, pre-LN, GELU (tanh), GPT init.
// Its Hidden is 0, so that d_ff follows a Dim changed afterwards.
//
// As in every configuration of Locus, a zero field means its documented default (Hidden,
// Tiling) or is a valid setting that the field's comment names (Dropout 0: none,
// RandomFeatures 0: exact attention); a zero that can mean neither (Vocab, MaxLen, Dim,
// Heads, Layers) is a Validate error naming the field.
func DefaultConfig(arch Arch, vocab, maxLen int) Config {
	return Config{Arch: arch, Vocab: vocab, MaxLen: maxLen, Dim: 64, Heads: 4, Layers: 2,
		Kernel: layers.KernelSpec{Kernel: layers.Exponential{}}, Bandwidth: layers.BandwidthFixed,
		Positions: layers.PositionsLearned, Activation: layers.GELUTanh, Init: layers.InitGPT}
}

// FFNWidth returns the feed-forward width d_ff of c: Hidden, or 4·Dim when Hidden is 0.
func (c Config) FFNWidth() int {
	if c.Hidden == 0 {
		return 4 * c.Dim
	}
	return c.Hidden
}

// MarshalJSON writes c with Hidden explicit (FFNWidth), so that a checkpoint or an
// exported model states its d_ff and reloads to the same model whatever the default.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // without this method
	p := plain(c)
	p.Hidden = c.FFNWidth()
	return json.Marshal(p)
}

// standardFields classifies every field of Config for NonStandard, with why: a relevant
// field changes the function that PyTorch's reference LM computes from the weights, so a
// value other than standardReference's is non-standard; an irrelevant one does not (a
// size, which the weights' shapes and the exported config carry, or a setting of
// training only). A field missing here counts as relevant, so that a new option is
// refused by the torch export until it is classified (TestNonStandardCoversEveryField).
var standardFields = map[string]struct {
	relevant bool
	why      string
}{
	"Arch":           {true, "the reference is a decoder-only LM or an encoder"},
	"Vocab":          {false, "a size, carried by the weights' shapes"},
	"MaxLen":         {false, "a size, carried by the position table's shape"},
	"Dim":            {false, "a size, carried by the weights' shapes"},
	"Heads":          {false, "a size, carried by the exported config"},
	"Layers":         {false, "a size, carried by the number of blocks"},
	"Hidden":         {false, "a size, carried by the feed-forward weights' shapes"},
	"Kernel":         {true, "the reference is exponential, softmax attention"},
	"Bandwidth":      {true, "the reference is fixed at √d_head"},
	"Positions":      {true, "the reference has learned positions"},
	"PostLN":         {true, "post-LN blocks; the reference is pre-LN"},
	"Tied":           {true, "a tied output head; the reference has its own head.weight"},
	"NoBias":         {true, "no biases; the reference's Linear maps and LayerNorms have them"},
	"Activation":     {true, "the reference uses gelu_tanh"},
	"Dropout":        {false, "training only: evaluation, and PyTorch's model in eval mode, compute without dropout"},
	"Init":           {false, "training only: the exported weights are the trained ones"},
	"Tiling":         {false, "every choice computes the same function"},
	"RandomFeatures": {true, "the reference computes exact softmax attention, not its random-feature estimate"},
}

// standardReference holds the reference's value of every relevant field of Config (an
// encoder's reference is ArchEncoder).
var standardReference = Config{Arch: ArchLM, Kernel: layers.KernelSpec{Kernel: layers.Exponential{}},
	Bandwidth: layers.BandwidthFixed, Positions: layers.PositionsLearned, Activation: layers.GELUTanh}

// NonStandard lists, one phrase each, the settings in which c differs from the standard
// softmax Transformer whose weights PyTorch's reference LM computes with; nil means c is
// that Transformer. Every field of Config is compared with standardReference's by its
// JSON text, save those that standardFields says do not change the function.
func (c Config) NonStandard() []string {
	ref := standardReference
	if c.Arch == ArchEncoder {
		ref.Arch = ArchEncoder
	}
	var out []string
	cv, rv := reflect.ValueOf(c), reflect.ValueOf(ref)
	for i := range cv.NumField() {
		f := cv.Type().Field(i)
		class, known := standardFields[f.Name]
		if known && !class.relevant {
			continue
		}
		got, err1 := json.Marshal(cv.Field(i).Interface())
		want, err2 := json.Marshal(rv.Field(i).Interface())
		if err1 == nil && err2 == nil && bytes.Equal(got, want) {
			continue
		}
		why := class.why
		if !known {
			why = "a setting not classified for export, which the reference may not compute"
		}
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, fmt.Sprintf("%s %s (%s)", key, strings.Trim(string(got), `"`), why))
	}
	return out
}

// Standard reports whether the configuration is the standard Transformer whose weights
// load into PyTorch's reference LM.
func (c Config) Standard() bool { return len(c.NonStandard()) == 0 }

// Validate reports the first invalid field, naming it.
func (c Config) Validate() error {
	switch {
	case c.Arch < ArchEncoder || c.Arch > ArchEncDec:
		return fmt.Errorf("transformer: arch %v, want one of %s", c.Arch, strings.Join(archNames, ", "))
	case c.Vocab <= 0 || c.Vocab > MaxVocab:
		return fmt.Errorf("transformer: vocab %d, want 1 to %d", c.Vocab, MaxVocab)
	case c.MaxLen <= 0 || c.MaxLen > MaxLen:
		return fmt.Errorf("transformer: max_len %d, want 1 to %d", c.MaxLen, MaxLen)
	case c.Dim <= 0 || c.Heads <= 0 || c.Dim%c.Heads != 0 || c.Dim > MaxDim:
		return fmt.Errorf("transformer: dim %d and heads %d (dim must be a positive multiple of heads, at most %d)", c.Dim, c.Heads, MaxDim)
	case c.Layers <= 0 || c.Layers > MaxLayers:
		return fmt.Errorf("transformer: layers %d, want 1 to %d", c.Layers, MaxLayers)
	case c.Hidden < 0 || c.Hidden > 4*MaxDim:
		return fmt.Errorf("transformer: hidden %d, want 0 to %d (0 means 4·dim)", c.Hidden, 4*MaxDim)
	case c.RandomFeatures < 0 || c.RandomFeatures > layers.MaxRandomFeatures:
		return fmt.Errorf("transformer: random_features %d, want 0 (exact attention) to %d", c.RandomFeatures, layers.MaxRandomFeatures)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("transformer: dropout %g, want 0 <= p < 1", c.Dropout)
	}
	if err := layers.CheckWindow(c.Kernel.Value(), c.MaxLen); err != nil {
		return fmt.Errorf("transformer: %w", err)
	}
	for _, v := range []encoding.TextMarshaler{c.Bandwidth, c.Positions, c.Activation, c.Init, c.Tiling} {
		if _, err := v.MarshalText(); err != nil {
			return fmt.Errorf("transformer: %w", err)
		}
	}
	return nil
}

// Model is a Transformer built only from layers/: token embedding, positions, a stack of
// kernel-attention blocks (local means with learned kernels) and feed-forward maps, a
// final LayerNorm and the output head. Its parameter names are those of PyTorch's
// reference LM (tok_emb.weight, pos_emb.weight, blocks.0.ln1.weight, ..., ln_f.weight,
// head.weight, head.bias; no .bias with NoBias, no head with Tied).
//
// In training, Dropout p applies where GPT-2 (nanoGPT's model.py) applies it: to the sum
// of the token and position embeddings, to the attention weights (not with random
// features, which have none) and to the output of each residual branch, after the
// attention's output map and after the feed-forward layer. The attention weights are
// dropped inside the fused attention ops (autodiff's AttentionDropout, KernelAttention,
// TiledLocalMean), so a model with dropout trains on the same path as one without;
// evaluation and generation compute without dropout.
//
// An encoder–decoder (Arch "encdec") shares tok_emb and pos_emb between its two halves;
// its encoder is enc.blocks.N (bidirectional Blocks) and enc.ln_f, its decoder
// dec.blocks.N (DecoderBlocks: causal self-attention, cross-attention over the encoder
// output, feed-forward), then ln_f and head.
type Model struct {
	Config Config
	Params *autodiff.Params
	TokEmb *layers.Embedding
	PosEmb *layers.LearnedPositions // nil unless Positions is PositionsLearned
	Blocks []*layers.Block          // encoder or lm; nil for encdec
	LNF    *layers.LayerNorm
	Head   *layers.Linear // nil when Tied

	EncBlocks []*layers.Block   // encdec: the encoder's bidirectional blocks
	EncLNF    *layers.LayerNorm // encdec: the encoder's final norm
	DecBlocks []*DecoderBlock   // encdec: the decoder's blocks
}

// New creates the model's parameters in ps. A model whose parameters alone cannot fit
// in this machine's memory is refused before anything is allocated (train.CheckMemory).
func New(cfg Config, ps *autodiff.Params) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := train.CheckMemory(fmt.Sprintf("transformer: a model of dim %d, %d layers, vocab %d and max_len %d", cfg.Dim, cfg.Layers, cfg.Vocab, cfg.MaxLen), 8*cfg.ParamEstimate()); err != nil { // values and gradients
		return nil, err
	}
	kern, init := cfg.Kernel.Value(), cfg.Init
	m := &Model{Config: cfg, Params: ps}
	root := ps.Root()
	var err error
	if m.TokEmb, err = layers.NewEmbedding(root.Sub("tok_emb"), layers.EmbeddingConfig{Vocab: cfg.Vocab, Dim: cfg.Dim, Init: init}); err != nil {
		return nil, err
	}
	if cfg.Positions == layers.PositionsLearned {
		if m.PosEmb, err = layers.NewLearnedPositions(root.Sub("pos_emb"), layers.PositionsConfig{MaxLen: cfg.MaxLen, Dim: cfg.Dim, Init: init}); err != nil {
			return nil, err
		}
	}
	blockCfg := func(causal bool) layers.BlockConfig {
		return layers.BlockConfig{
			Dim: cfg.Dim, Heads: cfg.Heads, Hidden: cfg.Hidden, Activation: cfg.Activation,
			PostLN: cfg.PostLN, Dropout: cfg.Dropout, NoBias: cfg.NoBias, Init: init, Depth: cfg.Layers,
			Attention: layers.AttentionConfig{
				Kernel:    kern,
				Bandwidth: layers.BandwidthConfig{Mode: cfg.Bandwidth},
				Causal:    causal,
				Rotary:    cfg.Positions == layers.PositionsRotary,
				Tiling:    cfg.Tiling,

				RandomFeatures: cfg.RandomFeatures,
				Dropout:        cfg.attentionDropout(),
			},
		}
	}
	if cfg.Arch == ArchEncDec {
		if err := m.newEncDec(root, blockCfg); err != nil {
			return nil, err
		}
	} else {
		for i := range cfg.Layers {
			b, err := layers.NewBlock(root.Subf("blocks.%d", i), blockCfg(cfg.Arch == ArchLM))
			if err != nil {
				return nil, err
			}
			m.Blocks = append(m.Blocks, b)
		}
	}
	if m.LNF, err = layers.NewLayerNorm(root.Sub("ln_f"), layers.NormConfig{Dim: cfg.Dim, NoBias: cfg.NoBias}); err != nil {
		return nil, err
	}
	if !cfg.Tied {
		if m.Head, err = layers.NewLinear(root.Sub("head"), layers.LinearConfig{In: cfg.Dim, Out: cfg.Vocab, NoBias: cfg.NoBias, Init: init}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// attentionDropout is the dropout on the attention weights: Dropout, save for
// random-feature attention, which has no weights (its dropout is the embedding's and
// the residual branches').
func (c Config) attentionDropout() float64 {
	if c.RandomFeatures > 0 {
		return 0
	}
	return c.Dropout
}

// embed returns the input vectors of ids [B, T] at positions offset..offset+T−1.
func (m *Model) embed(g *autodiff.Graph, ids *autodiff.Node, offset int) *autodiff.Node {
	x := m.TokEmb.Forward(g, ids)
	switch m.Config.Positions {
	case layers.PositionsLearned:
		x = m.PosEmb.Forward(g, x, offset)
	case layers.PositionsSinusoidal:
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
	if m.Config.Arch == ArchEncDec {
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
// InputTargets is given, the mean cross-entropy over scored positions as the loss. The
// graph declares its sequences independent (autodiff.Batch), so that a batch may run as
// parts on several cores.
func (m *Model) Builder() autodiff.Builder {
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		var logits *autodiff.Node
		if m.Config.Arch == ArchEncDec {
			logits = m.EncDecLogits(g, g.Input(InputSource), g.Input(InputIDs))
		} else {
			logits = m.Logits(g, g.Input(InputIDs))
		}
		out := autodiff.Outputs{Values: map[string]*autodiff.Node{OutputLogits: logits}}
		if g.HasInput(InputTargets) {
			out.Loss = g.CrossEntropy(logits, g.Input(InputTargets), datasets.IgnoreIndex)
		}
		if g.Err() != nil {
			return out, g.Err()
		}
		// Sequences never attend to each other, and the loss is a mean over the scored
		// targets: a batch may run as parts.
		out.Batch = &autodiff.Batch{Examples: g.Input(InputIDs).Shape()[0], LossItems: autodiff.CountNotEqual(InputTargets, datasets.IgnoreIndex)}
		return out, nil
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
