package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// BlockConfig configures a Transformer block: a kernel attention and a feed-forward
// layer, each in a residual branch with a LayerNorm.
type BlockConfig struct {
	Dim        int        // model width
	Heads      int        // attention heads
	Hidden     int        // feed-forward width d_ff; 0 means 4·Dim
	Activation Activation // GELUTanh by default
	// PostLN puts the norms after the residual sums (the original Transformer); the default
	// is pre-LN: x + Attn(LN1(x)), then x + FFN(LN2(x)).
	PostLN  bool
	Dropout float64 // residual dropout on each branch's output, in training; 0: none
	NormEps float64 // norm eps; 0 means 1e-5
	// RMSNorm uses RMSNorm (weight only) instead of LayerNorm for ln1 and ln2.
	RMSNorm bool
	// NoBias omits every bias of the block: the norms' (weight only), the attention's
	// q, k, v, o maps' and the feed-forward layer's (GPT-2 without biases).
	NoBias bool
	Init   Init
	// Depth is the number of blocks in the model's stack, by which InitGPT2 scales the
	// residual branches' output projections (std 0.02/√(2·Depth)); 0 means 1.
	Depth int
	// Attention holds the attention options (kernel, bandwidth, Causal, Window, Rotary,
	// ...); its Dim, Heads and Init are taken from the block.
	Attention AttentionConfig
}

// Validate reports the first invalid field.
func (c BlockConfig) Validate() error {
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		return fmt.Errorf("BlockConfig.Dropout = %g, want 0 <= p < 1", c.Dropout)
	}
	if c.Depth < 0 {
		return fmt.Errorf("BlockConfig.Depth = %d, want >= 0 (0 means 1)", c.Depth)
	}
	if err := c.Norm().Validate(); err != nil {
		return fmt.Errorf("BlockConfig: %w", err)
	}
	if err := c.attention().Validate(); err != nil {
		return fmt.Errorf("BlockConfig.%w", err)
	}
	if err := c.FFN().Validate(); err != nil {
		return fmt.Errorf("BlockConfig: %w", err)
	}
	return nil
}

func (c BlockConfig) attention() AttentionConfig {
	a := c.Attention
	a.Dim, a.Heads, a.Init = c.Dim, c.Heads, c.Init
	a.NoBias = a.NoBias || c.NoBias
	return a
}

// FFN returns the configuration of the block's feed-forward layer.
func (c BlockConfig) FFN() FeedForwardConfig {
	return FeedForwardConfig{Dim: c.Dim, Hidden: c.Hidden, Activation: c.Activation, NoBias: c.NoBias, Init: c.Init}
}

// Norm returns the configuration of the block's norms.
func (c BlockConfig) Norm() NormConfig {
	return NormConfig{Dim: c.Dim, Eps: c.NormEps, NoBias: c.NoBias}
}

// ScaleResidual applies the initialisation's residual-projection scaling (InitGPT2) to
// ls, the linear maps that end the block's residual branches, for a stack of Depth
// blocks; a block built outside NewBlock (a decoder block) calls it on its own maps.
func (c BlockConfig) ScaleResidual(ls ...*Linear) { c.Init.scaleResidual(c.Depth, ls...) }

// Block is a Transformer block as a hierarchical local model (THEORY.md §5): a soft
// mean-shift step x + Attn(x) followed by the pointwise map x + FFN(x). Its parameters,
// relative to its scope, are PyTorch's module tree of the reference LM: ln1.weight/bias,
// attn.{q,k,v,o}.weight/bias, ln2.weight/bias, ffn.fc1.weight/bias, ffn.fc2.weight/bias.
type Block struct {
	LN1, LN2 Norm
	Attn     *KernelAttention
	FFN      *FeedForward
	PostLN   bool
	Dropout  float64
	scope    string
}

// NewBlock creates the block's parameters under s.
func NewBlock(s autodiff.Scope, cfg BlockConfig) (*Block, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("block %q: %w", s.Name(), err)
	}
	b := &Block{PostLN: cfg.PostLN, Dropout: cfg.Dropout, scope: s.Name()}
	var err error
	norm := cfg.Norm()
	newNorm := func(name string) (Norm, error) {
		if cfg.RMSNorm {
			return NewRMSNorm(s.Sub(name), norm)
		}
		return NewLayerNorm(s.Sub(name), norm)
	}
	if b.LN1, err = newNorm("ln1"); err != nil {
		return nil, err
	}
	if b.Attn, err = NewKernelAttention(s.Sub("attn"), cfg.attention()); err != nil {
		return nil, err
	}
	if b.LN2, err = newNorm("ln2"); err != nil {
		return nil, err
	}
	if b.FFN, err = NewFeedForward(s.Sub("ffn"), cfg.FFN()); err != nil {
		return nil, err
	}
	cfg.ScaleResidual(b.Attn.O, b.FFN.FC2)
	return b, nil
}

// Forward maps x [B, T, Dim] to [B, T, Dim] with self-attention.
func (b *Block) Forward(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	return b.ForwardWith(g, x, AttendOptions{})
}

// ForwardWith is Forward with attention options (key padding mask).
func (b *Block) ForwardWith(g *autodiff.Graph, x *autodiff.Node, opt AttendOptions) *autodiff.Node {
	if !ready(g, "block", b.scope, x) {
		return nil
	}
	attn := func(h *autodiff.Node) *autodiff.Node { return b.Attn.Attend(g, h, h, opt) }
	return b.residual(g, b.residual(g, x, b.LN1, attn), b.LN2, func(h *autodiff.Node) *autodiff.Node {
		return b.FFN.Forward(g, h)
	})
}

func (b *Block) residual(g *autodiff.Graph, x *autodiff.Node, ln Norm, f func(*autodiff.Node) *autodiff.Node) *autodiff.Node {
	return Residual(g, x, ln, b.PostLN, b.Dropout, f)
}

// Step is Forward for incremental decoding: x [B, Tn, Dim] holds new tokens at positions
// offset..offset+Tn−1, and cacheK, cacheV (nil at the start) the keys and values of the
// earlier positions from KeysValues. It returns the output and the keys and values of
// all positions so far, to be passed back as the next step's cache.
func (b *Block) Step(g *autodiff.Graph, x, cacheK, cacheV *autodiff.Node, offset int) (y, k, v *autodiff.Node) {
	return b.StepWith(g, x, cacheK, cacheV, AttendOptions{Offset: offset})
}

// StepWith is Step with the self-attention's options: opt.Offset is the position of the
// first new token among the keys (the cache's length), opt.KeyMask [B, Tc+Tn] hides keys
// (the empty slots of a cache of fixed size), and opt.Rotary, with rotary positions, holds
// the new tokens' rotary factors, which then rotate their keys as well as their queries.
func (b *Block) StepWith(g *autodiff.Graph, x, cacheK, cacheV *autodiff.Node, opt AttendOptions) (y, k, v *autodiff.Node) {
	self := func(h *autodiff.Node) *autodiff.Node {
		k, v = b.Attn.AppendKeysValuesWith(g, h, cacheK, cacheV, opt)
		return b.Attn.AttendKV(g, h, k, v, opt)
	}
	y = b.residual(g, x, b.LN1, self)
	y = b.residual(g, y, b.LN2, func(h *autodiff.Node) *autodiff.Node { return b.FFN.Forward(g, h) })
	return y, k, v
}

// StepLast is Step computing the output of only the last new position, [B, 1, Dim] (Step's
// last row): the keys and values of all Tn new positions, but the query, the local mean
// and the feed-forward map of one. It is the last block of a decode step, where only the
// last position's logits are read: for Tn = MaxLen (a window recomputed after the
// context slid) it skips most of the block's work.
func (b *Block) StepLast(g *autodiff.Graph, x, cacheK, cacheV *autodiff.Node, offset int) (y, k, v *autodiff.Node) {
	if g.Err() != nil {
		return nil, nil, nil
	}
	s := x.Shape()
	if len(s) != 3 || s[1] < 1 {
		return nil, nil, g.Fail(fmt.Errorf("block step: input %v, want [B, Tn, Dim] with Tn >= 1", s))
	}
	tn := s[1]
	if tn == 1 {
		return b.Step(g, x, cacheK, cacheV, offset)
	}
	h := x // the attention's input: LN1(x) pre-LN, x post-LN
	if !b.PostLN {
		h = b.LN1.Forward(g, x)
	}
	k, v = b.Attn.AppendKeysValues(g, h, cacheK, cacheV, offset)
	self := func(hl *autodiff.Node) *autodiff.Node {
		return b.Attn.AttendKV(g, hl, k, v, AttendOptions{Offset: offset + tn - 1})
	}
	y = b.residual(g, g.Slice(x, 1, tn-1, tn), b.LN1, self)
	y = b.residual(g, y, b.LN2, func(h *autodiff.Node) *autodiff.Node { return b.FFN.Forward(g, h) })
	return y, k, v
}

// Residual is a Transformer block's residual branch: x + drop(f(LN(x))) (pre-LN) or
// LN(x + drop(f(x))) (post-LN), where drop is dropout with probability p in training.
func Residual(g *autodiff.Graph, x *autodiff.Node, ln Norm, postLN bool, p float64, f func(*autodiff.Node) *autodiff.Node) *autodiff.Node {
	if g.Err() != nil {
		return nil
	}
	drop := func(y *autodiff.Node) *autodiff.Node {
		if p == 0 || y == nil {
			return y
		}
		return g.Dropout(y, p)
	}
	if postLN {
		return ln.Forward(g, g.Add(x, drop(f(x))))
	}
	return g.Add(x, drop(f(ln.Forward(g, x))))
}

// Bandwidths returns the attention layer's bandwidths (see KernelAttention.Bandwidths).
func (b *Block) Bandwidths() map[string][]float64 { return b.Attn.Bandwidths() }
