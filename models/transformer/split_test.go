package transformer

import (
	"testing"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/train"
)

// TestSplitMorePartsThanSequences splits batches of 2 sequences (a toy task's, for the
// encoder and the encdec inputs) in 3 parts, as a 3-process run of -batch 2 does: no
// panic, the last part is empty with weight 0, and the weights add up to the batch's
// scored targets.
func TestSplitMorePartsThanSequences(t *testing.T) {
	task, err := datasets.TaskByName("reverse", datasets.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	stream := func() *datasets.Stream {
		s, err := datasets.NewTaskStream(task, datasets.Aligned, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for name, d := range map[string]interface {
		train.Data
		train.Splitter
	}{
		"encoder": &StreamData{Stream: stream()},
		"encdec":  &EncDecData{Stream: stream(), BOS: task.Vocab()},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := d.Next()
			if err != nil {
				t.Fatal(err)
			}
			scored := 0
			for _, y := range b.Inputs[InputTargets].Data().([]int) {
				if y != datasets.IgnoreIndex {
					scored++
				}
			}
			var sum float64
			for part := range 3 {
				p, w, err := d.Split(b, part, 3)
				if err != nil {
					t.Fatalf("part %d of 3: %v", part, err)
				}
				sum += w
				if empty := part == 2; empty != (w == 0) || empty != (p.Items == 0) {
					t.Errorf("part %d of 3 of 2 sequences: weight %v, %d items", part, w, p.Items)
				}
			}
			if sum != float64(scored) {
				t.Errorf("the parts weigh %v, the batch has %d scored targets", sum, scored)
			}
		})
	}
}
