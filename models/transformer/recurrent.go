package transformer

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
)

// Recurrent decoding (random features): a causal LM or encdec decoder whose attention
// runs on random features (Config.RandomFeatures > 0) decodes with each layer's recurrent
// state S = Σ φ(k_s)[v_s, 1]ᵀ, [Heads, m, DHead+1] per sequence
// (layers.KernelAttention.AttendRecurrent), instead of a key/value cache: the memory per
// generated token is constant. The step graph takes the new tokens' positions as data
// (InputPositions, or InputRotaryCos and InputRotarySin), so one compiled graph serves
// every position.
//
// Past MaxLen: with learned or sinusoidal positions (absolute, trained on 0..MaxLen−1) a
// state cannot forget its oldest tokens, so, as for the key/value cache, the context is
// the last MaxLen tokens and each step re-primes the state from that window (the same
// tokens as the uncached Generate, O(MaxLen) per token). With rotary positions or none
// nothing bounds the position, and the state runs on over every token so far: the
// context is the whole sequence, constant time and memory per token (positions beyond
// MaxLen were never trained on).

// CacheState names layer l's recurrent state [B·Heads, m, DHead+1] in
// RecurrentStepBuilder's graphs: an input (the earlier tokens) and an output (after the
// new ones).
func CacheState(l int) string { return fmt.Sprintf("cache.s.%d", l) }

// Inputs of RecurrentStepBuilder's graphs besides InputIDs and the states.
const (
	// InputPositions is the new tokens' positions [Tn] (int), learned and sinusoidal
	// positions only.
	InputPositions = "positions"
	// InputRotaryCos and InputRotarySin are the new tokens' rotary factors
	// [B·Heads, Tn, DHead] (layers.RotaryTables), rotary positions only.
	InputRotaryCos = "rotary.cos"
	InputRotarySin = "rotary.sin"
)

// Recurrent reports whether the model decodes with a constant-size recurrent state
// (RecurrentStepBuilder): a causal LM or encdec model on random features.
func (m *Model) Recurrent() bool {
	return m.Config.Arch.Decodes() && m.Config.RandomFeatures > 0
}

// boundedContext reports whether decoding must keep to the last MaxLen tokens: with a
// key/value cache always, with a recurrent state unless the positions are rotary or
// none (nothing absolute bounds the position).
func (m *Model) boundedContext() bool {
	return !m.Recurrent() || (m.Config.Positions != layers.PositionsRotary && m.Config.Positions != layers.PositionsNone)
}

// RecurrentStepBuilder returns the decode-step graph of a Recurrent model. Inputs:
// InputIDs [B, Tn], the new tokens; their positions (InputPositions [Tn] for learned
// and sinusoidal positions, all below MaxLen; InputRotaryCos and InputRotarySin for
// rotary ones); CacheState(l) for each decoder layer, omitted at the first step; for
// encdec also CrossKeys(l) and CrossValues(l). Outputs: OutputLogits [B, Vocab] after
// the last new token and CacheState(l) after all of them.
func (m *Model) RecurrentStepBuilder() autodiff.Builder {
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		cfg := m.Config
		if !m.Recurrent() {
			return autodiff.Outputs{}, fmt.Errorf("transformer: recurrent step: needs a causal LM or encdec model with random features (arch %s, random features %d)", cfg.Arch, cfg.RandomFeatures)
		}
		ids := g.Input(InputIDs)
		if g.Err() != nil {
			return autodiff.Outputs{}, g.Err()
		}
		s := ids.Shape()
		if len(s) != 2 {
			return autodiff.Outputs{}, fmt.Errorf("transformer: recurrent step: ids %v, want [B, Tn]", s)
		}
		tn := s[1]
		x := m.TokEmb.Forward(g, ids)
		var rot *layers.RotaryAngles
		switch cfg.Positions {
		case layers.PositionsLearned:
			x = m.PosEmb.ForwardAt(g, x, g.Input(InputPositions))
		case layers.PositionsSinusoidal:
			x = layers.AddSinusoidalAt(g, x, g.Input(InputPositions), cfg.MaxLen)
		case layers.PositionsRotary:
			rot = &layers.RotaryAngles{Cos: g.Input(InputRotaryCos), Sin: g.Input(InputRotarySin)}
		}
		if cfg.Dropout > 0 {
			x = g.Dropout(x, cfg.Dropout)
		}
		state := func(l int) *autodiff.Node {
			if !g.HasInput(CacheState(l)) {
				return nil
			}
			return g.Input(CacheState(l))
		}
		out := autodiff.Outputs{Values: map[string]*autodiff.Node{}}
		var next *autodiff.Node
		if cfg.Arch == ArchEncDec {
			for l, blk := range m.DecBlocks {
				x, next = blk.StepRecurrent(g, x, state(l), g.Input(CrossKeys(l)), g.Input(CrossValues(l)), rot)
				out.Values[CacheState(l)] = next
			}
		} else {
			for l, blk := range m.Blocks {
				x, next = blk.StepRecurrent(g, x, state(l), rot)
				out.Values[CacheState(l)] = next
			}
		}
		if g.Err() != nil {
			return autodiff.Outputs{}, g.Err()
		}
		out.Values[OutputLogits] = m.head(g, g.Slice(x, 1, tn-1, tn))
		return out, g.Err()
	}
}
