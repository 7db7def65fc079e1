package sysmem

import (
	"os"
	"testing"
)

func TestTotal(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	if got := Total(); got < 64<<20 || got > 1<<50 {
		t.Errorf("Total() = %d bytes, not a plausible memory size", got)
	}
}
