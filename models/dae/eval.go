package dae

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/locusml/locus/train"
)

// Metric names reported by Metrics.
const (
	MetricMSEClean = "mse_clean" // test MSE of the output for clean inputs
	MetricMSENoisy = "mse_noisy" // test MSE of the output for corrupted inputs
)

// Metrics is EvaluateWith as train.Metrics (MetricMSEClean and MetricMSENoisy), for a
// train.Loop's Eval:
//
//	loop.Eval = func(ctx context.Context) (train.Metrics, error) { return dae.Metrics(ctx, m, test, m.Noise(), seed) }
//
// It stops with ctx.Err() between chunks of 1000 images once ctx is done.
func Metrics(ctx context.Context, d Denoiser, images []float32, c Corruption, seed uint64) (train.Metrics, error) {
	clean, noisy, err := evaluate(ctx, d, images, c, seed)
	if err != nil {
		return nil, err
	}
	return train.Metrics{MetricMSEClean: clean, MetricMSENoisy: noisy}, nil
}

// Evaluate returns the test MSE of d on images (n·d.Dim() clean pixels): cleanMSE is
// mean((d(z) − z)²) over all pixels of the clean images z, and noisyMSE is
// mean((d(z + σε) − z)²) with ε ~ N(0, 1) drawn from seed, not clipped (the reference's
// denoising MSE).
func Evaluate(d Denoiser, images []float32, sigma float64, seed uint64) (cleanMSE, noisyMSE float64, err error) {
	return EvaluateWith(d, images, Gaussian{Sigma: sigma}, seed)
}

// EvaluateWith is Evaluate with any corruption c for the noisy-input MSE.
func EvaluateWith(d Denoiser, images []float32, c Corruption, seed uint64) (cleanMSE, noisyMSE float64, err error) {
	return evaluate(context.Background(), d, images, c, seed)
}

func evaluate(ctx context.Context, d Denoiser, images []float32, c Corruption, seed uint64) (cleanMSE, noisyMSE float64, err error) {
	dim := d.Dim()
	if len(images) == 0 || len(images)%dim != 0 {
		return 0, 0, fmt.Errorf("dae: evaluate: %d values is not a positive multiple of %d", len(images), dim)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6576616c)) // "eval"
	chunk := 1000 * dim
	out := make([]float32, min(chunk, len(images)))
	noisy := make([]float32, len(out))
	var sc, sn float64
	for lo := 0; lo < len(images); lo += chunk {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		clean := images[lo:min(lo+chunk, len(images))]
		o, nz := out[:len(clean)], noisy[:len(clean)]
		if err := d.Denoise(o, clean); err != nil {
			return 0, 0, err
		}
		sc += sumSqDiff(o, clean)
		c.Corrupt(nz, clean, rng)
		if err := d.Denoise(o, nz); err != nil {
			return 0, 0, err
		}
		sn += sumSqDiff(o, clean)
	}
	n := float64(len(images))
	return sc / n, sn / n, nil
}

// MSE returns mean((a − b)²); a and b have the same length.
func MSE(a, b []float32) float64 {
	if len(a) == 0 {
		return 0
	}
	return sumSqDiff(a, b) / float64(len(a))
}

func sumSqDiff(a, b []float32) float64 {
	var s float64
	for i, v := range a {
		e := float64(v) - float64(b[i])
		s += e * e
	}
	return s
}
