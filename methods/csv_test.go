package methods

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadCSV(t *testing.T) {
	in := "x, y\n1, 2.5\n\n# comment\n-3e2,4\n"
	header, rows, err := ReadCSVHeader(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(header) != 2 || header[0] != "x" || header[1] != "y" {
		t.Errorf("header = %q", header)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	assertClose(t, "row 0", rows[0], []float64{1, 2.5}, 0)
	assertClose(t, "row 1", rows[1], []float64{-300, 4}, 0)

	rows, err = ReadCSV(strings.NewReader("1,2\n3,4\n"))
	if err != nil || len(rows) != 2 {
		t.Fatalf("no header: %v rows, err %v", rows, err)
	}
}

func TestReadCSVErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a,b\n1,2\n1,abc\n", `line 3: column 2: "abc" is not a number`},
		{"1,2\n3,4\n\n5,6,7\n", `line 4: has 3 columns, expected 2`},
		{"a,b\n1,2,3\n", `line 2: has 3 columns, expected 2`},
		{"1,abc\n", `line 1: column 2: "abc" is not a number`},
		{"1,2\n3,NaN\n", `line 2: column 2: "NaN" is not a finite number`},
		{"x,y\n", `no data rows`},
		{"", `no data rows`},
		{"1,\"2\n", `line 1: column`},
	}
	for _, c := range cases {
		_, err := ReadCSV(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadCSV(%q): err = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	rows := [][]float64{{0.1, -2, 1e-300}, {3.141592653589793, 1e21, 0}}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, []string{"a", "b", "c d"}, rows); err != nil {
		t.Fatal(err)
	}
	if want := "a,b,c d\n0.1,-2,1e-300\n3.141592653589793,1e+21,0\n"; buf.String() != want {
		t.Errorf("WriteCSV wrote %q, want %q", buf.String(), want)
	}
	header, got, err := ReadCSVHeader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(header) != 3 || header[2] != "c d" {
		t.Errorf("header = %q", header)
	}
	for i := range rows {
		assertClose(t, "row", got[i], rows[i], 0)
	}
}
