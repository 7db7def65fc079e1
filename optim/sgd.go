package optim

import (
	"fmt"
	"math"
)

// SGDConfig holds the hyperparameters of SGD. A zero field means its default (see the
// package comment); every default but LR's is zero.
type SGDConfig struct {
	// LR is the base learning rate, scaled by Schedule and Group.LRScale; 0 means 1e-3.
	LR float64
	// Momentum is the momentum factor; zero is a valid setting, plain SGD (the default).
	Momentum float64
	// Dampening damps the gradient's contribution to the momentum buffer; zero is a
	// valid setting, no damping (the default).
	Dampening float64
	// Nesterov enables Nesterov momentum; it needs Momentum > 0 and Dampening 0.
	Nesterov bool
	// WeightDecay is the L2 penalty added to the gradient; zero is a valid setting, no
	// decay (the default). Groups may override it.
	WeightDecay float64
	// Schedule sets the learning rate per step; nil means Constant.
	Schedule Schedule
	// MaxGradNorm, when > 0, clips the global gradient norm before each step; 0 means
	// no clipping.
	MaxGradNorm float64
}

// DefaultSGDConfig returns torch's defaults: LR 1e-3 (torch ≥ 2.4; earlier versions
// require an explicit lr), no momentum, no weight decay, the values a zero SGDConfig
// takes.
func DefaultSGDConfig() SGDConfig { return SGDConfig{LR: 1e-3} }

// SGD is stochastic gradient descent with optional momentum, dampening, Nesterov
// momentum and L2 weight decay, as torch.optim.SGD:
//
//	g ← g + wd·p
//	b ← g at the first step, else μ·b + (1−dampening)·g
//	g ← g + μ·b (Nesterov) or b
//	p ← p − lr·g
//
// Its slot, with momentum, is "momentum_buffer".
type SGD struct {
	base
	cfg SGDConfig
}

// withDefaults returns c with its zero fields set to their defaults.
func (c SGDConfig) withDefaults() SGDConfig {
	if c.LR == 0 {
		c.LR = DefaultSGDConfig().LR
	}
	return c
}

// Validate reports the first invalid field of c, its zero fields taken as their
// defaults; NewSGD returns the same error.
func (c SGDConfig) Validate() error { return c.withDefaults().validate() }

func (c SGDConfig) validate() error {
	if !(c.Momentum >= 0) || math.IsInf(c.Momentum, 0) {
		return fmt.Errorf("sgd: Momentum %v, want a finite value >= 0", c.Momentum)
	}
	if !(c.Dampening >= 0 && c.Dampening <= 1) {
		return fmt.Errorf("sgd: Dampening %v, want a value in [0, 1]", c.Dampening)
	}
	if c.Nesterov && (c.Momentum <= 0 || c.Dampening != 0) {
		return fmt.Errorf("sgd: Nesterov momentum needs Momentum > 0 and Dampening 0 (got Momentum %v, Dampening %v)", c.Momentum, c.Dampening)
	}
	return c.common().validate("sgd")
}

func (c SGDConfig) common() common {
	return common{lr: c.LR, weightDecay: c.WeightDecay, sched: c.Schedule, maxGradNorm: c.MaxGradNorm, defaultLR: DefaultSGDConfig().LR}
}

// NewSGD returns an SGD optimizer over groups (see All and DecayGroups); zero fields of
// cfg take their defaults.
func NewSGD(groups []Group, cfg SGDConfig) (*SGD, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var slots []string
	if cfg.Momentum != 0 {
		slots = []string{"momentum_buffer"}
	}
	o := &SGD{cfg: cfg}
	if err := o.init("sgd", groups, cfg.common(), slots, 0, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Config returns the optimizer's hyperparameters, defaults filled in.
func (o *SGD) Config() SGDConfig { return o.cfg }

func (o *SGD) update(st *paramState, lr float64, t, lo, hi int) {
	c := o.cfg
	if st.x32 != nil {
		var buf []float32
		if st.s32 != nil {
			buf = st.s32[0][lo:hi]
		}
		sgdUpdate(st.x32[lo:hi], st.g32[lo:hi], buf, lr, st.wd, c.Momentum, c.Dampening, c.Nesterov, t == 1)
	} else {
		var buf []float64
		if st.s64 != nil {
			buf = st.s64[0][lo:hi]
		}
		sgdUpdate(st.x64[lo:hi], st.g64[lo:hi], buf, lr, st.wd, c.Momentum, c.Dampening, c.Nesterov, t == 1)
	}
}

// sgdUpdate follows torch's _single_tensor_sgd; buf is nil without momentum.
func sgdUpdate[T float](p, g, buf []T, lr, wd, momentum, dampening float64, nesterov, first bool) {
	negLR, wdT, mu, keep := T(-lr), T(wd), T(momentum), T(1-dampening)
	tiny := smallestNormal[T]()
	for i := range p {
		d := g[i]
		if wd != 0 {
			d = d + wdT*p[i]
		}
		if momentum != 0 {
			if first {
				buf[i] = d
			} else {
				buf[i] = flushTiny(buf[i]*mu+keep*d, tiny)
			}
			if nesterov {
				d = d + mu*buf[i]
			} else {
				d = buf[i]
			}
		}
		p[i] = p[i] + negLR*d
	}
}

var _ Optimizer = (*SGD)(nil)
