package transformer

import (
	"math"

	"github.com/locusml/locus/layers"
)

// The memory estimates below are lower bounds in bytes, for float32 values: they count
// only the largest tensors, so that a run they refuse (train.CheckMemory) could not
// have fit, and a run that fits is never refused.

// ParamEstimate returns a lower bound on the number of parameters of a model of c: the
// embeddings, the head, and per block the attention projections (4·d²) and the
// feed-forward maps (2·d·d_ff), twice for encdec.
func (c Config) ParamEstimate() uint64 {
	d, h := float64(c.Dim), float64(c.FFNWidth())
	blocks := float64(c.Layers)
	if c.Arch == ArchEncDec {
		blocks *= 2
	}
	n := float64(c.Vocab)*d + blocks*(4*d*d+2*d*h)
	if c.Positions == layers.PositionsLearned {
		n += float64(c.MaxLen) * d
	}
	if !c.Tied {
		n += float64(c.Vocab) * d
	}
	return saturate(n)
}

// MemoryEstimate returns a lower bound on the bytes a training step of a batch of rows
// of seqLen tokens needs: the parameters with their gradients and Adam's two moments
// (4 copies), and the activations kept for the backward pass: per block the residual
// stream, queries, keys, values and feed-forward hidden units (B·T·(6d + d_ff)), the
// attention weights (B·heads·T²; the scores are never kept, and the buffer plan of
// autodiff shares every other buffer over time), and the logits with their softmax
// (2·B·T·vocab).
func (c Config) MemoryEstimate(batch, seqLen int) uint64 {
	b, t := float64(batch), float64(seqLen)
	d, h := float64(c.Dim), float64(c.FFNWidth())
	blocks := float64(c.Layers)
	if c.Arch == ArchEncDec {
		blocks *= 2
	}
	act := blocks*(b*t*(6*d+h)+b*float64(c.Heads)*t*t) + 2*b*t*float64(c.Vocab)
	return saturate(4 * (4*float64(c.ParamEstimate()) + act))
}

// saturate converts a non-negative count to uint64, capping it instead of overflowing.
func saturate(x float64) uint64 {
	if !(x < math.MaxUint64/2) {
		return math.MaxUint64 / 2
	}
	return uint64(x)
}
