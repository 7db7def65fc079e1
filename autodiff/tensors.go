package autodiff

import (
	"fmt"

	"gorgonia.org/tensor"
)

// Value is an element type of a model input: float32 or float64 for the float inputs
// of a model with Float32 or Float64 parameters, int for token ids and class targets.
type Value interface{ float32 | float64 | int }

// FromRows returns the matrix [len(rows), d] whose row i is rows[i], copied, as a
// model input (Model.Forward, Model.ForwardBackward, train.Batch). Every row must hold
// the same number d > 0 of values; otherwise it is an error naming the row.
func FromRows[T Value](rows [][]T) (*tensor.Dense, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("from rows: no rows")
	}
	d := len(rows[0])
	if d == 0 {
		return nil, fmt.Errorf("from rows: row 0 is empty")
	}
	data := make([]T, 0, len(rows)*d)
	for i, r := range rows {
		if len(r) != d {
			return nil, fmt.Errorf("from rows: row %d has length %d, row 0 has length %d", i, len(r), d)
		}
		data = append(data, r...)
	}
	return tensor.New(tensor.WithShape(len(rows), d), tensor.WithBacking(data)), nil
}

// FromSlice returns data as a tensor of the given shape, row-major (the last axis
// varies fastest), as a model input. The tensor aliases data. It is an error for a
// dimension to be less than 1 or for the shape to hold other than len(data) values.
func FromSlice[T Value](data []T, shape ...int) (*tensor.Dense, error) {
	if len(shape) == 0 {
		return nil, fmt.Errorf("from slice: no shape for %d values", len(data))
	}
	n := 1
	for i, d := range shape {
		if d < 1 {
			return nil, fmt.Errorf("from slice: shape %v: dimension %d is %d, want >= 1", shape, i, d)
		}
		if n > len(data)/d {
			return nil, fmt.Errorf("from slice: shape %v holds more than the %d values given", shape, len(data))
		}
		n *= d
	}
	if n != len(data) {
		return nil, fmt.Errorf("from slice: shape %v holds %d values, %d given", shape, n, len(data))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data)), nil
}
