package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

// estimator is a Session that evaluates as nanoGPT's estimate_loss does (train
// -eval-iters): train_loss and loss, each the mean of iters batches of its split.
type estimator interface {
	// canEstimate reports why the session's data cannot be evaluated so, or nil.
	canEstimate() error
	estimate(ctx context.Context, m *autodiff.Model, iters int, seed uint64) (train.Metrics, error)
}

func (s *transformerSession) canEstimate() error {
	if s.data == nil || s.data.Corpus == nil {
		return errEstimateToyTask
	}
	return nil
}

var (
	errEstimateToyTask = usageErrorf("-eval-iters is for -task charlm (a toy task's evaluation draws -eval-n fresh examples)")
	errEstimateModel   = usageErrorf("-eval-iters is for -task charlm (this model evaluates over -eval-n examples)")
)

// An estimatingFamily says from a data configuration, before its data is read, whether
// its sessions evaluate as nanoGPT's estimate_loss does (train -eval-iters), so that the
// flag is refused as a usage error whether or not the data is there (the DAE's MNIST
// files, a corpus). A family without the method, one of a user's own, is asked once its
// session is open (evalOf).
type estimatingFamily interface {
	canEstimate(data json.RawMessage) error
}

func (transformerFamily) canEstimate(data json.RawMessage) error {
	var d transformer.DataConfig
	if err := train.DecodeConfig(data, &d); err != nil {
		return fmt.Errorf("data config: %w", err)
	}
	if d.Task != transformer.CharLM {
		return errEstimateToyTask
	}
	return nil
}

func (daeFamily) canEstimate(json.RawMessage) error { return errEstimateModel }

// checkEstimate refuses -eval-iters for a family that says from its data configuration
// that it cannot estimate.
func checkEstimate(fam Family, data json.RawMessage, st *trainSettings) error {
	if st.EvalIters == 0 {
		return nil
	}
	if ef, ok := fam.(estimatingFamily); ok {
		return ef.canEstimate(data)
	}
	return nil
}

func (s *transformerSession) estimate(ctx context.Context, m *autodiff.Model, iters int, seed uint64) (train.Metrics, error) {
	return s.data.Estimate(ctx, m, iters, seed)
}

// evalOf returns the evaluation of the settings: the session's Metrics over -eval-n
// examples, or with -eval-iters its estimate.
func evalOf(s Session, st *trainSettings) (func(context.Context, *autodiff.Model, uint64) (train.Metrics, error), error) {
	if st.EvalIters == 0 {
		return func(ctx context.Context, m *autodiff.Model, seed uint64) (train.Metrics, error) {
			return s.Metrics(ctx, m, st.EvalN, seed)
		}, nil
	}
	e, ok := s.(estimator)
	if !ok {
		return nil, errEstimateModel
	}
	if err := e.canEstimate(); err != nil {
		return nil, err
	}
	return func(ctx context.Context, m *autodiff.Model, seed uint64) (train.Metrics, error) {
		return e.estimate(ctx, m, st.EvalIters, seed)
	}, nil
}
