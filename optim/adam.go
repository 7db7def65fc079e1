package optim

import (
	"fmt"
	"math"

	"github.com/locusml/locus/optim/internal/kern"
)

// AdamConfig holds the hyperparameters of Adam and AdamW. A zero field means its
// default (see the package comment): AdamConfig{LR: 3e-4} is torch's Adam at lr 3e-4.
type AdamConfig struct {
	// LR is the base learning rate, scaled by Schedule and Group.LRScale; 0 means 1e-3.
	LR float64
	// Beta1 and Beta2 are the decay rates of the first and second moment estimates, in
	// [0, 1). Both 0 means the defaults 0.9 and 0.999. Beta1 0 with Beta2 set is a valid
	// setting (no averaging of the gradient, as torch's betas (0, β2)); Beta2 0 with
	// Beta1 set is an error: a gradient that vanishes after others would divide the
	// remembered m by Eps alone.
	Beta1, Beta2 float64
	// Eps is added to the denominator for numerical stability; 0 means 1e-8 (a zero
	// Eps divides 0 by 0 on a parameter whose gradients are all zero).
	Eps float64
	// WeightDecay is, for Adam, the L2 penalty added to the gradient and, for AdamW,
	// the decoupled decay rate. Zero is a valid setting: no decay, for AdamW too
	// (torch's AdamW default 1e-2 is DefaultAdamWConfig's). Groups may override it.
	WeightDecay float64
	// AMSGrad normalizes by the running maximum of the second moment (default false).
	AMSGrad bool
	// Schedule sets the learning rate per step; nil means Constant.
	Schedule Schedule
	// MaxGradNorm, when > 0, clips the global gradient norm before each step; 0 means
	// no clipping.
	MaxGradNorm float64
}

// DefaultAdamConfig returns torch.optim.Adam's defaults: LR 1e-3, betas (0.9, 0.999),
// Eps 1e-8, no weight decay, the values a zero AdamConfig takes.
func DefaultAdamConfig() AdamConfig {
	return AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// DefaultAdamWConfig returns torch.optim.AdamW's defaults: those of Adam with
// WeightDecay 1e-2 (a zero WeightDecay is no decay, not this default).
func DefaultAdamWConfig() AdamConfig {
	c := DefaultAdamConfig()
	c.WeightDecay = 1e-2
	return c
}

// Adam is the Adam optimizer with optional L2 weight decay and AMSGrad, as
// torch.optim.Adam. At step t:
//
//	g ← g + wd·p
//	m ← β1·m + (1−β1)·g
//	v ← β2·v + (1−β2)·g²
//	p ← p − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + eps)
//
// (with AMSGrad, v in the last line is its running maximum). Its slots are "exp_avg",
// "exp_avg_sq" and, with AMSGrad, "max_exp_avg_sq".
type Adam struct {
	base
	cfg       AdamConfig
	decoupled bool
}

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter), as
// torch.optim.AdamW: each step first shrinks p ← p·(1 − lr·wd), then applies the Adam
// update without weight decay in the gradient. Its slots are those of Adam.
type AdamW struct {
	Adam
}

// withDefaults returns c with its zero fields set to their defaults.
func (c AdamConfig) withDefaults() AdamConfig {
	d := DefaultAdamConfig()
	if c.LR == 0 {
		c.LR = d.LR
	}
	if c.Beta1 == 0 && c.Beta2 == 0 {
		c.Beta1, c.Beta2 = d.Beta1, d.Beta2
	}
	if c.Eps == 0 {
		c.Eps = d.Eps
	}
	return c
}

// Validate reports the first invalid field of c, its zero fields taken as their
// defaults; NewAdam and NewAdamW return the same error.
func (c AdamConfig) Validate() error { return c.withDefaults().validate("adam") }

func (c AdamConfig) validate(name string) error {
	if !(c.Beta1 >= 0 && c.Beta1 < 1) {
		return fmt.Errorf("%s: Beta1 %v, want a value in [0, 1)", name, c.Beta1)
	}
	if !(c.Beta2 > 0 && c.Beta2 < 1) {
		return fmt.Errorf("%s: Beta2 %v, want a value in (0, 1) (Beta1 and Beta2 both 0 mean 0.9 and 0.999)", name, c.Beta2)
	}
	if err := checkEps(name, c.Eps, DefaultAdamConfig().Eps); err != nil {
		return err
	}
	return c.common().validate(name)
}

func (c AdamConfig) common() common {
	return common{lr: c.LR, weightDecay: c.WeightDecay, sched: c.Schedule, maxGradNorm: c.MaxGradNorm, defaultLR: DefaultAdamConfig().LR}
}

// NewAdam returns an Adam optimizer over groups (see All and DecayGroups); zero fields
// of cfg take their defaults.
func NewAdam(groups []Group, cfg AdamConfig) (*Adam, error) {
	o := &Adam{cfg: cfg.withDefaults()}
	if err := o.setup("adam", groups); err != nil {
		return nil, err
	}
	return o, nil
}

// NewAdamW returns an AdamW optimizer over groups (see All and DecayGroups); zero
// fields of cfg take their defaults, except WeightDecay, whose zero means no decay.
func NewAdamW(groups []Group, cfg AdamConfig) (*AdamW, error) {
	o := &AdamW{Adam{cfg: cfg.withDefaults(), decoupled: true}}
	if err := o.setup("adamw", groups); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *Adam) setup(name string, groups []Group) error {
	c := o.cfg
	if err := c.validate(name); err != nil {
		return err
	}
	slots := []string{"exp_avg", "exp_avg_sq"}
	if c.AMSGrad {
		slots = append(slots, "max_exp_avg_sq")
	}
	return o.init(name, groups, c.common(), slots, 0, o)
}

// Config returns the optimizer's hyperparameters, defaults filled in.
func (o *Adam) Config() AdamConfig { return o.cfg }

func (o *Adam) update(st *paramState, lr float64, t, lo, hi int) {
	c := o.cfg
	k := adamCoefs{
		lr:        lr,
		beta1:     c.Beta1,
		beta2:     c.Beta2,
		eps:       c.Eps,
		stepSize:  lr / (1 - math.Pow(c.Beta1, float64(t))),
		bc2Sqrt:   math.Sqrt(1 - math.Pow(c.Beta2, float64(t))),
		amsgrad:   c.AMSGrad,
		decoupled: o.decoupled,
		wd:        st.wd,
	}
	if st.x32 != nil {
		var vmax []float32
		if c.AMSGrad {
			vmax = st.s32[2][lo:hi]
		}
		adamUpdate(st.x32[lo:hi], st.g32[lo:hi], st.s32[0][lo:hi], st.s32[1][lo:hi], vmax, &k)
	} else {
		var vmax []float64
		if c.AMSGrad {
			vmax = st.s64[2][lo:hi]
		}
		adamUpdate(st.x64[lo:hi], st.g64[lo:hi], st.s64[0][lo:hi], st.s64[1][lo:hi], vmax, &k)
	}
}

type adamCoefs struct {
	lr, beta1, beta2, eps, stepSize, bc2Sqrt, wd float64
	amsgrad, decoupled                           bool
}

// adamUpdate follows torch's _single_tensor_adam and _single_tensor_adamw (not
// capturable); vmax is nil without AMSGrad.
func adamUpdate[T float](p, g, m, v, vmax []T, k *adamCoefs) {
	b1, b2 := T(k.beta1), T(k.beta2)
	c1, c2 := T(1-k.beta1), T(1-k.beta2)
	negStep, bc2, eps := T(-k.stepSize), T(k.bc2Sqrt), T(k.eps)
	wd := T(k.wd)
	var shrink T
	if k.decoupled {
		if k.wd != 0 {
			shrink = T(1 - k.lr*k.wd)
		}
		wd = 0
	}
	if vmax == nil && useKern {
		// The vector kernel does a leading part of the float32 update, bit for bit as
		// the loops below would.
		kc := kern.AdamCoefs{
			B1: float32(b1), B2: float32(b2), C1: float32(c1), C2: float32(c2),
			NegStep: float32(negStep), Bc2: float32(bc2), Eps: float32(eps),
		}
		switch {
		case shrink != 0:
			kc.Mode, kc.Factor = kern.AdamShrink, float32(shrink)
		case wd != 0:
			kc.Mode, kc.Factor = kern.AdamL2, float32(wd)
		}
		if n := adamVector(p, g, m, v, &kc); n > 0 {
			p, g, m, v = p[n:], g[n:], m[n:], v[n:]
		}
	}
	if shrink != 0 {
		for i := range p {
			p[i] *= shrink
		}
	}
	// The explicit conversions keep the compiler from fusing a multiply and an add
	// (GOAMD64=v3, arm64), so that every platform and the vector kernel round alike.
	tiny := smallestNormal[T]()
	for i := range p {
		d := g[i]
		if wd != 0 {
			d = d + T(wd*p[i])
		}
		m[i] = flushTiny(T(m[i]*b1)+T(c1*d), tiny)
		v[i] = flushTiny(T(v[i]*b2)+T(c2*d*d), tiny)
		vv := v[i]
		if vmax != nil {
			vv = flushTiny(max(vmax[i], vv), tiny)
			vmax[i] = vv
		}
		denom := T(math.Sqrt(float64(vv)))/bc2 + eps
		p[i] = p[i] + negStep*m[i]/denom
	}
}

// useKern enables the vector kernels of package kern; tests turn it off to compare.
var useKern = true

// adamVector runs kern.Adam32 on float32 slices and returns how many leading elements
// it updated (0 for float64).
func adamVector[T float](p, g, m, v []T, kc *kern.AdamCoefs) int {
	if p32, ok := any(p).([]float32); ok {
		return kern.Adam32(p32, any(g).([]float32), any(m).([]float32), any(v).([]float32), kc)
	}
	return 0
}

var (
	_ Optimizer = (*Adam)(nil)
	_ Optimizer = (*AdamW)(nil)
)
