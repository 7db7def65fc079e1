package localmax

import (
	"encoding/json"
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/onnx"
	"github.com/locusml/locus/train"
)

// Family is the model family's name, in -model and in checkpoints.
const Family = "kattn"

func init() { train.RegisterConfigFamily(Family, New) }

// Config is the model's configuration, saved in every checkpoint.
type Config struct {
	Vocab     int                  `json:"vocab"`
	Dim       int                  `json:"dim"`
	Heads     int                  `json:"heads"`
	Kernel    layers.KernelSpec    `json:"kernel"`
	Bandwidth layers.BandwidthMode `json:"bandwidth"`
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Vocab <= 0:
		return fmt.Errorf("kattn config: vocab %d, want > 0", c.Vocab)
	case c.Dim <= 0 || c.Heads <= 0 || c.Dim%c.Heads != 0:
		return fmt.Errorf("kattn config: dim %d and heads %d, want dim a positive multiple of heads", c.Dim, c.Heads)
	case c.Kernel.Kernel == nil:
		return fmt.Errorf("kattn config: no kernel")
	}
	return nil
}

// Model is one kernel-attention layer over token embeddings, read out by a linear map:
// the local mean of the values under the kernel is the whole computation.
type Model struct {
	Config Config
	Emb    *layers.Embedding
	Attn   *layers.KernelAttention
	Head   *layers.Linear
}

// New creates the model's parameters in ps.
func New(cfg Config, ps *autodiff.Params) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg}
	var err error
	if m.Emb, err = layers.NewEmbedding(ps.Scope("emb"), layers.EmbeddingConfig{Vocab: cfg.Vocab, Dim: cfg.Dim}); err != nil {
		return nil, err
	}
	if m.Attn, err = layers.NewKernelAttention(ps.Scope("attn"), layers.AttentionConfig{
		Dim: cfg.Dim, Heads: cfg.Heads, Kernel: cfg.Kernel.Value(), Bandwidth: layers.BandwidthConfig{Mode: cfg.Bandwidth},
	}); err != nil {
		return nil, err
	}
	if m.Head, err = layers.NewLinear(ps.Scope("head"), layers.LinearConfig{In: cfg.Dim, Out: cfg.Vocab}); err != nil {
		return nil, err
	}
	return m, nil
}

// Builder is the graph: logits [B·T, Vocab] for the ids [B, T], and the cross-entropy
// loss when targets are given. It uses the Transformer's input and output names, so
// that transformer.DataConfig's batches and metrics serve it as they are.
func (m *Model) Builder() autodiff.Builder {
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		ids := g.Input(transformer.InputIDs)
		y := m.Attn.Forward(g, m.Emb.Forward(g, ids))
		if g.Err() != nil {
			return autodiff.Outputs{}, g.Err()
		}
		s := y.Shape()
		logits := m.Head.Forward(g, g.Reshape(y, []int{s[0] * s[1], s[2]}))
		out := autodiff.Outputs{Values: map[string]*autodiff.Node{transformer.OutputLogits: logits}}
		if g.HasInput(transformer.InputTargets) {
			out.Loss = g.CrossEntropy(logits, g.Input(transformer.InputTargets), datasets.IgnoreIndex)
		}
		return out, g.Err()
	}
}

// Bandwidths returns the attention layer's bandwidths.
func (m *Model) Bandwidths() map[string][]float64 { return m.Attn.Bandwidths() }

// ExportONNX writes the model as an ONNX graph: ids [batch, seq] to logits
// [batch, seq, vocab].
func (m *Model) ExportONNX() (*onnx.Model, error) {
	g := onnx.NewGraph("localmax_kattn", "one kernel-attention layer, kernel "+m.Config.Kernel.String())
	ids := g.Input("ids", "int64 [batch, seq]: symbols", onnx.Int64, onnx.Sym("batch"), onnx.Sym("seq"))
	x := m.Emb.ONNX(g, ids)
	logits := m.Head.ONNX(g, m.Attn.ONNX(g, x, x, 1<<16))
	g.Output(logits, "logits", "float32 [batch, seq, vocab]", onnx.Float, onnx.Sym("batch"), onnx.Sym("seq"), onnx.Size(m.Config.Vocab))
	if err := g.Err(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(m.Config)
	if err != nil {
		return nil, err
	}
	return &onnx.Model{Graph: g, Doc: "localmax model family " + Family,
		Metadata: map[string]string{train.MetaFamily: Family, train.MetaConfig: string(raw)}}, nil
}
