package datasets

import (
	"fmt"
	"math/rand/v2"
)

// The modular task computes (a op b) mod p, the grokking benchmark. Ids
// 0..p-1 are residues, p is the operator and p+1 is "=". The input is
// [a, op, b, =] (SeqLen 4) and the answer is scored at the last position.
// Defaults: Modulus 97, Op "+". Vocab, if set, is an alias of Modulus.

func init() { RegisterTask("modular", newModularTask) }

type modularTask struct {
	p  int
	op string
}

func newModularTask(cfg TaskConfig) (Task, error) {
	const name = "modular"
	if err := cfg.usedOnly(name, "Modulus", "Op", "Vocab", "SeqLen"); err != nil {
		return nil, err
	}
	if cfg.Vocab != 0 && cfg.Modulus != 0 && cfg.Vocab != cfg.Modulus {
		return nil, fmt.Errorf("task %s: Vocab=%d and Modulus=%d disagree (Vocab is an alias of Modulus)", name, cfg.Vocab, cfg.Modulus)
	}
	t := &modularTask{p: orDefault(cfg.Modulus, orDefault(cfg.Vocab, 97)), op: cfg.Op}
	if t.op == "" {
		t.op = "+"
	}
	if err := checkRange(name, "Modulus", t.p, 2, 1<<30); err != nil {
		return nil, err
	}
	if t.op != "+" && t.op != "-" && t.op != "*" {
		return nil, fmt.Errorf("task %s: unknown Op %q (valid: +, -, *)", name, t.op)
	}
	if cfg.SeqLen != 0 && cfg.SeqLen != 4 {
		return nil, errDerivedLen(name, cfg.SeqLen, 4, "4")
	}
	return t, nil
}

func (t *modularTask) Name() string   { return "modular" }
func (t *modularTask) Vocab() int     { return t.p + 2 }
func (t *modularTask) SeqLen() int    { return 4 }
func (t *modularTask) AnswerLen() int { return 1 }

func (t *modularTask) Sample(rng *rand.Rand) Example {
	a, b := rng.IntN(t.p), rng.IntN(t.p)
	return Example{
		Input:  []int{a, t.p, b, t.p + 1},
		Target: []int{IgnoreIndex, IgnoreIndex, IgnoreIndex, t.apply(a, b)},
	}
}

func (t *modularTask) apply(a, b int) int {
	p := int64(t.p)
	x, y := int64(a), int64(b)
	switch t.op {
	case "-":
		return int(((x-y)%p + p) % p)
	case "*":
		return int(x * y % p)
	}
	return int((x + y) % p)
}

func (t *modularTask) Check(ex Example, pred []int) bool {
	return check(t, ex, pred, func(x, ans []int) bool {
		if x[0] < 0 || x[0] >= t.p || x[2] < 0 || x[2] >= t.p {
			return false
		}
		return ans[0] == t.apply(x[0], x[2])
	})
}

// errDerivedLen reports a SeqLen that contradicts the length derived from
// the other parameters.
func errDerivedLen(task string, got, want int, formula string) error {
	return fmt.Errorf("task %s: SeqLen=%d contradicts the derived length %s = %d (leave SeqLen 0)", task, got, formula, want)
}
