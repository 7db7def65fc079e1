package train

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"gorgonia.org/tensor"
)

// checkFinite returns an error naming the first tensor of ts, in name order, that holds
// a NaN or an infinity, with the index of the value.
func checkFinite(ts map[string]*tensor.Dense) error {
	for _, name := range slices.Sorted(maps.Keys(ts)) {
		t := ts[name]
		if t == nil {
			continue
		}
		bad, at := -1, 0.0
		switch d := t.Data().(type) {
		case []float32:
			for i, x := range d {
				if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
					bad, at = i, f
					break
				}
			}
		case []float64:
			for i, x := range d {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					bad, at = i, x
					break
				}
			}
		case float32:
			if f := float64(d); math.IsNaN(f) || math.IsInf(f, 0) {
				bad, at = 0, f
			}
		case float64:
			if math.IsNaN(d) || math.IsInf(d, 0) {
				bad, at = 0, d
			}
		}
		if bad >= 0 {
			return fmt.Errorf("tensor %q holds %v at index %d", name, at, bad)
		}
	}
	return nil
}
