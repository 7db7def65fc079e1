package transformer

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
)

// TestCorpusEstimate: nanoGPT's estimate_loss: loss is the mean over iters batches of
// the validation split's windows, train_loss over iters batches of the training
// split's, each drawn as CorpusEstimate documents (seed and seed+1). The splits hold
// different symbols, so that a batch of the wrong split, or one batch more or fewer,
// gives another mean.
func TestCorpusEstimate(t *testing.T) {
	cfg := DefaultConfig(ArchLM, 6, 4)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 8, 2, 1, 16
	ps, _ := autodiff.NewParams(autodiff.Float64, 3)
	model, err := New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	m := autodiff.NewModel(ps, model.Builder(), 1)
	rng := rand.New(rand.NewPCG(1, 2))
	c := &datasets.Corpus{Vocab: datasets.VocabFromText([]byte("abcdef"))}
	for range 200 {
		c.Train = append(c.Train, uint16(rng.IntN(3)))
		c.Val = append(c.Val, uint16(3+rng.IntN(3)))
	}
	const iters, batch, seq, seed = 5, 3, 4, 17
	mean := func(s datasets.Split, n int, seed uint64) float64 {
		r := datasets.NewRand(seed)
		sum := 0.0
		for range n {
			b, err := c.SampleBatch(r, s, batch, seq)
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Forward(TaskInputs(b))
			if err != nil {
				t.Fatal(err)
			}
			sum += res.Loss
		}
		return sum / float64(n)
	}
	got, err := CorpusEstimate(context.Background(), m, c, iters, batch, seq, seed)
	if err != nil {
		t.Fatal(err)
	}
	if want := mean(datasets.Validation, iters, seed); got[MetricLoss] != want {
		t.Errorf("loss %v, want the mean of %d validation batches %v", got[MetricLoss], iters, want)
	}
	if want := mean(datasets.Train, iters, seed+1); got["train_loss"] != want {
		t.Errorf("train_loss %v, want the mean of %d training batches %v", got["train_loss"], iters, want)
	}
	for _, other := range []float64{mean(datasets.Validation, iters-1, seed), mean(datasets.Validation, iters+1, seed), mean(datasets.Train, iters, seed)} {
		if got[MetricLoss] == other {
			t.Fatalf("loss %v equals another count's or split's mean: the test cannot tell them apart", other)
		}
	}
	if _, ok := got[MetricBPC]; !ok {
		t.Errorf("metrics %v lack %s", got, MetricBPC)
	}
}

// TestDataConfigValFraction: val_fraction holds out the tail of the text (nanoGPT's
// int(n·0.9) cut); a data config without it keeps the old split; bad values are named.
func TestDataConfigValFraction(t *testing.T) {
	text := "abcdefghijklmnopqrstuvwxy" // 25 bytes: the tail split cuts at 22, the old one at 23
	path := t.TempDir() + "/t.txt"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		frac float64
		val  string
	}{{0.1, text[22:]}, {0, text[23:]}} {
		d, err := DataConfig{Task: CharLM, Corpus: path, SeqLen: 1, Batch: 1, ValFraction: tc.frac}.Open()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := d.Corpus.Vocab.Decode(datasets.Ints(d.Corpus.Val)); string(got) != tc.val {
			t.Errorf("val_fraction %g: validation text %q, want %q", tc.frac, got, tc.val)
		}
	}
	for _, tc := range []struct {
		d    DataConfig
		want string
	}{
		{DataConfig{Task: CharLM, SeqLen: 4, Batch: 1, ValFraction: 1}, "data config: val_fraction 1, want a fraction in (0, 1)"},
		{DataConfig{Task: CharLM, SeqLen: 4, Batch: 1, ValFraction: math.NaN()}, "data config: val_fraction NaN"},
		{DataConfig{Task: "sort", Batch: 1, ValFraction: 0.1}, "val_fraction 0.1 is for task charlm, not sort"},
	} {
		if err := tc.d.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.d, err, tc.want)
		}
	}
}
