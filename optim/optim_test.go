package optim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/optim"
)

var (
	float32Dtype = autodiff.Float32
	float64Dtype = autodiff.Float64
)

// TestAdamWDecayWithZeroGrad checks that AdamW's decoupled decay shrinks weights that get
// no gradient by exactly (1 − lr·wd) per step, and leaves the no-decay group alone.
func TestAdamWDecayWithZeroGrad(t *testing.T) {
	ps := testParams(t, float64Dtype)
	w, bias := ps.Get("blocks.0.attn.q.weight"), ps.Get("blocks.0.attn.q.bias")
	w0 := append([]float64(nil), w.Float64s()...)
	b0 := append([]float64(nil), bias.Float64s()...)
	cfg := optim.DefaultAdamWConfig()
	cfg.LR, cfg.WeightDecay = 0.1, 0.2
	opt, err := optim.NewAdamW(optim.DecayGroups(ps.List(), nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const steps = 10
	for range steps {
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	shrink := math.Pow(1-0.1*0.2, steps)
	for i, v := range w.Float64s() {
		if math.Abs(v-w0[i]*shrink) > 1e-12 || (w0[i] != 0 && math.Abs(v) >= math.Abs(w0[i])) {
			t.Errorf("w[%d] = %v, want %v (from %v)", i, v, w0[i]*shrink, w0[i])
		}
	}
	for i, v := range bias.Float64s() {
		if v != b0[i] {
			t.Errorf("bias[%d] changed from %v to %v without gradient or decay", i, b0[i], v)
		}
	}
}

func TestClipGradNorm(t *testing.T) {
	ps := testParams(t, float32Dtype)
	fillGrads(ps, 0)
	want := optim.GradNorm(ps.List())
	g0 := ps.Get("emb.weight").GradAt(3)

	// Above the norm: nothing changes.
	norm, err := optim.ClipGradNorm(ps.List(), want*2)
	if err != nil || norm != want {
		t.Fatalf("ClipGradNorm = %v, %v; want %v", norm, err, want)
	}
	if got := ps.Get("emb.weight").GradAt(3); got != g0 {
		t.Errorf("gradient changed from %v to %v under the threshold", g0, got)
	}

	// Below: scaled to maxNorm·norm/(norm+1e-6), returns the pre-clip norm.
	norm, err = optim.ClipGradNorm(ps.List(), 0.5)
	if err != nil || norm != want {
		t.Fatalf("ClipGradNorm = %v, %v; want %v", norm, err, want)
	}
	coef := 0.5 / (want + 1e-6)
	if after := optim.GradNorm(ps.List()); math.Abs(after-0.5*want/(want+1e-6)) > 1e-6 {
		t.Errorf("norm after clipping %v, want %v", after, 0.5*want/(want+1e-6))
	}
	if got := ps.Get("emb.weight").GradAt(3); math.Abs(got-g0*coef) > 1e-7 {
		t.Errorf("clipped gradient %v, want %v", got, g0*coef)
	}

	if _, err := optim.ClipGradNorm(ps.List(), 0); err == nil {
		t.Error("ClipGradNorm accepted maxNorm 0")
	}
	ps.Get("emb.weight").GradFloat32s()[0] = float32(math.Inf(1))
	if norm, err := optim.ClipGradNorm(ps.List(), 1); err == nil || !math.IsInf(norm, 1) {
		t.Errorf("ClipGradNorm with an infinite gradient = %v, %v", norm, err)
	}
}

func TestClipGradValue(t *testing.T) {
	ps := testParams(t, float64Dtype)
	fillGrads(ps, 2)
	if err := optim.ClipGradValue(ps.List(), 0.3); err != nil {
		t.Fatal(err)
	}
	clipped := 0
	for _, p := range ps.List() {
		for i := range p.Size() {
			g := p.GradAt(i)
			if math.Abs(g) > 0.3 {
				t.Fatalf("%s[%d] = %v outside ±0.3", p.Name(), i, g)
			}
			if math.Abs(g) == 0.3 {
				clipped++
			}
		}
	}
	if clipped == 0 {
		t.Error("no gradient was clipped")
	}
}

// TestOptimizerClipping checks that MaxGradNorm clips before the update and that
// GradNorm reports the norm before clipping.
func TestOptimizerClipping(t *testing.T) {
	ps := testParams(t, float64Dtype)
	fillGrads(ps, 1)
	want := optim.GradNorm(ps.List())
	opt, err := optim.NewSGD(optim.All(ps.List()), optim.SGDConfig{LR: 0.1, MaxGradNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	if opt.GradNorm() != want {
		t.Errorf("GradNorm %v, want the pre-clip norm %v", opt.GradNorm(), want)
	}
	if after := optim.GradNorm(ps.List()); math.Abs(after-1) > 1e-6 {
		t.Errorf("gradients left with norm %v, want 1", after)
	}
}

func TestStepRejectsNonFinite(t *testing.T) {
	ps := testParams(t, float32Dtype)
	opt := mustBuild(t, "adam", ps)
	fillGrads(ps, 0)
	ps.Get("blocks.0.attn.q.bias").GradFloat32s()[1] = float32(math.NaN())
	before := opt.State()
	w0 := append([]float32(nil), ps.Get("emb.weight").Float32s()...)
	err := opt.Step()
	if err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("Step = %v, want a NaN error", err)
	}
	if opt.StepCount() != 0 {
		t.Errorf("StepCount %d after a failed step", opt.StepCount())
	}
	for i, v := range ps.Get("emb.weight").Float32s() {
		if v != w0[i] {
			t.Fatalf("emb.weight changed by a failed step")
		}
	}
	for k, v := range opt.State() {
		if !sameBits(v, before[k]) {
			t.Errorf("state %q changed by a failed step", k)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	ps := testParams(t, float64Dtype)
	all := optim.All(ps.List())
	adam := func(edit func(*optim.AdamConfig)) error {
		c := optim.DefaultAdamConfig()
		edit(&c)
		_, err := optim.NewAdam(all, c)
		return err
	}
	cases := map[string]error{
		"sgd negative lr":          second(optim.NewSGD(all, optim.SGDConfig{LR: -1})),
		"sgd nesterov no momentum": second(optim.NewSGD(all, optim.SGDConfig{LR: 1, Nesterov: true})),
		"sgd nesterov dampening":   second(optim.NewSGD(all, optim.SGDConfig{LR: 1, Momentum: 0.9, Dampening: 0.1, Nesterov: true})),
		"sgd negative momentum":    second(optim.NewSGD(all, optim.SGDConfig{LR: 1, Momentum: -0.1})),
		"adam beta1 = 1":           adam(func(c *optim.AdamConfig) { c.Beta1 = 1 }),
		"adam beta2 < 0":           adam(func(c *optim.AdamConfig) { c.Beta2 = -0.1 }),
		"adam negative eps":        adam(func(c *optim.AdamConfig) { c.Eps = -1 }),
		"adam NaN lr":              adam(func(c *optim.AdamConfig) { c.LR = math.NaN() }),
		"adam negative decay":      adam(func(c *optim.AdamConfig) { c.WeightDecay = -1 }),
		"adam negative clip":       adam(func(c *optim.AdamConfig) { c.MaxGradNorm = -1 }),
		"adamw beta1 > 1":          second(optim.NewAdamW(all, optim.AdamConfig{LR: 1, Beta1: 1.5})),
		"rmsprop alpha > 1":        second(optim.NewRMSProp(all, optim.RMSPropConfig{LR: 1, Alpha: 1.1})),
		"rmsprop negative mom":     second(optim.NewRMSProp(all, optim.RMSPropConfig{LR: 1, Alpha: 0.9, Momentum: -1})),
		"adagrad negative decay":   second(optim.NewAdagrad(all, optim.AdagradConfig{LR: 1, LRDecay: -1})),
		"adagrad negative acc":     second(optim.NewAdagrad(all, optim.AdagradConfig{LR: 1, InitialAccumulatorValue: -1})),
		"no params":                second(optim.NewSGD(nil, optim.SGDConfig{LR: 1})),
		"duplicate param":          second(optim.NewSGD(append(all, all...), optim.SGDConfig{LR: 1})),
		"negative LRScale":         second(optim.NewSGD([]optim.Group{{Params: ps.List(), LRScale: -1}}, optim.SGDConfig{LR: 1})),
		"negative group decay":     second(optim.NewSGD([]optim.Group{{Params: ps.List(), WeightDecay: new(-0.1)}}, optim.SGDConfig{LR: 1})),
	}
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	for name, err := range map[string]error{
		"sgd defaults":     second(optim.NewSGD(all, optim.DefaultSGDConfig())),
		"adam defaults":    second(optim.NewAdam(all, optim.DefaultAdamConfig())),
		"adamw defaults":   second(optim.NewAdamW(all, optim.DefaultAdamWConfig())),
		"rmsprop defaults": second(optim.NewRMSProp(all, optim.DefaultRMSPropConfig())),
		"adagrad defaults": second(optim.NewAdagrad(all, optim.DefaultAdagradConfig())),
		"lr 0":             second(optim.NewSGD(all, optim.SGDConfig{})),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestDefaultNoDecay(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
		want  bool
	}{
		{"blocks.0.attn.q.weight", []int{4, 4}, false},
		{"blocks.0.attn.q.bias", []int{4}, true},
		{"blocks.0.mlp.bias", []int{1, 4}, true},
		{"blocks.0.ln1.weight", []int{4}, true},
		{"blocks.0.ln_1.weight", []int{1, 4}, true},
		{"ln_f.gain", []int{1, 4}, true},
		{"blocks.0.norm.scale", []int{2, 4}, true},
		{"blocks.0.layernorm.weight", []int{2, 4}, true},
		{"tok_emb.weight", []int{10, 4}, true},
		{"embedding.table", []int{10, 4}, true},
		{"blocks.0.linear.weight", []int{4, 4}, false},
		{"kernel.bandwidth", []int{2, 2}, false},
		{"head.lnx.weight", []int{4, 4}, false},
		{"scalar", []int{1}, true},
	}
	for _, c := range cases {
		if got := optim.DefaultNoDecay(c.name, c.shape); got != c.want {
			t.Errorf("DefaultNoDecay(%q, %v) = %v, want %v", c.name, c.shape, got, c.want)
		}
	}
}

func TestDecayGroups(t *testing.T) {
	ps := testParams(t, float32Dtype)
	groups := optim.DecayGroups(ps.List(), nil)
	if len(groups) != 2 {
		t.Fatalf("%d groups, want 2", len(groups))
	}
	names := func(g optim.Group) (s []string) {
		for _, p := range g.Params {
			s = append(s, p.Name())
		}
		return s
	}
	if got := strings.Join(names(groups[0]), " "); got != "blocks.0.attn.q.weight" {
		t.Errorf("decay group %q", got)
	}
	if got := strings.Join(names(groups[1]), " "); got != "emb.weight blocks.0.attn.q.bias blocks.0.ln1.weight" {
		t.Errorf("no-decay group %q", got)
	}
	if groups[0].WeightDecay != nil || groups[1].WeightDecay == nil || *groups[1].WeightDecay != 0 {
		t.Errorf("weight decays %v, %v; want nil and 0", groups[0].WeightDecay, groups[1].WeightDecay)
	}
	custom := optim.DecayGroups(ps.List(), func(name string, _ []int) bool { return strings.HasPrefix(name, "emb") })
	if len(custom) != 2 || len(custom[1].Params) != 1 {
		t.Errorf("custom rule: %d groups", len(custom))
	}
	if g := optim.DecayGroups(ps.List(), func(string, []int) bool { return false }); len(g) != 1 {
		t.Errorf("all decayed: %d groups, want 1", len(g))
	}
}

// TestAccumulator checks that two accumulated micro-batches step like one batch whose
// gradient is their mean.
func TestAccumulator(t *testing.T) {
	for _, dtype := range []autodiff.Dtype{float32Dtype, float64Dtype} {
		psA, psB := testParams(t, dtype), testParams(t, dtype)
		optA, optB := mustBuild(t, "adamw", psA), mustBuild(t, "adamw", psB)
		acc, err := optim.NewAccumulator(optA, 2)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 3 {
			for micro := range 2 {
				fillGrads(psB, 2*step+micro) // scratch: compute this micro-batch's gradient
				for _, p := range psA.List() {
					q := psB.Get(p.Name())
					for i := range p.Size() {
						addGrad(p, i, q.GradAt(i))
					}
				}
				stepped, err := acc.Step()
				if err != nil {
					t.Fatal(err)
				}
				if stepped != (micro == 1) || acc.Pending() != (micro+1)%2 {
					t.Fatalf("micro-batch %d: stepped %v, pending %d", micro, stepped, acc.Pending())
				}
			}
			psA.ZeroGrad()
			// Reference: one step on the mean gradient.
			fillGrads(psB, 2*step)
			a := gradsOf(psB)
			fillGrads(psB, 2*step+1)
			b := gradsOf(psB)
			for k, q := range psB.List() {
				for i := range q.Size() {
					setGrad(q, i, (a[k][i]+b[k][i])/2)
				}
			}
			if err := optB.Step(); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range psA.List() {
			q := psB.Get(p.Name())
			for i := range p.Size() {
				if d := math.Abs(p.At(i) - q.At(i)); d > 1e-6 {
					t.Fatalf("%v %s[%d]: accumulated %v, batched %v", dtype, p.Name(), i, p.At(i), q.At(i))
				}
			}
		}
	}
	if _, err := optim.NewAccumulator(nil, 2); err == nil {
		t.Error("NewAccumulator accepted a nil optimizer")
	}
}

func gradsOf(ps *autodiff.Params) [][]float64 {
	var out [][]float64
	for _, p := range ps.List() {
		g := make([]float64, p.Size())
		for i := range g {
			g[i] = p.GradAt(i)
		}
		out = append(out, g)
	}
	return out
}

func setGrad(p *autodiff.Param, i int, v float64) {
	if p.Dtype() == float32Dtype {
		p.GradFloat32s()[i] = float32(v)
	} else {
		p.GradFloat64s()[i] = v
	}
}

func addGrad(p *autodiff.Param, i int, v float64) {
	if p.Dtype() == float32Dtype {
		p.GradFloat32s()[i] += float32(v)
	} else {
		p.GradFloat64s()[i] += v
	}
}

// TestStepDoesNotAllocate checks that steps after the first allocate nothing.
func TestStepDoesNotAllocate(t *testing.T) {
	for _, dtype := range []autodiff.Dtype{float32Dtype, float64Dtype} {
		for name := range builders {
			ps := testParams(t, dtype)
			opt := mustBuild(t, name, ps)
			fillGrads(ps, 0)
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(10, func() {
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s/%v: %v allocations per Step", name, dtype, allocs)
			}
		}
	}
}
