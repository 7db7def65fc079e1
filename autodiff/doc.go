// Package autodiff is Locus's engine: a safe layer over gorgonia that builds
// differentiable graphs, runs them, and adds gradients into named parameters. Everything
// above it (layers, optim, train, the models) is written against this package, never
// against gorgonia directly.
//
// # Parameters
//
// Params is a registry of trainable tensors with hierarchical names, created through
// scopes: ps.Scope("blocks").Sub("0").New("weight", shape, init) makes
// "blocks.0.weight". The names are the keys of checkpoints and follow PyTorch's module
// tree. Initialisers (Zeros, Constant, Normal, Uniform, XavierUniform, KaimingNormal,
// TorchLinear, ...) draw from the registry's seeded generator, so a seed fixes every
// initial value.
//
// # Graphs
//
// A Builder adds a model's computation to a Graph: g.Input(name) and g.Param(p) are its
// leaves, and Graph methods (MatMul, Linear, LocalMean, Attention, LayerNorm,
// CrossEntropy, ...) its operations. A Graph keeps the first error (a shape or dtype
// mismatch, naming the op and the shapes) and returns nil from every later call, so a
// builder checks g.Err() once; Graph methods never panic on bad input.
//
// # Running
//
// Model compiles one gorgonia machine per input signature (names, shapes, dtypes, train
// or eval), so a last short batch or another sequence length just works. Forward
// evaluates; ForwardBackward also adds the gradient of the loss into each Param's Grad
// (they accumulate until Params.ZeroGrad, which makes gradient accumulation free).
// Results are copied out of the machine and belong to the Model until its next run
// with the same input signature.
//
// A builder whose examples are independent says so in Outputs.Batch (the number of
// examples, and what the loss is a mean or a sum over); Model then runs a batch as
// parts on all cores at once (batch-sharded execution, Model.SetShards): one graph per
// part on its own goroutine, its operations serial, the parts' losses, gradients and
// outputs combined exactly, in a fixed order. This saves the synchronisation of
// splitting each of a step's hundreds of small operations across the cores.
// CompareShards checks a declaration against the whole batch.
//
// # Shapes and dtypes
//
// Tensors are gorgonia's row-major *tensor.Dense. A model has one float dtype, that of
// its Params: Float32 for training, Float64 for gradient checks, whose finite
// differences need the precision. Float inputs must have it too; class targets are
// tensor.Int. FromRows and FromSlice build inputs from Go slices. Sequences are batch first, [B, T, d]; attention splits d into heads as
// PyTorch does, LocalMean's scores are [B, H, Tq, Tk] (or [N, Tq, Tk]) and a key mask is
// a float [B, Tk] whose zeros mark padding. Softmax, LayerNorm, RMSNorm and CrossEntropy (logits
// [N, C]) work along the last axis.
//
// # Fused ops and their gradients
//
// The ops a localization model spends its time in are fused, with hand-written
// gradients: the local mean (scores, mask and values to the kernel-weighted mean, with
// ∂m/∂s = w(v − m)), scaled dot-product attention, masked softmax and log-softmax,
// LayerNorm, RMSNorm, GELU, cross-entropy, MSE, dropout. Masks (causal, window, key
// padding, hollow) are part of the ops, and LocalMean and Attention share one masked
// normalisation: a query that sees no key gets a zero output and a zero gradient, never
// NaN (docs/THEORY.md §2), a score of −Inf weighs exactly 0, logits of 1e4 are stable,
// and a NaN score shows as NaN in its query's output instead of passing unnoticed.
//
// TiledLocalMean is the local mean for long sequences (THEORY.md §8): it takes queries,
// keys and values and a PairKernel instead of scores, walks the keys in tiles with an
// online normaliser and recomputes the weights in the backward pass, so its memory is
// O(T) where LocalMean's is O(T²), under the same edge-case rules. KernelAttention is the
// same function with Attention's loop: per block of queries one product with the visible
// keys, the kernel's log-scores evaluated in place, the masked normalisation that
// LocalMean and Attention share, and one product with the values, keeping the weights
// for the backward pass (the faster choice at short and moderate lengths). In float32 it
// takes a kernel's float32 rows where the kernel has them (PairKernel32, and
// DirectPairKernel32, DistancePairKernel32, LinearPairKernel32, MixturePairKernel32): the
// pair terms formed once and kept, scores, values and gradients in place on vector loops;
// Scale32, ScaleDot32, Recip1p32 and RatioGrad32 are such loops for kernels that
// implement them.
//
// CheckGradients compares every gradient with central finite differences in float64;
// Locus trains in float32.
//
// # Memory
//
// A compiled graph's fused ops share one arena by a buffer plan: each value lives from
// the op that writes it to the last op that reads it, a backward op reads only the
// forward values its kernel needs (a linear map's gradients never read its output), and
// values never live at once share memory. A training step then holds about what the
// backward pass needs at its start, the activations, instead of one buffer per value:
// 0.44 of that at the baby GPT's size, and the process below half of PyTorch's peak RSS.
//
// # Looking inside: taps
//
// A graph built with RunMode.Taps has extra outputs that layers add with Graph.Tap, and
// Model.Run returns them in Result.Taps; other graphs have none and pay nothing.
// Graph.LocalMeanWeights exposes the normalised weights a LocalMean, Attention or KernelAttention op used in
// the same run (a copy of the op's own weights, not a recomputation) and which keys its
// masks let each query see.
//
// # gorgonia's bugs
//
// gorgonia's SoftMax, LogSoftMax, InverseSqrt gradient, LogSumExp, Dropout, AdamW and
// WithClip are wrong, and its machines recompute nothing without a Reset and accumulate
// bound gradients across runs; this package owns the replacements and the workarounds,
// and known_issues_test.go pins each upstream bug so that an upgrade that fixes or
// changes one is noticed.
package autodiff
