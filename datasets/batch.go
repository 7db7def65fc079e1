package datasets

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Layout says how a task example is laid out for a model.
type Layout int

const (
	// Aligned is the encoder layout: input and target both have length
	// SeqLen, and the target at position i is the prediction expected from
	// the output at input position i (IgnoreIndex where nothing is scored).
	Aligned Layout = iota
	// Causal is the next-token layout for causal language models: the
	// sequence s = problem ++ answer is cut into input s[:len(s)-1] and
	// target s[1:], with only the answer tokens scored. Rows have length
	// SeqLen+AnswerLen-1.
	Causal
)

var layoutNames = []string{"aligned", "causal"}

// String returns "aligned" or "causal".
func (l Layout) String() string {
	if l >= 0 && int(l) < len(layoutNames) {
		return layoutNames[l]
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// MarshalText returns the layout's name.
func (l Layout) MarshalText() ([]byte, error) {
	if l < 0 || int(l) >= len(layoutNames) {
		return nil, fmt.Errorf("invalid layout %d", int(l))
	}
	return []byte(layoutNames[l]), nil
}

// UnmarshalText parses a layout's name; the empty text is Aligned.
func (l *Layout) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*l = Aligned
		return nil
	}
	if i := slices.Index(layoutNames, string(b)); i >= 0 {
		*l = Layout(i)
		return nil
	}
	return fmt.Errorf("unknown layout %q (valid: aligned, causal)", b)
}

// RowLen returns the length of a row of task t in layout l.
func (l Layout) RowLen(t Task) int {
	if l == Causal {
		return t.SeqLen() + t.AnswerLen() - 1
	}
	return t.SeqLen()
}

// CausalExample converts an aligned example to the Causal layout: the input
// is the problem followed by all answer tokens but the last, and the target
// holds the answer tokens from the last problem position on.
func CausalExample(ex Example) Example {
	ans := ex.Answer()
	if len(ans) == 0 {
		return Example{Input: slices.Clone(ex.Input), Target: ignored(len(ex.Input))}
	}
	n := len(ex.Input) + len(ans) - 1
	in := make([]int, 0, n)
	in = append(in, ex.Input...)
	in = append(in, ans[:len(ans)-1]...)
	tgt := ignored(n)
	copy(tgt[len(ex.Input)-1:], ans)
	return Example{Input: in, Target: tgt}
}

// Batch is B rows of length T, stored row-major: row b of the inputs is
// Inputs[b*T:(b+1)*T]. Targets has the same shape; positions that are not
// scored hold IgnoreIndex.
type Batch struct {
	Inputs  []int
	Targets []int
	B, T    int
}

// Row returns row i of b as an example; the slices alias the batch.
func (b Batch) Row(i int) Example {
	return Example{Input: b.Inputs[i*b.T : (i+1)*b.T], Target: b.Targets[i*b.T : (i+1)*b.T]}
}

// Mask returns, for each target position, whether it is scored.
func (b Batch) Mask() []bool {
	m := make([]bool, len(b.Targets))
	for i, t := range b.Targets {
		m[i] = t != IgnoreIndex
	}
	return m
}

// SampleBatch draws n examples of task t from rng and lays them out as a
// batch in layout l.
func SampleBatch(t Task, rng *rand.Rand, n int, l Layout) (Batch, error) {
	if n < 1 {
		return Batch{}, fmt.Errorf("sample batch of %s: batch size %d must be positive", t.Name(), n)
	}
	if l != Aligned && l != Causal {
		return Batch{}, fmt.Errorf("sample batch of %s: unknown layout %v", t.Name(), l)
	}
	return sampleBatch(t, rng, n, l), nil
}

// sampleBatch is SampleBatch without the argument checks.
func sampleBatch(t Task, rng *rand.Rand, n int, l Layout) Batch {
	T := l.RowLen(t)
	b := Batch{Inputs: make([]int, 0, n*T), Targets: make([]int, 0, n*T), B: n, T: T}
	for range n {
		ex := t.Sample(rng)
		if l == Causal {
			ex = CausalExample(ex)
		}
		b.Inputs = append(b.Inputs, ex.Input...)
		b.Targets = append(b.Targets, ex.Target...)
	}
	return b
}
