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

// TestNoFollowRefusesLinks: ReadFileNoFollow refuses a symlink to a regular file (whose
// bytes must not be read), as well as everything ReadFile refuses, and reads a plain file.
func TestNoFollowRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, zero} {
		b, err := ReadFileNoFollow(p, 1<<20)
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a symbolic link)") || !strings.Contains(err.Error(), p) || len(b) > 0 {
			t.Errorf("ReadFileNoFollow(%s) = %q, %v; want a symbolic-link error naming it", p, b, err)
		}
	}
	if _, err := ReadFileNoFollow(dir, 1<<20); err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("ReadFileNoFollow(dir): %v", err)
	}
	if b, err := ReadFileNoFollow(secret, 6); err != nil || string(b) != "secret" {
		t.Errorf("ReadFileNoFollow(plain file) = %q, %v", b, err)
	}
	if _, err := ReadFileNoFollow(secret, 5); err == nil || !strings.Contains(err.Error(), "more than the 5") {
		t.Errorf("ReadFileNoFollow(6 bytes, limit 5): %v", err)
	}
}
