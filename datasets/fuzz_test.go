package datasets

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzDecodeIDX: any bytes decode to an IDX array whose data has the size its header
// promises, or to an error, never a panic or an allocation beyond the limits. The seeds
// are the heads of the real MNIST files (their first images, with the count in the
// header adjusted), plain and gzipped, when the GoMNIST module is in the module cache.
func FuzzDecodeIDX(f *testing.F) {
	if dir, err := DefaultMNISTDir(); err == nil {
		for _, name := range []string{mnistTestImages, mnistTestLabels} {
			if b, err := idxHead(filepath.Join(dir, name+".gz"), 3); err == nil {
				f.Add(b)
				var z bytes.Buffer
				zw := gzip.NewWriter(&z)
				zw.Write(b)
				zw.Close()
				f.Add(z.Bytes())
			}
		}
	}
	f.Add([]byte{0, 0, 8, 1, 0, 0, 0, 2, 7, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, magic := range []uint32{idxImagesMagic, idxLabelsMagic} {
			d, err := decodeIDX(bytes.NewReader(b), magic)
			if err != nil {
				continue
			}
			size := 1
			for _, n := range d.dims {
				size *= n
			}
			if size != len(d.data) {
				t.Fatalf("dims %v but %d bytes of data", d.dims, len(d.data))
			}
		}
	})
}

// idxHead returns the first n items of a gzipped IDX file, as an IDX file.
func idxHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var head [4]byte
	if _, err := io.ReadFull(zr, head[:]); err != nil {
		return nil, err
	}
	dims := make([]uint32, head[3])
	if err := binary.Read(zr, binary.BigEndian, dims); err != nil {
		return nil, err
	}
	dims[0] = uint32(n)
	item := 1
	for _, d := range dims[1:] {
		item *= int(d)
	}
	out := append([]byte(nil), head[:]...)
	for _, d := range dims {
		out = binary.BigEndian.AppendUint32(out, d)
	}
	data := make([]byte, n*item)
	if _, err := io.ReadFull(zr, data); err != nil {
		return nil, err
	}
	return append(out, data...), nil
}

// TestWriteFuzzSeeds writes the MNIST heads of FuzzDecodeIDX into testdata/fuzz, so that
// the corpus does not depend on the module cache (LOCUS_FUZZ_SEEDS=1).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("LOCUS_FUZZ_SEEDS") == "" {
		t.Skip("set LOCUS_FUZZ_SEEDS=1 to rewrite testdata/fuzz")
	}
	dir, err := DefaultMNISTDir()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join("testdata", "fuzz", "FuzzDecodeIDX")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{mnistTestImages, mnistTestLabels} {
		b, err := idxHead(filepath.Join(dir, name+".gz"), 2)
		if err != nil {
			t.Fatal(err)
		}
		entry := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if err := os.WriteFile(filepath.Join(out, name), []byte(entry), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
