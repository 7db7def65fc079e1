package transformer

import (
	"fmt"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
)

// Evaluating at another length (length generalisation, "train short, test long"): a
// model trained on rows of SeqLen tokens is evaluated on rows of t tokens by
// Model.AtLength and Data.AtLength (locus eval -seqlen).
//
// Which positions a model can take: sinusoidal and rotary positions are functions
// defined at every position, and no positions (PositionsNone) are none at all, so such
// a model runs at any length; positions past the training length were never trained on,
// and how well the model does there is what the evaluation measures. Learned positions
// have a table of MaxLen rows: a longer row is refused (a learned table is not extended
// or silently cut). Every kernel's position factors are functions of the distance s − t
// alone and so are defined at any length: window(W) and distance(S) as they are,
// relbias(M) with distances beyond ±M clamped to the bias of ±M (the last trained bias
// holds for every longer distance, as in Shaw et al. and T5).

// AtLength returns the model for rows of up to t tokens (for an encoder–decoder, sources
// and targets each): the same parameters and layers, with Config.MaxLen raised to t where
// it is shorter. MaxLen only bounds the rows, so the model computes the same function of
// a row as the original does of any row both take. It refuses t past a learned position
// table (MaxLen rows) and t outside 1..MaxLen (the package's limit).
func (m *Model) AtLength(t int) (*Model, error) {
	switch {
	case t <= 0 || t > MaxLen:
		return nil, fmt.Errorf("transformer: length %d, want 1 to %d", t, MaxLen)
	case t <= m.Config.MaxLen:
		return m, nil
	case m.Config.Positions == layers.PositionsLearned:
		return nil, datasets.LengthErrorf("transformer: learned positions: rows of %d tokens, but the position table has %d (max_len); sinusoidal, rotary and no positions (none) run at any length", t, m.Config.MaxLen)
	}
	out := *m
	out.Config.MaxLen = t
	return &out, nil
}

// AtLength returns the data posed at length t for evaluation (Metrics): t means what
// the data's own length means, DataConfig.SeqLen for a corpus and TaskConfig.SeqLen for
// a toy task (locus train -seqlen), and the model's rows are then SeqLen() tokens.
//
// A corpus gives validation windows of t tokens from the same split; a batch holds about
// as many tokens as a training batch (Batch·SeqLen/t windows, at least 1, at most Batch),
// so that Metrics's n windows are evaluated in batches whose attention fits in memory at
// any t. A toy task is regenerated at length t by datasets.TaskConfigAtLength's rule
// (addition takes the digits that make t, modular and recall keep their own length).
// Check then tells whether a model (Model.AtLength) fits the data at t.
func (d *Data) AtLength(t int) (*Data, error) {
	out := *d
	if d.Corpus != nil {
		if t <= 0 || t > MaxLen {
			return nil, fmt.Errorf("data: windows of %d tokens, want 1 to %d", t, MaxLen)
		}
		if n := len(d.Corpus.Val); n <= t {
			return nil, datasets.LengthErrorf("the corpus's validation split has %d tokens, too few for one window of %d + 1", n, t)
		}
		out.Config.SeqLen = t
		out.Config.Batch = min(d.Config.Batch, max(1, d.Config.Batch*d.Config.SeqLen/t))
		return &out, nil
	}
	cfg, err := datasets.TaskConfigAtLength(d.Config.Task, d.Config.TaskConfig, t)
	if err != nil {
		return nil, err
	}
	if out.Task, err = datasets.TaskByName(d.Config.Task, cfg); err != nil {
		return nil, err
	}
	out.Config.TaskConfig = cfg
	return &out, nil
}
