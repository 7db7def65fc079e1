package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/train"
)

// Metric names of denoising autoencoders: test MSE for clean and for noisy inputs.
const (
	metricMSEClean = "mse_clean"
	metricMSENoisy = "mse_noisy"
)

func (s *session) loadMNIST() error {
	dir := s.data.MNIST
	if dir == "" {
		var err error
		if dir, err = datasets.DefaultMNISTDir(); err != nil {
			return err
		}
	}
	var err error
	s.mnist, err = datasets.LoadMNIST(dir)
	return err
}

// buildDAE creates the denoising autoencoder's parameters and runner.
func (s *session) buildDAE(seed uint64) error {
	ps, err := autodiff.NewParams(autodiff.Float32, seed)
	if err != nil {
		return err
	}
	m, err := dae.New(s.daeCfg, ps)
	if err != nil {
		return err
	}
	s.params, s.dae, s.run = ps, m, m.Net()
	return nil
}

// daeMetrics is the test MSE of the model's output against the clean image, for clean
// inputs and for inputs corrupted by the model's noise, over the first n test images.
func (s *session) daeMetrics(n int, seed uint64) (train.Metrics, error) {
	imgs := s.mnist.Test
	n = min(n, imgs.N)
	clean, noisy, err := dae.EvaluateWith(s.dae, imgs.Pixels[:n*imgs.Rows*imgs.Cols], s.dae.Noise(), seed)
	if err != nil {
		return nil, err
	}
	return train.Metrics{metricMSEClean: clean, metricMSENoisy: noisy}, nil
}

// daeData is a train.Data of MNIST training batches: a shuffled epoch iterator, with
// noise drawn from a generator seeded by (seed, step), so that the position alone
// determines every batch.
type daeData struct {
	m      *dae.Model
	images *datasets.Images
	it     *datasets.Iterator
	seed   uint64
	step   uint64
}

func (d *daeData) Next() (train.Batch, error) {
	idx, _ := d.it.Next()
	dim := d.m.Dim()
	clean := make([]float32, len(idx)*dim)
	for i, j := range idx {
		copy(clean[i*dim:(i+1)*dim], d.images.Pixels[j*dim:(j+1)*dim])
	}
	noisy := make([]float32, len(clean))
	d.m.Noise().Corrupt(noisy, clean, datasets.NewRand(d.seed*0x9e3779b97f4a7c15+d.step))
	d.step++
	in, err := dae.BatchInputs(d.m, noisy, clean)
	if err != nil {
		return train.Batch{}, err
	}
	return train.Batch{Inputs: in, Items: len(idx)}, nil
}

type daeDataState struct {
	Iterator datasets.IteratorState `json:"iterator"`
	Step     uint64                 `json:"step"`
}

func (d *daeData) State() (json.RawMessage, error) {
	return json.Marshal(daeDataState{Iterator: d.it.State(), Step: d.step})
}

func (d *daeData) Restore(state json.RawMessage) error {
	var st daeDataState
	if err := json.Unmarshal(state, &st); err != nil {
		return err
	}
	d.step = st.Step
	return d.it.Restore(st.Iterator)
}

// newDAEData returns the training data of s.
func (s *session) newDAEData() (*daeData, error) {
	it, err := datasets.NewIterator(datasets.IteratorConfig{N: s.mnist.Train.N, BatchSize: s.data.Batch, Seed: s.data.Seed + 1, Shuffle: true})
	if err != nil {
		return nil, err
	}
	return &daeData{m: s.dae, images: s.mnist.Train, it: it, seed: s.data.Seed + 1}, nil
}

// writeDAEGrid writes a PNG grid of clean / noisy / denoised test digits into dir.
func (s *session) writeDAEGrid(dir string, seed uint64) (string, error) {
	const n = 16
	imgs := s.mnist.Test
	dim := s.dae.Dim()
	clean := imgs.Pixels[:n*dim]
	noisy := make([]float32, len(clean))
	s.dae.Noise().Corrupt(noisy, clean, datasets.NewRand(seed))
	den := make([]float32, len(clean))
	if err := s.dae.Denoise(den, noisy); err != nil {
		return "", err
	}
	rows := func(x []float32) [][]float32 {
		out := make([][]float32, n)
		for i := range out {
			out[i] = x[i*dim : (i+1)*dim]
		}
		return out
	}
	path := filepath.Join(dir, "denoised.png")
	if err := dae.WriteGrid(path, rows(clean), rows(noisy), rows(den), 2); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
