package methods

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadCSV: any text reads as a matrix of finite numbers of equal-length rows, or
// an error; WriteCSV of what was read reads back the same. The seed corpus is the CSV
// files of testdata (added here) and the entries in testdata/fuzz.
func FuzzReadCSV(f *testing.F) {
	for _, name := range []string{"knn_x.csv", "knn_queries.csv", "lle_points.csv", "meanshift_centers.csv"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("x,y\n# comment\n1, 2\n\n\"3\",4e-300\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		header, rows, err := ReadCSVHeader(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range rows {
			if len(r) != len(rows[0]) {
				t.Fatalf("ragged rows: %d and %d columns", len(r), len(rows[0]))
			}
			for _, v := range r {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("non-finite value %v", v)
				}
			}
		}
		var out bytes.Buffer
		if err := WriteCSV(&out, header, rows); err != nil {
			return // a header that cannot be written back (a field with a newline, say)
		}
		_, again, err := ReadCSVHeader(&out)
		if err != nil || len(again) != len(rows) {
			t.Fatalf("round trip of %q: %d rows, %v", out.String(), len(again), err)
		}
	})
}
