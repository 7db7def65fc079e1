package optim

import (
	"fmt"
	"math"
)

// SGDConfig holds the hyperparameters of SGD. Zero fields mean zero, not a default:
// start from DefaultSGDConfig.
type SGDConfig struct {
	// LR is the base learning rate (default 1e-3), scaled by Schedule and Group.LRScale.
	LR float64
	// Momentum is the momentum factor (default 0: plain SGD).
	Momentum float64
	// Dampening damps the gradient's contribution to the momentum buffer (default 0).
	Dampening float64
	// Nesterov enables Nesterov momentum; it needs Momentum > 0 and Dampening 0.
	Nesterov bool
	// WeightDecay is the L2 penalty added to the gradient (default 0). Groups may
	// override it.
	WeightDecay float64
	// Schedule sets the learning rate per step (nil: constant).
	Schedule Schedule
	// MaxGradNorm, when > 0, clips the global gradient norm before each step.
	MaxGradNorm float64
}

// DefaultSGDConfig returns torch's defaults: LR 1e-3 (torch ≥ 2.4; earlier versions
// require an explicit lr), no momentum, no weight decay.
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

// NewSGD returns an SGD optimizer over groups (see All and DecayGroups).
func NewSGD(groups []Group, cfg SGDConfig) (*SGD, error) {
	if !(cfg.Momentum >= 0) || math.IsInf(cfg.Momentum, 0) {
		return nil, fmt.Errorf("sgd: invalid momentum %v (want a finite value >= 0)", cfg.Momentum)
	}
	if !(cfg.Dampening >= 0 && cfg.Dampening <= 1) {
		return nil, fmt.Errorf("sgd: invalid dampening %v (want a value in [0, 1])", cfg.Dampening)
	}
	if cfg.Nesterov && (cfg.Momentum <= 0 || cfg.Dampening != 0) {
		return nil, fmt.Errorf("sgd: Nesterov momentum needs momentum > 0 and zero dampening (got momentum %v, dampening %v)", cfg.Momentum, cfg.Dampening)
	}
	var slots []string
	if cfg.Momentum != 0 {
		slots = []string{"momentum_buffer"}
	}
	o := &SGD{cfg: cfg}
	c := common{lr: cfg.LR, weightDecay: cfg.WeightDecay, sched: cfg.Schedule, maxGradNorm: cfg.MaxGradNorm}
	if err := o.init("sgd", groups, c, slots, 0, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Config returns the optimizer's hyperparameters.
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
	for i := range p {
		d := g[i]
		if wd != 0 {
			d = d + wdT*p[i]
		}
		if momentum != 0 {
			if first {
				buf[i] = d
			} else {
				buf[i] = buf[i]*mu + keep*d
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
