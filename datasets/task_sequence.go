package datasets

import (
	"math/rand/v2"
	"slices"
)

// The copy, reverse and sort tasks map an input of SeqLen symbols, drawn
// uniformly from 0..Vocab-1, to an output of the same length, scored at every
// position: copy y[i] = x[i], reverse y[i] = x[T-1-i], sort y = x in
// ascending order. Defaults: SeqLen 16, Vocab 10 (the reference reverse task).

func init() {
	RegisterTask("copy", func(cfg TaskConfig) (Task, error) { return newSequenceTask("copy", cfg, slices.Clone) })
	RegisterTask("reverse", func(cfg TaskConfig) (Task, error) {
		return newSequenceTask("reverse", cfg, func(x []int) []int {
			y := slices.Clone(x)
			slices.Reverse(y)
			return y
		})
	})
	RegisterTask("sort", func(cfg TaskConfig) (Task, error) {
		return newSequenceTask("sort", cfg, func(x []int) []int {
			y := slices.Clone(x)
			slices.Sort(y)
			return y
		})
	})
}

// sequenceTask is a task whose target is a function of the whole input,
// scored at every position.
type sequenceTask struct {
	name      string
	seqLen    int
	vocab     int
	transform func([]int) []int
}

func newSequenceTask(name string, cfg TaskConfig, transform func([]int) []int) (Task, error) {
	if err := cfg.usedOnly(name, "SeqLen", "Vocab"); err != nil {
		return nil, err
	}
	t := &sequenceTask{name: name, seqLen: orDefault(cfg.SeqLen, 16), vocab: orDefault(cfg.Vocab, 10), transform: transform}
	if err := checkRange(name, "SeqLen", t.seqLen, 1, maxSeqLen); err != nil {
		return nil, err
	}
	if err := checkRange(name, "Vocab", t.vocab, 2, maxSeqLen); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *sequenceTask) Name() string   { return t.name }
func (t *sequenceTask) Vocab() int     { return t.vocab }
func (t *sequenceTask) SeqLen() int    { return t.seqLen }
func (t *sequenceTask) AnswerLen() int { return t.seqLen }

func (t *sequenceTask) Sample(rng *rand.Rand) Example {
	x := make([]int, t.seqLen)
	for i := range x {
		x[i] = rng.IntN(t.vocab)
	}
	return Example{Input: x, Target: t.transform(x)}
}

func (t *sequenceTask) Check(ex Example, pred []int) bool {
	return check(t, ex, pred, func(x, ans []int) bool { return slices.Equal(ans, t.transform(x)) })
}
