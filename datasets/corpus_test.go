package datasets

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree writes files (path -> content) under a new temporary folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestVocabRoundTrip(t *testing.T) {
	for _, v := range []*Vocab{
		VocabFromText([]byte("hello, \"world\"\n\t\\")),
		VocabFromText([]byte{0, 0xc3, 0xa9, 0xff, 'a'}),
		ByteVocab(),
	} {
		s := v.String()
		for _, r := range s {
			if r >= 0x80 {
				t.Fatalf("String() %q is not ASCII", s)
			}
		}
		w, err := VocabFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(w.Symbols(), v.Symbols()) {
			t.Fatalf("round trip of %s gave %s", s, w)
		}
		js, err := json.Marshal(struct{ V *Vocab }{v})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ V *Vocab }
		if err := json.Unmarshal(js, &back); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.V.Symbols(), v.Symbols()) {
			t.Fatalf("JSON round trip of %s gave %s", s, back.V)
		}
	}
	if ByteVocab().Size() != 256 {
		t.Error("ByteVocab is not 256 bytes")
	}
	for _, bad := range []string{`abc`, `""`, `"ba"`, `"aa"`} {
		if _, err := VocabFromString(bad); err == nil {
			t.Errorf("VocabFromString(%s): no error", bad)
		}
	}
}

func TestVocabEncodeDecode(t *testing.T) {
	text := []byte("abracadabra")
	v := VocabFromText(text)
	if got := string(v.Symbols()); got != "abcdr" {
		t.Fatalf("symbols %q, want abcdr", got)
	}
	ids, err := v.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids[:5], []int{0, 1, 4, 0, 2}) {
		t.Errorf("ids %v", ids)
	}
	back, err := v.Decode(ids)
	if err != nil || string(back) != string(text) {
		t.Errorf("decode: %q, %v", back, err)
	}
	if _, err := v.Encode([]byte("abz")); err == nil || !strings.Contains(err.Error(), "offset 2") {
		t.Errorf("encode of an unknown byte: error %v", err)
	}
	if _, err := v.Decode([]int{0, 5}); err == nil {
		t.Error("decode of an out-of-range id: no error")
	}
	if _, err := new(Vocab).Encode([]byte("a")); err == nil {
		t.Error("encode with the zero Vocab: no error")
	}
}

func TestLoadCorpusFolder(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.txt":          "hello world\n",
		"sub/b.go":       "package b\n",
		"sub/deep/c.go":  "func c() {}\n",
		"bin/data.bin":   "ab\x00cd",
		".git/config":    "secret",
		"testdata/x.go":  "package x\n",
		"empty/file.txt": "",
	})
	c, err := LoadCorpus(dir, CorpusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Lexical order: a.txt, empty/file.txt, sub/b.go, sub/deep/c.go, testdata/x.go.
	want := "hello world\npackage b\nfunc c() {}\npackage x\n"
	if c.Files != 5 || c.Bytes != len(want) {
		t.Errorf("read %d files, %d bytes; want 5, %d", c.Files, c.Bytes, len(want))
	}
	text, _ := c.Vocab.Decode(Ints(append(slices.Clone(c.Train), c.Val...)))
	if string(text) != want {
		t.Errorf("text %q, want %q", text, want)
	}
	if c.Vocab.Size() != len(VocabFromText([]byte(want)).Symbols()) {
		t.Errorf("vocab %s is not the bytes of the text", c.Vocab)
	}

	g, err := LoadCorpus(dir, CorpusConfig{Extensions: []string{".go"}, SkipDirs: []string{"testdata"}, AllBytes: true})
	if err != nil {
		t.Fatal(err)
	}
	if g.Files != 2 || g.Bytes != len("package b\nfunc c() {}\n") || g.Vocab.Size() != 256 {
		t.Errorf(".go files: %d files, %d bytes, vocab %d", g.Files, g.Bytes, g.Vocab.Size())
	}

	capped, err := LoadCorpus(dir, CorpusConfig{MaxBytes: 15})
	if err != nil {
		t.Fatal(err)
	}
	if capped.Bytes != 15 || capped.Files != 3 {
		t.Errorf("MaxBytes 15: %d bytes from %d files", capped.Bytes, capped.Files)
	}
}

func TestCorpusSplitAndBatches(t *testing.T) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 30)
	dir := writeTree(t, map[string]string{"fox.txt": text})
	c, err := LoadCorpus(filepath.Join(dir, "fox.txt"), CorpusConfig{ValFraction: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	n := len(text)
	if c.Bytes != n || len(c.Train)+len(c.Val) != n || len(c.Val) != int(0.2*float64(n)) {
		t.Fatalf("split of %d bytes: train %d, val %d", n, len(c.Train), len(c.Val))
	}
	for _, split := range []Split{Train, Validation} {
		ids := c.Train
		if split == Validation {
			ids = c.Val
		}
		b, err := c.SampleBatch(NewRand(1), split, 16, 8)
		if err != nil {
			t.Fatal(err)
		}
		if b.B != 16 || b.T != 8 || len(b.Inputs) != 128 || len(b.Targets) != 128 {
			t.Fatalf("%v batch %dx%d", split, b.B, b.T)
		}
		for r := range b.B {
			ex := b.Row(r)
			window := append(slices.Clone(ex.Input), ex.Target[7])
			if !slices.Equal(ex.Input[1:], ex.Target[:7]) || !containsRun(Ints(ids), window) {
				t.Fatalf("%v row %d: %v -> %v is not a window of the split", split, r, ex.Input, ex.Target)
			}
		}
	}
	a, _ := c.SampleBatch(NewRand(2), Train, 4, 8)
	b, _ := c.SampleBatch(NewRand(2), Train, 4, 8)
	d, _ := c.SampleBatch(NewRand(3), Train, 4, 8)
	if !slices.Equal(a.Inputs, b.Inputs) || slices.Equal(a.Inputs, d.Inputs) {
		t.Error("batches do not follow the seed")
	}
	if _, err := c.SampleBatch(NewRand(1), Validation, 1, len(c.Val)); err == nil {
		t.Error("window as long as the split: no error")
	}

	s, err := NewCorpusStream(c, Train, 4, 8, 5)
	if err != nil {
		t.Fatal(err)
	}
	s.Next()
	st := s.State()
	want := s.Next()
	r, _ := NewCorpusStream(c, Train, 4, 8, 6)
	if err := r.Restore(st); err != nil {
		t.Fatal(err)
	}
	if got := r.Next(); !slices.Equal(got.Inputs, want.Inputs) {
		t.Error("corpus stream does not continue after restore")
	}
	if v, _ := NewCorpusStream(c, Validation, 4, 8, 5); v.Restore(st) == nil {
		t.Error("restoring a train stream state into a validation stream: no error")
	}
}

// containsRun reports whether run occurs in s.
func containsRun(s, run []int) bool {
	for i := 0; i+len(run) <= len(s); i++ {
		if slices.Equal(s[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

func TestLoadCorpusErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	if _, err := LoadCorpus(missing, CorpusConfig{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing path: error %v", err)
	}
	if _, err := LoadCorpus(dir, CorpusConfig{}); err == nil {
		t.Error("empty folder: no error")
	}
	f := writeTree(t, map[string]string{"x.txt": "some text"})
	for _, cfg := range []CorpusConfig{{ValFraction: 1}, {ValFraction: -0.1}, {MaxBytes: -1}} {
		if _, err := LoadCorpus(f, cfg); err == nil {
			t.Errorf("LoadCorpus with %+v: no error", cfg)
		}
	}
	if _, err := LoadCorpus(f, CorpusConfig{Vocab: VocabFromText([]byte("xyz"))}); err == nil {
		t.Error("text outside the given vocab: no error")
	}
}

func TestGoSourceCorpus(t *testing.T) {
	if _, err := GoSourceDir(); err != nil {
		t.Skip(err)
	}
	c, err := GoSourceCorpus(CorpusConfig{MaxBytes: 1 << 18})
	if err != nil {
		t.Fatal(err)
	}
	if c.Bytes != 1<<18 || c.Files < 2 {
		t.Errorf("%d bytes from %d files, want %d bytes", c.Bytes, c.Files, 1<<18)
	}
	ids, err := c.Vocab.Encode([]byte("package func"))
	if err != nil || len(ids) != 12 {
		t.Errorf("Go keywords do not encode: %v", err)
	}
}

// TestCorpusSplitSpreadsValidation checks that a long text holds out evenly spaced
// blocks, about ValFraction of it, and that nothing is lost or duplicated.
func TestCorpusSplitSpreadsValidation(t *testing.T) {
	dir := t.TempDir()
	text := make([]byte, 25*SplitBlock+123)
	for i := range text {
		text[i] = byte('a' + (i/SplitBlock)%26) // block i is made of one letter
	}
	if err := os.WriteFile(filepath.Join(dir, "long.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCorpus(filepath.Join(dir, "long.txt"), CorpusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Train)+len(c.Val) != len(text) {
		t.Fatalf("train %d + val %d != %d", len(c.Train), len(c.Val), len(text))
	}
	if frac := float64(len(c.Val)) / float64(len(text)); frac < 0.07 || frac > 0.13 {
		t.Errorf("validation fraction %.3f, want about 0.1", frac)
	}
	val, _ := c.Vocab.Decode(Ints(c.Val))
	seen := map[byte]bool{}
	for i := 0; i < len(val); i += SplitBlock {
		seen[val[i]] = true
	}
	if len(seen) < 2 || !seen['j'] {
		t.Errorf("validation blocks %q are not spread over the text", fmt.Sprint(seen))
	}
}
