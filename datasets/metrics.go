package datasets

import "fmt"

// Accuracy accumulates token and sequence accuracy over batches.
type Accuracy struct {
	Tokens, TokensCorrect int // scored positions, and those predicted right
	Seqs, SeqsCorrect     int // rows, and rows whose whole answer is right
}

// Add scores pred, one predicted token per position of b (row-major, like
// b.Targets), against b. Token accuracy compares pred with the scored
// targets; sequence accuracy asks t.Check, so t must be the task that
// produced b. Pass a nil t to count tokens only (e.g. for a text corpus).
func (a *Accuracy) Add(t Task, b Batch, pred []int) error {
	if len(pred) != len(b.Targets) || len(b.Targets) != b.B*b.T {
		return fmt.Errorf("accuracy: %d predictions for a batch of %dx%d (%d targets)", len(pred), b.B, b.T, len(b.Targets))
	}
	for i, tgt := range b.Targets {
		if tgt == IgnoreIndex {
			continue
		}
		a.Tokens++
		if pred[i] == tgt {
			a.TokensCorrect++
		}
	}
	if t == nil {
		return nil
	}
	for r := range b.B {
		a.Seqs++
		if t.Check(b.Row(r), pred[r*b.T:(r+1)*b.T]) {
			a.SeqsCorrect++
		}
	}
	return nil
}

// Token returns the fraction of scored positions predicted right (0 when
// none were scored).
func (a Accuracy) Token() float64 { return ratio(a.TokensCorrect, a.Tokens) }

// Seq returns the fraction of rows whose whole answer is right (0 when no
// rows were checked).
func (a Accuracy) Seq() float64 { return ratio(a.SeqsCorrect, a.Seqs) }

func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// TokenAccuracy returns the fraction of scored positions of b where pred
// equals the target.
func TokenAccuracy(b Batch, pred []int) (float64, error) {
	var a Accuracy
	if err := a.Add(nil, b, pred); err != nil {
		return 0, err
	}
	return a.Token(), nil
}

// SequenceAccuracy returns the fraction of rows of b that task t's checker
// accepts.
func SequenceAccuracy(t Task, b Batch, pred []int) (float64, error) {
	if t == nil {
		return 0, fmt.Errorf("sequence accuracy: nil task")
	}
	var a Accuracy
	if err := a.Add(t, b, pred); err != nil {
		return 0, err
	}
	return a.Seq(), nil
}
