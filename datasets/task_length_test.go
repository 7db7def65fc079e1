package datasets

import (
	"errors"
	"strings"
	"testing"
)

// TestTaskConfigAtLength: the tasks defined at any length are posed at 2× their
// training length (and their examples have it); addition takes the digits that make the
// length and refuses another naming the nearest; modular and recall keep their length;
// dyck refuses an odd length; the training length gives back the configuration itself.
func TestTaskConfigAtLength(t *testing.T) {
	rng := NewRand(1)
	for _, tc := range []struct {
		task string
		cfg  TaskConfig
		t    int
		len  int // the examples' input length at t
	}{
		{"copy", TaskConfig{}, 32, 32},
		{"reverse", TaskConfig{SeqLen: 8}, 16, 16},
		{"sort", TaskConfig{SeqLen: 8, Vocab: 5}, 64, 64},
		{"parity", TaskConfig{}, 32, 32},
		{"dyck1", TaskConfig{}, 32, 32},
		{"dyck2", TaskConfig{SeqLen: 8, Depth: 2}, 16, 16},
		{"addition", TaskConfig{}, 30, 30},           // 9 digits
		{"addition", TaskConfig{SeqLen: 15}, 24, 24}, // 7 digits
		{"denoise-reverse", TaskConfig{SeqLen: 8}, 16, 32},
	} {
		cfg, err := TaskConfigAtLength(tc.task, tc.cfg, tc.t)
		if err != nil {
			t.Errorf("%s at %d: %v", tc.task, tc.t, err)
			continue
		}
		task, err := TaskByName(tc.task, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if ex := task.Sample(rng); len(ex.Input) != tc.len || len(ex.Target) != tc.len {
			t.Errorf("%s at %d: examples of %d and %d tokens, want %d", tc.task, tc.t, len(ex.Input), len(ex.Target), tc.len)
		}
	}
	if cfg, err := TaskConfigAtLength("addition", TaskConfig{Vocab: 7}, 15); err != nil || cfg != (TaskConfig{Vocab: 7}) {
		t.Errorf("addition at its own length: %+v, %v; want the configuration unchanged", cfg, err)
	}
	for _, tc := range []struct {
		task string
		cfg  TaskConfig
		t    int
		want string
	}{
		{"addition", TaskConfig{}, 20, "posed at lengths 3·digits+3 (6, 9, 12, ...): not at 20 (the nearest: 18 or 21)"},
		{"addition", TaskConfig{}, 4, "not at 4 (the nearest: 6)"},
		{"modular", TaskConfig{}, 8, "task modular is posed only at its length 4"},
		{"recall", TaskConfig{}, 40, "task recall is posed only at its length"},
		{"dyck1", TaskConfig{}, 17, "must be even"},
		{"copy", TaskConfig{}, 0, "task copy at length 0"},
	} {
		_, err := TaskConfigAtLength(tc.task, tc.cfg, tc.t)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s at %d: %v, want one line with %q", tc.task, tc.t, err, tc.want)
		}
	}
}

// TestLengthErrorsMatchErrLength: the lengths a task is not defined at give errors that
// match ErrLength (eval's exit status 3, a sweep's "not defined" point) with their own
// text; a length out of range is not one of them.
func TestLengthErrorsMatchErrLength(t *testing.T) {
	for _, tc := range []struct {
		task string
		t    int
		want string
	}{
		{"addition", 31, "task addition is posed at lengths 3·digits+3 (6, 9, 12, ...): not at 31 (the nearest: 30 or 33)"},
		{"modular", 9, "task modular is posed only at its length"},
		{"dyck1", 33, "task dyck1 at length 33: "},
	} {
		_, err := TaskConfigAtLength(tc.task, TaskConfig{}, tc.t)
		if !errors.Is(err, ErrLength) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), ErrLength.Error()) {
			t.Errorf("%s at %d: %v; want an ErrLength with text %q", tc.task, tc.t, err, tc.want)
		}
	}
	if _, err := TaskConfigAtLength("copy", TaskConfig{}, 0); err == nil || errors.Is(err, ErrLength) {
		t.Errorf("copy at 0: %v, want an error that is not ErrLength", err)
	}
}
