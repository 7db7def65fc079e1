package datasets

import (
	"fmt"
	"math/rand/v2"
)

// The dyck1 and dyck2 tasks classify a bracket string of length SeqLen
// (default 16, even) as balanced or not. dyck1 uses one bracket type, ids
// 0 "(" and 1 ")"; dyck2 adds 2 "[" and 3 "]". The answer, at the last
// position (IgnoreIndex elsewhere), is id 1 for balanced and 0 otherwise.
//
// Half of the examples are balanced strings of nesting depth at most Depth
// (default SeqLen/2, i.e. unlimited), built by a random walk. The other half
// are balanced strings with one bracket replaced, or two brackets swapped;
// swaps keep the bracket counts, so counting alone does not solve the task.

func init() {
	RegisterTask("dyck1", func(cfg TaskConfig) (Task, error) { return newDyckTask("dyck1", 1, cfg) })
	RegisterTask("dyck2", func(cfg TaskConfig) (Task, error) { return newDyckTask("dyck2", 2, cfg) })
}

type dyckTask struct {
	name          string
	kinds, seqLen int
	depth         int
}

func newDyckTask(name string, kinds int, cfg TaskConfig) (Task, error) {
	if err := cfg.usedOnly(name, "SeqLen", "Depth", "Vocab"); err != nil {
		return nil, err
	}
	if cfg.Vocab != 0 && cfg.Vocab != 2*kinds {
		return nil, fmt.Errorf("task %s: Vocab=%d, but the vocabulary is fixed at %d (brackets)", name, cfg.Vocab, 2*kinds)
	}
	t := &dyckTask{name: name, kinds: kinds, seqLen: orDefault(cfg.SeqLen, 16)}
	if err := checkRange(name, "SeqLen", t.seqLen, 2, maxSeqLen); err != nil {
		return nil, err
	}
	if t.seqLen%2 != 0 {
		return nil, fmt.Errorf("task %s: SeqLen=%d must be even (an odd string is never balanced)", name, t.seqLen)
	}
	t.depth = orDefault(cfg.Depth, t.seqLen/2)
	if err := checkRange(name, "Depth", t.depth, 1, t.seqLen/2); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *dyckTask) Name() string   { return t.name }
func (t *dyckTask) Vocab() int     { return 2 * t.kinds }
func (t *dyckTask) SeqLen() int    { return t.seqLen }
func (t *dyckTask) AnswerLen() int { return 1 }

func (t *dyckTask) Sample(rng *rand.Rand) Example {
	x := t.balanced(rng)
	label := 1
	if rng.IntN(2) == 0 {
		t.corrupt(rng, x)
		label = 0
	}
	tgt := ignored(t.seqLen)
	tgt[t.seqLen-1] = label
	return Example{Input: x, Target: tgt}
}

// balanced returns a random balanced string of nesting depth at most t.depth.
// Open brackets have even ids, their closing brackets the next odd id.
func (t *dyckTask) balanced(rng *rand.Rand) []int {
	x := make([]int, t.seqLen)
	stack := make([]int, 0, t.depth)
	for i := range x {
		left := t.seqLen - i
		open := len(stack) == 0 || (len(stack) < left && len(stack) < t.depth && rng.IntN(2) == 0)
		if open {
			x[i] = 2 * rng.IntN(t.kinds)
			stack = append(stack, x[i])
		} else {
			x[i] = stack[len(stack)-1] + 1
			stack = stack[:len(stack)-1]
		}
	}
	return x
}

// corrupt changes the balanced string x in place until it is unbalanced.
func (t *dyckTask) corrupt(rng *rand.Rand, x []int) {
	orig := append([]int(nil), x...)
	for {
		copy(x, orig)
		if rng.IntN(2) == 0 {
			i := rng.IntN(len(x))
			x[i] = (x[i] + 1 + rng.IntN(2*t.kinds-1)) % (2 * t.kinds)
		} else {
			i, j := rng.IntN(len(x)), rng.IntN(len(x))
			x[i], x[j] = x[j], x[i]
		}
		if !t.isBalanced(x) {
			return
		}
	}
}

func (t *dyckTask) isBalanced(x []int) bool {
	var stack []int
	for _, tok := range x {
		switch {
		case tok < 0 || tok >= 2*t.kinds:
			return false
		case tok%2 == 0:
			stack = append(stack, tok)
		case len(stack) == 0 || stack[len(stack)-1] != tok-1:
			return false
		default:
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0
}

func (t *dyckTask) Check(ex Example, pred []int) bool {
	return check(t, ex, pred, func(x, ans []int) bool {
		want := 0
		if t.isBalanced(x) {
			want = 1
		}
		return ans[0] == want
	})
}
