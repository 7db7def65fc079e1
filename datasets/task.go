package datasets

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/locusml/locus/internal/quote"
)

// IgnoreIndex is the target value of positions that are not scored: the loss
// and the metrics skip them. It matches PyTorch's cross-entropy default.
const IgnoreIndex = -100

// maxSeqLen bounds task lengths so that a mistyped configuration fails
// validation instead of allocating gigabytes.
const maxSeqLen = 1 << 20

// Example is one generated problem in the aligned (encoder) layout: Input and
// Target have the same length T, and Target[i] is the token to predict at
// input position i, or IgnoreIndex where nothing is scored.
type Example struct {
	Input  []int
	Target []int
}

// Answer returns the scored target tokens of ex, in position order.
func (ex Example) Answer() []int {
	var ans []int
	for _, t := range ex.Target {
		if t != IgnoreIndex {
			ans = append(ans, t)
		}
	}
	return ans
}

// Task is a generated sequence problem with its own answer checker.
//
// Sample returns examples in the aligned layout (see Example). The first
// SeqLen tokens of an input always describe the whole problem, in either
// layout, and every example has exactly AnswerLen scored positions.
type Task interface {
	// Name is the registry name of the task, e.g. "reverse".
	Name() string
	// Vocab is the number of token ids, special tokens included: every input
	// and target token is in [0, Vocab).
	Vocab() int
	// SeqLen is the input length T of the aligned layout.
	SeqLen() int
	// AnswerLen is the number of scored target positions per example.
	AnswerLen() int
	// Sample draws one example, using only rng for randomness.
	Sample(rng *rand.Rand) Example
	// Check reports whether pred, a prediction aligned with ex.Target (one
	// token per position, as in either layout), solves the problem in
	// ex.Input. Only scored positions of pred are read, and the answer is
	// recomputed from the input, not copied from ex.Target (except by the
	// denoise tasks, whose corrupted inputs do not determine their answers).
	Check(ex Example, pred []int) bool
}

// TaskConfig holds the parameters of a task. A zero field means the task's
// default; a field that the task does not use must be left zero, so that a
// typo cannot silently fall back to a default.
type TaskConfig struct {
	// SeqLen is the input length T (copy, reverse, sort, parity, dyck1,
	// dyck2). Tasks whose length follows from other fields (addition,
	// modular, recall) accept only 0 or that derived length.
	SeqLen int `json:"seq_len"`
	// Vocab is the number of content symbols, ids 0..Vocab-1 (values for
	// copy, reverse, sort and recall; the number base for addition; the
	// modulus for modular, as an alias of Modulus). Special tokens
	// (separators, padding) take the ids above, so Task.Vocab may be larger.
	Vocab int `json:"vocab"`
	// Digits is the number of digits of each addition operand.
	Digits int `json:"digits"`
	// Modulus is the modulus p of the modular task.
	Modulus int `json:"modulus"`
	// Op is the modular operation: "+", "-" or "*" (default "+").
	Op string `json:"op"`
	// Pairs is the number of key-value pairs of the recall task.
	Pairs int `json:"pairs"`
	// Queries is the number of keys queried by the recall task.
	Queries int `json:"queries"`
	// Depth is the maximum nesting depth of the balanced strings of dyck1
	// and dyck2 (default SeqLen/2, i.e. no limit).
	Depth int `json:"depth"`
	// CorruptRate is the fraction of positions that a denoise-<base> task
	// corrupts (default 0.15); the other fields configure the base task.
	CorruptRate float64 `json:"corrupt_rate"`
	// CorruptMode is the corruption of a denoise-<base> task: "mask" (the
	// default) or "substitute".
	CorruptMode string `json:"corrupt_mode"`
}

// usedOnly returns an error naming the first non-zero field of cfg that is not
// in fields.
func (cfg TaskConfig) usedOnly(task string, fields ...string) error {
	set := map[string]bool{
		"SeqLen":      cfg.SeqLen != 0,
		"Vocab":       cfg.Vocab != 0,
		"Digits":      cfg.Digits != 0,
		"Modulus":     cfg.Modulus != 0,
		"Op":          cfg.Op != "",
		"Pairs":       cfg.Pairs != 0,
		"Queries":     cfg.Queries != 0,
		"Depth":       cfg.Depth != 0,
		"CorruptRate": cfg.CorruptRate != 0,
		"CorruptMode": cfg.CorruptMode != "",
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if set[name] && !slices.Contains(fields, name) {
			return fmt.Errorf("task %s: parameter %s does not apply (it uses %s)", task, name, strings.Join(fields, ", "))
		}
	}
	return nil
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// checkRange returns an error unless lo <= v <= hi.
func checkRange(task, param string, v, lo, hi int) error {
	if v < lo {
		return fmt.Errorf("task %s: %s=%d is too small (minimum %d)", task, param, v, lo)
	}
	if v > hi {
		return fmt.Errorf("task %s: %s=%d is too large (maximum %d)", task, param, v, hi)
	}
	return nil
}

// registry maps task names to constructors; each task file registers itself.
var registry = map[string]func(TaskConfig) (Task, error){}

// RegisterTask makes a task available by name to TaskByName (and so to checkpoints and
// the command line); user code registers its own tasks from init. It panics on an empty
// name, a nil constructor, a name registered twice or one starting with "denoise-".
func RegisterTask(name string, build func(TaskConfig) (Task, error)) {
	if name == "" || build == nil || strings.HasPrefix(name, "denoise-") {
		panic(fmt.Sprintf("datasets: RegisterTask(%q): empty or reserved name, or nil constructor", name))
	}
	if _, dup := registry[name]; dup {
		panic("datasets: task registered twice: " + name)
	}
	registry[name] = build
}

// TaskNames returns the names of the tasks, sorted: the registered tasks and
// a denoise-<name> task for each of them.
func TaskNames() []string {
	names := make([]string, 0, 2*len(registry))
	for name := range registry {
		names = append(names, name)
	}
	names = append(names, denoiseNames()...)
	sort.Strings(names)
	return names
}

// TaskByName builds the task called name with the parameters in cfg; zero
// fields take the task's defaults, so TaskByName(name, TaskConfig{}) gives the
// default configuration.
func TaskByName(name string, cfg TaskConfig) (Task, error) {
	if base, ok := denoiseName(name); ok {
		return newDenoiseTask(base, cfg)
	}
	build, ok := registry[name]
	if !ok {
		bases := make([]string, 0, len(registry))
		for base := range registry {
			bases = append(bases, base)
		}
		sort.Strings(bases)
		return nil, fmt.Errorf("unknown task %s (valid: %s, and denoise-<task> for each)", quote.Text(name), strings.Join(bases, ", "))
	}
	return build(cfg)
}

// check is the body shared by the tasks' Check methods: it extracts the
// scored tokens of pred and hands them, with the problem, to correct.
func check(t Task, ex Example, pred []int, correct func(problem, answer []int) bool) bool {
	if len(pred) != len(ex.Target) || len(ex.Input) < t.SeqLen() {
		return false
	}
	ans := make([]int, 0, t.AnswerLen())
	for i, tok := range ex.Target {
		if tok != IgnoreIndex {
			ans = append(ans, pred[i])
		}
	}
	if len(ans) != t.AnswerLen() {
		return false
	}
	return correct(ex.Input[:t.SeqLen()], ans)
}

// ignored returns a slice of n IgnoreIndex values.
func ignored(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = IgnoreIndex
	}
	return s
}
