package datasets

import (
	"fmt"
	"math/rand/v2"
)

// Stream selectors keep the random streams of different uses of one seed
// apart (PCG's second seed word).
const (
	streamTask uint64 = 0x7461736b // "task"
	streamText uint64 = 0x74657874 // "text"
	streamPerm uint64 = 0x7065726d // "perm"
	streamPts  uint64 = 0x70747300 // "pts"
)

// NewRand returns a generator seeded with seed, for callers that want the
// same kind of source as this package (a math/rand/v2 PCG).
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, streamTask))
}

// Stream is an endless, seeded sequence of batches (from a task or a text
// corpus) whose position can be saved in a checkpoint and restored exactly.
type Stream struct {
	name   string
	batch  int
	seed   uint64
	step   int64
	src    *rand.PCG
	rng    *rand.Rand
	sample func(*rand.Rand) Batch
}

// StreamState is the position of a Stream. It is plain data that encodes to
// JSON (RNG as base64).
type StreamState struct {
	Name      string `json:"name"` // what the stream draws from, e.g. "task reverse aligned T=16 V=10"
	BatchSize int    `json:"batch_size"`
	Seed      uint64 `json:"seed"` // the seed the stream started from
	Step      int64  `json:"step"` // batches drawn so far
	RNG       []byte `json:"rng"`  // the PCG state, from (*rand.PCG).MarshalBinary
}

func newStream(name string, batchSize int, seed, selector uint64, sample func(*rand.Rand) Batch) *Stream {
	src := rand.NewPCG(seed, selector)
	return &Stream{name: name, batch: batchSize, seed: seed, src: src, rng: rand.New(src), sample: sample}
}

// NewTaskStream returns a stream of batches of batchSize examples of task t
// in layout l, drawn from a generator seeded with seed.
func NewTaskStream(t Task, l Layout, batchSize int, seed uint64) (*Stream, error) {
	if t == nil {
		return nil, fmt.Errorf("task stream: nil task")
	}
	if _, err := SampleBatch(t, NewRand(0), 1, l); err != nil {
		return nil, fmt.Errorf("task stream: %w", err)
	}
	if batchSize < 1 {
		return nil, fmt.Errorf("task stream of %s: batch size %d must be positive", t.Name(), batchSize)
	}
	name := fmt.Sprintf("task %s %v T=%d V=%d answer=%d", t.Name(), l, t.SeqLen(), t.Vocab(), t.AnswerLen())
	return newStream(name, batchSize, seed, streamTask, func(rng *rand.Rand) Batch {
		return sampleBatch(t, rng, batchSize, l)
	}), nil
}

// Next returns the next batch.
func (s *Stream) Next() Batch {
	s.step++
	return s.sample(s.rng)
}

// Name describes what the stream draws from.
func (s *Stream) Name() string { return s.name }

// Step returns the number of batches drawn so far.
func (s *Stream) Step() int64 { return s.step }

// State returns the stream's position.
func (s *Stream) State() StreamState {
	rng, err := s.src.MarshalBinary()
	if err != nil {
		panic("datasets: PCG.MarshalBinary failed: " + err.Error()) // it cannot
	}
	return StreamState{Name: s.name, BatchSize: s.batch, Seed: s.seed, Step: s.step, RNG: rng}
}

// Restore moves the stream to the position st, saved by State from a stream
// with the same source and batch size; the batches that follow are then the
// ones that followed when st was saved.
func (s *Stream) Restore(st StreamState) error {
	if st.Name != s.name {
		return fmt.Errorf("restore stream: saved for %q, this stream is %q", st.Name, s.name)
	}
	if st.BatchSize != s.batch {
		return fmt.Errorf("restore stream %q: saved with batch size %d, this stream has %d", s.name, st.BatchSize, s.batch)
	}
	if st.Step < 0 {
		return fmt.Errorf("restore stream %q: negative step %d", s.name, st.Step)
	}
	src := new(rand.PCG)
	if err := src.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("restore stream %q: rng state: %w", s.name, err)
	}
	s.src, s.rng, s.seed, s.step = src, rand.New(src), st.Seed, st.Step
	return nil
}
