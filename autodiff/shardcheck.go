package autodiff

import (
	"errors"
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// ShardDiff is what CompareShards measured.
type ShardDiff struct {
	// Parts is the number of parts the sharded run computed at once.
	Parts int
	// MaxRelDiff is the largest |sharded − whole| / max(1, |whole|) over the loss, every
	// parameter gradient, every output and every input gradient, and Where names it.
	MaxRelDiff float64
	Where      string
}

// CompareShards runs inputs whole (SetShards(1)) and then as shards parts (SetShards),
// each from zero gradients, and returns the largest difference between the two runs'
// losses, parameter gradients (with mode.Backward), outputs and input gradients (with
// mode.InputGrads). It is the check that a builder's Batch declaration holds: the
// difference must be float round-off. In training mode the parts draw other dropout
// masks than the whole batch, so compare models without dropout. The model's shard
// setting is restored; the gradients are the sharded run's.
func CompareShards(m *Model, inputs map[string]*tensor.Dense, mode RunMode, shards int) (ShardDiff, error) {
	if shards < 2 {
		return ShardDiff{}, fmt.Errorf("CompareShards: shards = %d, want 2 or more", shards)
	}
	saved := m.shards
	defer func() { m.shards = saved }()
	m.shards = 1
	whole, err := snapshotRun(m, inputs, mode)
	if err != nil {
		return ShardDiff{}, fmt.Errorf("whole batch: %w", err)
	}
	m.shards = shards
	parts, err := snapshotRun(m, inputs, mode)
	if err != nil {
		return ShardDiff{}, fmt.Errorf("%d shards: %w", shards, err)
	}
	d := ShardDiff{Parts: parts.parts}
	note := func(where string, got, want []float64) error {
		if len(got) != len(want) {
			return fmt.Errorf("%s has %d values as parts, %d whole", where, len(got), len(want))
		}
		for i := range got {
			r := math.Abs(got[i]-want[i]) / max(1, math.Abs(want[i]))
			if r > d.MaxRelDiff || math.IsNaN(r) {
				d.MaxRelDiff, d.Where = r, fmt.Sprintf("%s[%d]", where, i)
			}
		}
		return nil
	}
	if parts.hasLoss != whole.hasLoss {
		return d, errors.New("one run has a loss and the other none")
	}
	errs := []error{note("loss", []float64{parts.loss}, []float64{whole.loss})}
	for _, s := range []struct {
		what      string
		got, want map[string][]float64
	}{{"gradient of", parts.grads, whole.grads}, {"output", parts.values, whole.values}, {"input gradient of", parts.inGrads, whole.inGrads}} {
		if len(s.got) != len(s.want) {
			return d, fmt.Errorf("%d values of kind %q as parts, %d whole", len(s.got), s.what, len(s.want))
		}
		for name, w := range s.want {
			errs = append(errs, note(s.what+" "+name, s.got[name], w))
		}
	}
	return d, errors.Join(errs...)
}

type runSnapshot struct {
	parts                  int
	hasLoss                bool
	loss                   float64
	grads, values, inGrads map[string][]float64
}

func snapshotRun(m *Model, inputs map[string]*tensor.Dense, mode RunMode) (runSnapshot, error) {
	m.params.ZeroGrad()
	res, err := m.Run(inputs, mode)
	if err != nil {
		return runSnapshot{}, err
	}
	s := runSnapshot{parts: res.Parts, hasLoss: res.HasLoss, loss: res.Loss,
		grads: map[string][]float64{}, values: map[string][]float64{}, inGrads: map[string][]float64{}}
	if mode.Backward {
		for _, p := range m.params.list {
			s.grads[p.name] = asFloat64s(p.gradTensor())
		}
	}
	for name, v := range res.Values {
		s.values[name] = asFloat64s(v)
	}
	for name, v := range res.InputGrads {
		s.inGrads[name] = asFloat64s(v)
	}
	return s, nil
}

// asFloat64s copies a float or int tensor's values as float64.
func asFloat64s(t *tensor.Dense) []float64 {
	switch t.Dtype() {
	case Float32:
		out := make([]float64, 0, t.Shape().TotalSize())
		for _, v := range t.Float32s() {
			out = append(out, float64(v))
		}
		return out
	case Float64:
		return append([]float64(nil), t.Float64s()...)
	case tensor.Int:
		out := make([]float64, 0, t.Shape().TotalSize())
		for _, v := range t.Ints() {
			out = append(out, float64(v))
		}
		return out
	}
	return nil
}
