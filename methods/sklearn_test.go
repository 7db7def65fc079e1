package methods

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Fixtures made by testdata/gen_sklearn.py with scikit-learn (version in
// testdata/sklearn.json).

func readFixture(t *testing.T, name string) [][]float64 {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ReadCSV(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rows
}

type sklearnMeta struct {
	Sklearn   string
	MeanShift struct {
		Quantile, Bandwidth float64
	}
	KNN struct{ K int }
	LLE struct {
		NNeighbors  int `json:"n_neighbors"`
		NComponents int `json:"n_components"`
		Reg         float64
	}
}

func readMeta(t *testing.T) sklearnMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sklearn.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m sklearnMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMeanShiftMatchesSklearn(t *testing.T) {
	meta := readMeta(t)
	pts := readFixture(t, "meanshift_points.csv")
	want := readFixture(t, "meanshift_centers.csv")
	wantLabels := readFixture(t, "meanshift_labels.csv")

	bw, err := EstimateBandwidth(pts, meta.MeanShift.Quantile)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(bw-meta.MeanShift.Bandwidth) > 1e-12 {
		t.Errorf("EstimateBandwidth = %.15g, sklearn %.15g", bw, meta.MeanShift.Bandwidth)
	}
	res, err := MeanShift(pts, MeanShiftOptions{Bandwidth: meta.MeanShift.Bandwidth})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Centers) != len(want) {
		t.Fatalf("%d centres, sklearn %d", len(res.Centers), len(want))
	}
	for _, w := range want {
		best := math.Inf(1)
		for _, c := range res.Centers {
			best = math.Min(best, math.Sqrt(sqDist(c, w)))
		}
		if best > 1e-9 {
			t.Errorf("sklearn centre %v: nearest of ours is %.3g away", w, best)
		}
	}
	labels := make([]int, len(wantLabels))
	for i, l := range wantLabels {
		labels[i] = int(l[0])
	}
	if !samePartition(res.Labels, labels) {
		t.Error("labels differ from sklearn's partition")
	}
}

func TestKNNRegressMatchesSklearn(t *testing.T) {
	meta := readMeta(t)
	x, y := readFixture(t, "knn_x.csv"), readFixture(t, "knn_y.csv")
	q, want := readFixture(t, "knn_queries.csv"), readFixture(t, "knn_pred.csv")
	got, err := KNNRegress(x, y, q, KNNOptions{K: meta.KNN.K})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		assertClose(t, "prediction", got[i], want[i], 1e-12)
	}
}

func TestLLEMatchesSklearn(t *testing.T) {
	meta := readMeta(t)
	pts, want := readFixture(t, "lle_points.csv"), readFixture(t, "lle_embedding.csv")
	got, err := LocallyLinearEmbedding(pts, LLEOptions{Neighbors: meta.LLE.NNeighbors, Components: meta.LLE.NComponents, Reg: meta.LLE.Reg})
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < meta.LLE.NComponents; c++ {
		r := pearson(column(got, c), column(want, c))
		t.Logf("component %d: Pearson with sklearn %.6f", c, r)
		if math.Abs(r) < 0.9999 {
			t.Errorf("component %d: |Pearson| with sklearn = %.4f, want > 0.9999", c, math.Abs(r))
		}
	}
}
