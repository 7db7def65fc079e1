// Package par runs the parallel sections of the numeric kernels (autodiff, gemm, optim)
// on a small persistent pool of worker goroutines instead of spawning goroutines for
// each section.
//
// A training step runs dozens of sections of some tens to hundreds of microseconds;
// starting goroutines and waking a parked thread for each one costs a noticeable share
// of that. The pool's workers spin briefly after a section before parking, so
// back-to-back sections find them awake.
//
// The caller of For always runs chunks itself, and takes the chunks that no worker
// claimed, so a slow-to-wake worker never delays a section by more than its own chunk.
// One section runs on the pool at a time: a For called while another is in progress
// (from inside a chunk, or from another goroutine) runs its chunks inline, one after
// the other, which cannot deadlock. Chunk boundaries never depend on who runs a chunk,
// so results are the same whichever way a section runs.
package par

import (
	"runtime"
	"sync/atomic"
	"time"
)

// spinFor is how long an idle worker keeps polling for the next section before it
// parks, and how long For polls for its workers to finish before it parks.
const spinFor = 200 * time.Microsecond

// For calls fn(lo, hi) on the chunks [0, chunk), [chunk, 2·chunk), … of [0, n) (the
// last one ends at n), in parallel on up to GOMAXPROCS goroutines including the
// caller's, and returns when all have returned. With one chunk, or GOMAXPROCS 1, fn
// runs on the caller's goroutine. For allocates nothing (fn itself escapes). A panic in
// a chunk on the caller's goroutine propagates once the workers are done with the
// section; one on a worker ends the program, as in a goroutine of its own.
func For(n, chunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if chunk <= 0 || chunk >= n {
		fn(0, n)
		return
	}
	tasks := (n + chunk - 1) / chunk
	helpers := runtime.GOMAXPROCS(0) - 1
	if helpers <= 0 || !pool.busy.CompareAndSwap(false, true) {
		serial(n, chunk, fn)
		return
	}
	pool.run(n, chunk, tasks, min(helpers, tasks-1), fn)
}

func serial(n, chunk int, fn func(lo, hi int)) {
	for lo := 0; lo < n; lo += chunk {
		fn(lo, min(lo+chunk, n))
	}
}

// Worker states.
const (
	idle    = iota // nothing to do; the worker polls, or parks when sleeping is set
	posted         // For has a section for it; it has not started
	running        // it is claiming and running chunks; it sets idle when done
)

type worker struct {
	state    atomic.Int32
	sleeping atomic.Bool   // parked, or about to park, on wake
	wake     chan struct{} // one token per sleep that For ends
	_        [64]byte      // keep workers' states on separate cache lines
}

type workerPool struct {
	busy atomic.Bool // a section is in progress; only its caller touches the fields below

	// The current section, written by its caller before it posts workers.
	fn       func(lo, hi int)
	n, chunk int
	tasks    int64
	next     atomic.Int64 // the next unclaimed chunk
	workers  []*worker
	posted   int // workers[:posted] were posted for this section
	_        [64]byte
	waiting  atomic.Bool   // the caller is parked, or about to park, on done
	done     chan struct{} // a token per wait of the caller's that a worker ends
}

var pool = workerPool{done: make(chan struct{}, 1)}

// run executes one section; p.busy is held and released here.
func (p *workerPool) run(n, chunk, tasks, helpers int, fn func(lo, hi int)) {
	for len(p.workers) < helpers {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go w.loop()
	}
	p.fn, p.n, p.chunk, p.tasks = fn, n, chunk, int64(tasks)
	p.next.Store(0)
	p.posted = helpers
	for _, w := range p.workers[:helpers] {
		w.state.Store(posted)
		if w.sleeping.Load() && w.sleeping.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
	// finish runs even if fn panics on this goroutine, so that the workers are done
	// with the section before the panic goes on and the pool stays usable.
	defer p.finish()
	p.claim()
}

// claim runs chunks until none is left.
func (p *workerPool) claim() {
	for {
		i := p.next.Add(1) - 1
		if i >= p.tasks {
			return
		}
		lo := int(i) * p.chunk
		p.fn(lo, min(lo+p.chunk, p.n))
	}
}

// finish withdraws the posts that no worker took up, waits for the workers that did,
// and frees the pool for the next section.
func (p *workerPool) finish() {
	ws := p.workers[:p.posted]
	for _, w := range ws {
		w.state.CompareAndSwap(posted, idle) // not started: it never will now
	}
	if !spinUntil(func() bool { return allIdle(ws) }) {
		for {
			p.waiting.Store(true)
			if allIdle(ws) {
				if !p.waiting.CompareAndSwap(true, false) {
					<-p.done // a worker saw the flag and sends a token
				}
				break
			}
			<-p.done
			if allIdle(ws) {
				break
			}
		}
	}
	p.fn = nil
	p.posted = 0
	p.busy.Store(false)
}

func allIdle(ws []*worker) bool {
	for _, w := range ws {
		if w.state.Load() != idle {
			return false
		}
	}
	return true
}

func (w *worker) loop() {
	p := &pool
	for {
		w.await()
		if !w.state.CompareAndSwap(posted, running) {
			continue // withdrawn before this worker started
		}
		p.claim()
		w.state.Store(idle)
		if p.waiting.Load() && p.waiting.CompareAndSwap(true, false) {
			p.done <- struct{}{}
		}
	}
}

// await returns once the worker is posted (or may have been: the caller re-checks),
// spinning for spinFor before it parks.
func (w *worker) await() {
	if spinUntil(func() bool { return w.state.Load() == posted }) {
		return
	}
	w.sleeping.Store(true)
	if w.state.Load() == posted {
		if w.sleeping.CompareAndSwap(true, false) {
			return
		}
		// The caller cleared the flag and sends a token: take it.
	}
	<-w.wake
}

// spinUntil polls cond for up to spinFor, yielding the processor now and then, and
// reports whether cond became true.
func spinUntil(cond func() bool) bool {
	var start time.Time
	for yields := 0; ; yields++ {
		for range 128 {
			if cond() {
				return true
			}
		}
		if yields%8 == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spinFor {
				return cond()
			}
		}
		runtime.Gosched()
	}
}

// Busy reports whether a section holds the pool, so that a For called now would run its
// chunks one after the other on the calling goroutine (as every For inside a chunk of
// another does). A caller can then skip splitting work that only pays in parallel.
func Busy() bool { return pool.busy.Load() }
