package autodiff

import (
	"testing"

	"gorgonia.org/tensor"
)

// TestConcatValues checks Concat's values along each axis of 3-d inputs, in float32 and
// float64, against the definition: out[i, j, k] is the input whose range along the axis
// holds the index, at the index less the sizes before it.
func TestConcatValues(t *testing.T) {
	for _, dt := range []Dtype{Float32, Float64} {
		for axis := range 3 {
			shapes := [][]int{{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}
			shapes[1][axis], shapes[2][axis] = 1, 2
			inputs := map[string]*tensor.Dense{}
			names := []string{"a", "b", "c"}
			for i, s := range shapes {
				v := make([]float64, s[0]*s[1]*s[2])
				for j := range v {
					v[j] = float64(100*i + j)
				}
				x, err := FromSlice(v, s...)
				if err != nil {
					t.Fatal(err)
				}
				if dt == Float32 {
					f := make([]float32, len(v))
					for j := range v {
						f[j] = float32(v[j])
					}
					x, _ = FromSlice(f, s...)
				}
				inputs[names[i]] = x
			}
			ps, _ := NewParams(dt, 1)
			m := NewModel(ps, func(g *Graph) (Outputs, error) {
				y := g.Concat(axis, g.Input("a"), g.Input("b"), g.Input("c"))
				return Outputs{Values: map[string]*Node{"y": y}}, g.Err()
			}, 1)
			res, err := m.Forward(inputs)
			if err != nil {
				t.Fatal(err)
			}
			y := res.Values["y"]
			want := []int{2, 3, 4}
			want[axis] = shapes[0][axis] + shapes[1][axis] + shapes[2][axis]
			if !y.Shape().Eq(tensor.Shape(want)) {
				t.Fatalf("axis %d: shape %v, want %v", axis, y.Shape(), want)
			}
			for i := range want[0] {
				for j := range want[1] {
					for k := range want[2] {
						idx := []int{i, j, k}
						src := 0
						for idx[axis] >= shapes[src][axis] {
							idx[axis] -= shapes[src][axis]
							src++
						}
						s := shapes[src]
						exp := float64(100*src + (idx[0]*s[1]+idx[1])*s[2] + idx[2])
						got, _ := y.At(i, j, k)
						var g float64
						switch v := got.(type) {
						case float32:
							g = float64(v)
						case float64:
							g = v
						}
						if g != exp {
							t.Fatalf("%v axis %d: out[%d %d %d] = %g, want %g", dt, axis, i, j, k, g, exp)
						}
					}
				}
			}
		}
	}
}
