package autodiff

import (
	"strings"
	"testing"
)

// Inputs from slices: a bad shape or ragged rows is an error naming the problem, never
// a panic, and FromRows copies while FromSlice aliases.
func TestFromSlices(t *testing.T) {
	for _, c := range []struct {
		name string
		err  func() error
		want string
	}{
		{"no rows", func() error { _, err := FromRows[float32](nil); return err }, "no rows"},
		{"empty row", func() error { _, err := FromRows([][]float32{{}}); return err }, "row 0 is empty"},
		{"ragged", func() error { _, err := FromRows([][]int{{1}, {2}, {3, 4}}); return err }, "row 2 has length 2"},
		{"no shape", func() error { _, err := FromSlice([]float64{1}); return err }, "no shape"},
		{"zero dim", func() error { _, err := FromSlice([]float64{1}, 1, 0); return err }, "dimension 1 is 0"},
		{"too few", func() error { _, err := FromSlice([]float64{1, 2, 3}, 4); return err }, "more than the 3 values"},
		{"too many", func() error { _, err := FromSlice([]float64{1, 2, 3}, 2); return err }, "holds 2 values, 3 given"},
		{"overflow", func() error { _, err := FromSlice([]float64{1}, 1<<40, 1<<40, 1<<40); return err }, "more than the 1 values"},
	} {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	rows := [][]float32{{1, 2}, {3, 4}}
	x, err := FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	rows[0][0] = 9
	if got := x.Data().([]float32)[0]; got != 1 {
		t.Errorf("FromRows aliases its rows: element 0 is %g after the row changed, want 1", got)
	}
	data := []float64{1, 2, 3, 4, 5, 6}
	y, err := FromSlice(data, 1, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	data[5] = 7
	if got := y.Data().([]float64)[5]; got != 7 || y.Shape()[1] != 3 {
		t.Errorf("FromSlice: shape %v, element 5 = %g; want (1, 3, 2) aliasing data (7)", y.Shape(), got)
	}
}
