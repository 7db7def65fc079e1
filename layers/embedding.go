package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// EmbeddingConfig configures an Embedding table.
type EmbeddingConfig struct {
	Vocab int  // number of rows (token ids 0..Vocab−1), > 0
	Dim   int  // width of each row, > 0
	Init  Init // InitTorch (the zero value) or InitGPT
}

// Validate reports the first invalid field.
func (c EmbeddingConfig) Validate() error {
	if c.Vocab <= 0 {
		return fmt.Errorf("EmbeddingConfig.Vocab = %d, want > 0", c.Vocab)
	}
	if c.Dim <= 0 {
		return fmt.Errorf("EmbeddingConfig.Dim = %d, want > 0", c.Dim)
	}
	return c.Init.validate("EmbeddingConfig.Init")
}

// Embedding maps integer ids to learned vectors: the parameter `<scope>.weight`
// [Vocab, Dim], PyTorch's nn.Embedding layout.
type Embedding struct {
	Weight *autodiff.Param // [Vocab, Dim]
	Vocab  int
	Dim    int
	scope  string
}

// NewEmbedding creates an Embedding's table under s.
func NewEmbedding(s autodiff.Scope, cfg EmbeddingConfig) (*Embedding, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("embedding %q: %w", s.Name(), err)
	}
	w, err := newParam(s, "embedding", "weight", []int{cfg.Vocab, cfg.Dim}, cfg.Init.embedding())
	if err != nil {
		return nil, err
	}
	return &Embedding{Weight: w, Vocab: cfg.Vocab, Dim: cfg.Dim, scope: s.Name()}, nil
}

// Forward looks up ids (an int tensor [N] or [B, T]) and returns [N, Dim] or
// [B, T, Dim]. An id outside [0, Vocab) is a run-time error.
func (e *Embedding) Forward(g *autodiff.Graph, ids *autodiff.Node) *autodiff.Node {
	if !ready(g, "embedding", e.scope, ids) {
		return nil
	}
	shape := ids.Shape()
	if len(shape) < 1 || len(shape) > 2 {
		return fail(g, "embedding", e.scope, "ids %v, want [N] or [B, T]", shape)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := g.Gather(g.Param(e.Weight), ids)
	return g.Reshape(out, append(shape, e.Dim))
}
