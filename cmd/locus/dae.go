package main

import (
	"fmt"
	"path/filepath"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/train"
)

// metricMSEClean is the denoising autoencoders' metric that selects the best checkpoint.
const metricMSEClean = dae.MetricMSEClean

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
	return dae.Metrics(s.dae, imgs.Pixels[:n*imgs.Rows*imgs.Cols], s.dae.Noise(), seed)
}

// newDAEData returns the training data of s.
func (s *session) newDAEData() (*dae.Data, error) {
	return dae.NewData(s.dae, s.mnist.Train, s.data.Batch, s.data.Seed+1)
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
