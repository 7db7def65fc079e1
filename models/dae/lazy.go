package dae

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Lazy is the lazy DAE of THEORY.md §6: the Gaussian local mean of a training set at
// bandwidth σ,
//
//	E[z|x] = Σ_i x_i N(x; x_i, σ²I) / Σ_j N(x; x_j, σ²I),
//
// the Bayes-optimal denoiser (under squared loss) for clean data drawn from the training
// set's empirical distribution and Gaussian noise of standard deviation σ: one MeanShift
// step. It needs no training; each query costs a pass over the training set.
//
// The log weights −‖x − x_i‖²/(2σ²) are computed as (x·x_i − ‖x_i‖²/2)/σ² (the ‖x‖²
// term cancels), the dot products as float32 matrix products, and normalised with a
// log-sum-exp in float64. Weights below e^−60 of a query's largest are dropped (their
// total is below 60000·e^−60 ≈ 5e−22 of the sum for MNIST).
type Lazy struct {
	train []float32
	n     int
	dim   int
	sigma float64
	half  []float32 // ‖x_i‖²/2

	// Workers is the number of goroutines that process blocks of queries; 0 means
	// GOMAXPROCS.
	Workers int
}

const (
	lazyQueryBlock = 64 // queries per matrix product
	lazyCutoff     = 60 // log-weight gap below the maximum at which weights are dropped
)

// NewLazy returns the lazy DAE over the n = len(train)/dim training points in train
// (row-major, not copied: the caller must not change it) at bandwidth sigma > 0.
func NewLazy(train []float32, dim int, sigma float64) (*Lazy, error) {
	if dim < 1 || len(train) == 0 || len(train)%dim != 0 {
		return nil, fmt.Errorf("dae: lazy: %d training values is not a positive multiple of dim %d", len(train), dim)
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return nil, fmt.Errorf("dae: lazy: bandwidth sigma=%g must be positive and finite", sigma)
	}
	n := len(train) / dim
	half := make([]float32, n)
	for i := range n {
		var s float64
		for _, v := range train[i*dim : (i+1)*dim] {
			s += float64(v) * float64(v)
		}
		half[i] = float32(s / 2)
	}
	return &Lazy{train: train, n: n, dim: dim, sigma: sigma, half: half}, nil
}

// Dim returns the number of coordinates of a point.
func (l *Lazy) Dim() int { return l.dim }

// Sigma returns the bandwidth σ.
func (l *Lazy) Sigma() float64 { return l.sigma }

// Denoise writes E[z|x] into dst for each query x of noisy, processing blocks of queries
// in parallel.
func (l *Lazy) Denoise(dst, noisy []float32) error {
	if len(noisy) == 0 || len(noisy)%l.dim != 0 {
		return fmt.Errorf("dae: lazy: %d query values is not a positive multiple of dim %d", len(noisy), l.dim)
	}
	if len(dst) != len(noisy) {
		return fmt.Errorf("dae: lazy: dst has %d values, input %d", len(dst), len(noisy))
	}
	nq := len(noisy) / l.dim
	workers := l.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	blocks := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, (nq+lazyQueryBlock-1)/lazyQueryBlock) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scores := make([]float32, lazyQueryBlock*l.n)
			acc := make([]float64, l.dim)
			for lo := range blocks {
				hi := min(lo+lazyQueryBlock, nq)
				l.block(dst[lo*l.dim:hi*l.dim], noisy[lo*l.dim:hi*l.dim], scores, acc)
			}
		}()
	}
	for lo := 0; lo < nq; lo += lazyQueryBlock {
		blocks <- lo
	}
	close(blocks)
	wg.Wait()
	return nil
}

// block denoises the queries q (rows of dim) into dst.
func (l *Lazy) block(dst, q, scores []float32, acc []float64) {
	nq := len(q) / l.dim
	s := scores[:nq*l.n]
	// s = Q · Xᵀ, [nq, n].
	blas32.Implementation().Sgemm(blas.NoTrans, blas.Trans, nq, l.n, l.dim,
		1, q, l.dim, l.train, l.dim, 0, s, l.n)
	inv := 1 / (l.sigma * l.sigma)
	for r := range nq {
		row := s[r*l.n : (r+1)*l.n]
		best := math.Inf(-1)
		for i, v := range row {
			if lw := (float64(v) - float64(l.half[i])) * inv; lw > best {
				best = lw
			}
		}
		clear(acc)
		var z float64
		for i, v := range row {
			lw := (float64(v)-float64(l.half[i]))*inv - best
			if lw < -lazyCutoff {
				continue
			}
			w := math.Exp(lw)
			z += w
			for j, x := range l.train[i*l.dim : (i+1)*l.dim] {
				acc[j] += w * float64(x)
			}
		}
		out := dst[r*l.dim : (r+1)*l.dim]
		for j, a := range acc {
			out[j] = float32(a / z)
		}
	}
}
