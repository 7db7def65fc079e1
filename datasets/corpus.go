package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locusml/locus/internal/regularfile"
)

// DefaultMaxBytes caps the text loaded by GoSourceCorpus when
// CorpusConfig.MaxBytes is zero.
const DefaultMaxBytes = 4 << 20

// CorpusConfig holds the options of LoadCorpus.
type CorpusConfig struct {
	// Extensions keeps, in a folder, only files whose names end with one of
	// these suffixes (e.g. ".go"); empty keeps every file.
	Extensions []string
	// SkipDirs names folders to skip wherever they occur (e.g. "testdata").
	// Folders whose names start with "." are always skipped.
	SkipDirs []string
	// MaxBytes caps the loaded text: files are read in lexical path order
	// until the cap, the last one cut short. 0 means no cap.
	MaxBytes int64
	// ValFraction is the fraction of the text held out for validation; 0
	// means 0.1. It must be in (0, 1). A text of at least 10 SplitBlock-sized
	// blocks holds out evenly spaced blocks (every tenth for 0.1), so that
	// validation text comes from the whole corpus and not only from the files
	// read last; a shorter text holds out its end.
	ValFraction float64
	// TailSplit holds out the end of the text, contiguous, whatever its length: the
	// first int(n·(1−ValFraction)) of its n ids train, the rest validate, as nanoGPT's
	// prepare.py splits a text (data[:int(n*0.9)] at ValFraction 0.1).
	TailSplit bool
	// AllBytes uses the vocabulary of all 256 bytes instead of the bytes
	// seen in the text.
	AllBytes bool
	// Vocab, if set, is used as the vocabulary (e.g. one restored from a
	// checkpoint); a byte outside it is an error. It overrides AllBytes.
	Vocab *Vocab
}

// Split selects the training or validation part of a corpus.
type Split int

const (
	// Train is the text not held out (1-ValFraction of it).
	Train Split = iota
	// Validation is the held-out ValFraction of the text.
	Validation
)

// String returns "train" or "validation".
func (s Split) String() string {
	switch s {
	case Train:
		return "train"
	case Validation:
		return "validation"
	}
	return fmt.Sprintf("Split(%d)", int(s))
}

// Corpus is a byte-level text corpus: the concatenated text of some files,
// encoded with a vocabulary and split into training and validation ids.
type Corpus struct {
	Vocab *Vocab
	// Train and Val are the ids of the training and held-out text, two bytes a
	// token (a vocabulary holds at most 256 symbols; a run keeps them for its
	// whole length). Ints converts them to the []int of batches and Vocab.Decode.
	Train, Val []uint16
	Files      int // number of files read
	Bytes      int // length of the text
}

// LoadCorpus reads the file at path, or every regular file under the folder
// at path (recursively, in lexical order, skipping files that contain a NUL
// byte in their first 8000 bytes, which are taken to be binary), and returns
// the corpus of their concatenated text.
func LoadCorpus(path string, cfg CorpusConfig) (*Corpus, error) {
	valFrac := cfg.ValFraction
	if valFrac == 0 {
		valFrac = 0.1
	}
	if !(valFrac > 0 && valFrac < 1) {
		return nil, fmt.Errorf("load corpus %q: ValFraction=%v must be in (0, 1)", path, cfg.ValFraction)
	}
	if cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("load corpus %q: MaxBytes=%d must not be negative", path, cfg.MaxBytes)
	}
	text, files, err := readText(path, cfg)
	if err != nil {
		return nil, fmt.Errorf("load corpus %q: %w", path, err)
	}
	if len(text) < 2 {
		return nil, fmt.Errorf("load corpus %q: only %d bytes of text (from %d files)", path, len(text), files)
	}
	vocab := cfg.Vocab
	switch {
	case vocab != nil:
	case cfg.AllBytes:
		vocab = ByteVocab()
	default:
		vocab = VocabFromText(text)
	}
	ids, err := encode[uint16](vocab, text)
	if err != nil {
		return nil, fmt.Errorf("load corpus %q: %w", path, err)
	}
	train, val := splitIDs(ids, valFrac, cfg.TailSplit)
	return &Corpus{Vocab: vocab, Train: train, Val: val, Files: files, Bytes: len(text)}, nil
}

// SplitBlock is the size, in bytes, of the blocks a corpus's validation text is
// drawn from.
const SplitBlock = 64 << 10

// splitIDs holds out evenly spaced blocks of ids (the end of a short text), or with tail
// the end of the text, as nanoGPT's prepare.py; each split keeps at least one id.
func splitIDs[T int | uint16](ids []T, valFrac float64, tail bool) (train, val []T) {
	if tail {
		cut := min(max(1, int(float64(len(ids))*(1-valFrac))), len(ids)-1)
		return ids[:cut:cut], ids[cut:]
	}
	blocks := (len(ids) + SplitBlock - 1) / SplitBlock
	if blocks < 10 {
		nVal := max(1, int(float64(len(ids))*valFrac))
		cut := len(ids) - nVal
		return ids[:cut:cut], ids[cut:]
	}
	// Each id goes to one split: size both first, so that the copies are the only
	// allocations (appending block by block reallocated them over and over: 360 MB
	// allocated for a 4 MiB text, garbage beside the training graph's first buffers).
	held := func(i int) bool { return math.Floor(float64(i+1)*valFrac) > math.Floor(float64(i)*valFrac) }
	nVal := 0
	for i := range blocks {
		if held(i) {
			nVal += min((i+1)*SplitBlock, len(ids)) - i*SplitBlock
		}
	}
	train, val = make([]T, 0, len(ids)-nVal), make([]T, 0, nVal)
	for i := range blocks {
		block := ids[i*SplitBlock : min((i+1)*SplitBlock, len(ids))]
		if held(i) {
			val = append(val, block...)
		} else {
			train = append(train, block...)
		}
	}
	return train, val
}

// readText returns the text at path and the number of files it came from.
func readText(path string, cfg CorpusConfig) ([]byte, int, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	limit := cfg.MaxBytes
	if limit == 0 {
		limit = -1
	}
	if !info.IsDir() {
		text, err := readCapped(path, limit)
		return text, 1, err
	}
	var buf bytes.Buffer
	files := 0
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && (strings.HasPrefix(d.Name(), ".") || slices.Contains(cfg.SkipDirs, d.Name())) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !hasSuffix(d.Name(), cfg.Extensions) {
			return nil
		}
		left := int64(-1)
		if limit >= 0 {
			left = limit - int64(buf.Len())
		}
		text, err := readCapped(p, left)
		if err != nil {
			return err
		}
		if bytes.IndexByte(text[:min(len(text), 8000)], 0) >= 0 {
			return nil
		}
		buf.Write(text)
		files++
		if limit >= 0 && int64(buf.Len()) >= limit {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), files, nil
}

// MaxCorpusFile bounds a corpus file read without CorpusConfig.MaxBytes.
const MaxCorpusFile = 1 << 30

// readCapped reads at most limit bytes of the regular file at path (up to MaxCorpusFile
// if limit < 0); a FIFO or device is refused rather than read.
func readCapped(path string, limit int64) ([]byte, error) {
	if limit < 0 {
		return regularfile.ReadFile(path, MaxCorpusFile)
	}
	f, _, err := regularfile.Open(path, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

func hasSuffix(name string, suffixes []string) bool {
	if len(suffixes) == 0 {
		return true
	}
	for _, s := range suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// GoSourceDir returns the source folder of the Go installation,
// $GOROOT/src, taking GOROOT from the environment, then from the go command
// found on PATH (go env GOROOT). It does not fall back to runtime.GOROOT: the
// GOROOT this binary was built with need not exist where it runs.
func GoSourceDir() (string, error) {
	candidates := []string{os.Getenv("GOROOT")}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	for _, root := range candidates {
		if root == "" {
			continue
		}
		dir := filepath.Join(root, "src")
		if info, err := os.Stat(dir); err == nil && info.IsDir() {
			return dir, nil
		}
	}
	return "", errors.New("go source corpus: no Go installation found ($GOROOT/src is missing; set GOROOT or put the go command on PATH)")
}

// GoSourceCorpus loads the default text corpus: the .go files of the Go
// standard library under $GOROOT/src, in lexical path order, without testdata
// folders. Unless cfg says otherwise, the text is capped at DefaultMaxBytes.
func GoSourceCorpus(cfg CorpusConfig) (*Corpus, error) {
	dir, err := GoSourceDir()
	if err != nil {
		return nil, err
	}
	if cfg.Extensions == nil {
		cfg.Extensions = []string{".go"}
	}
	if cfg.SkipDirs == nil {
		cfg.SkipDirs = []string{"testdata"}
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	return LoadCorpus(dir, cfg)
}

// ids returns the ids of split s.
func (c *Corpus) ids(s Split) ([]uint16, error) {
	switch s {
	case Train:
		return c.Train, nil
	case Validation:
		return c.Val, nil
	}
	return nil, fmt.Errorf("corpus: unknown split %v", s)
}

// SampleBatch draws n windows of t+1 consecutive ids from split s, at
// uniformly random offsets; the batch inputs are the first t ids of each
// window and the targets the last t (the next-token layout), all scored.
func (c *Corpus) SampleBatch(rng *rand.Rand, s Split, n, t int) (Batch, error) {
	ids, err := c.checkWindows(s, n, t)
	if err != nil {
		return Batch{}, err
	}
	return sampleWindows(rng, ids, n, t), nil
}

func (c *Corpus) checkWindows(s Split, n, t int) ([]uint16, error) {
	ids, err := c.ids(s)
	if err != nil {
		return nil, err
	}
	if n < 1 || t < 1 {
		return nil, fmt.Errorf("corpus: batch size %d and window %d must be positive", n, t)
	}
	if len(ids) < t+1 {
		return nil, fmt.Errorf("corpus: %v split has %d ids, too few for windows of %d+1", s, len(ids), t)
	}
	return ids, nil
}

// Ints returns a corpus's ids as ints, the type of batches and Vocab.Decode.
func Ints(ids []uint16) []int {
	out := make([]int, len(ids))
	copyInts(out, ids)
	return out
}

// copyInts sets dst[i] = int(ids[i]).
func copyInts(dst []int, ids []uint16) {
	for i, id := range ids[:len(dst)] {
		dst[i] = int(id)
	}
}

func sampleWindows(rng *rand.Rand, ids []uint16, n, t int) Batch {
	b := Batch{Inputs: make([]int, n*t), Targets: make([]int, n*t), B: n, T: t}
	for i := range n {
		o := rng.IntN(len(ids) - t)
		copyInts(b.Inputs[i*t:(i+1)*t], ids[o:o+t])
		copyInts(b.Targets[i*t:(i+1)*t], ids[o+1:o+t+1])
	}
	return b
}

// NewCorpusStream returns a stream of batches of n windows of length t from
// split s, drawn from a generator seeded with seed.
func NewCorpusStream(c *Corpus, s Split, n, t int, seed uint64) (*Stream, error) {
	ids, err := c.checkWindows(s, n, t)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("text %v T=%d V=%d len=%d", s, t, c.Vocab.Size(), len(ids))
	return newStream(name, n, seed, streamText, func(rng *rand.Rand) Batch {
		return sampleWindows(rng, ids, n, t)
	}), nil
}
