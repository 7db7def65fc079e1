package optim

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// Accumulator turns k micro-batches into one optimizer step. Gradients accumulate
// across backward passes (they are only cleared by ZeroGrad), so the training loop runs
// backward on each micro-batch's mean loss and calls Step after each; every k-th call
// divides the summed gradients by k, making them the gradient of the mean over the k
// micro-batches, and steps the optimizer. The loop clears the gradients when Step
// reports true:
//
//	for each micro-batch {
//		forward, backward
//		stepped, err := acc.Step()
//		if err != nil { ... }
//		if stepped { params.ZeroGrad() }
//	}
type Accumulator struct {
	opt     Optimizer
	params  []*autodiff.Param
	k       int
	pending int
}

// NewAccumulator returns an Accumulator that steps opt once every k micro-batches.
func NewAccumulator(opt Optimizer, k int) (*Accumulator, error) {
	if opt == nil {
		return nil, fmt.Errorf("accumulator: nil optimizer")
	}
	if k < 1 {
		return nil, fmt.Errorf("accumulator: %d micro-batches per step, want >= 1", k)
	}
	return &Accumulator{opt: opt, params: opt.Params(), k: k}, nil
}

// Step records one micro-batch whose gradients have been accumulated. On the k-th it
// divides the gradients by k, steps the optimizer and returns true; otherwise it
// returns false and changes nothing. If the optimizer's Step fails the micro-batch
// count still restarts, so the caller should clear the gradients either way.
func (a *Accumulator) Step() (bool, error) {
	a.pending++
	if a.pending < a.k {
		return false, nil
	}
	a.pending = 0
	if a.k > 1 {
		for _, p := range a.params {
			switch p.Dtype() {
			case autodiff.Float32:
				divide(p.GradFloat32s(), float32(a.k))
			case autodiff.Float64:
				divide(p.GradFloat64s(), float64(a.k))
			}
		}
	}
	if err := a.opt.Step(); err != nil {
		return true, err
	}
	return true, nil
}

// Pending returns the number of micro-batches recorded since the last optimizer step.
func (a *Accumulator) Pending() int { return a.pending }

// MicroBatches returns k, the number of micro-batches per optimizer step.
func (a *Accumulator) MicroBatches() int { return a.k }

func divide[T float](x []T, k T) {
	for i := range x {
		x[i] /= k
	}
}
