// Package train trains autodiff models: a training Loop with evaluation, logging,
// progress output, early stopping and resumable checkpoints, and the checkpoint and
// safetensors I/O that programs build on.
//
// # The loop
//
// A Loop draws Batches from a Data, runs Model.ForwardBackward, steps the Optimizer and,
// on schedule, evaluates, records metrics, checkpoints and calls Hooks:
//
//	loop := &train.Loop{
//		Model: model, Optimizer: opt, Data: data, Eval: validate,
//		Steps: 5000, EvalEvery: 250, CheckpointEvery: 500, KeepLast: 3,
//		Best: "val_loss", Patience: 10, Dir: "runs/copy", Out: os.Stderr,
//	}
//	if resume {
//		if err := loop.Resume(loop.Dir); err != nil { ... }
//	}
//	summary, err := loop.Run(ctx) // ctx from signal.NotifyContext: Ctrl-C saves a checkpoint
//
// Data is any batch source whose position can be saved as JSON and restored; NewData
// builds one from three functions, e.g. over a datasets.Stream or datasets.Iterator.
// Steps counts completed steps from 1, across resumes. A resumed run continues
// bit-identically: same batches, same dropout masks, same optimizer moments, same
// weights and losses as a run that was never stopped.
//
// # The run directory
//
//	runs/copy/
//		step-000500/           a checkpoint (see below); the last KeepLast are kept
//		step-001000/
//		best/                  the checkpoint with the best value of Loop.Best
//		LATEST                 "step-001000": the latest checkpoint
//		metrics.jsonl          one Record per line: {"step":250,"loss":0.41,"lr":0.0003,
//		                       "grad_norm":0.52,"items_per_s":1.2e4,"val_loss":0.44,...},
//		                       and at evaluations what Loop.Observe measures, e.g.
//		                       "bandwidth.blocks.0.attn.head1":3.9
//		loss.png               training and validation loss against the step (PlotLoss)
//		bandwidths.png         the bandwidth.* metrics against the step, when recorded
//		LOCK                   while a Loop runs: its pid (an flock, released when it dies)
//		LOCUS-RUN              marks a run directory (RunFile): Run writes into no other
//		                       folder that holds files
//
// Every file of a run directory is written as a regular file and never through a
// symbolic link: a LOCK, LATEST, metrics.jsonl, plot or
// checkpoint that is a link, a FIFO or a device is refused with an error naming it, and
// what it points to is left untouched.
//
// # Checkpoints
//
// A checkpoint is a directory of three files: ModelFile (the parameters in safetensors
// format, under their parameter names and in their dtype), OptimizerFile (the optimizer's
// State tensors) and MetaFile (JSON: the step, the model and data configurations, the
// model's RNG state, the data position, the metrics of its step (the history is
// MetricsFile, which Resume reads), the versions of the format,
// Locus and Go, and the size and SHA-256 of the tensor files). SaveCheckpoint writes it
// atomically: files are written and synced in a temporary directory that is then renamed,
// and LATEST is replaced by renaming a synced temporary file, so a crash never leaves a
// partial checkpoint where one is loaded. LoadCheckpoint accepts a run directory or a
// checkpoint directory and reports a truncated or corrupted file, a checkpoint of another
// model or a shape mismatch with the file, the tensor and the shapes.
//
// # Data parallelism
//
// A Loop with a Reducer of more than one process (dist.Comm under mpirun) is one process
// of a data-parallel run: every process draws the same global batch from Data, takes its
// contiguous part of it (Data must be a Splitter, which also says what the part's loss is
// a mean over) and the Reducer averages the gradients weighed by those counts, so every
// process takes the step that one process would take on the whole batch. Rank 0 alone
// writes Dir and Out; a checksum of the parameters every LogEvery steps stops all
// processes with ErrOutOfSync if they disagree; a cancelled context on any process stops
// all of them after the same step (rank 0 saves the checkpoint).
//
// ExportSafetensors and ReadSafetensors read and write plain safetensors files (F32, F64
// and I64), for weights shared with other tools.
package train
