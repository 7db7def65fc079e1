package optim_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/optim"
	"gorgonia.org/tensor"
)

// testParams builds a small model-like parameter set with deterministic values.
func testParams(t testing.TB, dtype autodiff.Dtype) *autodiff.Params {
	t.Helper()
	ps, err := autodiff.NewParams(dtype, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []struct {
		name  string
		shape []int
	}{
		{"emb.weight", []int{5, 4}},
		{"blocks.0.attn.q.weight", []int{4, 4}},
		{"blocks.0.attn.q.bias", []int{4}},
		{"blocks.0.ln1.weight", []int{4}},
	} {
		if _, err := ps.Root().New(spec.name, spec.shape, autodiff.Normal(0, 1)); err != nil {
			t.Fatal(err)
		}
	}
	return ps
}

// fillGrads sets deterministic, step-dependent gradients.
func fillGrads(ps *autodiff.Params, step int) {
	for k, p := range ps.List() {
		for i := range p.Size() {
			v := math.Sin(0.37*float64(i)+1.3*float64(k)+0.71*float64(step)) * (1 + 0.1*float64(step))
			switch p.Dtype() {
			case autodiff.Float32:
				p.GradFloat32s()[i] = float32(v)
			default:
				p.GradFloat64s()[i] = v
			}
		}
	}
}

// cloneParams returns a new registry holding copies of ps's values, as a checkpoint
// reload would.
func cloneParams(t *testing.T, ps *autodiff.Params) *autodiff.Params {
	t.Helper()
	out, err := autodiff.NewParams(ps.Dtype(), 99)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps.List() {
		q, err := out.Root().New(p.Name(), p.Shape(), autodiff.Zeros())
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Set(p.Value()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// builders makes every optimizer with non-trivial settings, including a schedule and
// clipping, so that resuming must restore moments, step count and schedule position.
var builders = map[string]func(ps *autodiff.Params) (optim.Optimizer, error){
	"sgd": func(ps *autodiff.Params) (optim.Optimizer, error) {
		return optim.NewSGD(optim.DecayGroups(ps.List(), nil), optim.SGDConfig{
			LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 0.01,
			Schedule: optim.WithWarmup(2, optim.StepDecay{Every: 2, Gamma: 0.5}),
		})
	},
	"adam": func(ps *autodiff.Params) (optim.Optimizer, error) {
		cfg := optim.DefaultAdamConfig()
		cfg.WeightDecay, cfg.AMSGrad, cfg.MaxGradNorm = 0.01, true, 1
		cfg.Schedule = optim.WithWarmup(2, optim.Cosine{Steps: 4, MinFactor: 0.1})
		return optim.NewAdam(optim.All(ps.List()), cfg)
	},
	"adamw": func(ps *autodiff.Params) (optim.Optimizer, error) {
		cfg := optim.DefaultAdamWConfig()
		cfg.LR, cfg.WeightDecay, cfg.MaxGradNorm = 0.01, 0.1, 0.5
		cfg.Schedule = optim.WithWarmup(3, optim.Cosine{Steps: 5, MinFactor: 0.1})
		return optim.NewAdamW(optim.DecayGroups(ps.List(), nil), cfg)
	},
	"rmsprop": func(ps *autodiff.Params) (optim.Optimizer, error) {
		cfg := optim.DefaultRMSPropConfig()
		cfg.Momentum, cfg.Centered, cfg.WeightDecay = 0.5, true, 0.01
		cfg.Schedule = optim.Exponential{Gamma: 0.9}
		return optim.NewRMSProp(optim.All(ps.List()), cfg)
	},
	"adagrad": func(ps *autodiff.Params) (optim.Optimizer, error) {
		cfg := optim.DefaultAdagradConfig()
		cfg.LRDecay, cfg.InitialAccumulatorValue = 0.1, 0.05
		cfg.Schedule = optim.LinearDecay{Steps: 6, MinFactor: 0.2}
		return optim.NewAdagrad(optim.All(ps.List()), cfg)
	},
}

func mustBuild(t *testing.T, name string, ps *autodiff.Params) optim.Optimizer {
	t.Helper()
	opt, err := builders[name](ps)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

func run(t *testing.T, opt optim.Optimizer, ps *autodiff.Params, from, to int) {
	t.Helper()
	for s := from; s < to; s++ {
		fillGrads(ps, s)
		if err := opt.Step(); err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
		ps.ZeroGrad()
	}
}

// bits returns the values of t as float64 bit patterns (exact for float32 too).
func bits(t *tensor.Dense) []uint64 {
	var out []uint64
	switch d := t.Data().(type) {
	case []float32:
		for _, v := range d {
			out = append(out, uint64(math.Float32bits(v)))
		}
	case []float64:
		for _, v := range d {
			out = append(out, math.Float64bits(v))
		}
	}
	return out
}

func sameBits(a, b *tensor.Dense) bool {
	x, y := bits(a), bits(b)
	if len(x) != len(y) || a.Dtype() != b.Dtype() {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// TestResumeBitIdentical checks that State → LoadState into a fresh optimizer over
// reloaded parameters continues exactly like uninterrupted training.
func TestResumeBitIdentical(t *testing.T) {
	const total, cut = 8, 3
	for _, dtype := range []autodiff.Dtype{autodiff.Float32, autodiff.Float64} {
		for name := range builders {
			t.Run(fmt.Sprintf("%s/%v", name, dtype), func(t *testing.T) {
				straight := testParams(t, dtype)
				optA := mustBuild(t, name, straight)
				run(t, optA, straight, 0, total)

				first := testParams(t, dtype)
				optB := mustBuild(t, name, first)
				run(t, optB, first, 0, cut)
				state := optB.State()

				resumed := cloneParams(t, first)
				optC := mustBuild(t, name, resumed)
				if err := optC.LoadState(state); err != nil {
					t.Fatal(err)
				}
				if optC.StepCount() != cut || optC.LR() != optB.LR() {
					t.Fatalf("after load: step %d lr %v, want step %d lr %v", optC.StepCount(), optC.LR(), cut, optB.LR())
				}
				for _, tt := range state { // the optimizer must not alias the loaded tensors
					tt.Zero()
				}
				run(t, optC, resumed, cut, total)

				for _, p := range straight.List() {
					if !sameBits(p.Value(), resumed.Get(p.Name()).Value()) {
						t.Errorf("%s differs after resuming", p.Name())
					}
				}
				sa, sc := optA.State(), optC.State()
				if len(sa) != len(sc) {
					t.Fatalf("state sizes %d and %d", len(sa), len(sc))
				}
				for k, v := range sa {
					if !sameBits(v, sc[k]) {
						t.Errorf("state %q differs after resuming", k)
					}
				}
			})
		}
	}
}

func TestStateKeys(t *testing.T) {
	ps := testParams(t, autodiff.Float32)
	opt := mustBuild(t, "adam", ps)
	st := opt.State()
	for _, key := range []string{"step", "blocks.0.attn.q.weight.exp_avg", "blocks.0.attn.q.weight.exp_avg_sq", "emb.weight.max_exp_avg_sq"} {
		if _, ok := st[key]; !ok {
			t.Errorf("State has no %q", key)
		}
	}
	if want := 1 + 3*ps.Len(); len(st) != want {
		t.Errorf("State has %d entries, want %d", len(st), want)
	}
	if got := st["emb.weight.exp_avg"]; got.Dtype() != tensor.Float32 || !got.Shape().Eq(tensor.Shape{5, 4}) {
		t.Errorf("emb.weight.exp_avg: %v %v, want float32 (5, 4)", got.Dtype(), got.Shape())
	}
}

func TestLoadStateErrors(t *testing.T) {
	ps := testParams(t, autodiff.Float64)
	opt := mustBuild(t, "adamw", ps)
	run(t, opt, ps, 0, 2)
	good := opt.State()

	cases := []struct {
		name   string
		edit   func(m map[string]*tensor.Dense)
		expect []string
	}{
		{"missing", func(m map[string]*tensor.Dense) { delete(m, "blocks.0.attn.q.bias.exp_avg") },
			[]string{`missing tensor "blocks.0.attn.q.bias.exp_avg" (shape (4))`}},
		{"unknown", func(m map[string]*tensor.Dense) {
			m["blocks.1.mlp.weight.exp_avg"] = tensor.New(tensor.WithShape(2, 2), tensor.Of(tensor.Float64))
		}, []string{`unknown tensor "blocks.1.mlp.weight.exp_avg"`, "(2, 2)"}},
		{"shape", func(m map[string]*tensor.Dense) {
			m["emb.weight.exp_avg_sq"] = tensor.New(tensor.WithShape(4, 5), tensor.Of(tensor.Float64))
		}, []string{`"emb.weight.exp_avg_sq" has shape (4, 5), want (5, 4)`}},
		{"step", func(m map[string]*tensor.Dense) { delete(m, optim.StepKey) }, []string{`missing tensor "step"`}},
		{"fractional step", func(m map[string]*tensor.Dense) {
			m[optim.StepKey] = tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{2.5}))
		}, []string{`"step" holds 2.5`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := opt.State()
			c.edit(m)
			before := opt.State()
			err := opt.LoadState(m)
			if err == nil {
				t.Fatal("LoadState succeeded")
			}
			for _, s := range c.expect {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			after := opt.State()
			for k, v := range before {
				if !sameBits(v, after[k]) {
					t.Errorf("failed LoadState changed %q", k)
				}
			}
		})
	}
	if err := opt.LoadState(good); err != nil {
		t.Fatalf("loading its own state: %v", err)
	}
}

// TestLoadStateConvertsDtype loads float64 state saved from float64 training into a
// float32 optimizer.
func TestLoadStateConvertsDtype(t *testing.T) {
	ps64 := testParams(t, autodiff.Float64)
	opt64 := mustBuild(t, "rmsprop", ps64)
	run(t, opt64, ps64, 0, 2)
	ps32 := testParams(t, autodiff.Float32)
	opt32 := mustBuild(t, "rmsprop", ps32)
	if err := opt32.LoadState(opt64.State()); err != nil {
		t.Fatal(err)
	}
	got := opt32.State()["emb.weight.square_avg"].Data().([]float32)
	want := opt64.State()["emb.weight.square_avg"].Data().([]float64)
	for i := range want {
		if got[i] != float32(want[i]) {
			t.Fatalf("element %d: %v, want %v", i, got[i], float32(want[i]))
		}
	}
}
