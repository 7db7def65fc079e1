package transformer

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/train"
	"gorgonia.org/tensor"
)

// EncDecInputs converts a batch of a toy task in the Aligned layout to an encdec
// model's inputs: the problem as the source (InputSource [B, T]), each row's answer (its
// scored targets) as InputTargets [B·A], and, for teacher forcing, the answer shifted
// right behind the start token bos as InputIDs [B, A]. bos is usually the task's
// vocabulary size, with a model vocabulary one larger.
func EncDecInputs(b datasets.Batch, bos int) (map[string]*tensor.Dense, error) {
	var ids, tgts []int
	a := -1
	for i := range b.B {
		ans := b.Row(i).Answer()
		if a < 0 {
			a = len(ans)
		}
		if len(ans) != a || a == 0 {
			return nil, fmt.Errorf("encdec inputs: row %d has %d scored targets, want %d > 0 in every row", i, len(ans), a)
		}
		ids = append(append(ids, bos), ans[:a-1]...)
		tgts = append(tgts, ans...)
	}
	return map[string]*tensor.Dense{
		InputSource:  tensor.New(tensor.WithShape(b.B, b.T), tensor.WithBacking(append([]int(nil), b.Inputs...))),
		InputIDs:     tensor.New(tensor.WithShape(b.B, a), tensor.WithBacking(ids)),
		InputTargets: tensor.New(tensor.WithShape(b.B*a), tensor.WithBacking(tgts)),
	}, nil
}

// alignAnswers spreads predictions of the answers, A per row, back over the scored
// positions of b (the Aligned layout), for datasets.Accuracy.
func alignAnswers(b datasets.Batch, pred []int) []int {
	out := make([]int, len(b.Targets))
	k := 0
	for i, t := range b.Targets {
		if t != datasets.IgnoreIndex {
			out[i] = pred[k]
			k++
		}
	}
	return out
}

// EncDecTaskMetrics is TaskMetrics for an encdec model (inputs from EncDecInputs with
// start token bos): mean loss, token and sequence accuracy of the teacher-forced argmax
// predictions on n fresh examples drawn with seed.
func EncDecTaskMetrics(ctx context.Context, m *autodiff.Model, task datasets.Task, bos, n int, seed uint64) (train.Metrics, error) {
	rng := datasets.NewRand(seed)
	acc := &datasets.Accuracy{}
	var lossSum float64
	for done := 0; done < n; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		bs := min(250, n-done)
		b, err := datasets.SampleBatch(task, rng, bs, datasets.Aligned)
		if err != nil {
			return nil, err
		}
		in, err := EncDecInputs(b, bos)
		if err != nil {
			return nil, err
		}
		res, err := m.Forward(in)
		if err != nil {
			return nil, err
		}
		if err := acc.Add(task, b, alignAnswers(b, Predict(res.Values[OutputLogits]))); err != nil {
			return nil, err
		}
		lossSum += res.Loss * float64(bs)
		done += bs
	}
	return train.Metrics{MetricLoss: lossSum / float64(n), MetricTokenAcc: acc.Token(), MetricSeqAcc: acc.Seq()}, nil
}

// EncDecGreedyMetrics decodes n fresh examples drawn with seed greedily with gen (free
// running: each step reads the model's own earlier outputs, not the true answer) and
// returns their token and sequence accuracy.
func EncDecGreedyMetrics(ctx context.Context, gen *Generator, task datasets.Task, bos, n int, seed uint64) (train.Metrics, error) {
	rng := datasets.NewRand(seed)
	acc := &datasets.Accuracy{}
	b, err := datasets.SampleBatch(task, rng, n, datasets.Aligned)
	if err != nil {
		return nil, err
	}
	var pred []int
	for i := range b.B {
		row := b.Row(i)
		out, err := gen.GenerateContext(ctx, row.Input, []int{bos}, len(row.Answer()), Sampling{}, -1, rand.New(rand.NewPCG(0, 0)))
		if err != nil {
			return nil, err
		}
		pred = append(pred, out...)
	}
	if err := acc.Add(task, b, alignAnswers(b, pred)); err != nil {
		return nil, err
	}
	return train.Metrics{MetricTokenAcc: acc.Token(), MetricSeqAcc: acc.Seq()}, nil
}

// EncDecData adapts a datasets.Stream of a toy task (Aligned layout) to train.Data for
// an encdec model, with start token BOS.
type EncDecData struct {
	Stream *datasets.Stream
	BOS    int
}

// Next returns the stream's next batch as encdec inputs; items are sequences.
func (d *EncDecData) Next() (train.Batch, error) {
	b := d.Stream.Next()
	in, err := EncDecInputs(b, d.BOS)
	if err != nil {
		return train.Batch{}, err
	}
	return train.Batch{Inputs: in, Items: b.B}, nil
}

// Split returns part part of parts of a batch of Next for data-parallel training: a
// contiguous run of its sequences, weighed by their scored targets.
func (d *EncDecData) Split(b train.Batch, part, parts int) (train.Batch, float64, error) {
	return splitScored(b, part, parts)
}

// State returns the stream's position.
func (d *EncDecData) State() (json.RawMessage, error) { return json.Marshal(d.Stream.State()) }

// Restore moves the stream to a saved position.
func (d *EncDecData) Restore(state json.RawMessage) error {
	var st datasets.StreamState
	if err := json.Unmarshal(state, &st); err != nil {
		return err
	}
	return d.Stream.Restore(st)
}
