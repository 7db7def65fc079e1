//go:build unix

package cli

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestUnknownLocusCPU: every command refuses an unknown LOCUS_CPU with one line naming
// it (the variable is read when the program starts, so each runs in a process of its
// own, TestHelperProcess).
func TestUnknownLocusCPU(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "--", name)
		cmd.Env = append(os.Environ(), "LOCUS_HELPER=run", "LOCUS_CPU=bogus")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("%s: %v", name, err)
		}
		oneLine(t, name, code, stderr.String(), 2, "locus "+name+`: LOCUS_CPU="bogus": want generic, avx2, avx512 or auto`)
	}
}
