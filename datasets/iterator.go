package datasets

import (
	"fmt"
	"math/rand/v2"
)

// IteratorConfig describes how an Iterator walks over N examples.
type IteratorConfig struct {
	N         int    `json:"n"`          // number of examples, indexed 0..N-1; > 0
	BatchSize int    `json:"batch_size"` // examples per batch; > 0
	Seed      uint64 `json:"seed"`       // seed of the per-epoch permutations
	Shuffle   bool   `json:"shuffle"`    // visit each epoch in a fresh random order (else 0..N-1)
	// DropLast drops the last, short batch of an epoch when BatchSize does
	// not divide N; otherwise that batch is returned with fewer indices.
	DropLast bool `json:"drop_last"`
}

// Iterator yields batches of example indices, epoch after epoch, forever.
// The order of epoch e depends only on (Seed, e), so the position (epoch,
// index) restores the walk exactly.
type Iterator struct {
	cfg   IteratorConfig
	epoch int
	index int   // position in the epoch's order of the next batch
	order []int // the current epoch's order; nil until needed
}

// IteratorState is the position of an Iterator, with the configuration it
// belongs to. It encodes to JSON.
type IteratorState struct {
	IteratorConfig
	Epoch int `json:"epoch"` // current epoch, from 0
	Index int `json:"index"` // position within the epoch of the next batch's first example
}

// NewIterator returns an iterator at the start of epoch 0.
func NewIterator(cfg IteratorConfig) (*Iterator, error) {
	if cfg.N < 1 {
		return nil, fmt.Errorf("iterator: N=%d must be positive", cfg.N)
	}
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("iterator: BatchSize=%d must be positive", cfg.BatchSize)
	}
	if cfg.DropLast && cfg.BatchSize > cfg.N {
		return nil, fmt.Errorf("iterator: BatchSize=%d > N=%d with DropLast leaves no batches", cfg.BatchSize, cfg.N)
	}
	return &Iterator{cfg: cfg}, nil
}

// BatchesPerEpoch returns the number of batches in one epoch.
func (it *Iterator) BatchesPerEpoch() int {
	if it.cfg.DropLast {
		return it.cfg.N / it.cfg.BatchSize
	}
	return (it.cfg.N + it.cfg.BatchSize - 1) / it.cfg.BatchSize
}

// Epoch returns the epoch of the next batch.
func (it *Iterator) Epoch() int {
	it.rollover()
	return it.epoch
}

// Next returns the indices of the next batch and the epoch it belongs to.
// The returned slice is fresh; the caller may keep it.
func (it *Iterator) Next() (indices []int, epoch int) {
	it.rollover()
	if it.order == nil {
		it.order = it.epochOrder(it.epoch)
	}
	end := min(it.index+it.cfg.BatchSize, it.cfg.N)
	indices = append([]int(nil), it.order[it.index:end]...)
	epoch = it.epoch
	it.index = end
	return indices, epoch
}

// rollover moves to the next epoch when the current one has no batch left.
func (it *Iterator) rollover() {
	left := it.cfg.N - it.index
	if left == 0 || (it.cfg.DropLast && left < it.cfg.BatchSize) {
		it.epoch++
		it.index = 0
		it.order = nil
	}
}

// epochOrder returns the visiting order of epoch e.
func (it *Iterator) epochOrder(e int) []int {
	if !it.cfg.Shuffle {
		order := make([]int, it.cfg.N)
		for i := range order {
			order[i] = i
		}
		return order
	}
	return rand.New(rand.NewPCG(it.cfg.Seed^streamPerm, uint64(e))).Perm(it.cfg.N)
}

// State returns the iterator's position.
func (it *Iterator) State() IteratorState {
	return IteratorState{IteratorConfig: it.cfg, Epoch: it.epoch, Index: it.index}
}

// Restore moves the iterator to the position st, saved by State. The data
// size, batch size and shuffling options must match; the seed is taken from
// st, so a resumed run continues the original order.
func (it *Iterator) Restore(st IteratorState) error {
	c := it.cfg
	if st.N != c.N || st.BatchSize != c.BatchSize || st.Shuffle != c.Shuffle || st.DropLast != c.DropLast {
		return fmt.Errorf("restore iterator: saved for N=%d BatchSize=%d Shuffle=%v DropLast=%v, this iterator has N=%d BatchSize=%d Shuffle=%v DropLast=%v",
			st.N, st.BatchSize, st.Shuffle, st.DropLast, c.N, c.BatchSize, c.Shuffle, c.DropLast)
	}
	if st.Epoch < 0 || st.Index < 0 || st.Index > st.N {
		return fmt.Errorf("restore iterator: position epoch %d index %d is out of range for N=%d", st.Epoch, st.Index, st.N)
	}
	it.cfg.Seed, it.epoch, it.index, it.order = st.Seed, st.Epoch, st.Index, nil
	return nil
}
