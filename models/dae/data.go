package dae

import (
	"encoding/json"
	"fmt"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/train"
)

// Data is a train.Data of denoising batches for a Model: shuffled epochs of clean images,
// reshuffled each epoch with the last, shorter batch kept, each batch corrupted by the
// model's Corruption. The noise of a batch is drawn from a generator seeded by the seed
// and the number of the batch, so the position alone determines every batch and a run
// resumed from a checkpoint sees exactly the batches of an uninterrupted one.
type Data struct {
	m      *Model
	images *datasets.Images
	it     *datasets.Iterator
	seed   uint64
	step   uint64
}

var (
	_ train.Data     = (*Data)(nil)
	_ train.Splitter = (*Data)(nil)
)

// NewData returns the training batches of batch images from images for m; seed drives
// both the shuffling and the noise. The images must have m.Dim() pixels each; they are
// read, not copied.
func NewData(m *Model, images *datasets.Images, batch int, seed uint64) (*Data, error) {
	if m == nil || images == nil {
		return nil, fmt.Errorf("dae: data: nil model or images")
	}
	if d := images.Rows * images.Cols; d != m.Dim() || images.N < 1 || len(images.Pixels) != images.N*d {
		return nil, fmt.Errorf("dae: data: %d images of %d×%d pixels (%d values) for a model of %d inputs",
			images.N, images.Rows, images.Cols, len(images.Pixels), m.Dim())
	}
	it, err := datasets.NewIterator(datasets.IteratorConfig{N: images.N, BatchSize: batch, Seed: seed, Shuffle: true})
	if err != nil {
		return nil, fmt.Errorf("dae: data: %w", err)
	}
	return &Data{m: m, images: images, it: it, seed: seed}, nil
}

// StepsPerEpoch returns the number of batches in one pass over the images.
func (d *Data) StepsPerEpoch() int { return d.it.BatchesPerEpoch() }

// Next returns the next batch: inputs "noisy" and "clean" (see BatchInputs) in fresh
// memory, and the number of images as Items. It never returns io.EOF.
func (d *Data) Next() (train.Batch, error) {
	idx, _ := d.it.Next()
	dim := d.m.Dim()
	clean := make([]float32, len(idx)*dim)
	for i, j := range idx {
		copy(clean[i*dim:(i+1)*dim], d.images.Pixels[j*dim:(j+1)*dim])
	}
	noisy := make([]float32, len(clean))
	d.m.Noise().Corrupt(noisy, clean, datasets.NewRand(d.seed*0x9e3779b97f4a7c15+d.step))
	d.step++
	in, err := BatchInputs(d.m, noisy, clean)
	if err != nil {
		return train.Batch{}, err
	}
	return train.Batch{Inputs: in, Items: len(idx)}, nil
}

// Split returns part part of parts of a batch of Next for data-parallel training: a
// contiguous run of its images, weighed by their number (the loss is a mean over pixels,
// the same number per image). A model of WholeBatches, whose images are positions in
// their batch, is not split: part 0 is the whole batch and the others are empty, so that
// the run computes what one process does.
func (d *Data) Split(b train.Batch, part, parts int) (train.Batch, float64, error) {
	x := b.Inputs["noisy"]
	if x == nil {
		return train.Batch{}, 0, fmt.Errorf("dae: split: the batch lacks \"noisy\"")
	}
	n := x.Shape()[0]
	lo, hi := train.Part(n, part, parts)
	if d.m.WholeBatches() {
		lo, hi = 0, 0
		if part == 0 {
			hi = n
		}
	}
	p, err := train.Rows(b, n, lo, hi)
	return p, float64(hi - lo), err
}

// dataState is the position of a Data, as saved in checkpoints.
type dataState struct {
	Iterator datasets.IteratorState `json:"iterator"`
	Step     uint64                 `json:"step"`
}

// State returns the position: the shuffling iterator's and the number of batches drawn.
func (d *Data) State() (json.RawMessage, error) {
	return json.Marshal(dataState{Iterator: d.it.State(), Step: d.step})
}

// Restore moves d to a position returned by State, seed included.
func (d *Data) Restore(state json.RawMessage) error {
	var st dataState
	if err := json.Unmarshal(state, &st); err != nil {
		return fmt.Errorf("dae: data: %w", err)
	}
	if err := d.it.Restore(st.Iterator); err != nil {
		return fmt.Errorf("dae: data: %w", err)
	}
	// The noise seed is the iterator's (NewData gives both the same), so a Data
	// restores the run's noise whatever seed it was made with, like the shuffling.
	d.seed, d.step = st.Iterator.Seed, st.Step
	return nil
}
