package datasets

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// wrongAnswer returns a copy of target with its first scored token changed.
func wrongAnswer(target []int, vocab int) []int {
	p := slices.Clone(target)
	for i, t := range p {
		if t != IgnoreIndex {
			p[i] = (t + 1) % vocab
			break
		}
	}
	return p
}

func TestTasksWellFormed(t *testing.T) {
	for _, name := range TaskNames() {
		t.Run(name, func(t *testing.T) {
			task, err := TaskByName(name, TaskConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if task.Name() != name {
				t.Errorf("Name() = %q", task.Name())
			}
			rng := NewRand(1)
			for i := range 300 {
				ex := task.Sample(rng)
				if len(ex.Input) != task.SeqLen() || len(ex.Target) != task.SeqLen() {
					t.Fatalf("example %d: input %d, target %d tokens, want %d", i, len(ex.Input), len(ex.Target), task.SeqLen())
				}
				for j := range ex.Input {
					if x := ex.Input[j]; x < 0 || x >= task.Vocab() {
						t.Fatalf("example %d: input token %d out of vocab %d", i, x, task.Vocab())
					}
					if y := ex.Target[j]; y != IgnoreIndex && (y < 0 || y >= task.Vocab()) {
						t.Fatalf("example %d: target token %d out of vocab %d", i, y, task.Vocab())
					}
				}
				if n := len(ex.Answer()); n != task.AnswerLen() {
					t.Fatalf("example %d: %d scored positions, want %d", i, n, task.AnswerLen())
				}
				if !task.Check(ex, ex.Target) {
					t.Fatalf("example %d: checker rejects the target: %v -> %v", i, ex.Input, ex.Target)
				}
				if task.Check(ex, wrongAnswer(ex.Target, task.Vocab())) {
					t.Fatalf("example %d: checker accepts a wrong answer: %v", i, ex.Input)
				}
				if task.Check(ex, ex.Target[1:]) {
					t.Fatalf("example %d: checker accepts a prediction of the wrong length", i)
				}

				c := CausalExample(ex)
				if want := Causal.RowLen(task); len(c.Input) != want || len(c.Target) != want {
					t.Fatalf("causal example %d: %d/%d tokens, want %d", i, len(c.Input), len(c.Target), want)
				}
				if !slices.Equal(c.Input[:task.SeqLen()], ex.Input) || !slices.Equal(c.Answer(), ex.Answer()) {
					t.Fatalf("causal example %d: %v does not extend %v", i, c, ex)
				}
				for j := task.SeqLen(); j < len(c.Input); j++ {
					if c.Input[j] != c.Target[j-1] {
						t.Fatalf("causal example %d: input %v is not the target %v shifted", i, c.Input, c.Target)
					}
				}
				if !task.Check(c, c.Target) || task.Check(c, wrongAnswer(c.Target, task.Vocab())) {
					t.Fatalf("causal example %d: checker disagrees", i)
				}
			}
		})
	}
}

func TestReverseMatchesReference(t *testing.T) {
	task, err := TaskByName("reverse", TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if task.Vocab() != 10 || task.SeqLen() != 16 || task.AnswerLen() != 16 {
		t.Fatalf("reverse defaults: vocab %d, T %d, answer %d; want 10, 16, 16", task.Vocab(), task.SeqLen(), task.AnswerLen())
	}
	b, err := SampleBatch(task, NewRand(7), 64, Aligned)
	if err != nil {
		t.Fatal(err)
	}
	var count [10]int
	for r := range b.B {
		ex := b.Row(r)
		for i := range 16 {
			count[ex.Input[i]]++
			if ex.Target[i] != ex.Input[15-i] {
				t.Fatalf("row %d: target %v is not input %v reversed", r, ex.Target, ex.Input)
			}
		}
	}
	for id, n := range count { // 1024 draws: each id expected ~102 times
		if n < 50 || n > 160 {
			t.Errorf("id %d drawn %d times of 1024, not uniform", id, n)
		}
	}
}

func TestCheckersOnKnownProblems(t *testing.T) {
	I := IgnoreIndex
	cases := []struct {
		name   string
		cfg    TaskConfig
		input  []int
		right  []int // aligned target that solves input
		wrongs [][]int
	}{
		{"copy", TaskConfig{SeqLen: 3, Vocab: 5}, []int{4, 0, 2}, []int{4, 0, 2}, [][]int{{4, 0, 3}}},
		{"sort", TaskConfig{SeqLen: 4, Vocab: 5}, []int{3, 1, 3, 0}, []int{0, 1, 3, 3}, [][]int{{0, 1, 3, 4}, {3, 1, 3, 0}}},
		{"reverse", TaskConfig{SeqLen: 3}, []int{1, 2, 3}, []int{3, 2, 1}, [][]int{{1, 2, 3}}},
		// 57 + 68 = 125; + is 10, = is 11, blank is 12.
		{"addition", TaskConfig{Digits: 2}, []int{5, 7, 10, 6, 8, 11, 12, 12, 12}, []int{I, I, I, I, I, I, 1, 2, 5}, [][]int{{I, I, I, I, I, I, 0, 2, 5}, {I, I, I, I, I, I, 1, 1, 5}}},
		// 99 + 01 = 100, the carry reaches the extra digit.
		{"addition", TaskConfig{Digits: 2}, []int{9, 9, 10, 0, 1, 11, 12, 12, 12}, []int{I, I, I, I, I, I, 1, 0, 0}, [][]int{{I, I, I, I, I, I, 0, 0, 0}}},
		// 2 - 5 = 4 (mod 7); - is 7, = is 8.
		{"modular", TaskConfig{Modulus: 7, Op: "-"}, []int{2, 7, 5, 8}, []int{I, I, I, 4}, [][]int{{I, I, I, 3}}},
		{"modular", TaskConfig{Modulus: 7, Op: "*"}, []int{3, 7, 5, 8}, []int{I, I, I, 1}, [][]int{{I, I, I, 2}}},
		{"parity", TaskConfig{SeqLen: 4}, []int{1, 0, 1, 1}, []int{I, I, I, 1}, [][]int{{I, I, I, 0}}},
		{"recall", TaskConfig{Pairs: 3, Queries: 2, Vocab: 8}, []int{5, 1, 2, 7, 0, 7, 2, 5}, []int{I, I, I, I, I, I, 7, 1}, [][]int{{I, I, I, I, I, I, 7, 7}}},
		{"dyck1", TaskConfig{SeqLen: 4}, []int{0, 1, 0, 1}, []int{I, I, I, 1}, [][]int{{I, I, I, 0}}},
		{"dyck1", TaskConfig{SeqLen: 4}, []int{0, 1, 1, 0}, []int{I, I, I, 0}, [][]int{{I, I, I, 1}}},
		// ( [ ] ) is balanced, ( [ ) ] is not.
		{"dyck2", TaskConfig{SeqLen: 4}, []int{0, 2, 3, 1}, []int{I, I, I, 1}, [][]int{{I, I, I, 0}}},
		{"dyck2", TaskConfig{SeqLen: 4}, []int{0, 2, 1, 3}, []int{I, I, I, 0}, [][]int{{I, I, I, 1}}},
	}
	for _, c := range cases {
		task, err := TaskByName(c.name, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		ex := Example{Input: c.input, Target: c.right}
		if !task.Check(ex, c.right) {
			t.Errorf("%s: %v -> %v rejected", c.name, c.input, c.right)
		}
		for _, w := range c.wrongs {
			if task.Check(ex, w) {
				t.Errorf("%s: %v -> %v accepted", c.name, c.input, w)
			}
		}
	}
}

func TestAdditionSamplesAreSums(t *testing.T) {
	task, err := TaskByName("addition", TaskConfig{Digits: 3})
	if err != nil {
		t.Fatal(err)
	}
	rng := NewRand(3)
	for range 100 {
		ex := task.Sample(rng)
		num := func(d []int) int {
			v := 0
			for _, x := range d {
				v = 10*v + x
			}
			return v
		}
		a, b, s := num(ex.Input[:3]), num(ex.Input[4:7]), num(ex.Answer())
		if a+b != s {
			t.Fatalf("%v: %d + %d != %d", ex, a, b, s)
		}
	}
}

func TestDyckBalanceAndDepth(t *testing.T) {
	task, err := TaskByName("dyck2", TaskConfig{SeqLen: 20, Depth: 3})
	if err != nil {
		t.Fatal(err)
	}
	rng := NewRand(5)
	pos := 0
	const n = 2000
	for range n {
		ex := task.Sample(rng)
		if ex.Answer()[0] == 0 {
			continue
		}
		pos++
		depth, maxDepth := 0, 0
		for _, tok := range ex.Input {
			if tok%2 == 0 {
				depth++
			} else {
				depth--
			}
			maxDepth = max(maxDepth, depth)
		}
		if maxDepth > 3 {
			t.Fatalf("%v has depth %d > 3", ex.Input, maxDepth)
		}
	}
	if pos < 900 || pos > 1100 {
		t.Errorf("%d of %d examples balanced, want about half", pos, n)
	}
}

func TestTaskDeterminism(t *testing.T) {
	for _, name := range TaskNames() {
		task, err := TaskByName(name, TaskConfig{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := SampleBatch(task, NewRand(11), 8, Aligned)
		b, _ := SampleBatch(task, NewRand(11), 8, Aligned)
		c, _ := SampleBatch(task, NewRand(12), 8, Aligned)
		if !slices.Equal(a.Inputs, b.Inputs) || !slices.Equal(a.Targets, b.Targets) {
			t.Errorf("%s: same seed, different batches", name)
		}
		if slices.Equal(a.Inputs, c.Inputs) {
			t.Errorf("%s: different seeds, same batch", name)
		}
	}
}

func TestTaskConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  TaskConfig
		want string // substring of the error
	}{
		{"nosuch", TaskConfig{}, "valid: addition, copy, dyck1, dyck2, modular, parity, recall, reverse, sort"},
		{"reverse", TaskConfig{Vocab: 1}, "Vocab=1 is too small"},
		{"reverse", TaskConfig{SeqLen: -3}, "SeqLen=-3 is too small"},
		{"reverse", TaskConfig{Digits: 3}, "parameter Digits does not apply"},
		{"copy", TaskConfig{SeqLen: 1 << 30}, "SeqLen=1073741824 is too large"},
		{"addition", TaskConfig{Digits: 2, SeqLen: 10}, "SeqLen=10 contradicts the derived length 3*Digits+3 = 9"},
		{"addition", TaskConfig{Vocab: 1}, "Vocab=1 is too small"},
		{"modular", TaskConfig{Op: "/"}, `unknown Op "/"`},
		{"modular", TaskConfig{Modulus: 1}, "Modulus=1 is too small"},
		{"modular", TaskConfig{Modulus: 7, Vocab: 5}, "disagree"},
		{"parity", TaskConfig{Vocab: 3}, "fixed at 2"},
		{"recall", TaskConfig{Pairs: 10, Vocab: 4}, "Vocab=4 is too small for Pairs=10"},
		{"dyck1", TaskConfig{SeqLen: 7}, "must be even"},
		{"dyck2", TaskConfig{SeqLen: 8, Depth: 5}, "Depth=5 is too large"},
		{"dyck2", TaskConfig{Pairs: 2}, "parameter Pairs does not apply"},
	}
	for _, c := range cases {
		_, err := TaskByName(c.name, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("TaskByName(%q, %+v) error = %v, want it to contain %q", c.name, c.cfg, err, c.want)
		}
	}
	task, _ := TaskByName("copy", TaskConfig{})
	if _, err := SampleBatch(task, NewRand(1), 0, Aligned); err == nil {
		t.Error("SampleBatch with batch size 0: no error")
	}
	if _, err := SampleBatch(task, NewRand(1), 2, Layout(9)); err == nil {
		t.Error("SampleBatch with unknown layout: no error")
	}
}

func TestBatchLayouts(t *testing.T) {
	task, _ := TaskByName("addition", TaskConfig{Digits: 2})
	for _, l := range []Layout{Aligned, Causal} {
		b, err := SampleBatch(task, NewRand(2), 5, l)
		if err != nil {
			t.Fatal(err)
		}
		if b.B != 5 || b.T != l.RowLen(task) || len(b.Inputs) != b.B*b.T || len(b.Targets) != b.B*b.T {
			t.Fatalf("%v: batch %dx%d with %d inputs and %d targets", l, b.B, b.T, len(b.Inputs), len(b.Targets))
		}
		scored := 0
		for _, m := range b.Mask() {
			if m {
				scored++
			}
		}
		if scored != 5*task.AnswerLen() {
			t.Errorf("%v: %d scored positions, want %d", l, scored, 5*task.AnswerLen())
		}
	}
	if got := Causal.RowLen(task); got != 9+3-1 {
		t.Errorf("causal row length %d, want 11", got)
	}
}

func TestAccuracy(t *testing.T) {
	task, _ := TaskByName("sort", TaskConfig{SeqLen: 4})
	b, _ := SampleBatch(task, NewRand(4), 10, Aligned)
	pred := slices.Clone(b.Targets)
	if acc, err := TokenAccuracy(b, pred); err != nil || acc != 1 {
		t.Errorf("perfect prediction: token accuracy %v, %v", acc, err)
	}
	if acc, err := SequenceAccuracy(task, b, pred); err != nil || acc != 1 {
		t.Errorf("perfect prediction: sequence accuracy %v, %v", acc, err)
	}
	// Spoil one token of each of the first 5 rows: 5 of 40 tokens and 5 of 10
	// rows are wrong.
	for r := range 5 {
		pred[r*4] = (pred[r*4] + 1) % 10
	}
	var a Accuracy
	if err := a.Add(task, b, pred); err != nil {
		t.Fatal(err)
	}
	if a.Token() != 35.0/40 || a.Seq() != 0.5 {
		t.Errorf("token accuracy %v (want 0.875), sequence accuracy %v (want 0.5)", a.Token(), a.Seq())
	}
	if err := a.Add(task, b, pred[1:]); err == nil {
		t.Error("prediction of the wrong length: no error")
	}
	if (Accuracy{}).Token() != 0 {
		t.Error("empty accuracy is not 0")
	}
}

func TestTaskStreamRestore(t *testing.T) {
	task, _ := TaskByName("recall", TaskConfig{})
	s, err := NewTaskStream(task, Causal, 4, 99)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Next()
	}
	js, err := json.Marshal(s.State())
	if err != nil {
		t.Fatal(err)
	}
	var want []Batch
	for range 5 {
		want = append(want, s.Next())
	}

	var st StreamState
	if err := json.Unmarshal(js, &st); err != nil {
		t.Fatal(err)
	}
	r, _ := NewTaskStream(task, Causal, 4, 12345) // the seed comes from the state
	if err := r.Restore(st); err != nil {
		t.Fatal(err)
	}
	if r.Step() != 3 {
		t.Errorf("restored step %d, want 3", r.Step())
	}
	for i, w := range want {
		g := r.Next()
		if !slices.Equal(g.Inputs, w.Inputs) || !slices.Equal(g.Targets, w.Targets) {
			t.Fatalf("batch %d after restore differs", i)
		}
	}

	other, _ := NewTaskStream(task, Aligned, 4, 99)
	if err := other.Restore(st); err == nil || !strings.Contains(err.Error(), "saved for") {
		t.Errorf("restore into a stream of another layout: error %v", err)
	}
	bigger, _ := NewTaskStream(task, Causal, 8, 99)
	if err := bigger.Restore(st); err == nil {
		t.Error("restore into a stream of another batch size: no error")
	}
	st.RNG = []byte("junk")
	if err := r.Restore(st); err == nil {
		t.Error("restore of a corrupt rng state: no error")
	}
	if _, err := NewTaskStream(task, Aligned, 0, 1); err == nil {
		t.Error("stream with batch size 0: no error")
	}
}

// The sampling does not depend on the rng beyond what it is handed.
func TestSampleUsesOnlyItsRNG(t *testing.T) {
	task, _ := TaskByName("dyck1", TaskConfig{})
	r1 := rand.New(rand.NewPCG(1, 2))
	r2 := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		if a, b := task.Sample(r1), task.Sample(r2); !slices.Equal(a.Input, b.Input) {
			t.Fatal("samples from equal generators differ")
		}
	}
}
