package optim_test

import (
	"math"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/optim"
)

func TestSchedules(t *testing.T) {
	cosine := optim.Cosine{Steps: 100, MinFactor: 0.1}
	warm := optim.WithWarmup(10, cosine)
	cases := []struct {
		name  string
		s     optim.Schedule
		step  int
		want  float64
		exact bool
	}{
		{"constant", optim.Constant{}, 12345, 1, true},
		{"warmup start", warm, 0, 0.1, true},
		{"warmup middle", warm, 4, 0.5, true},
		{"warmup end", warm, 9, 1, true},
		{"cosine start after warmup", warm, 10, 1, true},
		{"cosine midpoint after warmup", warm, 60, 0.55, false},
		{"cosine quarter", cosine, 25, 0.1 + 0.9*(1+math.Sqrt2/2)/2, false},
		{"cosine midpoint", cosine, 50, 0.55, false},
		{"cosine end", cosine, 100, 0.1, true},
		{"cosine floor", cosine, 1000, 0.1, true},
		{"cosine floor after warmup", warm, 110, 0.1, true},
		{"warmup alone", optim.WithWarmup(4, nil), 1, 0.5, true},
		{"warmup alone after", optim.WithWarmup(4, nil), 400, 1, true},
		{"no warmup", optim.WithWarmup(0, cosine), 50, 0.55, false},
		{"linear decay midpoint", optim.LinearDecay{Steps: 10, MinFactor: 0.2}, 5, 0.6, false},
		{"linear decay floor", optim.LinearDecay{Steps: 10, MinFactor: 0.2}, 11, 0.2, true},
		{"step decay before", optim.StepDecay{Every: 3, Gamma: 0.5}, 2, 1, true},
		{"step decay after", optim.StepDecay{Every: 3, Gamma: 0.5}, 7, 0.25, true},
		{"step decay with warmup", optim.WithWarmup(2, optim.StepDecay{Every: 3, Gamma: 0.5}), 5, 0.5, true},
		{"exponential", optim.Exponential{Gamma: 0.9}, 2, 0.81, false},
		{"func", optim.ScheduleFunc(func(s int) float64 { return float64(s) }), 3, 3, true},
	}
	for _, c := range cases {
		got := c.s.Factor(c.step)
		if c.exact && got != c.want || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Factor(%d) = %.17g, want %.17g", c.name, c.step, got, c.want)
		}
	}
}

func TestScheduleValidation(t *testing.T) {
	bad := []optim.Schedule{
		optim.Cosine{Steps: 0},
		optim.Cosine{Steps: 10, MinFactor: 1.5},
		optim.WithWarmup(-1, nil),
		optim.WithWarmup(5, optim.Cosine{Steps: -3}),
		optim.LinearDecay{Steps: 10, MinFactor: -0.1},
		optim.StepDecay{Every: 0, Gamma: 0.5},
		optim.Exponential{Gamma: math.NaN()},
	}
	ps := testParams(t, float32Dtype)
	for _, s := range bad {
		if _, err := optim.NewSGD(optim.All(ps.List()), optim.SGDConfig{LR: 0.1, Schedule: s}); err == nil {
			t.Errorf("NewSGD accepted schedule %#v", s)
		}
	}
}

// TestLRFollowsSchedule checks that LR reports the rate of the next Step and that
// groups scale it.
func TestLRFollowsSchedule(t *testing.T) {
	ps := testParams(t, float64Dtype)
	w := ps.Get("blocks.0.attn.q.weight")
	opt, err := optim.NewSGD([]optim.Group{{Params: []*autodiff.Param{w}, LRScale: 0.5}}, optim.SGDConfig{
		LR: 0.2, Schedule: optim.WithWarmup(2, optim.Exponential{Gamma: 0.5}),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantLR := []float64{0.1, 0.2, 0.2, 0.1, 0.05}
	for s, want := range wantLR {
		if got := opt.LR(); math.Abs(got-want) > 1e-15 {
			t.Errorf("before step %d: LR %v, want %v", s, got, want)
		}
		for i := range w.GradFloat64s() {
			w.GradFloat64s()[i] = 1
		}
		before := w.Float64s()[0]
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		// Plain SGD with unit gradients moves each weight by exactly lr·LRScale.
		if d := before - w.Float64s()[0]; math.Abs(d-0.5*want) > 1e-15 {
			t.Errorf("step %d moved the weight by %v, want %v", s, d, 0.5*want)
		}
		if got, want := opt.GradNorm(), 4.0; got != want {
			t.Errorf("step %d: GradNorm %v, want %v", s, got, want)
		}
		ps.ZeroGrad()
	}
}
