package optim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/optim"
)

// embeddingProblem is a classifier logits = E[x]·W over ids 0..vocab−2, so that the
// last row of the embedding E never gets a gradient (issue 32: a zero AdamConfig
// divided 0 by 0 on that row). Gradients are computed by hand.
type embeddingProblem struct {
	ps   *autodiff.Params
	e, w *autodiff.Param
}

const (
	embVocab, embDim, embClasses = 6, 4, 3
)

func newEmbeddingProblem(t *testing.T) *embeddingProblem {
	t.Helper()
	ps, err := autodiff.NewParams(autodiff.Float32, 7)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ps.Root().New("tok_emb.weight", []int{embVocab, embDim}, autodiff.Normal(0, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ps.Root().New("head.weight", []int{embDim, embClasses}, autodiff.Normal(0, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	return &embeddingProblem{ps: ps, e: e, w: w}
}

// step adds the gradient of the mean cross-entropy over ids 0..vocab−2 (class id mod
// classes) and returns the loss.
func (p *embeddingProblem) step() float64 {
	E, W := p.e.Float32s(), p.w.Float32s()
	gE, gW := p.e.GradFloat32s(), p.w.GradFloat32s()
	const n = embVocab - 1
	var loss float64
	for x := range n {
		y := x % embClasses
		row := E[x*embDim : (x+1)*embDim]
		var logits [embClasses]float64
		zmax := math.Inf(-1)
		for c := range embClasses {
			for k, v := range row {
				logits[c] += float64(v) * float64(W[k*embClasses+c])
			}
			zmax = max(zmax, logits[c])
		}
		var sum float64
		for c := range embClasses {
			sum += math.Exp(logits[c] - zmax)
		}
		loss += (zmax + math.Log(sum) - logits[y]) / n
		for c := range embClasses {
			d := math.Exp(logits[c]-zmax) / sum
			if c == y {
				d--
			}
			d /= n
			for k, v := range row {
				gW[k*embClasses+c] += float32(d * float64(v))
				gE[x*embDim+k] += float32(d * float64(W[k*embClasses+c]))
			}
		}
	}
	return loss
}

// train runs steps updates of opt and returns the last loss.
func (p *embeddingProblem) train(t *testing.T, opt optim.Optimizer, steps int) float64 {
	t.Helper()
	var loss float64
	for s := range steps {
		loss = p.step()
		if err := opt.Step(); err != nil {
			t.Fatalf("step %d: %v", s+1, err)
		}
		p.ps.ZeroGrad()
	}
	return loss
}

// TestAdamZeroConfigTrains is issue 32's case: AdamConfig{LR: 3e-3} is Adam with betas
// (0.9, 0.999) and eps 1e-8, so the embedding row that never gets a gradient stays
// finite and the run is bit for bit the one with the values spelled out.
func TestAdamZeroConfigTrains(t *testing.T) {
	const steps = 300
	zero := newEmbeddingProblem(t)
	opt, err := optim.NewAdam(optim.All(zero.ps.List()), optim.AdamConfig{LR: 3e-3})
	if err != nil {
		t.Fatal(err)
	}
	first := zero.step()
	zero.ps.ZeroGrad()
	last := zero.train(t, opt, steps)
	for _, p := range zero.ps.List() {
		for i, v := range p.Float32s() {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s[%d] = %v after %d steps", p.Name(), i, v, steps)
			}
		}
	}
	if !(last < first/2) {
		t.Errorf("loss %v after %d steps, from %v: did not train", last, steps, first)
	}
	if c := opt.Config(); c.Beta1 != 0.9 || c.Beta2 != 0.999 || c.Eps != 1e-8 {
		t.Errorf("Config() = %+v, want betas 0.9, 0.999 and eps 1e-8", c)
	}

	explicit := newEmbeddingProblem(t)
	opt2, err := optim.NewAdam(optim.All(explicit.ps.List()), optim.AdamConfig{LR: 3e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	explicit.train(t, opt2, steps)
	for _, p := range zero.ps.List() {
		want := explicit.ps.Get(p.Name()).Float32s()
		for i, v := range p.Float32s() {
			if math.Float32bits(v) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %v, with explicit defaults %v", p.Name(), i, v, want[i])
			}
		}
	}
}

// TestZeroConfigIsDefault checks that every optimizer's zero config trains exactly as
// its Default...Config, and that Config reports the defaults.
func TestZeroConfigIsDefault(t *testing.T) {
	cases := []struct {
		name           string
		zero, explicit func([]optim.Group) (optim.Optimizer, error)
	}{
		{"sgd", func(g []optim.Group) (optim.Optimizer, error) { return optim.NewSGD(g, optim.SGDConfig{}) },
			func(g []optim.Group) (optim.Optimizer, error) { return optim.NewSGD(g, optim.DefaultSGDConfig()) }},
		{"adam", func(g []optim.Group) (optim.Optimizer, error) { return optim.NewAdam(g, optim.AdamConfig{}) },
			func(g []optim.Group) (optim.Optimizer, error) { return optim.NewAdam(g, optim.DefaultAdamConfig()) }},
		{"adamw", func(g []optim.Group) (optim.Optimizer, error) {
			return optim.NewAdamW(g, optim.AdamConfig{WeightDecay: 1e-2})
		}, func(g []optim.Group) (optim.Optimizer, error) { return optim.NewAdamW(g, optim.DefaultAdamWConfig()) }},
		{"rmsprop", func(g []optim.Group) (optim.Optimizer, error) { return optim.NewRMSProp(g, optim.RMSPropConfig{}) },
			func(g []optim.Group) (optim.Optimizer, error) {
				return optim.NewRMSProp(g, optim.DefaultRMSPropConfig())
			}},
		{"adagrad", func(g []optim.Group) (optim.Optimizer, error) { return optim.NewAdagrad(g, optim.AdagradConfig{}) },
			func(g []optim.Group) (optim.Optimizer, error) {
				return optim.NewAdagrad(g, optim.DefaultAdagradConfig())
			}},
	}
	for _, c := range cases {
		a, b := newEmbeddingProblem(t), newEmbeddingProblem(t)
		oa, err := c.zero(optim.All(a.ps.List()))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ob, err := c.explicit(optim.All(b.ps.List()))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a.train(t, oa, 20)
		b.train(t, ob, 20)
		if oa.LR() != ob.LR() {
			t.Errorf("%s: zero config LR %v, default %v", c.name, oa.LR(), ob.LR())
		}
		for _, p := range a.ps.List() {
			want := b.ps.Get(p.Name()).Float32s()
			for i, v := range p.Float32s() {
				if math.Float32bits(v) != math.Float32bits(want[i]) || math.IsNaN(float64(v)) {
					t.Fatalf("%s: %s[%d] = %v, with the default config %v", c.name, p.Name(), i, v, want[i])
				}
			}
		}
	}
	if got := (optim.StepDecay{Every: 2}).Factor(2); got != 0.1 {
		t.Errorf("StepDecay{Every: 2}.Factor(2) = %v, want 0.1 (Gamma 0 means 0.1)", got)
	}
}

// TestZeroConfigSettings checks the zeros that are settings, not defaults, and the
// zeros that are errors naming the field.
func TestZeroConfigSettings(t *testing.T) {
	p := newEmbeddingProblem(t)
	g := optim.All(p.ps.List())
	adamw, err := optim.NewAdamW(g, optim.AdamConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if wd := adamw.Config().WeightDecay; wd != 0 {
		t.Errorf("AdamW WeightDecay 0 became %v, want 0 (no decay)", wd)
	}
	adam, err := optim.NewAdam(g, optim.AdamConfig{Beta2: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	if c := adam.Config(); c.Beta1 != 0 || c.Beta2 != 0.99 {
		t.Errorf("betas (0, 0.99) became (%v, %v), want them kept: β1 0 is a setting", c.Beta1, c.Beta2)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{optim.AdamConfig{Beta1: 0.9}.Validate(), "adam: Beta2 0, want a value in (0, 1)"},
		{optim.AdamConfig{Eps: -1}.Validate(), "adam: Eps -1, want a finite value > 0 (0 means 1e-08)"},
		{optim.AdamConfig{LR: -1}.Validate(), "adam: LR -1, want a finite value > 0 (0 means 0.001)"},
		{optim.RMSPropConfig{Alpha: -0.5}.Validate(), "rmsprop: Alpha -0.5"},
		{optim.AdagradConfig{Eps: math.NaN()}.Validate(), "adagrad: Eps NaN"},
		{optim.SGDConfig{Nesterov: true}.Validate(), "sgd: Nesterov momentum needs Momentum > 0"},
		{optim.SGDConfig{Schedule: optim.StepDecay{}}.Validate(), "sgd: schedule: step decay: Every 0, want > 0"},
		{optim.SGDConfig{Schedule: optim.Exponential{}}.Validate(), "sgd: schedule: exponential: Gamma 0, want a finite value > 0"},
		{optim.SGDConfig{Schedule: optim.Cosine{}}.Validate(), "sgd: schedule: cosine: Steps 0, want > 0"},
		{optim.SGDConfig{Schedule: optim.WithWarmup(0, optim.LinearDecay{})}.Validate(), "sgd: schedule: linear decay: Steps 0, want > 0"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want %q", c.err, c.want)
		}
	}
	if _, err := optim.NewAdamW(g, optim.AdamConfig{Beta1: 0.9}); err == nil || !strings.HasPrefix(err.Error(), "adamw: Beta2 0") {
		t.Errorf("NewAdamW with Beta2 0: %v, want adamw: Beta2 0 ...", err)
	}
}
