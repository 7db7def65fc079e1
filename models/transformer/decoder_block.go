package transformer

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
)

// DecoderBlock is the decoder block of an encoder–decoder Transformer: a causal
// self-attention step, a cross-attention step (the local mean, under a learned kernel
// between decoder queries and encoder keys, of the encoder's values: THEORY.md §5) and the
// pointwise feed-forward map, each in a residual branch with its norm. Pre-LN:
//
//	x = x + SelfAttn(LN1(x));  x = x + XAttn(LNX(x), mem);  x = x + FFN(LN2(x))
//
// post-LN puts each norm after its residual sum. Its parameters, relative to its scope,
// are ln1.*, attn.* (self-attention), ln_x.*, xattn.* (cross-attention), ln2.*, ffn.*.
//
// The cross-attention uses the block's kernel and bandwidth mode but no box kernel and no
// rotary positions: decoder and encoder positions are not comparable.
type DecoderBlock struct {
	LN1, LNX, LN2 layers.Norm
	Attn          *layers.KernelAttention // causal self-attention
	XAttn         *layers.KernelAttention // cross-attention over the encoder output
	FFN           *layers.FeedForward
	PostLN        bool
	Dropout       float64
}

// NewDecoderBlock creates the block's parameters under s. cfg.Attention configures the
// self-attention, which is always causal.
func NewDecoderBlock(s autodiff.Scope, cfg layers.BlockConfig) (*DecoderBlock, error) {
	cfg.Attention.Causal = true
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("decoder block %q: %w", s.Name(), err)
	}
	self := cfg.Attention
	self.Dim, self.Heads, self.Init = cfg.Dim, cfg.Heads, cfg.Init
	self.NoBias = self.NoBias || cfg.NoBias
	cross := self
	cross.Causal, cross.Window, cross.Hollow, cross.Rotary = false, 0, false, false
	b := &DecoderBlock{PostLN: cfg.PostLN, Dropout: cfg.Dropout}
	norm := cfg.Norm()
	newNorm := func(name string) (layers.Norm, error) {
		if cfg.RMSNorm {
			return layers.NewRMSNorm(s.Sub(name), norm)
		}
		return layers.NewLayerNorm(s.Sub(name), norm)
	}
	var err error
	if b.LN1, err = newNorm("ln1"); err != nil {
		return nil, err
	}
	if b.Attn, err = layers.NewKernelAttention(s.Sub("attn"), self); err != nil {
		return nil, err
	}
	if b.LNX, err = newNorm("ln_x"); err != nil {
		return nil, err
	}
	if b.XAttn, err = layers.NewKernelAttention(s.Sub("xattn"), cross); err != nil {
		return nil, err
	}
	if b.LN2, err = newNorm("ln2"); err != nil {
		return nil, err
	}
	if b.FFN, err = layers.NewFeedForward(s.Sub("ffn"), cfg.FFN()); err != nil {
		return nil, err
	}
	cfg.ScaleResidual(b.Attn.O, b.XAttn.O, b.FFN.FC2)
	return b, nil
}

// Forward maps decoder states x [B, T, Dim] to [B, T, Dim], attending over the encoder
// output mem [B, Ts, Dim].
func (b *DecoderBlock) Forward(g *autodiff.Graph, x, mem *autodiff.Node) *autodiff.Node {
	if g.Err() != nil {
		return nil
	}
	mk, mv := b.XAttn.KeysValues(g, mem, 0)
	y, _, _ := b.Step(g, x, nil, nil, mk, mv, 0)
	return y
}

// Step is Forward for incremental decoding. x [B, Tn, Dim] holds new tokens at positions
// offset..offset+Tn−1; cacheK and cacheV are the self-attention's cached per-head keys
// and values [B·Heads, offset, DHead] of the earlier positions (nil when offset is 0);
// memK and memV are the cross-attention's keys and values of the encoder output (from
// XAttn.KeysValues). It returns the new states and the self-attention's keys and values
// of all offset+Tn positions, the cache for the next step.
func (b *DecoderBlock) Step(g *autodiff.Graph, x, cacheK, cacheV, memK, memV *autodiff.Node, offset int) (y, k, v *autodiff.Node) {
	return b.StepWith(g, x, cacheK, cacheV, memK, memV, layers.AttendOptions{Offset: offset})
}

// StepWith is Step with the self-attention's options (layers.Block.StepWith).
func (b *DecoderBlock) StepWith(g *autodiff.Graph, x, cacheK, cacheV, memK, memV *autodiff.Node, opt layers.AttendOptions) (y, k, v *autodiff.Node) {
	self := func(h *autodiff.Node) *autodiff.Node {
		k, v = b.Attn.AppendKeysValuesWith(g, h, cacheK, cacheV, opt)
		return b.Attn.AttendKV(g, h, k, v, opt)
	}
	cross := func(h *autodiff.Node) *autodiff.Node {
		return b.XAttn.AttendKV(g, h, memK, memV, layers.AttendOptions{})
	}
	ffn := func(h *autodiff.Node) *autodiff.Node { return b.FFN.Forward(g, h) }
	y = layers.Residual(g, x, b.LN1, b.PostLN, b.Dropout, self)
	y = layers.Residual(g, y, b.LNX, b.PostLN, b.Dropout, cross)
	y = layers.Residual(g, y, b.LN2, b.PostLN, b.Dropout, ffn)
	return y, k, v
}

// Bandwidths returns the bandwidths of both attention layers.
func (b *DecoderBlock) Bandwidths() map[string][]float64 {
	out := b.Attn.Bandwidths()
	for k, v := range b.XAttn.Bandwidths() {
		out[k] = v
	}
	return out
}

// StepRecurrent is Step for a block whose self-attention is recurrent (random features,
// layers.KernelAttention.AttendRecurrent): state summarises the earlier positions (nil at
// the start) in place of their keys and values. It returns the new states and the
// self-attention's state after the new tokens.
func (b *DecoderBlock) StepRecurrent(g *autodiff.Graph, x, state, memK, memV *autodiff.Node, rot *layers.RotaryAngles) (y, next *autodiff.Node) {
	self := func(h *autodiff.Node) *autodiff.Node {
		var out *autodiff.Node
		out, next = b.Attn.AttendRecurrent(g, h, state, rot)
		return out
	}
	cross := func(h *autodiff.Node) *autodiff.Node {
		return b.XAttn.AttendKV(g, h, memK, memV, layers.AttendOptions{})
	}
	ffn := func(h *autodiff.Node) *autodiff.Node { return b.FFN.Forward(g, h) }
	y = layers.Residual(g, x, b.LN1, b.PostLN, b.Dropout, self)
	y = layers.Residual(g, y, b.LNX, b.PostLN, b.Dropout, cross)
	y = layers.Residual(g, y, b.LN2, b.PostLN, b.Dropout, ffn)
	return y, next
}
