//go:build unix

package regularfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "not a regular file (a named pipe)"},
		{zero, "not a regular file (a character device)"},
		{dir, "not a regular file (a directory)"},
		{big, "100 bytes, more than the 99"},
	} {
		_, err := ReadFile(tc.path, 99)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("ReadFile(%s): %v, want an error naming it with %q", tc.path, err, tc.want)
		}
	}
	b, err := ReadFile(big, 100)
	if err != nil || len(b) != 100 {
		t.Errorf("ReadFile(%s, 100) = %d bytes, %v", big, len(b), err)
	}
}
