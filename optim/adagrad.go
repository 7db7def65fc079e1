package optim

import (
	"fmt"
	"math"
)

// AdagradConfig holds the hyperparameters of Adagrad. A zero field means its default
// (see the package comment).
type AdagradConfig struct {
	// LR is the base learning rate, scaled by Schedule and Group.LRScale; 0 means 1e-2.
	LR float64
	// LRDecay decays the learning rate as lr/(1 + (t−1)·LRDecay) at step t; zero is a
	// valid setting, no decay (the default).
	LRDecay float64
	// WeightDecay is the L2 penalty added to the gradient; zero is a valid setting, no
	// decay (the default). Groups may override it.
	WeightDecay float64
	// InitialAccumulatorValue is the starting value of the sum of squared gradients;
	// zero is a valid setting (the default).
	InitialAccumulatorValue float64
	// Eps is added to the denominator for numerical stability; 0 means 1e-10.
	Eps float64
	// Schedule sets the learning rate per step (nil means Constant); LRDecay applies on
	// top.
	Schedule Schedule
	// MaxGradNorm, when > 0, clips the global gradient norm before each step; 0 means
	// no clipping.
	MaxGradNorm float64
}

// DefaultAdagradConfig returns torch.optim.Adagrad's defaults: LR 1e-2, Eps 1e-10 and
// zero LRDecay, WeightDecay and InitialAccumulatorValue, the values a zero
// AdagradConfig takes.
func DefaultAdagradConfig() AdagradConfig { return AdagradConfig{LR: 1e-2, Eps: 1e-10} }

// Adagrad is Adagrad as torch.optim.Adagrad. At step t:
//
//	g ← g + wd·p
//	s ← s + g²
//	p ← p − lr/(1 + (t−1)·lr_decay) · g / (√s + eps)
//
// Its slot is "sum".
type Adagrad struct {
	base
	cfg AdagradConfig
}

// withDefaults returns c with its zero fields set to their defaults.
func (c AdagradConfig) withDefaults() AdagradConfig {
	d := DefaultAdagradConfig()
	if c.LR == 0 {
		c.LR = d.LR
	}
	if c.Eps == 0 {
		c.Eps = d.Eps
	}
	return c
}

// Validate reports the first invalid field of c, its zero fields taken as their
// defaults; NewAdagrad returns the same error.
func (c AdagradConfig) Validate() error { return c.withDefaults().validate() }

func (c AdagradConfig) validate() error {
	if !(c.LRDecay >= 0) || math.IsInf(c.LRDecay, 0) {
		return fmt.Errorf("adagrad: LRDecay %v, want a finite value >= 0", c.LRDecay)
	}
	if !(c.InitialAccumulatorValue >= 0) || math.IsInf(c.InitialAccumulatorValue, 0) {
		return fmt.Errorf("adagrad: InitialAccumulatorValue %v, want a finite value >= 0", c.InitialAccumulatorValue)
	}
	if err := checkEps("adagrad", c.Eps, DefaultAdagradConfig().Eps); err != nil {
		return err
	}
	return c.common().validate("adagrad")
}

func (c AdagradConfig) common() common {
	return common{lr: c.LR, weightDecay: c.WeightDecay, sched: c.Schedule, maxGradNorm: c.MaxGradNorm, defaultLR: DefaultAdagradConfig().LR}
}

// NewAdagrad returns an Adagrad optimizer over groups (see All and DecayGroups); zero
// fields of cfg take their defaults.
func NewAdagrad(groups []Group, cfg AdagradConfig) (*Adagrad, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := &Adagrad{cfg: cfg}
	if err := o.init("adagrad", groups, cfg.common(), []string{"sum"}, cfg.InitialAccumulatorValue, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Config returns the optimizer's hyperparameters, defaults filled in.
func (o *Adagrad) Config() AdagradConfig { return o.cfg }

func (o *Adagrad) update(st *paramState, lr float64, t, lo, hi int) {
	clr := lr / (1 + float64(t-1)*o.cfg.LRDecay)
	if st.x32 != nil {
		adagradUpdate(st.x32[lo:hi], st.g32[lo:hi], st.s32[0][lo:hi], clr, st.wd, o.cfg.Eps)
	} else {
		adagradUpdate(st.x64[lo:hi], st.g64[lo:hi], st.s64[0][lo:hi], clr, st.wd, o.cfg.Eps)
	}
}

// adagradUpdate follows torch's _single_tensor_adagrad for dense gradients.
func adagradUpdate[T float](p, g, sum []T, clr, wd, eps float64) {
	negLR, wdT, epsT := T(-clr), T(wd), T(eps)
	for i := range p {
		d := g[i]
		if wd != 0 {
			d = d + wdT*p[i]
		}
		sum[i] = sum[i] + d*d
		std := T(math.Sqrt(float64(sum[i]))) + epsT
		p[i] = p[i] + negLR*d/std
	}
}

var _ Optimizer = (*Adagrad)(nil)
