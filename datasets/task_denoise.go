package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// The denoise-<base> tasks (denoise-reverse, denoise-sort, …, one per base task)
// restore corrupted token sequences: the sequence DAE of docs/THEORY.md §6.
//
// The clean sequence of a base example is its problem followed by its answer,
// Input ++ Answer(), of length L = SeqLen+AnswerLen: the sequence that the
// Causal layout shifts by one. For reverse it is x followed by x reversed (2T
// tokens), for addition "a + b = blanks" followed by the sum, for parity the
// bits followed by their parity. This rule works for every task and keeps the
// redundancy that makes corrupted tokens recoverable: a token of x can be read
// back from the reversed copy, a bit from the other bits and the parity.
//
// K = max(1, round(Rate·L)) distinct positions, uniform among the L, are
// corrupted, so every example has AnswerLen K. In mode "mask" each becomes the
// MASK id, base Vocab (so Vocab is the base's plus one); in mode "substitute"
// each becomes a different symbol, uniform among the base's other ids (Vocab
// is the base's, and the model is not told where the corruptions are). The
// input is the corrupted sequence and the target holds the clean token at the
// corrupted positions, IgnoreIndex elsewhere (scoring only corrupted
// positions, as BERT does).
//
// Check accepts a prediction iff it restores every corrupted position to its
// clean token. It is the one checker that reads ex.Target: a corrupted input
// does not determine its clean tokens. Some corruptions cannot be undone at
// all (both copies of a reversed token corrupted, two bits of a parity
// string), so the best possible accuracy is below 1. For denoise-reverse
// (T=16, Rate 0.15: 5 of 32 positions) it is about 0.88 per token and 0.72
// per sequence with masks; substitutions, which hide where they are, bring
// it to about 0.87 and 0.69.

// Corruption modes of the denoise tasks (DenoiseConfig.Mode).
const (
	DenoiseMask       = "mask"
	DenoiseSubstitute = "substitute"
)

// denoisePrefix starts the names of the denoise tasks: "denoise-" + base name.
const denoisePrefix = "denoise-"

// DefaultCorruptRate is the fraction of positions that a denoise task
// corrupts by default.
const DefaultCorruptRate = 0.15

// DenoiseConfig holds the corruption of a denoise task. Zero fields take the
// defaults.
type DenoiseConfig struct {
	// Rate is the fraction of positions corrupted, in (0, 1] (default 0.15);
	// the count is rounded and at least 1.
	Rate float64
	// Mode is "mask" (replace by the MASK id, the base vocabulary size; the
	// default) or "substitute" (replace by a different random symbol).
	Mode string
}

// Denoise wraps base into the task of restoring its clean sequences after
// corruption by cfg (see the denoise tasks above). Its name is "denoise-"
// followed by the base's name.
func Denoise(base Task, cfg DenoiseConfig) (Task, error) {
	if base == nil {
		return nil, fmt.Errorf("denoise: nil base task")
	}
	name := denoisePrefix + base.Name()
	rate := cfg.Rate
	if rate == 0 {
		rate = DefaultCorruptRate
	}
	if !(rate > 0 && rate <= 1) {
		return nil, fmt.Errorf("task %s: CorruptRate=%g must be in (0, 1]", name, cfg.Rate)
	}
	mode := cfg.Mode
	if mode == "" {
		mode = DenoiseMask
	}
	if mode != DenoiseMask && mode != DenoiseSubstitute {
		return nil, fmt.Errorf("task %s: unknown CorruptMode %q (valid: %s, %s)", name, cfg.Mode, DenoiseMask, DenoiseSubstitute)
	}
	if mode == DenoiseSubstitute && base.Vocab() < 2 {
		return nil, fmt.Errorf("task %s: substitution needs at least 2 symbols, the base has %d", name, base.Vocab())
	}
	n := base.SeqLen() + base.AnswerLen()
	if err := checkRange(name, "SeqLen+AnswerLen", n, 1, maxSeqLen); err != nil {
		return nil, err
	}
	k := max(1, int(math.Round(rate*float64(n))))
	return &denoiseTask{name: name, base: base, rate: rate, mode: mode, seqLen: n, corrupt: k}, nil
}

// newDenoiseTask builds the task denoise-<base> from cfg: the corruption
// fields configure the wrapper, the others the base task.
func newDenoiseTask(base string, cfg TaskConfig) (Task, error) {
	name := denoisePrefix + base
	dcfg := DenoiseConfig{Rate: cfg.CorruptRate, Mode: cfg.CorruptMode}
	cfg.CorruptRate, cfg.CorruptMode = 0, ""
	b, err := registry[base](cfg)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", name, err)
	}
	return Denoise(b, dcfg)
}

// denoiseName returns the base task of a denoise task name, and whether name
// is one.
func denoiseName(name string) (string, bool) {
	base, ok := strings.CutPrefix(name, denoisePrefix)
	if !ok {
		return "", false
	}
	_, ok = registry[base]
	return base, ok
}

type denoiseTask struct {
	name    string
	base    Task
	rate    float64
	mode    string
	seqLen  int // L: base SeqLen + AnswerLen
	corrupt int // K: corrupted positions per example
}

func (t *denoiseTask) Name() string   { return t.name }
func (t *denoiseTask) SeqLen() int    { return t.seqLen }
func (t *denoiseTask) AnswerLen() int { return t.corrupt }

func (t *denoiseTask) Vocab() int {
	if t.mode == DenoiseMask {
		return t.base.Vocab() + 1
	}
	return t.base.Vocab()
}

func (t *denoiseTask) Sample(rng *rand.Rand) Example {
	ex := t.base.Sample(rng)
	in := make([]int, 0, t.seqLen)
	in = append(in, ex.Input[:t.base.SeqLen()]...)
	in = append(in, ex.Answer()...)
	tgt := ignored(t.seqLen)
	v := t.base.Vocab()
	for _, i := range rng.Perm(t.seqLen)[:t.corrupt] {
		tgt[i] = in[i]
		if t.mode == DenoiseMask {
			in[i] = v // MASK
		} else {
			in[i] = (in[i] + 1 + rng.IntN(v-1)) % v
		}
	}
	return Example{Input: in, Target: tgt}
}

func (t *denoiseTask) Check(ex Example, pred []int) bool {
	if len(pred) != len(ex.Target) || len(ex.Input) < t.seqLen {
		return false
	}
	n := 0
	for i, tok := range ex.Target {
		if tok == IgnoreIndex {
			continue
		}
		if n++; pred[i] != tok {
			return false
		}
	}
	return n == t.corrupt
}

// denoiseNames returns the denoise task names of the registered base tasks.
func denoiseNames() []string {
	names := make([]string, 0, len(registry))
	for base := range registry {
		names = append(names, denoisePrefix+base)
	}
	slices.Sort(names)
	return names
}
