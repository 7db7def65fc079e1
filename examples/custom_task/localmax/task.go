// Package localmax is a task and a model family of one's own, registered with Locus so
// that every locus command (train, eval, inspect, report, export) works on them once a
// binary imports this package and calls cli.Main.
//
// The task asks, at every position, for the largest symbol within two positions of it: a
// local problem, which a kernel with a window of five positions and a content kernel that
// favours large symbols solves in one layer.
package localmax

import (
	"fmt"
	"math/rand/v2"

	"github.com/locusml/locus/datasets"
)

// TaskName is the task's name in -task and in checkpoints.
const TaskName = "localmax"

// Radius is how far the task looks on each side: the answer at i is the largest symbol
// of positions i−Radius … i+Radius.
const Radius = 2

func init() { datasets.RegisterTask(TaskName, newTask) }

// task is the localmax problem over Vocab symbols at length SeqLen.
type task struct{ seqLen, vocab int }

// newTask builds the task from the fields of cfg it uses: SeqLen (default 16) and Vocab
// (default 8). Any other field is refused, so that a typo cannot pass unnoticed.
func newTask(cfg datasets.TaskConfig) (datasets.Task, error) {
	if cfg != (datasets.TaskConfig{SeqLen: cfg.SeqLen, Vocab: cfg.Vocab}) {
		return nil, fmt.Errorf("task %s: only seq_len and vocab apply", TaskName)
	}
	t := task{seqLen: cfg.SeqLen, vocab: cfg.Vocab}
	if t.seqLen == 0 {
		t.seqLen = 16
	}
	if t.vocab == 0 {
		t.vocab = 8
	}
	if t.seqLen < 1 || t.seqLen > 4096 || t.vocab < 2 || t.vocab > 1024 {
		return nil, fmt.Errorf("task %s: seq_len %d and vocab %d, want 1..4096 and 2..1024", TaskName, t.seqLen, t.vocab)
	}
	return t, nil
}

func (t task) Name() string   { return TaskName }
func (t task) Vocab() int     { return t.vocab }
func (t task) SeqLen() int    { return t.seqLen }
func (t task) AnswerLen() int { return t.seqLen }

func (t task) Sample(rng *rand.Rand) datasets.Example {
	in := make([]int, t.seqLen)
	for i := range in {
		in[i] = rng.IntN(t.vocab)
	}
	return datasets.Example{Input: in, Target: answer(in)}
}

func (t task) Check(ex datasets.Example, pred []int) bool {
	want := answer(ex.Input)
	if len(pred) != len(want) {
		return false
	}
	for i := range want {
		if pred[i] != want[i] {
			return false
		}
	}
	return true
}

// answer is the largest symbol within Radius of every position.
func answer(in []int) []int {
	out := make([]int, len(in))
	for i := range in {
		for j := max(0, i-Radius); j <= min(len(in)-1, i+Radius); j++ {
			out[i] = max(out[i], in[j])
		}
	}
	return out
}
