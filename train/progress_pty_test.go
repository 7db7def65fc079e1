//go:build linux

package train

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of cols×rows and returns its two ends: the terminal
// (the program's side) and the controller (what a terminal emulator reads).
func openPTY(t *testing.T, cols, rows int) (tty, ctl *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ctl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ctl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}); err != nil {
		t.Fatalf("set window size: %v", err)
	}
	return tty, ctl
}

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// barFrame matches a frame of the progress bar of a 40-step run: the library draws the
// count and [elapsed:time left].
var barFrame = regexp.MustCompile(`\(\d+/40\) \[[0-9hms]+:[0-9hms]+\]`)

// trainOnPTY runs a Loop that writes to a pseudo-terminal of cols columns and returns
// what the terminal received, split into the lines it renders (between \r and \n) with
// the escape sequences removed.
func trainOnPTY(t *testing.T, cols int, dir string) []string {
	tty, ctl := openPTY(t, cols, 24)
	got := make(chan []byte)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, ctl) // ends with EIO once the terminal side is closed
		got <- b.Bytes()
	}()
	l := newLoop(t, 40, dir)
	l.Out, l.EvalEvery, l.Best, l.ItemsName = tty, 20, "val_loss", "samples"
	_, err := l.Run(context.Background())
	tty.Close()
	out := <-got
	ctl.Close()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.FieldsFunc(string(out), func(r rune) bool { return r == '\r' || r == '\n' }) {
		lines = append(lines, ansiEscape.ReplaceAllString(l, ""))
	}
	return lines
}

// TestProgressBarFitsTerminal trains on an 80-column pseudo-terminal: every line it
// renders fits in 80 columns, the bar frames show the count, the bar and the time left,
// and the run ends with its summary line.
func TestProgressBarFitsTerminal(t *testing.T) {
	lines := trainOnPTY(t, 80, t.TempDir())
	frames := 0
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a %d-column line on an 80-column terminal: %q", n, l)
		}
		if barFrame.MatchString(l) {
			frames++
			for _, want := range []string{"|", "loss ", "%"} {
				if !strings.Contains(l, want) {
					t.Errorf("bar frame %q lacks %q", l, want)
				}
			}
		}
	}
	if frames == 0 {
		t.Errorf("no bar frame with a count and eta in:\n%s", strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "done: 40 steps in ") {
		t.Errorf("last line %q, want the summary", last)
	}
}

// TestProgressBarNarrowTerminal: on a 40-column terminal the bar is dropped and the
// count and time left are kept; record lines are broken between their fields.
func TestProgressBarNarrowTerminal(t *testing.T) {
	lines := trainOnPTY(t, 40, "")
	frames := 0
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 40 {
			t.Errorf("a %d-column line on a 40-column terminal: %q", n, l)
		}
		if barFrame.MatchString(l) {
			frames++
			if strings.Contains(l, "|") {
				t.Errorf("bar frame %q on 40 columns still draws the bar", l)
			}
		}
	}
	if frames == 0 {
		t.Errorf("no bar frame with a count and eta in:\n%s", strings.Join(lines, "\n"))
	}
}
