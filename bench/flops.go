package bench

import "github.com/locusml/locus/models/transformer"

// The FLOP counts below are those of nanoGPT's estimate_mfu (PaLM, appendix B): the
// matrix products only, each multiply–add two operations, a train step's backward pass
// twice its forward pass (the gradients of the inputs and of the weights). Embedding
// lookups, biases, LayerNorm, GELU, softmax and the optimizer are left out: they are
// O(parameters + tokens·d) against the products' O(parameters·tokens), a few per cent at
// the sizes people train. They are what `locus bench` prints as FLOP per step and
// GFLOP/s, so that a step time reads as a fraction of the machine's FMA peak.

// MatmulWeights returns the number of weights of the LM cfg that multiply activations:
// per block the attention's four d×d maps (queries, keys, values, output) and the
// feed-forward's d×d_ff and d_ff×d, and the head's d×V (the token embedding itself when
// the head is tied). The embeddings are lookups, not products.
func MatmulWeights(cfg transformer.Config) float64 {
	d, f := float64(cfg.Dim), float64(cfg.FFNWidth())
	return float64(cfg.Layers)*(4*d*d+2*d*f) + d*float64(cfg.Vocab)
}

// LMTrainFLOPs returns the FLOPs of one train step of the causal LM cfg on batch
// sequences of seqLen tokens:
//
//	6·N·B·T + 12·L·T²·d·B
//
// with N = MatmulWeights(cfg): each weight does one multiply–add per token forward
// (2 FLOPs) and two backward (4), and per layer and sequence the attention's scores
// QKᵀ and weighted sums PV are T²·d multiply–adds each forward (4·T²·d FLOPs, ×3 with
// the backward). The attention is counted dense, over all T² query–key pairs, as
// nanoGPT does; a causal kernel needs about half of them.
func LMTrainFLOPs(cfg transformer.Config, batch, seqLen int) float64 {
	b, t := float64(batch), float64(seqLen)
	return 6*MatmulWeights(cfg)*b*t + 12*float64(cfg.Layers)*t*t*float64(cfg.Dim)*b
}

// LMGenerateFLOPs returns the FLOPs of decoding n tokens, one at a time, from a one-token
// prompt with a key/value cache: the token at context length c (1 ≤ c ≤ n, keys in the
// cache plus its own) costs 2·N for the products with the weights and 4·L·c·d for its
// scores and weighted sum over c keys. It counts the keys that are attended, not the
// cache's capacity, and past MaxLen a context of MaxLen keys: the work a window sliding
// in place needs, not the recomputation of the window that absolute positions force.
func LMGenerateFLOPs(cfg transformer.Config, n int) float64 {
	var f float64
	for c := 1; c <= n; c++ {
		ctx := float64(min(c, cfg.MaxLen))
		f += 2*MatmulWeights(cfg) + 4*float64(cfg.Layers)*ctx*float64(cfg.Dim)
	}
	return f
}

// AttnFLOPs returns the FLOPs of the attn workload's forward and backward pass (with the
// input's gradient) of multi-head attention of width d on batch sequences of seqLen:
// 24·B·T·d² for the four d×d maps and 12·B·T²·d for the scores and weighted sums.
func AttnFLOPs(d, batch, seqLen int) float64 {
	b, t, dd := float64(batch), float64(seqLen), float64(d)
	return 24*b*t*dd*dd + 12*b*t*t*dd
}

// MLPTrainFLOPs returns the FLOPs of a train step of an MLP of the given layer widths
// (in, hidden..., out) on a batch: 6 per weight per example.
func MLPTrainFLOPs(widths []int, batch int) float64 {
	var n float64
	for i := 1; i < len(widths); i++ {
		n += float64(widths[i-1]) * float64(widths[i])
	}
	return 6 * n * float64(batch)
}
