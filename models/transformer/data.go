package transformer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/train"
)

// StreamData adapts a datasets.Stream (a toy task or a text corpus) to train.Data.
type StreamData struct {
	Stream *datasets.Stream
	// Tokens counts every position as an item (language modelling); otherwise items
	// are sequences.
	Tokens bool
}

// Next returns the stream's next batch as model inputs.
func (d *StreamData) Next() (train.Batch, error) {
	b := d.Stream.Next()
	items := b.B
	if d.Tokens {
		items = b.B * b.T
	}
	return train.Batch{Inputs: TaskInputs(b), Items: items}, nil
}

// State returns the stream's position.
func (d *StreamData) State() (json.RawMessage, error) { return json.Marshal(d.Stream.State()) }

// Restore moves the stream to a saved position.
func (d *StreamData) Restore(state json.RawMessage) error {
	var st datasets.StreamState
	if err := json.Unmarshal(state, &st); err != nil {
		return err
	}
	return d.Stream.Restore(st)
}

// Metric names reported by TaskMetrics and CorpusMetrics.
const (
	MetricLoss     = "loss"
	MetricTokenAcc = "token_acc"
	MetricSeqAcc   = "seq_acc"
	MetricBPC      = "bpc" // bits per character: loss / ln 2
)

// TaskMetrics evaluates a toy-task model on n fresh examples drawn with seed (the same
// examples at every call): mean loss, token accuracy over scored positions and whole
// sequence accuracy. It stops with ctx.Err() between batches once ctx is done.
func TaskMetrics(ctx context.Context, m *autodiff.Model, task datasets.Task, layout datasets.Layout, n int, seed uint64) (train.Metrics, error) {
	rng := datasets.NewRand(seed)
	acc := &datasets.Accuracy{}
	var lossSum float64
	var lossN int
	for done := 0; done < n; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		bs := min(250, n-done)
		b, err := datasets.SampleBatch(task, rng, bs, layout)
		if err != nil {
			return nil, err
		}
		res, err := m.Forward(TaskInputs(b))
		if err != nil {
			return nil, err
		}
		if err := acc.Add(task, b, Predict(res.Values[OutputLogits])); err != nil {
			return nil, err
		}
		lossSum += res.Loss * float64(bs)
		lossN += bs
		done += bs
	}
	return train.Metrics{MetricLoss: lossSum / float64(lossN), MetricTokenAcc: acc.Token(), MetricSeqAcc: acc.Seq()}, nil
}

// TaskEval returns a train.Loop Eval function for TaskMetrics.
func TaskEval(m *autodiff.Model, task datasets.Task, layout datasets.Layout, n int, seed uint64) func(context.Context) (train.Metrics, error) {
	return func(ctx context.Context) (train.Metrics, error) { return TaskMetrics(ctx, m, task, layout, n, seed) }
}

// CorpusMetrics evaluates a character LM on batches random windows of length t from
// the validation split (the same windows at every call): mean loss, bits per character
// and next-character accuracy. It stops with ctx.Err() between batches once ctx is done.
func CorpusMetrics(ctx context.Context, m *autodiff.Model, c *datasets.Corpus, batches, batchSize, t int, seed uint64) (train.Metrics, error) {
	return corpusMetrics(ctx, m, c, datasets.Validation, batches, batchSize, t, seed)
}

// CorpusEstimate evaluates a character LM the way nanoGPT's estimate_loss does: the
// loss on each split is the mean over iters batches of batchSize random windows of
// length t. It returns CorpusMetrics's metrics of the validation split and the
// training split's loss as train.TrainPrefix+MetricLoss ("train_loss"); the windows are
// drawn from seed, the same at every call.
func CorpusEstimate(ctx context.Context, m *autodiff.Model, c *datasets.Corpus, iters, batchSize, t int, seed uint64) (train.Metrics, error) {
	val, err := corpusMetrics(ctx, m, c, datasets.Validation, iters, batchSize, t, seed)
	if err != nil {
		return nil, err
	}
	tr, err := corpusMetrics(ctx, m, c, datasets.Train, iters, batchSize, t, seed+1)
	if err != nil {
		return nil, err
	}
	val[train.TrainPrefix+MetricLoss] = tr[MetricLoss]
	return val, nil
}

// corpusMetrics is CorpusMetrics on split s.
func corpusMetrics(ctx context.Context, m *autodiff.Model, c *datasets.Corpus, s datasets.Split, batches, batchSize, t int, seed uint64) (train.Metrics, error) {
	rng := datasets.NewRand(seed)
	acc := &datasets.Accuracy{}
	var lossSum float64
	for range batches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := c.SampleBatch(rng, s, batchSize, t)
		if err != nil {
			return nil, err
		}
		res, err := m.Forward(TaskInputs(b))
		if err != nil {
			return nil, err
		}
		if err := acc.Add(nil, b, Predict(res.Values[OutputLogits])); err != nil {
			return nil, err
		}
		lossSum += res.Loss
	}
	loss := lossSum / float64(batches)
	return train.Metrics{MetricLoss: loss, MetricBPC: loss / math.Ln2, MetricTokenAcc: acc.Token()}, nil
}

// Split returns part part of parts of a batch of Next for data-parallel training: a
// contiguous run of its sequences, weighed by its scored targets, which the loss is a
// mean over.
func (d *StreamData) Split(b train.Batch, part, parts int) (train.Batch, float64, error) {
	return splitScored(b, part, parts)
}

// splitScored is a train.Splitter's Split for the inputs of Builder: rows of InputIDs
// (and InputSource), weighed by their targets that are not datasets.IgnoreIndex.
func splitScored(b train.Batch, part, parts int) (train.Batch, float64, error) {
	ids, tgts := b.Inputs[InputIDs], b.Inputs[InputTargets]
	if ids == nil || tgts == nil {
		return train.Batch{}, 0, fmt.Errorf("transformer: split: the batch lacks %q or %q", InputIDs, InputTargets)
	}
	n := ids.Shape()[0]
	lo, hi := train.Part(n, part, parts)
	p, err := train.Rows(b, n, lo, hi)
	if err != nil {
		return train.Batch{}, 0, err
	}
	if lo == hi { // more parts than sequences: this one has none (and no inputs)
		return p, 0, nil
	}
	scored := 0
	for _, t := range p.Inputs[InputTargets].Data().([]int) {
		if t != datasets.IgnoreIndex {
			scored++
		}
	}
	return p, float64(scored), nil
}
