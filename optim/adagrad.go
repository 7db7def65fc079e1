package optim

import (
	"fmt"
	"math"
)

// AdagradConfig holds the hyperparameters of Adagrad. Zero fields mean zero, not a
// default: start from DefaultAdagradConfig.
type AdagradConfig struct {
	// LR is the base learning rate (default 1e-2), scaled by Schedule and Group.LRScale.
	LR float64
	// LRDecay decays the learning rate as lr/(1 + (t−1)·LRDecay) at step t (default 0).
	LRDecay float64
	// WeightDecay is the L2 penalty added to the gradient (default 0). Groups may
	// override it.
	WeightDecay float64
	// InitialAccumulatorValue is the starting value of the sum of squared gradients
	// (default 0).
	InitialAccumulatorValue float64
	// Eps is added to the denominator for numerical stability (default 1e-10).
	Eps float64
	// Schedule sets the learning rate per step (nil: constant); LRDecay applies on top.
	Schedule Schedule
	// MaxGradNorm, when > 0, clips the global gradient norm before each step.
	MaxGradNorm float64
}

// DefaultAdagradConfig returns torch.optim.Adagrad's defaults: LR 1e-2, Eps 1e-10 and
// zero LRDecay, WeightDecay and InitialAccumulatorValue.
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

// NewAdagrad returns an Adagrad optimizer over groups (see All and DecayGroups).
func NewAdagrad(groups []Group, cfg AdagradConfig) (*Adagrad, error) {
	if !(cfg.LRDecay >= 0) || math.IsInf(cfg.LRDecay, 0) {
		return nil, fmt.Errorf("adagrad: invalid LRDecay %v (want a finite value >= 0)", cfg.LRDecay)
	}
	if !(cfg.InitialAccumulatorValue >= 0) || math.IsInf(cfg.InitialAccumulatorValue, 0) {
		return nil, fmt.Errorf("adagrad: invalid InitialAccumulatorValue %v (want a finite value >= 0)", cfg.InitialAccumulatorValue)
	}
	if !(cfg.Eps >= 0) || math.IsInf(cfg.Eps, 0) {
		return nil, fmt.Errorf("adagrad: invalid Eps %v (want a finite value >= 0)", cfg.Eps)
	}
	o := &Adagrad{cfg: cfg}
	c := common{lr: cfg.LR, weightDecay: cfg.WeightDecay, sched: cfg.Schedule, maxGradNorm: cfg.MaxGradNorm}
	if err := o.init("adagrad", groups, c, []string{"sum"}, cfg.InitialAccumulatorValue, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Config returns the optimizer's hyperparameters.
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
