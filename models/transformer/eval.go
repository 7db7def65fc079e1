package transformer

import (
	"github.com/locusml/locus/datasets"
	"gorgonia.org/tensor"
)

// TaskInputs converts a datasets batch to the model's input tensors.
func TaskInputs(b datasets.Batch) map[string]*tensor.Dense {
	return map[string]*tensor.Dense{
		InputIDs:     tensor.New(tensor.WithShape(b.B, b.T), tensor.WithBacking(append([]int(nil), b.Inputs...))),
		InputTargets: tensor.New(tensor.WithShape(b.B*b.T), tensor.WithBacking(append([]int(nil), b.Targets...))),
	}
}

// Predict returns the argmax of each row of logits [N, V].
func Predict(logits *tensor.Dense) []int {
	s := logits.Shape()
	n, v := s[0], s[1]
	out := make([]int, n)
	switch d := logits.Data().(type) {
	case []float32:
		for i := range n {
			row := d[i*v : (i+1)*v]
			best := 0
			for j, x := range row {
				if x > row[best] {
					best = j
				}
			}
			out[i] = best
		}
	case []float64:
		for i := range n {
			out[i] = argmax(d[i*v : (i+1)*v])
		}
	}
	return out
}
