package datasets

import (
	"math/rand/v2"
	"slices"
)

// The addition task adds two Digits-digit numbers in base Vocab (default 4
// digits, base 10). Ids 0..Vocab-1 are digits, Vocab is "+", Vocab+1 is "="
// and Vocab+2 is the blank of the answer slots. The input is
//
//	a (Digits digits) + b (Digits digits) = blank×(Digits+1)
//
// with the most significant digit first and leading zeros kept, so SeqLen is
// 3*Digits+3. The target is IgnoreIndex except at the Digits+1 answer slots,
// which hold a+b, most significant digit first, zero-padded. An encoder fills
// the slots in place; the Causal layout appends the same digits after the
// blanks.

func init() { RegisterTask("addition", newAdditionTask) }

type additionTask struct {
	base, digits int
}

func newAdditionTask(cfg TaskConfig) (Task, error) {
	const name = "addition"
	if err := cfg.usedOnly(name, "Digits", "Vocab", "SeqLen"); err != nil {
		return nil, err
	}
	t := &additionTask{base: orDefault(cfg.Vocab, 10), digits: orDefault(cfg.Digits, 4)}
	if err := checkRange(name, "Vocab", t.base, 2, maxSeqLen); err != nil {
		return nil, err
	}
	if err := checkRange(name, "Digits", t.digits, 1, maxSeqLen/3-1); err != nil {
		return nil, err
	}
	if cfg.SeqLen != 0 && cfg.SeqLen != t.SeqLen() {
		return nil, errDerivedLen(name, cfg.SeqLen, t.SeqLen(), "3*Digits+3")
	}
	return t, nil
}

func (t *additionTask) Name() string   { return "addition" }
func (t *additionTask) Vocab() int     { return t.base + 3 }
func (t *additionTask) SeqLen() int    { return 3*t.digits + 3 }
func (t *additionTask) AnswerLen() int { return t.digits + 1 }

func (t *additionTask) Sample(rng *rand.Rand) Example {
	n, plus, eq, blank := t.digits, t.base, t.base+1, t.base+2
	in := make([]int, 0, t.SeqLen())
	for range n {
		in = append(in, rng.IntN(t.base))
	}
	in = append(in, plus)
	for range n {
		in = append(in, rng.IntN(t.base))
	}
	in = append(in, eq)
	for range n + 1 {
		in = append(in, blank)
	}
	tgt := ignored(len(in))
	copy(tgt[2*n+2:], t.sum(in[:n], in[n+1:2*n+1]))
	return Example{Input: in, Target: tgt}
}

// sum returns a+b as Digits+1 digits, most significant first.
func (t *additionTask) sum(a, b []int) []int {
	s := make([]int, t.digits+1)
	carry := 0
	for i := t.digits - 1; i >= 0; i-- {
		d := a[i] + b[i] + carry
		s[i+1], carry = d%t.base, d/t.base
	}
	s[0] = carry
	return s
}

func (t *additionTask) Check(ex Example, pred []int) bool {
	return check(t, ex, pred, func(x, ans []int) bool {
		n := t.digits
		for i, tok := range x {
			isDigit := i < n || (i > n && i < 2*n+1)
			if isDigit && (tok < 0 || tok >= t.base) {
				return false
			}
		}
		return slices.Equal(ans, t.sum(x[:n], x[n+1:2*n+1]))
	})
}
