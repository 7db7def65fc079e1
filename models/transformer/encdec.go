package transformer

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
)

// newEncDec creates the encoder (enc.blocks.N, enc.ln_f) and the decoder (dec.blocks.N)
// of an encdec model.
func (m *Model) newEncDec(root autodiff.Scope, blockCfg func(causal bool) layers.BlockConfig) error {
	var err error
	for i := range m.Config.Layers {
		b, err := layers.NewBlock(root.Subf("enc.blocks.%d", i), blockCfg(false))
		if err != nil {
			return err
		}
		m.EncBlocks = append(m.EncBlocks, b)
	}
	if m.EncLNF, err = layers.NewLayerNorm(root.Sub("enc.ln_f"), layers.NormConfig{Dim: m.Config.Dim, NoBias: m.Config.NoBias}); err != nil {
		return err
	}
	for i := range m.Config.Layers {
		b, err := NewDecoderBlock(root.Subf("dec.blocks.%d", i), blockCfg(true))
		if err != nil {
			return err
		}
		m.DecBlocks = append(m.DecBlocks, b)
	}
	return nil
}

// checkIDs validates an int id input [B, T] with T <= MaxLen.
func (m *Model) checkIDs(g *autodiff.Graph, what string, ids *autodiff.Node) bool {
	if g.Err() != nil {
		return false
	}
	if s := ids.Shape(); len(s) != 2 || s[1] > m.Config.MaxLen {
		g.Fail(fmt.Errorf("transformer: %s %v, want [B, T] with T <= %d", what, s, m.Config.MaxLen))
		return false
	}
	return true
}

// Encode returns the encoder output [B, Ts, Dim] of an encdec model for source ids
// src [B, Ts] (an int tensor): the bidirectional blocks, then enc.ln_f.
func (m *Model) Encode(g *autodiff.Graph, src *autodiff.Node) *autodiff.Node {
	if m.Config.Arch != ArchEncDec {
		return g.Fail(fmt.Errorf("transformer: Encode needs an encdec model, not %s", m.Config.Arch))
	}
	if !m.checkIDs(g, "source ids", src) {
		return nil
	}
	x := m.embed(g, src, 0)
	for _, b := range m.EncBlocks {
		x = b.Forward(g, x)
	}
	return m.EncLNF.Forward(g, x)
}

// EncDecLogits returns the decoder's logits [B·T, Vocab] of an encdec model for source
// ids src [B, Ts] and decoder input ids [B, T] (teacher forcing: ids are the target
// sequence shifted right behind a start token), row b·T+t predicting target t of
// sequence b.
func (m *Model) EncDecLogits(g *autodiff.Graph, src, ids *autodiff.Node) *autodiff.Node {
	mem := m.Encode(g, src)
	if !m.checkIDs(g, "ids", ids) {
		return nil
	}
	if ss, is := src.Shape(), ids.Shape(); ss[0] != is[0] {
		return g.Fail(fmt.Errorf("transformer: source ids %v and ids %v have different batch sizes", ss, is))
	}
	x := m.embed(g, ids, 0)
	for _, b := range m.DecBlocks {
		x = b.Forward(g, x, mem)
	}
	return m.head(g, x)
}
