package optim

import (
	"fmt"
	"math"
)

// Schedule sets the learning rate as a multiple of the config's LR.
//
// Factor returns the multiplier for the update that follows step updates, so the first
// Step uses Factor(0). Factors must be finite and non-negative. Schedules are pure
// functions of the step: the optimizer's step count (saved in its State) is the whole
// schedule position. A schedule with a Validate() error method is checked when the
// optimizer is built. As in the configs, a zero field of a schedule means its default
// or, where none makes sense (Cosine.Steps, StepDecay.Every, Exponential.Gamma), is a
// Validate error naming the field.
type Schedule interface {
	Factor(step int) float64
}

// ScheduleFunc adapts a function to the Schedule interface.
type ScheduleFunc func(step int) float64

// Factor returns f(step).
func (f ScheduleFunc) Factor(step int) float64 { return f(step) }

// Constant keeps the learning rate at LR. It is the default when Schedule is nil.
type Constant struct{}

// Factor returns 1.
func (Constant) Factor(int) float64 { return 1 }

// Warmup ramps the learning rate up linearly over Steps updates, then follows Then
// shifted by Steps: Factor(s) is (s+1)/Steps·Then.Factor(0) for s < Steps and
// Then.Factor(s−Steps) after. The first update uses LR/Steps and update Steps−1 the
// full rate. Build it with WithWarmup.
type Warmup struct {
	Steps int      // updates of the ramp; zero is a valid setting, no warm-up
	Then  Schedule // the schedule after the ramp; nil means Constant
}

// WithWarmup returns then preceded by a linear warmup of steps updates, e.g.
// WithWarmup(100, Cosine{Steps: 9900, MinFactor: 0.1}).
func WithWarmup(steps int, then Schedule) Warmup { return Warmup{Steps: steps, Then: then} }

// Factor returns the multiplier after step updates.
func (w Warmup) Factor(step int) float64 {
	then := w.Then
	if then == nil {
		then = Constant{}
	}
	step = max(step, 0)
	if step < w.Steps {
		return float64(step+1) / float64(w.Steps) * then.Factor(0)
	}
	return then.Factor(step - w.Steps)
}

// Validate reports whether Steps >= 0 and Then is valid.
func (w Warmup) Validate() error {
	if w.Steps < 0 {
		return fmt.Errorf("warmup: negative Steps %d", w.Steps)
	}
	if v, ok := w.Then.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

// Cosine decays the learning rate from LR to MinFactor·LR along half a cosine over
// Steps updates and stays at the floor afterwards:
// Factor(s) = MinFactor + (1−MinFactor)·(1 + cos(π·min(s, Steps)/Steps))/2.
type Cosine struct {
	Steps     int     // length of the decay, > 0 (no default: zero is an error)
	MinFactor float64 // the floor, in [0, 1]; zero is a valid setting, decay to 0
}

// Factor returns the multiplier after step updates.
func (c Cosine) Factor(step int) float64 {
	if step >= c.Steps {
		return c.MinFactor
	}
	x := float64(max(step, 0)) / float64(c.Steps)
	return c.MinFactor + (1-c.MinFactor)*0.5*(1+math.Cos(math.Pi*x))
}

// Validate reports whether Steps > 0 and MinFactor is in [0, 1].
func (c Cosine) Validate() error {
	if c.Steps <= 0 {
		return fmt.Errorf("cosine: Steps %d, want > 0", c.Steps)
	}
	if !(c.MinFactor >= 0 && c.MinFactor <= 1) {
		return fmt.Errorf("cosine: MinFactor %v, want a value in [0, 1]", c.MinFactor)
	}
	return nil
}

// LinearDecay decays the learning rate linearly from LR to MinFactor·LR over Steps
// updates and stays at the floor afterwards.
type LinearDecay struct {
	Steps     int     // length of the decay, > 0 (no default: zero is an error)
	MinFactor float64 // the floor, in [0, 1]; zero is a valid setting, decay to 0
}

// Factor returns the multiplier after step updates.
func (l LinearDecay) Factor(step int) float64 {
	if step >= l.Steps {
		return l.MinFactor
	}
	x := float64(max(step, 0)) / float64(l.Steps)
	return 1 - (1-l.MinFactor)*x
}

// Validate reports whether Steps > 0 and MinFactor is in [0, 1].
func (l LinearDecay) Validate() error {
	if l.Steps <= 0 {
		return fmt.Errorf("linear decay: Steps %d, want > 0", l.Steps)
	}
	if !(l.MinFactor >= 0 && l.MinFactor <= 1) {
		return fmt.Errorf("linear decay: MinFactor %v, want a value in [0, 1]", l.MinFactor)
	}
	return nil
}

// StepDecay multiplies the learning rate by Gamma every Every updates, as torch's
// StepLR: Factor(s) = Gamma^⌊s/Every⌋.
type StepDecay struct {
	Every int     // updates between decays, > 0 (no default: zero is an error)
	Gamma float64 // the factor of each decay, finite and > 0; 0 means 0.1 (torch's)
}

// defaultStepGamma is torch's StepLR default gamma.
const defaultStepGamma = 0.1

func (d StepDecay) gamma() float64 {
	if d.Gamma == 0 {
		return defaultStepGamma
	}
	return d.Gamma
}

// Factor returns the multiplier after step updates, or NaN if Every <= 0.
func (d StepDecay) Factor(step int) float64 {
	if d.Every <= 0 {
		return math.NaN()
	}
	return math.Pow(d.gamma(), float64(max(step, 0)/d.Every))
}

// Validate reports whether Every > 0 and Gamma (0 meaning 0.1) is finite and > 0.
func (d StepDecay) Validate() error {
	if d.Every <= 0 {
		return fmt.Errorf("step decay: Every %d, want > 0", d.Every)
	}
	if g := d.gamma(); !(g > 0) || math.IsInf(g, 0) {
		return fmt.Errorf("step decay: Gamma %v, want a finite value > 0 (0 means %v)", d.Gamma, defaultStepGamma)
	}
	return nil
}

// Exponential multiplies the learning rate by Gamma every update, as torch's
// ExponentialLR: Factor(s) = Gamma^s.
type Exponential struct {
	Gamma float64 // the factor per update, finite and > 0 (no default: zero is an error)
}

// Factor returns the multiplier after step updates.
func (e Exponential) Factor(step int) float64 { return math.Pow(e.Gamma, float64(max(step, 0))) }

// Validate reports whether Gamma is finite and > 0.
func (e Exponential) Validate() error {
	if !(e.Gamma > 0) || math.IsInf(e.Gamma, 0) {
		return fmt.Errorf("exponential: Gamma %v, want a finite value > 0", e.Gamma)
	}
	return nil
}
