package datasets

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestIteratorEpochs(t *testing.T) {
	for _, dropLast := range []bool{false, true} {
		it, err := NewIterator(IteratorConfig{N: 10, BatchSize: 4, Seed: 1, Shuffle: true, DropLast: dropLast})
		if err != nil {
			t.Fatal(err)
		}
		wantSizes := []int{4, 4, 2}
		if dropLast {
			wantSizes = []int{4, 4}
		}
		if it.BatchesPerEpoch() != len(wantSizes) {
			t.Errorf("dropLast=%v: %d batches per epoch, want %d", dropLast, it.BatchesPerEpoch(), len(wantSizes))
		}
		var orders [][]int
		for e := range 3 {
			var seen []int
			for _, size := range wantSizes {
				idx, epoch := it.Next()
				if epoch != e || len(idx) != size {
					t.Fatalf("dropLast=%v: batch of %d in epoch %d, want %d in epoch %d", dropLast, len(idx), epoch, size, e)
				}
				seen = append(seen, idx...)
			}
			orders = append(orders, slices.Clone(seen))
			n := len(seen)
			slices.Sort(seen)
			seen = slices.Compact(seen)
			if len(seen) != n || seen[0] < 0 || seen[n-1] > 9 {
				t.Fatalf("dropLast=%v epoch %d: indices %v are not distinct and in range", dropLast, e, seen)
			}
		}
		if slices.Equal(orders[0], orders[1]) {
			t.Errorf("dropLast=%v: epochs 0 and 1 have the same order %v", dropLast, orders[0])
		}
		if it.Epoch() != 3 {
			t.Errorf("after 3 epochs Epoch() = %d", it.Epoch())
		}
	}
}

func TestIteratorNoShuffleAndSeeds(t *testing.T) {
	it, _ := NewIterator(IteratorConfig{N: 5, BatchSize: 2})
	var got []int
	for range 3 {
		idx, _ := it.Next()
		got = append(got, idx...)
	}
	if !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("unshuffled order %v", got)
	}
	first := func(seed uint64) []int {
		it, _ := NewIterator(IteratorConfig{N: 100, BatchSize: 100, Seed: seed, Shuffle: true})
		idx, _ := it.Next()
		return idx
	}
	if !slices.Equal(first(3), first(3)) || slices.Equal(first(3), first(4)) {
		t.Error("permutation does not follow the seed")
	}
}

func TestIteratorRestore(t *testing.T) {
	cfg := IteratorConfig{N: 11, BatchSize: 3, Seed: 42, Shuffle: true}
	// Save at every step of the first 10 (crossing epoch boundaries) and
	// check that a fresh iterator restored there continues identically.
	for saveAt := range 10 {
		it, _ := NewIterator(cfg)
		for range saveAt {
			it.Next()
		}
		js, err := json.Marshal(it.State())
		if err != nil {
			t.Fatal(err)
		}
		var want [][]int
		for range 9 {
			idx, e := it.Next()
			want = append(want, append(idx, -e))
		}
		var st IteratorState
		if err := json.Unmarshal(js, &st); err != nil {
			t.Fatal(err)
		}
		other := cfg
		other.Seed = 7 // the seed comes from the state
		r, _ := NewIterator(other)
		if err := r.Restore(st); err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			idx, e := r.Next()
			if !slices.Equal(append(idx, -e), w) {
				t.Fatalf("saved after %d batches: batch %d after restore is %v epoch %d, want %v", saveAt, i, idx, e, w)
			}
		}
	}

	it, _ := NewIterator(cfg)
	st := it.State()
	st.N = 12
	if err := it.Restore(st); err == nil || !strings.Contains(err.Error(), "N=12") {
		t.Errorf("restore with another N: error %v", err)
	}
	st = it.State()
	st.Index = 20
	if err := it.Restore(st); err == nil {
		t.Error("restore with an index past N: no error")
	}
}

func TestIteratorErrors(t *testing.T) {
	for _, cfg := range []IteratorConfig{
		{N: 0, BatchSize: 1},
		{N: 5, BatchSize: 0},
		{N: 5, BatchSize: 6, DropLast: true},
	} {
		if _, err := NewIterator(cfg); err == nil {
			t.Errorf("NewIterator(%+v): no error", cfg)
		}
	}
	if _, err := NewIterator(IteratorConfig{N: 5, BatchSize: 6}); err != nil {
		t.Errorf("keep-last with BatchSize > N: %v", err)
	}
}
