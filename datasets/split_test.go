package datasets

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestTailSplit: with TailSplit the first int(n·(1−ValFraction)) ids train and the rest
// validate, contiguous, as nanoGPT's prepare.py; without it a text of 10 blocks or more
// holds out every tenth block.
func TestTailSplit(t *testing.T) {
	text := "abcdefghijklmnopqrstuvwxyz0123"
	path := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		frac              float64
		trainText, valTxt string
	}{
		{0.1, text[:27], text[27:]}, // int(30·0.9) = 27
		{0.25, text[:22], text[22:]},
		{0.5, text[:15], text[15:]},
	} {
		c, err := LoadCorpus(path, CorpusConfig{ValFraction: tc.frac, TailSplit: true})
		if err != nil {
			t.Fatal(err)
		}
		tr, _ := c.Vocab.Decode(Ints(c.Train))
		va, _ := c.Vocab.Decode(Ints(c.Val))
		if string(tr) != tc.trainText || string(va) != tc.valTxt {
			t.Errorf("ValFraction %g: train %q, val %q; want %q, %q", tc.frac, tr, va, tc.trainText, tc.valTxt)
		}
	}
	// tiny shakespeare's length: prepare.py prints "train has 1,003,854 tokens" and
	// "val has 111,540 tokens".
	ids := make([]int, 1115394)
	for i := range ids {
		ids[i] = i
	}
	tr, va := splitIDs(ids, 0.1, true)
	if len(tr) != 1003854 || len(va) != 111540 || va[0] != 1003854 {
		t.Errorf("tail split of 1115394 ids: %d + %d from %d; want nanoGPT's 1003854 + 111540", len(tr), len(va), va[0])
	}
	// The block split of the same ids holds out blocks 9, 19, ...: not a tail.
	tr, va = splitIDs(ids, 0.1, false)
	if va[0] != 9*SplitBlock || len(tr)+len(va) != len(ids) {
		t.Errorf("block split: validation starts at id %d, want %d", va[0], 9*SplitBlock)
	}
}

// TestVocabIsNanoGPTs: the vocabulary of a text is nanoGPT's (prepare.py: chars =
// sorted(list(set(data)))) for a text of single-byte characters, such as tiny
// shakespeare: its sorted distinct characters, id i the i-th.
func TestVocabIsNanoGPTs(t *testing.T) {
	text := "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n"
	path := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCorpus(path, CorpusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// ''.join(sorted(list(set(text)))), printed by python3.
	const want = "\n ,.:ABCFSacdefhiklmnoprstuwyz"
	if got := string(c.Vocab.Symbols()); got != want {
		t.Fatalf("vocabulary %q, want nanoGPT's %q", got, want)
	}
	ids, _ := c.Vocab.Encode([]byte("hear"))
	if !slices.Equal(ids, []int{strIndex(want, 'h'), strIndex(want, 'e'), strIndex(want, 'a'), strIndex(want, 'r')}) {
		t.Errorf("ids of %q: %v, want their ranks in %q", "hear", ids, want)
	}
	// The whole of tiny shakespeare where the machine has it: 65 characters, as nanoGPT's
	// prepare.py reports ("vocab size: 65").
	const shakespeare = "../../shared/data/tinyshakespeare/input.txt"
	if _, err := os.Stat(shakespeare); err == nil {
		c, err := LoadCorpus(shakespeare, CorpusConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(c.Vocab.Symbols()); got != "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" {
			t.Errorf("tiny shakespeare's vocabulary %q (%d), want nanoGPT's 65 characters", got, len(got))
		}
	}
}

func strIndex(s string, b byte) int {
	for i := range len(s) {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// TestBlockSplitCopiesOnce: the block split of a long text keeps every id once, in order
// (held-out blocks in val, the others in train), and allocates the two splits once each:
// appended block by block they were reallocated over and over (360 MB allocated for the
// 4 MiB Go-source corpus), garbage beside a training graph's buffers.
func TestBlockSplitCopiesOnce(t *testing.T) {
	ids := make([]int, 25*SplitBlock+123)
	for i := range ids {
		ids[i] = i
	}
	for _, frac := range []float64{0.1, 0.25} {
		tr, va := splitIDs(ids, frac, false)
		got := slices.Concat(tr, va)
		slices.Sort(got)
		if !slices.Equal(got, ids) || !slices.IsSorted(tr) || !slices.IsSorted(va) {
			t.Fatalf("ValFraction %g: the splits (%d + %d ids) are not the text's ids, each once, in order", frac, len(tr), len(va))
		}
		if allocs := testing.AllocsPerRun(3, func() { splitIDs(ids, frac, false) }); allocs != 2 {
			t.Errorf("ValFraction %g: the block split allocated %v times, want 2 (train and val)", frac, allocs)
		}
	}
}

// TestLoadCorpusBytes: loading a text allocates a few bytes per byte of it (the text,
// its ids at two bytes each, the two splits), not the 17 of ids as ints (8 bytes each,
// twice): a run keeps the splits beside its graphs for its whole length (the 4 MiB
// Go-source corpus took 32 MB as ints, 8 MB now).
func TestLoadCorpusBytes(t *testing.T) {
	text := make([]byte, 1<<20)
	for i := range text {
		text[i] = "abcdefghij\n"[i%11]
	}
	path := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := LoadCorpus(path, CorpusConfig{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Train) + len(c.Val); n != len(text) {
		t.Fatalf("%d ids for %d bytes", n, len(text))
	}
	if per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(text)); per > 6 {
		t.Errorf("LoadCorpus allocated %.1f bytes per byte of text, want at most 6", per)
	}
}
