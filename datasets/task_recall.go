package datasets

import (
	"fmt"
	"math/rand/v2"
)

// The recall task (associative recall) lists Pairs key-value pairs, then
// Queries keys, and answers each query with its value:
//
//	k1 v1 k2 v2 … kn vn q1 … qm
//
// Keys are distinct and drawn from ids 0..Vocab-1, values from the same ids;
// each query is one of the listed keys. SeqLen is 2*Pairs+Queries, and the
// targets at the query positions hold the values (IgnoreIndex elsewhere).
// Defaults: Pairs 8, Queries 1, Vocab 16.

func init() { RegisterTask("recall", newRecallTask) }

type recallTask struct{ pairs, queries, vocab int }

func newRecallTask(cfg TaskConfig) (Task, error) {
	const name = "recall"
	if err := cfg.usedOnly(name, "Pairs", "Queries", "Vocab", "SeqLen"); err != nil {
		return nil, err
	}
	t := &recallTask{pairs: orDefault(cfg.Pairs, 8), queries: orDefault(cfg.Queries, 1), vocab: orDefault(cfg.Vocab, 16)}
	if err := checkRange(name, "Pairs", t.pairs, 1, maxSeqLen/3); err != nil {
		return nil, err
	}
	if err := checkRange(name, "Queries", t.queries, 1, maxSeqLen/3); err != nil {
		return nil, err
	}
	if err := checkRange(name, "Vocab", t.vocab, 2, maxSeqLen); err != nil {
		return nil, err
	}
	if t.vocab < t.pairs {
		return nil, fmt.Errorf("task %s: Vocab=%d is too small for Pairs=%d distinct keys", name, t.vocab, t.pairs)
	}
	if cfg.SeqLen != 0 && cfg.SeqLen != t.SeqLen() {
		return nil, errDerivedLen(name, cfg.SeqLen, t.SeqLen(), "2*Pairs+Queries")
	}
	return t, nil
}

func (t *recallTask) Name() string   { return "recall" }
func (t *recallTask) Vocab() int     { return t.vocab }
func (t *recallTask) SeqLen() int    { return 2*t.pairs + t.queries }
func (t *recallTask) AnswerLen() int { return t.queries }

func (t *recallTask) Sample(rng *rand.Rand) Example {
	keys := rng.Perm(t.vocab)[:t.pairs]
	in := make([]int, 0, t.SeqLen())
	vals := make([]int, t.pairs)
	for i, k := range keys {
		vals[i] = rng.IntN(t.vocab)
		in = append(in, k, vals[i])
	}
	tgt := ignored(t.SeqLen())
	for q := range t.queries {
		i := rng.IntN(t.pairs)
		in = append(in, keys[i])
		tgt[2*t.pairs+q] = vals[i]
	}
	return Example{Input: in, Target: tgt}
}

func (t *recallTask) Check(ex Example, pred []int) bool {
	return check(t, ex, pred, func(x, ans []int) bool {
		value := make(map[int]int, t.pairs)
		for i := 0; i < 2*t.pairs; i += 2 {
			if _, dup := value[x[i]]; dup {
				return false // ambiguous problem
			}
			value[x[i]] = x[i+1]
		}
		for q, k := range x[2*t.pairs:] {
			v, ok := value[k]
			if !ok || ans[q] != v {
				return false
			}
		}
		return true
	})
}
