package cli

import (
	"context"

	"github.com/locusml/locus/autodiff"
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
		return usageErrorf("-eval-iters is for -task charlm (a toy task's evaluation draws -eval-n fresh examples)")
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
		return nil, usageErrorf("-eval-iters is for -task charlm (this model evaluates over -eval-n examples)")
	}
	if err := e.canEstimate(); err != nil {
		return nil, err
	}
	return func(ctx context.Context, m *autodiff.Model, seed uint64) (train.Metrics, error) {
		return e.estimate(ctx, m, st.EvalIters, seed)
	}, nil
}
