package optim_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/optim"
)

// reference is testdata/reference.json, written by testdata/gen_reference.py with
// torch.optim (float64, single-tensor implementations).
type reference struct {
	TorchVersion string                 `json:"torch_version"`
	Shapes       map[string][]int       `json:"shapes"`
	Init         map[string][]float64   `json:"init"`
	Grads        map[string][][]float64 `json:"grads"`
	Cases        []refCase              `json:"cases"`
	Clip         struct {
		MaxNorm float64              `json:"max_norm"`
		Norm    float64              `json:"norm"`
		Grads   map[string][]float64 `json:"grads"`
	} `json:"clip"`
}

type refCase struct {
	Name   string         `json:"name"`
	Opt    string         `json:"opt"`
	Hyper  map[string]any `json:"hyper"`
	Groups []struct {
		Params      []string `json:"params"`
		LRScale     float64  `json:"lr_scale"`
		WeightDecay float64  `json:"weight_decay"`
	} `json:"groups"`
	MaxGradNorm float64                `json:"max_grad_norm"`
	Warmup      int                    `json:"warmup"`
	Steps       []map[string][]float64 `json:"steps"`
	GradNorms   []float64              `json:"grad_norms"`
}

// paramOrder is the creation order of the reference parameters.
var paramOrder = []string{"w", "b", "ln.weight"}

func loadReference(t *testing.T) *reference {
	t.Helper()
	data, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatalf("parse reference.json: %v", err)
	}
	return &ref
}

// newRefParams builds the reference parameters with their initial values.
func newRefParams(t *testing.T, ref *reference, dtype autodiff.Dtype) *autodiff.Params {
	t.Helper()
	ps, err := autodiff.NewParams(dtype, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range paramOrder {
		p, err := ps.Root().New(name, ref.Shapes[name], autodiff.Zeros())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetFloat64s(ref.Init[name]); err != nil {
			t.Fatal(err)
		}
	}
	return ps
}

// setGrads overwrites every gradient with the reference gradient of step s.
func setGrads(t *testing.T, ref *reference, ps *autodiff.Params, s int) {
	t.Helper()
	for _, p := range ps.List() {
		g := ref.Grads[p.Name()][s]
		switch p.Dtype() {
		case autodiff.Float32:
			for i, v := range g {
				p.GradFloat32s()[i] = float32(v)
			}
		default:
			copy(p.GradFloat64s(), g)
		}
	}
}

func num(h map[string]any, key string, def float64) float64 {
	if v, ok := h[key]; ok {
		return v.(float64)
	}
	return def
}

func flag(h map[string]any, key string) bool {
	v, ok := h[key]
	return ok && v.(bool)
}

// buildRef builds the Go optimizer of a reference case from its torch hyperparameters.
func buildRef(c refCase, ps *autodiff.Params) (optim.Optimizer, error) {
	groups := optim.All(ps.List())
	if c.Groups != nil {
		groups = nil
		for _, g := range c.Groups {
			var params []*autodiff.Param
			for _, n := range g.Params {
				params = append(params, ps.Get(n))
			}
			groups = append(groups, optim.Group{Params: params, LRScale: g.LRScale, WeightDecay: new(g.WeightDecay)})
		}
	}
	var sched optim.Schedule
	if c.Warmup > 0 {
		sched = optim.WithWarmup(c.Warmup, nil)
	}
	h := c.Hyper
	switch c.Opt {
	case "SGD":
		cfg := optim.DefaultSGDConfig()
		cfg.LR = num(h, "lr", cfg.LR)
		cfg.Momentum = num(h, "momentum", 0)
		cfg.Dampening = num(h, "dampening", 0)
		cfg.Nesterov = flag(h, "nesterov")
		cfg.WeightDecay = num(h, "weight_decay", 0)
		cfg.Schedule, cfg.MaxGradNorm = sched, c.MaxGradNorm
		return optim.NewSGD(groups, cfg)
	case "Adam", "AdamW":
		cfg := optim.DefaultAdamConfig()
		if c.Opt == "AdamW" {
			cfg = optim.DefaultAdamWConfig()
		}
		cfg.LR = num(h, "lr", cfg.LR)
		if b, ok := h["betas"].([]any); ok {
			cfg.Beta1, cfg.Beta2 = b[0].(float64), b[1].(float64)
		}
		cfg.Eps = num(h, "eps", cfg.Eps)
		cfg.WeightDecay = num(h, "weight_decay", cfg.WeightDecay)
		cfg.AMSGrad = flag(h, "amsgrad")
		cfg.Schedule, cfg.MaxGradNorm = sched, c.MaxGradNorm
		if c.Opt == "AdamW" {
			return optim.NewAdamW(groups, cfg)
		}
		return optim.NewAdam(groups, cfg)
	case "RMSprop":
		cfg := optim.DefaultRMSPropConfig()
		cfg.LR = num(h, "lr", cfg.LR)
		cfg.Alpha = num(h, "alpha", cfg.Alpha)
		cfg.Eps = num(h, "eps", cfg.Eps)
		cfg.WeightDecay = num(h, "weight_decay", 0)
		cfg.Momentum = num(h, "momentum", 0)
		cfg.Centered = flag(h, "centered")
		cfg.Schedule, cfg.MaxGradNorm = sched, c.MaxGradNorm
		return optim.NewRMSProp(groups, cfg)
	case "Adagrad":
		cfg := optim.DefaultAdagradConfig()
		cfg.LR = num(h, "lr", cfg.LR)
		cfg.LRDecay = num(h, "lr_decay", 0)
		cfg.WeightDecay = num(h, "weight_decay", 0)
		cfg.InitialAccumulatorValue = num(h, "initial_accumulator_value", 0)
		cfg.Eps = num(h, "eps", cfg.Eps)
		cfg.Schedule, cfg.MaxGradNorm = sched, c.MaxGradNorm
		return optim.NewAdagrad(groups, cfg)
	}
	return nil, fmt.Errorf("unknown optimizer %q", c.Opt)
}

// TestTorchReference checks the first three steps of every optimizer against
// torch.optim in float64 (tolerance 1e-7, absolute), and loosely in float32.
func TestTorchReference(t *testing.T) {
	ref := loadReference(t)
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	for _, dtype := range []autodiff.Dtype{autodiff.Float64, autodiff.Float32} {
		tol := 1e-7
		if dtype == autodiff.Float32 {
			tol = 1e-5
		}
		for _, c := range ref.Cases {
			t.Run(fmt.Sprintf("%s/%v", c.Name, dtype), func(t *testing.T) {
				ps := newRefParams(t, ref, dtype)
				opt, err := buildRef(c, ps)
				if err != nil {
					t.Fatal(err)
				}
				for s, want := range c.Steps {
					setGrads(t, ref, ps, s)
					if err := opt.Step(); err != nil {
						t.Fatalf("step %d: %v", s+1, err)
					}
					if c.GradNorms != nil {
						if d := math.Abs(opt.GradNorm() - c.GradNorms[s]); d > tol {
							t.Errorf("step %d: GradNorm %.17g, torch %.17g", s+1, opt.GradNorm(), c.GradNorms[s])
						}
					}
					for _, name := range paramOrder {
						p := ps.Get(name)
						worst := 0.0
						for i, w := range want[name] {
							worst = max(worst, math.Abs(p.At(i)-w))
						}
						if worst > tol {
							t.Errorf("step %d: %s differs from torch by %.3g (> %g)", s+1, name, worst, tol)
						}
					}
				}
				if opt.StepCount() != len(c.Steps) {
					t.Errorf("StepCount %d, want %d", opt.StepCount(), len(c.Steps))
				}
			})
		}
	}
}

// TestClipGradNormTorch compares ClipGradNorm with torch.nn.utils.clip_grad_norm_.
func TestClipGradNormTorch(t *testing.T) {
	ref := loadReference(t)
	ps := newRefParams(t, ref, autodiff.Float64)
	setGrads(t, ref, ps, 0)
	norm, err := optim.ClipGradNorm(ps.List(), ref.Clip.MaxNorm)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(norm-ref.Clip.Norm) > 1e-12 {
		t.Errorf("norm %.17g, torch %.17g", norm, ref.Clip.Norm)
	}
	for _, p := range ps.List() {
		for i, w := range ref.Clip.Grads[p.Name()] {
			if d := math.Abs(p.GradAt(i) - w); d > 1e-12 {
				t.Errorf("%s[%d]: clipped grad %.17g, torch %.17g", p.Name(), i, p.GradAt(i), w)
			}
		}
	}
}
