package datasets

import (
	"fmt"
	"math/rand/v2"
)

// The parity task reads SeqLen random bits (ids 0 and 1, default SeqLen 16)
// and answers their sum mod 2, as id 0 or 1, at the last position; every
// other position is IgnoreIndex. The Causal layout is the same as the aligned
// one.

func init() { RegisterTask("parity", newParityTask) }

type parityTask struct{ seqLen int }

func newParityTask(cfg TaskConfig) (Task, error) {
	const name = "parity"
	if err := cfg.usedOnly(name, "SeqLen", "Vocab"); err != nil {
		return nil, err
	}
	if cfg.Vocab != 0 && cfg.Vocab != 2 {
		return nil, fmt.Errorf("task %s: Vocab=%d, but the vocabulary is fixed at 2 (bits)", name, cfg.Vocab)
	}
	t := &parityTask{seqLen: orDefault(cfg.SeqLen, 16)}
	if err := checkRange(name, "SeqLen", t.seqLen, 1, maxSeqLen); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *parityTask) Name() string   { return "parity" }
func (t *parityTask) Vocab() int     { return 2 }
func (t *parityTask) SeqLen() int    { return t.seqLen }
func (t *parityTask) AnswerLen() int { return 1 }

func (t *parityTask) Sample(rng *rand.Rand) Example {
	x := make([]int, t.seqLen)
	for i := range x {
		x[i] = rng.IntN(2)
	}
	tgt := ignored(t.seqLen)
	tgt[t.seqLen-1] = parity(x)
	return Example{Input: x, Target: tgt}
}

func parity(x []int) int {
	p := 0
	for _, b := range x {
		p ^= b & 1
	}
	return p
}

func (t *parityTask) Check(ex Example, pred []int) bool {
	return check(t, ex, pred, func(x, ans []int) bool {
		for _, b := range x {
			if b != 0 && b != 1 {
				return false
			}
		}
		return ans[0] == parity(x)
	})
}
