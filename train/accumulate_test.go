package train

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestAccumulateBounded: an Accumulate beyond MaxAccumulate is refused before the first
// step, which holds its batches (int64's maximum panicked in makeslice, int32's ran out
// of memory).
func TestAccumulateBounded(t *testing.T) {
	for _, n := range []int{MaxAccumulate + 1, math.MaxInt32, math.MaxInt64} {
		l := newLoop(t, 1, "")
		l.Accumulate = n
		_, err := l.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "Loop.Accumulate is") || !strings.Contains(err.Error(), "want at most 4096") {
			t.Errorf("Accumulate %d: %v, want the limit named", n, err)
		}
	}
}
