package cli

import (
	"io"
	"os"
	"runtime/debug"
	"testing"
)

// TestMainBoundsGarbage: a command run by Main has the collector at gcPercent where the
// environment sets no GOGC.
func TestMainBoundsGarbage(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: Main leaves the collector as it is")
	}
	Main([]string{"nw"}, io.Discard, io.Discard) // a usage error, after the collector is set
	got := debug.SetGCPercent(100)
	debug.SetGCPercent(got)
	if got != gcPercent {
		t.Errorf("after Main the collector's target is %d, want %d", got, gcPercent)
	}
}
