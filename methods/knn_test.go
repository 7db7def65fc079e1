package methods

import "testing"

func TestKNNRegressHand(t *testing.T) {
	var x, y [][]float64
	for i := 0; i < 10; i++ {
		x = append(x, []float64{float64(i)})
		y = append(y, []float64{float64(i * i), -float64(i)})
	}
	got, err := KNNRegress(x, y, [][]float64{{2.2}, {-5}, {8.9}}, KNNOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "q=2.2", got[0], []float64{(4 + 9 + 1) / 3.0, -2}, 1e-15)
	assertClose(t, "q=-5", got[1], []float64{(0 + 1 + 4) / 3.0, -1}, 1e-15)
	assertClose(t, "q=8.9", got[2], []float64{(81 + 64 + 49) / 3.0, -8}, 1e-12)
}

func TestKNNClassify(t *testing.T) {
	x := [][]float64{{0, 0}, {0, 1}, {1, 0}, {5, 5}, {5, 6}, {6, 5}, {0.5, 0.5}}
	labels := []int{0, 0, 0, 1, 1, 1, 1}
	got, err := KNNClassify(x, labels, [][]float64{{0.2, 0.2}, {5.2, 5.1}, {2.6, 2.6}}, KNNOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	// (2.6, 2.6): nearest are (0.5,0.5)→1, then (0,1),(1,0)→0: majority 0.
	want := []int{0, 1, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("query %d: class %d, want %d", i, got[i], want[i])
		}
	}
}

func TestKNNErrors(t *testing.T) {
	x := [][]float64{{0}, {1}}
	if _, err := KNNRegress(x, x, x, KNNOptions{K: 3}); err == nil {
		t.Error("K > n: no error")
	}
	if _, err := KNNRegress(x, x, x, KNNOptions{K: -1}); err == nil {
		t.Error("K < 0: no error")
	}
	if _, err := KNNClassify(x, []int{0, -1}, x, KNNOptions{K: 1}); err == nil {
		t.Error("negative label: no error")
	}
	if _, err := KNNClassify(x, []int{0}, x, KNNOptions{K: 1}); err == nil {
		t.Error("label count: no error")
	}
}
