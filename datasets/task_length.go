package datasets

import (
	"errors"
	"fmt"
	"strings"
)

// ErrLength is what an error matches (errors.Is) when a task or a model is not defined at
// the length it was asked for: a task posed only at its own length, addition at a length
// that is not 3·digits+3, learned positions past their table. Such an error is a property
// of what was trained, not a fault of the input: locus eval exits 3 on it, and locus sweep
// records the eval point as not applicable instead of failing the cell.
var ErrLength = errors.New("not defined at this length")

// lengthError is an error that matches ErrLength; its text is the message alone.
type lengthError struct{ error }

func (e lengthError) Is(target error) bool { return target == ErrLength }
func (e lengthError) Unwrap() error        { return e.error }

// LengthErrorf formats an error that matches ErrLength.
func LengthErrorf(format string, args ...any) error {
	return lengthError{fmt.Errorf(format, args...)}
}

// TaskConfigAtLength returns cfg changed so that the task called name is posed at length
// t, for evaluating a model at another length than it trained at (length
// generalisation). The length t means what TaskConfig.SeqLen means at training (locus
// train -seqlen): the input length of the task, or of the base task of denoise-<base>.
//
// The rule per task:
//   - copy, reverse, sort, parity, dyck1 and dyck2 (and a registered task of one's own
//     whose length is its SeqLen) take SeqLen t; dyck1 and dyck2 need t even, and keep
//     a Depth given at training (the default Depth, t/2, is no limit);
//   - addition, whose length is 3·Digits+3, takes Digits (t−3)/3: a t that is not
//     3·Digits+3 is refused, naming the nearest lengths that are;
//   - modular and recall, whose lengths follow from their other parameters, are posed
//     only at their own length.
//
// The task is built from the returned configuration (TaskByName) to check it: an error
// names the task and the length.
func TaskConfigAtLength(name string, cfg TaskConfig, t int) (TaskConfig, error) {
	if t <= 0 || t > maxSeqLen {
		return cfg, fmt.Errorf("task %s at length %d: want a length of 1 to %d", name, t, maxSeqLen)
	}
	task, err := TaskByName(name, cfg)
	if err != nil {
		return cfg, err
	}
	base := strings.TrimPrefix(name, denoisePrefix)
	if own := baseSeqLen(task); own == t {
		return cfg, nil
	} else if base == "modular" || base == "recall" {
		return cfg, LengthErrorf("task %s is posed only at its length %d, which follows from its other parameters; not at %d", name, own, t)
	}
	out := cfg
	switch base {
	case "addition":
		if t < 6 || t%3 != 0 {
			lo, hi := max(6, t-t%3), t-t%3+3
			near := fmt.Sprintf("%d or %d", lo, hi)
			if lo == hi {
				near = fmt.Sprint(lo)
			}
			return cfg, LengthErrorf("task %s is posed at lengths 3·digits+3 (6, 9, 12, ...): not at %d (the nearest: %s)", name, t, near)
		}
		out.Digits = (t - 3) / 3
		if out.SeqLen != 0 {
			out.SeqLen = t
		}
	default:
		out.SeqLen = t
	}
	at, err := TaskByName(name, out)
	if err != nil {
		return cfg, LengthErrorf("task %s at length %d: %w", name, t, err)
	}
	if got := baseSeqLen(at); got != t {
		return cfg, LengthErrorf("task %s does not take its length from seq_len: at seq_len %d its length is %d", name, t, got)
	}
	return out, nil
}

// baseSeqLen is the length that TaskConfig.SeqLen sets: the task's, or a denoise task's
// base task's.
func baseSeqLen(t Task) int {
	if d, ok := t.(*denoiseTask); ok {
		return d.base.SeqLen()
	}
	return t.SeqLen()
}
