package cli

import (
	"os"
	"runtime/debug"
	"sync"
)

// gcPercent is the garbage collector's target (GOGC) the commands run with where the
// environment sets none. Go's default, 100, lets the heap grow to twice what is live
// before it collects, and in a training run nearly all that is live is the compiled
// graphs' buffers, so a long run's peak memory crept toward twice its step's: `locus
// train` at T = 4096, batch 8, peaked at 566 MiB after 60 steps against the step's 386
// MiB (a step leaves a few MB of garbage: the batch, attention's scratch), with the
// collector's goal at 749 MB (GODEBUG=gctrace=1); at 25, 531 MiB. The garbage is bounded
// by a quarter of what is live. The buffers hold no pointers, so a collection costs what
// the graphs' small objects cost to mark, whatever the buffers' size.
const gcPercent = 25

var gcOnce sync.Once

// boundGarbage sets the collector's target to gcPercent once, unless GOGC is set.
func boundGarbage() {
	gcOnce.Do(func() {
		if _, set := os.LookupEnv("GOGC"); !set {
			debug.SetGCPercent(gcPercent)
		}
	})
}
