package dae

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/optim"
)

// TrainConfig is the training loop of Fit. Start from DefaultTrainConfig.
type TrainConfig struct {
	// Epochs is the number of passes over the training images.
	Epochs int
	// MaxSteps, if positive, stops training after that many steps, even mid-epoch.
	MaxSteps int
	// BatchSize is the number of images per step; the last, shorter batch of an epoch is
	// kept.
	BatchSize int
	// Adam configures the optimizer (all parameters in one group).
	Adam optim.AdamConfig
	// Seed drives the per-epoch shuffling and the noise.
	Seed uint64
}

// DefaultTrainConfig returns the reference recipe: 3 epochs of batch 128, reshuffled each
// epoch, Adam with learning rate 1e-3.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{Epochs: 3, BatchSize: 128, Adam: optim.DefaultAdamConfig(), Seed: 1}
}

// EpochStats summarises one epoch of Fit (or the part of it run before MaxSteps).
type EpochStats struct {
	Epoch      int           // from 0
	Steps      int           // steps in this epoch
	TotalSteps int           // steps since the start of training
	MeanLoss   float64       // mean training loss over the epoch's images (batches weighted by size)
	Elapsed    time.Duration // wall time since the start of training
	MedianStep time.Duration // median time of one step: forward, backward, update (not batching and noise)
}

// Fit trains m on images (n·m.Dim() clean pixels) with tc: each step takes a batch of
// shuffled images, corrupts it with the model's Corruption, and applies one Adam update
// of the MSE loss. onEpoch, if not nil, is called after every epoch; an error it returns
// stops training and is returned.
func Fit(m *Model, images []float32, tc TrainConfig, onEpoch func(EpochStats) error) error {
	if err := m.checkRows("training set", images); err != nil {
		return err
	}
	if tc.Epochs < 1 && tc.MaxSteps < 1 {
		return fmt.Errorf("dae: fit: Epochs=%d and MaxSteps=%d leave nothing to do", tc.Epochs, tc.MaxSteps)
	}
	d := m.Dim()
	n := len(images) / d
	it, err := datasets.NewIterator(datasets.IteratorConfig{N: n, BatchSize: tc.BatchSize, Seed: tc.Seed, Shuffle: true})
	if err != nil {
		return fmt.Errorf("dae: fit: %w", err)
	}
	opt, err := optim.NewAdam(optim.All(m.ps.List()), tc.Adam)
	if err != nil {
		return fmt.Errorf("dae: fit: %w", err)
	}
	rng := rand.New(rand.NewPCG(tc.Seed, 0x6e6f697365)) // "noise"
	epochs := tc.Epochs
	if epochs < 1 {
		epochs = (tc.MaxSteps + it.BatchesPerEpoch() - 1) / it.BatchesPerEpoch()
	}
	clean := make([]float32, 0, tc.BatchSize*d)
	noisy := make([]float32, tc.BatchSize*d)
	noise := m.Noise()
	start := time.Now()
	total := 0
	m.ps.ZeroGrad()
	for e := range epochs {
		var sum float64
		var seen int
		var times []time.Duration
		for range it.BatchesPerEpoch() {
			if tc.MaxSteps > 0 && total == tc.MaxSteps {
				break
			}
			idx, _ := it.Next()
			clean = clean[:0]
			for _, i := range idx {
				clean = append(clean, images[i*d:(i+1)*d]...)
			}
			nz := noisy[:len(clean)]
			noise.Corrupt(nz, clean, rng)
			t0 := time.Now()
			loss, err := m.ForwardBackward(nz, clean)
			if err != nil {
				return err
			}
			if err := opt.Step(); err != nil {
				return fmt.Errorf("dae: fit: step %d: %w", total, err)
			}
			m.ps.ZeroGrad()
			times = append(times, time.Since(t0))
			sum += loss * float64(len(idx))
			seen += len(idx)
			total++
		}
		if len(times) == 0 {
			break
		}
		slices.Sort(times)
		st := EpochStats{Epoch: e, Steps: len(times), TotalSteps: total, MeanLoss: sum / float64(seen),
			Elapsed: time.Since(start), MedianStep: times[len(times)/2]}
		if onEpoch != nil {
			if err := onEpoch(st); err != nil {
				return err
			}
		}
	}
	return nil
}
