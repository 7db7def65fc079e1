package par

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// check runs For(n, chunk) and checks that every index is covered once, by the chunks
// the documented boundaries give.
func check(t *testing.T, n, chunk int) {
	t.Helper()
	hits := make([]int32, n)
	var bad atomic.Int32
	For(n, chunk, func(lo, hi int) {
		if chunk > 0 && chunk < n && (lo%chunk != 0 || hi != min(lo+chunk, n)) {
			bad.Add(1)
		}
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&hits[i], 1)
		}
	})
	if bad.Load() != 0 {
		t.Fatalf("n=%d chunk=%d: %d chunks with unexpected bounds", n, chunk, bad.Load())
	}
	for i, h := range hits {
		if h != 1 {
			t.Fatalf("n=%d chunk=%d: index %d run %d times", n, chunk, i, h)
		}
	}
}

func TestForCoversOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 3, 8} {
		old := runtime.GOMAXPROCS(procs)
		for n := 0; n < 40; n++ {
			for chunk := -1; chunk <= n+1; chunk++ {
				check(t, n, chunk)
			}
		}
		check(t, 1000, 7)
		runtime.GOMAXPROCS(old)
	}
}

// TestParallel checks that a worker really takes a chunk while the caller is busy.
func TestParallel(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2")
	}
	var first atomic.Bool
	release := make(chan struct{})
	For(2, 1, func(lo, _ int) {
		if first.CompareAndSwap(false, true) {
			<-release // whoever comes first waits for the other chunk
			return
		}
		close(release)
	})
}

func TestNested(t *testing.T) {
	var total atomic.Int64
	For(8, 2, func(lo, hi int) {
		For(100, 10, func(lo, hi int) {
			For(3, 1, func(lo, hi int) { total.Add(int64(hi - lo)) })
		})
	})
	if got := total.Load(); got != 4*10*3 {
		t.Fatalf("total %d, want %d", got, 4*10*3)
	}
}

func TestConcurrentCallers(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 300 {
				n := 1 + (g*31+it*17)%500
				sum := make([]int64, n)
				For(n, 1+it%13, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						sum[i] += int64(i)
					}
				})
				for i, v := range sum {
					if v != int64(i) {
						t.Errorf("index %d: %d", i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestParkAndWake runs sections with pauses longer than the spin time, so that workers
// and the caller go through their parked paths.
func TestParkAndWake(t *testing.T) {
	for it := range 20 {
		var n atomic.Int64
		For(4, 1, func(lo, hi int) {
			if it%2 == 0 && lo == 3 {
				time.Sleep(2 * spinFor) // the caller parks waiting for this chunk
			}
			n.Add(1)
		})
		if n.Load() != 4 {
			t.Fatalf("ran %d chunks", n.Load())
		}
		time.Sleep(3 * spinFor)
	}
}

func TestPanicOnCaller(t *testing.T) {
	for range 50 {
		func() {
			defer func() { recover() }()
			me := goid()
			For(4, 1, func(lo, hi int) {
				if goid() == me {
					panic("boom") // only on the caller: a worker's panic ends the process
				}
			})
		}()
		check(t, 100, 10) // the pool is still usable and fully parallel
	}
	if pool.busy.Load() {
		t.Fatal("pool left busy after a panic")
	}
}

func TestForAllocs(t *testing.T) {
	var sink [64]int64
	fn := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sink[i]++
		}
	}
	For(64, 8, fn)
	if a := testing.AllocsPerRun(1000, func() { For(64, 8, fn) }); a != 0 {
		t.Fatalf("%v allocations per call", a)
	}
}

func BenchmarkFor(b *testing.B) {
	var sink [2]float64
	fn := func(lo, hi int) {
		s := 0.0
		for i := lo * 1000; i < hi*1000; i++ {
			s += float64(i)
		}
		sink[lo] = s
	}
	for b.Loop() {
		For(2, 1, fn)
	}
}

func BenchmarkSpawn(b *testing.B) {
	var sink [2]float64
	fn := func(lo, hi int) {
		s := 0.0
		for i := lo * 1000; i < hi*1000; i++ {
			s += float64(i)
		}
		sink[lo] = s
	}
	for b.Loop() {
		var wg sync.WaitGroup
		for c := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); fn(c, c+1) }()
		}
		wg.Wait()
	}
}

func goid() int {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	id, _ := strconv.Atoi(string(b[:bytes.IndexByte(b, ' ')]))
	return id
}

// TestBusy checks that Busy is false outside sections and true inside every chunk of one
// that holds the pool, and false again after it.
func TestBusy(t *testing.T) {
	if Busy() {
		t.Fatal("Busy outside any section")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2: with one, For holds no pool")
	}
	var inside atomic.Int32
	For(4, 1, func(lo, hi int) {
		if Busy() {
			inside.Add(1)
		}
	})
	if got := inside.Load(); got != 4 {
		t.Fatalf("Busy in %d of 4 chunks, want all", got)
	}
	if Busy() {
		t.Fatal("Busy after the section")
	}
}
