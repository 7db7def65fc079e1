package train

import (
	"errors"
	"fmt"

	"github.com/locusml/locus/autodiff"
	"gorgonia.org/tensor"
)

// Reducer joins the processes of a data-parallel run; dist.Comm is one. Every process
// runs the same Loop on the same Data: each draws the same global batch, takes its part
// of it (Splitter), computes the gradient of its part, and the Reducer averages the
// gradients, so that every process takes the same optimizer step on the same weights.
type Reducer interface {
	// Rank is the process's rank, 0 ≤ Rank() < Size(); rank 0 writes and prints.
	Rank() int
	// Size is the number of processes.
	Size() int
	// BroadcastParams copies rank 0's parameter values to every process.
	BroadcastParams(ps *autodiff.Params) error
	// AverageGrads replaces the gradients by Σ_r weight_r·grad_r / Σ_r weight_r over the
	// processes, and extra by its sums, and returns Σ_r weight_r.
	AverageGrads(ps *autodiff.Params, weight float64, extra []float64) (float64, error)
	// SameParams reports, the same on every process, whether all processes hold the
	// same parameter values.
	SameParams(ps *autodiff.Params) (bool, error)
}

// Splitter is implemented by Data whose batches a data-parallel Loop can split.
type Splitter interface {
	// Split returns part part (0-based) of parts of the batch b: a contiguous run of its
	// examples, and the number of items the model's loss is a mean over in that part
	// (its scored tokens for a cross-entropy that ignores positions; its examples for a
	// loss that weighs examples equally), which may be 0. The parts of one batch cover it
	// exactly, and do not depend on anything but b, part and parts. A part may hold no
	// examples (a batch of fewer examples than parts, as Part gives): its weight is then
	// 0, and the Loop does not run the model on it.
	Split(b Batch, part, parts int) (Batch, float64, error)
}

// ErrOutOfSync is wrapped by the error Run returns when the processes of a
// data-parallel run no longer hold the same parameters.
var ErrOutOfSync = errors.New("the processes' parameters differ")

// Rows returns the rows [lo, hi) of a batch of n examples: the slice of dimension 0 of
// every input, whose first dimension must be a multiple k of n (k rows per example, as
// a [B·T] target vector has). The tensors are copies. Data types can use it in their
// Split. An empty range (lo = hi, a part of a batch smaller than the parts) gives a
// Batch of Items 0 with no inputs: gorgonia's tensors of no values cannot be read.
func Rows(b Batch, n, lo, hi int) (Batch, error) {
	if lo < 0 || hi < lo || hi > n {
		return Batch{}, fmt.Errorf("train: rows [%d, %d) of a batch of %d", lo, hi, n)
	}
	out := Batch{Inputs: make(map[string]*tensor.Dense, len(b.Inputs))}
	if n > 0 {
		out.Items = b.Items * (hi - lo) / n
	}
	for name, t := range b.Inputs {
		shape := t.Shape()
		if len(shape) == 0 || n == 0 || shape[0]%n != 0 {
			return Batch{}, fmt.Errorf("train: input %q has shape %v, not a multiple of %d examples in its first dimension", name, shape, n)
		}
		if lo == hi {
			continue
		}
		k := shape[0] / n
		per := shape.TotalSize() / shape[0] // values per row of dimension 0
		a, z := lo*k*per, hi*k*per
		var backing any
		switch d := t.Data().(type) {
		case []float32:
			backing = append([]float32(nil), d[a:z]...)
		case []float64:
			backing = append([]float64(nil), d[a:z]...)
		case []int:
			backing = append([]int(nil), d[a:z]...)
		default:
			return Batch{}, fmt.Errorf("train: input %q has dtype %v, which Rows does not split", name, t.Dtype())
		}
		sub := append([]int{(hi - lo) * k}, shape[1:]...)
		out.Inputs[name] = tensor.New(tensor.WithShape(sub...), tensor.WithBacking(backing))
	}
	return out, nil
}

// Part returns the rows of part part of parts of n examples: contiguous, in order,
// the first n mod parts parts one example longer.
func Part(n, part, parts int) (lo, hi int) { return autodiff.PartRange(n, part, parts) }

// parallel reports whether the Loop trains on several processes.
func (l *Loop) parallel() bool { return l.Reducer != nil && l.Reducer.Size() > 1 }

// root reports whether this process writes the run directory and prints.
func (l *Loop) root() bool { return l.Reducer == nil || l.Reducer.Rank() == 0 }

// lossAndGrads runs the model forward and backward on this process's part of b, with the
// gradients averaged over all processes, and returns the loss of the whole batch. With
// stop, it asks every process to stop after this step (see stopAll).
func (l *Loop) lossAndGrads(b Batch, stop bool) (float64, error) {
	if !l.parallel() {
		res, err := l.Model.LossAndGrads(b.Inputs) // the loop never reads the named outputs
		if err != nil {
			return 0, err
		}
		if !res.HasLoss {
			return 0, errors.New("the model returned no loss")
		}
		return res.Loss, nil
	}
	r := l.Reducer
	part, weight, err := l.Data.(Splitter).Split(b, r.Rank(), r.Size())
	if err != nil {
		return 0, fmt.Errorf("split the batch: %w", err)
	}
	// extra: the weighted loss, and the number of processes asking to stop.
	var extra [2]float64
	if weight > 0 {
		res, err := l.Model.LossAndGrads(part.Inputs)
		if err != nil {
			return 0, err
		}
		if !res.HasLoss {
			return 0, errors.New("the model returned no loss")
		}
		extra[0] = weight * res.Loss
	}
	if stop {
		extra[1] = 1
	}
	total, err := r.AverageGrads(l.Model.Params(), weight, extra[:])
	if err != nil {
		return 0, err
	}
	if extra[1] > 0 {
		l.stopAll = true
	}
	if total <= 0 {
		return 0, fmt.Errorf("the batch has no scored items on any of the %d processes", r.Size())
	}
	return extra[0] / total, nil
}

// startParallel makes every process start from rank 0's parameters.
func (l *Loop) startParallel() error {
	if !l.parallel() {
		return nil
	}
	if err := l.Reducer.BroadcastParams(l.Model.Params()); err != nil {
		return fmt.Errorf("train: broadcast the parameters from rank 0: %w", err)
	}
	return nil
}

// checkInSync compares the processes' parameters after the logged steps.
func (l *Loop) checkInSync() error {
	if !l.parallel() || l.step%l.logEvery() != 0 {
		return nil
	}
	same, err := l.Reducer.SameParams(l.Model.Params())
	if err != nil {
		return fmt.Errorf("train: step %d: compare the parameters of the processes: %w", l.step, err)
	}
	if !same {
		return fmt.Errorf("train: step %d: the parameter checksums of the %d processes differ; stopping (a process computed another step: a different binary, data or GOARCH?): %w",
			l.step, l.Reducer.Size(), ErrOutOfSync)
	}
	return nil
}
