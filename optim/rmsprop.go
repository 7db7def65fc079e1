package optim

import (
	"fmt"
	"math"
)

// RMSPropConfig holds the hyperparameters of RMSProp. A zero field means its default
// (see the package comment).
type RMSPropConfig struct {
	// LR is the base learning rate, scaled by Schedule and Group.LRScale; 0 means 1e-2.
	LR float64
	// Alpha is the decay rate of the squared-gradient average, in (0, 1]; 0 means 0.99.
	Alpha float64
	// Eps is added to the denominator for numerical stability; 0 means 1e-8.
	Eps float64
	// WeightDecay is the L2 penalty added to the gradient; zero is a valid setting, no
	// decay (the default). Groups may override it.
	WeightDecay float64
	// Momentum is the momentum factor; zero is a valid setting, no momentum (the
	// default).
	Momentum float64
	// Centered normalizes by an estimate of the gradient's variance instead of its raw
	// second moment (default false).
	Centered bool
	// Schedule sets the learning rate per step; nil means Constant.
	Schedule Schedule
	// MaxGradNorm, when > 0, clips the global gradient norm before each step; 0 means
	// no clipping.
	MaxGradNorm float64
}

// DefaultRMSPropConfig returns torch.optim.RMSprop's defaults: LR 1e-2, Alpha 0.99,
// Eps 1e-8, no weight decay, no momentum, not centered, the values a zero
// RMSPropConfig takes.
func DefaultRMSPropConfig() RMSPropConfig {
	return RMSPropConfig{LR: 1e-2, Alpha: 0.99, Eps: 1e-8}
}

// RMSProp is RMSProp with optional momentum, centering and L2 weight decay, as
// torch.optim.RMSprop:
//
//	g ← g + wd·p
//	s ← α·s + (1−α)·g²
//	a ← √(s − ḡ²) + eps with ḡ ← α·ḡ + (1−α)·g (centered), else √s + eps
//	b ← μ·b + g/a; p ← p − lr·b (momentum > 0), else p ← p − lr·g/a
//
// Its slots are "square_avg", then "grad_avg" if centered and "momentum_buffer" if
// Momentum > 0.
type RMSProp struct {
	base
	cfg           RMSPropConfig
	gradAvg, mbuf int // slot indexes, -1 when unused
}

// withDefaults returns c with its zero fields set to their defaults.
func (c RMSPropConfig) withDefaults() RMSPropConfig {
	d := DefaultRMSPropConfig()
	if c.LR == 0 {
		c.LR = d.LR
	}
	if c.Alpha == 0 {
		c.Alpha = d.Alpha
	}
	if c.Eps == 0 {
		c.Eps = d.Eps
	}
	return c
}

// Validate reports the first invalid field of c, its zero fields taken as their
// defaults; NewRMSProp returns the same error.
func (c RMSPropConfig) Validate() error { return c.withDefaults().validate() }

func (c RMSPropConfig) validate() error {
	if !(c.Alpha > 0 && c.Alpha <= 1) {
		return fmt.Errorf("rmsprop: Alpha %v, want a value in (0, 1] (0 means %v)", c.Alpha, DefaultRMSPropConfig().Alpha)
	}
	if err := checkEps("rmsprop", c.Eps, DefaultRMSPropConfig().Eps); err != nil {
		return err
	}
	if !(c.Momentum >= 0) || math.IsInf(c.Momentum, 0) {
		return fmt.Errorf("rmsprop: Momentum %v, want a finite value >= 0", c.Momentum)
	}
	return c.common().validate("rmsprop")
}

func (c RMSPropConfig) common() common {
	return common{lr: c.LR, weightDecay: c.WeightDecay, sched: c.Schedule, maxGradNorm: c.MaxGradNorm, defaultLR: DefaultRMSPropConfig().LR}
}

// NewRMSProp returns an RMSProp optimizer over groups (see All and DecayGroups); zero
// fields of cfg take their defaults.
func NewRMSProp(groups []Group, cfg RMSPropConfig) (*RMSProp, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	o := &RMSProp{cfg: cfg, gradAvg: -1, mbuf: -1}
	slots := []string{"square_avg"}
	if cfg.Centered {
		o.gradAvg = len(slots)
		slots = append(slots, "grad_avg")
	}
	if cfg.Momentum > 0 {
		o.mbuf = len(slots)
		slots = append(slots, "momentum_buffer")
	}
	if err := o.init("rmsprop", groups, cfg.common(), slots, 0, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Config returns the optimizer's hyperparameters, defaults filled in.
func (o *RMSProp) Config() RMSPropConfig { return o.cfg }

func (o *RMSProp) update(st *paramState, lr float64, _, lo, hi int) {
	c := o.cfg
	if st.x32 != nil {
		rmspropUpdate(st.x32[lo:hi], st.g32[lo:hi], st.s32[0][lo:hi], slot(st.s32, o.gradAvg, lo, hi), slot(st.s32, o.mbuf, lo, hi), lr, st.wd, c.Alpha, c.Eps, c.Momentum)
	} else {
		rmspropUpdate(st.x64[lo:hi], st.g64[lo:hi], st.s64[0][lo:hi], slot(st.s64, o.gradAvg, lo, hi), slot(st.s64, o.mbuf, lo, hi), lr, st.wd, c.Alpha, c.Eps, c.Momentum)
	}
}

// slot returns slots[k][lo:hi], or nil when k < 0.
func slot[T float](slots [][]T, k, lo, hi int) []T {
	if k < 0 {
		return nil
	}
	return slots[k][lo:hi]
}

// rmspropUpdate follows torch's _single_tensor_rmsprop; gavg is nil unless centered and
// buf is nil without momentum.
func rmspropUpdate[T float](p, g, sq, gavg, buf []T, lr, wd, alpha, eps, momentum float64) {
	a, c, epsT, wdT, mu, negLR := T(alpha), T(1-alpha), T(eps), T(wd), T(momentum), T(-lr)
	tiny := smallestNormal[T]()
	for i := range p {
		d := g[i]
		if wd != 0 {
			d = d + wdT*p[i]
		}
		sq[i] = flushTiny(sq[i]*a+c*d*d, tiny)
		var avg T
		if gavg != nil {
			gavg[i] = flushTiny(gavg[i]*a+c*d, tiny)
			avg = T(math.Sqrt(float64(sq[i] + -1*gavg[i]*gavg[i])))
		} else {
			avg = T(math.Sqrt(float64(sq[i])))
		}
		avg += epsT
		if buf != nil {
			buf[i] = flushTiny(buf[i]*mu+d/avg, tiny)
			p[i] = p[i] + negLR*buf[i]
		} else {
			p[i] = p[i] + negLR*d/avg
		}
	}
}

var _ Optimizer = (*RMSProp)(nil)
