package datasets

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// restore returns the clean sequence of a denoise example: the input with
// the targets written over the corrupted positions.
func restore(ex Example) []int {
	clean := slices.Clone(ex.Input)
	for i, t := range ex.Target {
		if t != IgnoreIndex {
			clean[i] = t
		}
	}
	return clean
}

func TestDenoiseReverse(t *testing.T) {
	for _, mode := range []string{"", DenoiseMask, DenoiseSubstitute} {
		task, err := TaskByName("denoise-reverse", TaskConfig{SeqLen: 8, CorruptMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		// 16 positions, round(0.15·16) = 2 corrupted.
		wantVocab := 11
		if mode == DenoiseSubstitute {
			wantVocab = 10
		}
		if task.Name() != "denoise-reverse" || task.SeqLen() != 16 || task.AnswerLen() != 2 || task.Vocab() != wantVocab {
			t.Fatalf("mode %q: name %q, T %d, answer %d, vocab %d; want denoise-reverse, 16, 2, %d",
				mode, task.Name(), task.SeqLen(), task.AnswerLen(), task.Vocab(), wantVocab)
		}
		rng := NewRand(3)
		for range 500 {
			ex := task.Sample(rng)
			clean := restore(ex)
			x, y := clean[:8], slices.Clone(clean[8:])
			slices.Reverse(y)
			if !slices.Equal(x, y) {
				t.Fatalf("mode %q: clean sequence %v is not x followed by x reversed", mode, clean)
			}
			for i, tgt := range ex.Target {
				if tgt == IgnoreIndex {
					continue
				}
				switch in := ex.Input[i]; {
				case mode != DenoiseSubstitute && in != 10:
					t.Fatalf("mode %q: corrupted position %d holds %d, want MASK 10: %v", mode, i, in, ex)
				case mode == DenoiseSubstitute && (in == tgt || in < 0 || in >= 10):
					t.Fatalf("substitute: position %d holds %d for clean %d: %v", i, in, tgt, ex)
				}
			}
			if !task.Check(ex, ex.Target) {
				t.Fatalf("mode %q: checker rejects the clean tokens of %v", mode, ex)
			}
			if task.Check(ex, ex.Input) {
				t.Fatalf("mode %q: checker accepts the unrestored input %v", mode, ex)
			}
			// Every corrupted token must be restored, not just one.
			for i, tgt := range ex.Target {
				if tgt != IgnoreIndex {
					wrong := slices.Clone(ex.Target)
					wrong[i] = (tgt + 1) % 10
					if task.Check(ex, wrong) {
						t.Fatalf("mode %q: checker accepts %v with position %d wrong: %v", mode, wrong, i, ex)
					}
				}
			}
		}
	}
}

// The substituted symbol is uniform among the other ids, and corrupted
// positions are uniform: each is corrupted with frequency K/L.
func TestDenoiseCorruptionIsUniform(t *testing.T) {
	task, err := TaskByName("denoise-copy", TaskConfig{SeqLen: 5, Vocab: 4, CorruptRate: 0.2, CorruptMode: DenoiseSubstitute})
	if err != nil {
		t.Fatal(err)
	}
	if task.AnswerLen() != 2 || task.SeqLen() != 10 {
		t.Fatalf("answer %d of %d positions, want 2 of 10", task.AnswerLen(), task.SeqLen())
	}
	rng := NewRand(8)
	const n = 6000
	var pos [10]int
	var sub [4][4]int // [clean][substituted]
	for range n {
		ex := task.Sample(rng)
		for i, tgt := range ex.Target {
			if tgt != IgnoreIndex {
				pos[i]++
				sub[tgt][ex.Input[i]]++
			}
		}
	}
	for i, c := range pos { // expected n·2/10 = 1200 each
		if c < 1080 || c > 1320 {
			t.Errorf("position %d corrupted %d times of %d, want about 1200", i, c, n)
		}
	}
	for a := range 4 {
		if sub[a][a] != 0 {
			t.Errorf("symbol %d substituted by itself %d times", a, sub[a][a])
		}
		total := sub[a][0] + sub[a][1] + sub[a][2] + sub[a][3]
		for b := range 4 {
			if b != a && math.Abs(float64(sub[a][b])-float64(total)/3) > 0.15*float64(total)/3 {
				t.Errorf("symbol %d substituted by %d %d times of %d, want about a third", a, b, sub[a][b], total)
			}
		}
	}
}

func TestDenoiseRate(t *testing.T) {
	for _, rate := range []float64{0.01, 0.1, 0.15, 0.3, 0.5, 0.9, 1} {
		task, err := TaskByName("denoise-sort", TaskConfig{SeqLen: 20, CorruptRate: rate})
		if err != nil {
			t.Fatal(err)
		}
		b, err := SampleBatch(task, NewRand(5), 50, Aligned)
		if err != nil {
			t.Fatal(err)
		}
		scored := 0
		for _, m := range b.Mask() {
			if m {
				scored++
			}
		}
		frac := float64(scored) / float64(len(b.Targets))
		// 40 positions: the count is rounded, and at least 1.
		if want := max(rate, 1.0/40); math.Abs(frac-want) > 1.0/80+1e-9 {
			t.Errorf("rate %g: fraction corrupted %.4f, want %g within 1/80", rate, frac, want)
		}
	}
}

// Every base task has a denoise task whose clean sequence is the base
// problem followed by its answer, which the base checker accepts.
func TestDenoiseEveryBase(t *testing.T) {
	names := TaskNames()
	for _, base := range []string{"addition", "copy", "dyck1", "dyck2", "modular", "parity", "recall", "reverse", "sort"} {
		if !slices.Contains(names, "denoise-"+base) {
			t.Errorf("TaskNames lacks denoise-%s", base)
		}
		for _, mode := range []string{DenoiseMask, DenoiseSubstitute} {
			bt, _ := TaskByName(base, TaskConfig{})
			task, err := TaskByName("denoise-"+base, TaskConfig{CorruptMode: mode, CorruptRate: 0.3})
			if err != nil {
				t.Fatal(err)
			}
			n := bt.SeqLen()
			rng := NewRand(9)
			for range 100 {
				ex := task.Sample(rng)
				clean := restore(ex)
				// The clean sequence in the Causal layout of the base task.
				c := Example{Input: clean[:len(clean)-1], Target: ignored(len(clean) - 1)}
				copy(c.Target[n-1:], clean[n:])
				if !bt.Check(c, c.Target) {
					t.Fatalf("%s %s: clean sequence %v is not a solved %s problem", task.Name(), mode, clean, base)
				}
			}
		}
	}
}

func TestDenoiseWrapsAnyTask(t *testing.T) {
	base, _ := TaskByName("parity", TaskConfig{SeqLen: 9})
	task, err := Denoise(base, DenoiseConfig{Rate: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if task.Name() != "denoise-parity" || task.SeqLen() != 10 || task.AnswerLen() != 5 || task.Vocab() != 3 {
		t.Errorf("name %q, T %d, answer %d, vocab %d", task.Name(), task.SeqLen(), task.AnswerLen(), task.Vocab())
	}
	if _, err := Denoise(nil, DenoiseConfig{}); err == nil {
		t.Error("Denoise(nil): no error")
	}
}

func TestDenoiseConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  TaskConfig
		want string
	}{
		{"denoise-reverse", TaskConfig{CorruptMode: "blur"}, `task denoise-reverse: unknown CorruptMode "blur" (valid: mask, substitute)`},
		{"denoise-reverse", TaskConfig{CorruptRate: 1.5}, "CorruptRate=1.5 must be in (0, 1]"},
		{"denoise-reverse", TaskConfig{CorruptRate: -0.1}, "CorruptRate=-0.1 must be in (0, 1]"},
		{"denoise-reverse", TaskConfig{CorruptRate: math.NaN()}, "CorruptRate=NaN must be in (0, 1]"},
		{"denoise-reverse", TaskConfig{Digits: 3}, "task denoise-reverse: task reverse: parameter Digits does not apply"},
		{"denoise-addition", TaskConfig{Vocab: 1}, "Vocab=1 is too small"},
		{"reverse", TaskConfig{CorruptRate: 0.2}, "parameter CorruptRate does not apply"},
		{"modular", TaskConfig{CorruptMode: "mask"}, "parameter CorruptMode does not apply"},
		{"denoise-nosuch", TaskConfig{}, `unknown task "denoise-nosuch"`},
		{"denoise-denoise-copy", TaskConfig{}, `unknown task "denoise-denoise-copy"`},
	}
	for _, c := range cases {
		_, err := TaskByName(c.name, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("TaskByName(%q, %+v) error = %v, want it to contain %q", c.name, c.cfg, err, c.want)
		}
	}
}

// A TaskConfig saved before the corruption fields existed loads with the
// defaults, and one with them round-trips through JSON.
func TestDenoiseConfigJSON(t *testing.T) {
	var old TaskConfig
	if err := json.Unmarshal([]byte(`{"SeqLen":8,"Vocab":0}`), &old); err != nil {
		t.Fatal(err)
	}
	if _, err := TaskByName("reverse", old); err != nil {
		t.Errorf("old config: %v", err)
	}
	cfg := TaskConfig{SeqLen: 8, CorruptRate: 0.25, CorruptMode: DenoiseSubstitute}
	js, _ := json.Marshal(cfg)
	var back TaskConfig
	if err := json.Unmarshal(js, &back); err != nil || back != cfg {
		t.Fatalf("round trip %s: %+v, %v", js, back, err)
	}
	a, _ := TaskByName("denoise-reverse", cfg)
	b, _ := TaskByName("denoise-reverse", back)
	ba, _ := SampleBatch(a, NewRand(1), 4, Aligned)
	bb, _ := SampleBatch(b, NewRand(1), 4, Aligned)
	if !slices.Equal(ba.Inputs, bb.Inputs) || !slices.Equal(ba.Targets, bb.Targets) {
		t.Error("equal configurations and seeds give different batches")
	}
}

// On denoise-reverse every corrupted token whose mirror copy is intact can be
// read back from the input alone; the oracle that does so (and guesses 0
// otherwise) reaches the best possible accuracy, computed here in closed form
// for 5 corrupted positions of 32: a token's mirror is corrupted with
// probability 4/31, so token accuracy is 1 − (4/31)(9/10) = 0.8839; sequence
// accuracy sums, over the number c of corrupted mirror pairs, P(c)/10^c =
// 0.69411 + 0.28921/10 + 0.01669/100 = 0.7232.
func TestDenoiseReverseOracle(t *testing.T) {
	for _, mode := range []string{DenoiseMask, DenoiseSubstitute} {
		task, err := TaskByName("denoise-reverse", TaskConfig{CorruptMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		L := task.SeqLen()
		b, err := SampleBatch(task, NewRand(6), 20000, Aligned)
		if err != nil {
			t.Fatal(err)
		}
		pred := make([]int, len(b.Targets))
		for r := range b.B {
			ex := b.Row(r)
			for i := range L {
				// The oracle knows which positions are corrupted (the
				// scored ones; in mask mode the input shows it too).
				if j := L - 1 - i; ex.Target[j] == IgnoreIndex {
					pred[r*L+i] = ex.Input[j]
				}
			}
		}
		var a Accuracy
		if err := a.Add(task, b, pred); err != nil {
			t.Fatal(err)
		}
		if math.Abs(a.Token()-0.8839) > 0.01 || math.Abs(a.Seq()-0.7232) > 0.01 {
			t.Errorf("%s: oracle token accuracy %.4f (want 0.8839), sequence %.4f (want 0.7232)", mode, a.Token(), a.Seq())
		}
	}
}
