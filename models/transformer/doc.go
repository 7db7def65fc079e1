// Package transformer is a Transformer built from layers/ as a hierarchical local model
// (docs/THEORY.md §5): attention is a local mean under a learned kernel, and with the
// exponential kernel at the fixed bandwidth √d_head it computes PyTorch's reference LM
// (testdata/torch_logits.py and TestTorchLogits check the logits).
//
// Config.Arch chooses the architecture: "encoder" (bidirectional, one prediction per
// position), "lm" (causal language model) or "encdec" (an encoder over a source sequence
// and a causal decoder whose DecoderBlocks cross-attend to it). Model.Builder gives the
// training graph; its inputs are InputIDs, InputTargets and, for encdec, InputSource.
//
// Generation: Generate and GenerateFromSource recompute the whole context at every step;
// a Generator decodes the same tokens with a key/value cache: Model.StepBuilder's graph
// runs the prompt (and the window recomputed once the context slides past MaxLen), and
// Model.WindowStepBuilder's runs each new token over a cache of fixed capacity (15, 31,
// ..., MaxLen−1 positions), so that the cache's memory is bounded and one compiled graph
// serves every token that fits a capacity (for encdec, the source is encoded once with
// Model.EncoderBuilder).
package transformer
