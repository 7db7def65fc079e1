package transformer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/train"
)

// Family is the name under which checkpoints of Transformers are rebuilt (train.Load).
const Family = "transformer"

func init() { train.RegisterConfigFamily(Family, New) }

// ParseConfig reads a Config from its JSON, refusing unknown fields, and validates it.
func ParseConfig(raw json.RawMessage) (Config, error) {
	return train.ParseConfig[Config]("transformer", raw)
}

// CharLM is the DataConfig.Task of a character language model over a text corpus.
const CharLM = "charlm"

// Size limits of DataConfig.Validate.
const (
	MaxBatch  = 1 << 16
	MaxCorpus = 1 << 30
)

// DataConfig describes the data a Transformer is trained and evaluated on, saved with its
// checkpoints: a toy task (any task registered with datasets.RegisterTask, user tasks
// included) or a character corpus (Task CharLM).
type DataConfig struct {
	Task       string              `json:"task"`
	TaskConfig datasets.TaskConfig `json:"task_config"`
	Layout     datasets.Layout     `json:"layout"`              // toy tasks: aligned (encoder, encdec) or causal (lm)
	Corpus     string              `json:"corpus,omitempty"`    // charlm: the text file or folder; "" is the Go source
	MaxBytes   int64               `json:"max_bytes,omitempty"` // charlm: read at most this much text
	Vocab      string              `json:"vocab,omitempty"`     // charlm: the vocabulary, filled in by Open
	// CorpusSHA256 is the digest of the corpus's token ids (charlm), filled in by Open:
	// a checkpoint whose corpus path now names other text is refused.
	CorpusSHA256 string `json:"corpus_sha256,omitempty"`
	SeqLen       int    `json:"seq_len"` // charlm: the window length
	Batch        int    `json:"batch"`
	Seed         uint64 `json:"seed"`

	// ValFraction (charlm) > 0 holds out the last ValFraction of the text for
	// validation, contiguous, as nanoGPT's prepare.py (0.1: the first 90 % trains);
	// 0, the default and the split of checkpoints without the key, holds out every
	// tenth 64 KiB block (datasets.CorpusConfig).
	ValFraction float64 `json:"val_fraction,omitempty"`
}

// Validate reports the first invalid field.
func (d DataConfig) Validate() error {
	switch {
	case d.Task == "":
		return fmt.Errorf("data config: no task")
	case d.Batch <= 0 || d.Batch > MaxBatch:
		return fmt.Errorf("data config: batch %d, want 1 to %d", d.Batch, MaxBatch)
	case d.Task == CharLM && (d.SeqLen <= 0 || d.SeqLen > MaxLen):
		return fmt.Errorf("data config: seq_len %d, want 1 to %d", d.SeqLen, MaxLen)
	case d.MaxBytes < 0 || d.MaxBytes > MaxCorpus:
		return fmt.Errorf("data config: max_bytes %d, want 0 to %d", d.MaxBytes, MaxCorpus)
	case !(d.ValFraction >= 0 && d.ValFraction < 1):
		return fmt.Errorf("data config: val_fraction %g, want a fraction in (0, 1) (or 0: every tenth 64 KiB block)", d.ValFraction)
	case d.ValFraction != 0 && d.Task != CharLM:
		return fmt.Errorf("data config: val_fraction %g is for task %s, not %s", d.ValFraction, CharLM, d.Task)
	case d.Task != CharLM && (d.SeqLen != 0 || d.Corpus != "" || d.MaxBytes != 0 || d.Vocab != "" || d.CorpusSHA256 != ""):
		// A toy task would ignore them: a hand-edited seq_len of -1 must not pass.
		return fmt.Errorf("data config: seq_len, corpus, max_bytes, vocab and corpus_sha256 are for task %s (task %s has its length in task_config.seq_len), want them 0 or empty", CharLM, quote.Text(d.Task))
	}
	return nil
}

// Data is an opened DataConfig: the task, or the corpus.
type Data struct {
	Config DataConfig
	Task   datasets.Task    // nil for a corpus
	Corpus *datasets.Corpus // nil for a toy task
}

// Open builds the task or reads the corpus of d; for a new corpus it records the
// vocabulary in the returned Data's Config.
func (d DataConfig) Open() (*Data, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	out := &Data{Config: d}
	if d.Task != CharLM {
		t, err := datasets.TaskByName(d.Task, d.TaskConfig)
		if err != nil {
			return nil, err
		}
		out.Task = t
		return out, nil
	}
	cfg := datasets.CorpusConfig{MaxBytes: d.MaxBytes, ValFraction: d.ValFraction, TailSplit: d.ValFraction > 0}
	if d.Vocab != "" {
		v, err := datasets.VocabFromString(d.Vocab)
		if err != nil {
			return nil, fmt.Errorf("data config: vocabulary: %w", err)
		}
		cfg.Vocab = v
	}
	var err error
	if d.Corpus == "" {
		out.Corpus, err = datasets.GoSourceCorpus(cfg)
	} else {
		out.Corpus, err = datasets.LoadCorpus(d.Corpus, cfg)
	}
	if err != nil {
		return nil, err
	}
	sum := corpusDigest(out.Corpus)
	if d.CorpusSHA256 != "" && d.CorpusSHA256 != sum {
		name := d.Corpus
		if name == "" {
			name = "the Go source corpus"
		}
		return nil, fmt.Errorf("data config: corpus %s is not the text this run was trained on (token digest %.12s, the checkpoint records %.12s)", name, sum, d.CorpusSHA256)
	}
	out.Config.Vocab, out.Config.CorpusSHA256 = out.Corpus.Vocab.String(), sum
	return out, nil
}

// corpusDigest returns the SHA-256 of a corpus's token ids (training then validation
// split, 4 bytes each, little-endian), in hex.
func corpusDigest(c *datasets.Corpus) string {
	h := sha256.New()
	buf := make([]byte, 0, 4096)
	for _, ids := range [][]uint16{c.Train, c.Val} {
		for _, id := range ids {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(id))
			if len(buf) == cap(buf) {
				h.Write(buf)
				buf = buf[:0]
			}
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// Vocab returns the number of symbols of the data (for an encdec model the decoder's
// start token comes on top).
func (d *Data) Vocab() int {
	if d.Corpus != nil {
		return d.Corpus.Vocab.Size()
	}
	return d.Task.Vocab()
}

// SeqLen returns the length of a model input row.
func (d *Data) SeqLen() int {
	if d.Corpus != nil {
		return d.Config.SeqLen
	}
	return d.Config.Layout.RowLen(d.Task)
}

// ModelVocab returns the vocabulary size a model of arch needs for this data.
func (d *Data) ModelVocab(arch Arch) int {
	if arch == ArchEncDec {
		return d.Vocab() + 1 // the decoder's start token
	}
	return d.Vocab()
}

// Check reports whether a model with configuration cfg fits the data: the vocabulary,
// the row length, a corpus long enough for one window in each split, and the memory a
// training step needs (Config.MemoryEstimate, train.CheckMemory).
func (d *Data) Check(cfg Config) error {
	if want := d.ModelVocab(cfg.Arch); cfg.Vocab != want {
		return fmt.Errorf("model vocab %d does not match the data's %d (task %s)", cfg.Vocab, want, d.Config.Task)
	}
	if d.SeqLen() > cfg.MaxLen {
		return fmt.Errorf("data rows of %d tokens exceed the model's max_len %d", d.SeqLen(), cfg.MaxLen)
	}
	if d.Corpus != nil && cfg.Arch != ArchLM {
		return fmt.Errorf("a text corpus needs arch lm, not %s", cfg.Arch)
	}
	if d.Task != nil && (cfg.Arch == ArchLM) != (d.Config.Layout == datasets.Causal) {
		return fmt.Errorf("arch %s with layout %s: lm goes with causal, encoder and encdec with aligned", cfg.Arch, d.Config.Layout)
	}
	if d.Corpus != nil {
		// A window is SeqLen+1 tokens (inputs and next-token targets).
		for _, s := range []struct {
			name string
			n    int
		}{{"training", len(d.Corpus.Train)}, {"validation", len(d.Corpus.Val)}} {
			if s.n <= d.Config.SeqLen {
				return fmt.Errorf("the corpus's %s split has %d tokens, too few for one window of seq_len %d + 1 (use a longer text or a shorter -seqlen)", s.name, s.n, d.Config.SeqLen)
			}
		}
	}
	return train.CheckMemory(fmt.Sprintf("training (batch %d of %d tokens, dim %d, %d layers, %d heads)", d.Config.Batch, d.SeqLen(), cfg.Dim, cfg.Layers, cfg.Heads),
		cfg.MemoryEstimate(d.Config.Batch, d.SeqLen()))
}

// Train returns the training batches for a model of arch, batch Config.Batch, drawn
// from seed.
func (d *Data) Train(arch Arch, seed uint64) (train.Data, error) {
	var stream *datasets.Stream
	var err error
	if d.Corpus != nil {
		stream, err = datasets.NewCorpusStream(d.Corpus, datasets.Train, d.Config.Batch, d.Config.SeqLen, seed)
	} else {
		stream, err = datasets.NewTaskStream(d.Task, d.Config.Layout, d.Config.Batch, seed)
	}
	if err != nil {
		return nil, err
	}
	if arch == ArchEncDec {
		return &EncDecData{Stream: stream, BOS: d.Task.Vocab()}, nil
	}
	return &StreamData{Stream: stream, Tokens: d.Corpus != nil}, nil
}

// ItemsName names what Train's batches count: tokens for a corpus, samples for a task.
func (d *Data) ItemsName() string {
	if d.Corpus != nil {
		return "tokens"
	}
	return "samples"
}

// Estimate evaluates the character LM run by m as nanoGPT does (CorpusEstimate):
// train_loss and loss, each the mean of iters batches of Config.Batch windows of the
// training or validation split, drawn with seed. It is for a corpus only.
func (d *Data) Estimate(ctx context.Context, m *autodiff.Model, iters int, seed uint64) (train.Metrics, error) {
	if d.Corpus == nil {
		return nil, fmt.Errorf("an estimate of the training and validation loss is for task %s, not %s", CharLM, d.Config.Task)
	}
	return CorpusEstimate(ctx, m, d.Corpus, iters, d.Config.Batch, d.Config.SeqLen, seed)
}

// Metrics evaluates the model run by m (of arch) on n fresh validation examples
// (windows of a corpus) drawn with seed.
func (d *Data) Metrics(ctx context.Context, m *autodiff.Model, arch Arch, n int, seed uint64) (train.Metrics, error) {
	switch {
	case d.Corpus != nil:
		return CorpusMetrics(ctx, m, d.Corpus, max(1, n/d.Config.Batch), d.Config.Batch, d.Config.SeqLen, seed)
	case arch == ArchEncDec:
		return EncDecTaskMetrics(ctx, m, d.Task, d.Task.Vocab(), n, seed)
	}
	return TaskMetrics(ctx, m, d.Task, d.Config.Layout, n, seed)
}
