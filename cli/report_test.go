package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locusml/locus/train"
)

// trainTiny trains a small reversal encoder into run with the extra flags.
func trainTiny(t *testing.T, run string, extra ...string) {
	t.Helper()
	args := append([]string{"train", "-task", "reverse", "-seqlen", "6", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32",
		"-batch", "8", "-eval-n", "16"}, extra...)
	if run != "" {
		args = append(args, "-out", run)
	}
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
}

// TestReportShowsTheWholeRun: a run of 24 steps resumed to 36, evaluated every 3 steps:
// the report's curves draw every record of metrics.jsonl, the table has a row per
// record, in step order, with no step twice.
func TestReportShowsTheWholeRun(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	trainTiny(t, run, "-steps", "24", "-eval-every", "3")
	if code, _, stderr := runCLI(t, "train", "-resume", run, "-steps", "36"); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	records, err := train.ReadMetrics(run)
	if err != nil {
		t.Fatal(err)
	}
	var losses, vals int
	for _, r := range records {
		if _, ok := r.Metrics[train.MetricLoss]; ok {
			losses++
		}
		if _, ok := r.Metrics[train.ValPrefix+train.MetricLoss]; ok {
			vals++
		}
	}
	if vals != 12 || len(records) != 14 {
		t.Fatalf("metrics.jsonl: %d records, %d evaluations; want 14 records (every 3 and 10 steps), 12 evaluations", len(records), vals)
	}

	ld, err := fromCheckpoint(run, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := buildReport(ld, 0)
	if err != nil {
		t.Fatal(err)
	}
	if page.loss == nil {
		t.Fatal("no loss curve")
	}
	if n := len(page.loss.Series["training (loss)"]); n != losses {
		t.Errorf("the loss curve draws %d training points, metrics.jsonl has %d", n, losses)
	}
	if n := len(page.loss.Series["validation (loss)"]); n != vals {
		t.Errorf("the loss curve draws %d validation points, metrics.jsonl has %d", n, vals)
	}
	if len(page.Rows) != len(records) {
		t.Errorf("the table has %d rows, metrics.jsonl %d records", len(page.Rows), len(records))
	}

	// What the user sees: the page's table, a row per record, steps increasing.
	out := filepath.Join(dir, "report.html")
	if code, _, stderr := runCLI(t, "report", "-ckpt", run, "-out", out); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	steps := regexp.MustCompile(`<tr><td>(\d+)</td>`).FindAllSubmatch(html, -1)
	if len(steps) != len(records) {
		t.Errorf("the page's table has %d rows, want %d", len(steps), len(records))
	}
	last := 0
	for _, m := range steps {
		var s int
		fmt.Sscan(string(m[1]), &s)
		if s <= last {
			t.Errorf("table row for step %d after step %d", s, last)
		}
		last = s
	}
	if last != 36 {
		t.Errorf("the table ends at step %d, want 36", last)
	}
}

// TestReportTableOfALongRun: more than maxTableRows records show the evaluations,
// thinned evenly with the last kept, and say so.
func TestReportTableOfALongRun(t *testing.T) {
	var h []train.Record
	for s := 10; s <= 100000; s += 10 {
		m := train.Metrics{train.MetricLoss: 1}
		if s%200 == 0 {
			m[train.ValPrefix+train.MetricLoss] = 1
		}
		h = append(h, train.Record{Step: s, Metrics: m})
	}
	rows, note := tableRecords(h)
	if len(rows) > maxTableRows || len(rows) < maxTableRows/2 || rows[len(rows)-1].Step != 100000 {
		t.Fatalf("%d rows ending at step %d", len(rows), rows[len(rows)-1].Step)
	}
	for _, r := range rows {
		if _, ok := r.Metrics[train.ValPrefix+train.MetricLoss]; !ok {
			t.Fatalf("row of step %d is not an evaluation", r.Step)
		}
	}
	if !strings.Contains(note, fmt.Sprintf("%d of the run's 10000 records", len(rows))) || !strings.Contains(note, "evaluation") {
		t.Errorf("note %q", note)
	}
	if rows, note := tableRecords(h[:150]); len(rows) != 150 || note != "" {
		t.Errorf("150 records: %d rows, note %q", len(rows), note)
	}
}

// TestReportReadsNoTrickFile: every file report reads from the run directory is a
// regular file, not a link, of bounded size: a denoised.png or a metrics.jsonl that is a
// symlink to someone else's file, a FIFO, a link to /dev/zero or oversized is left out
// with a one-line warning, never hangs, and the page holds none of the target's bytes.
func TestReportReadsNoTrickFile(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	trainTiny(t, run, "-steps", "6", "-eval-every", "3")
	secret := filepath.Join(dir, "secret.png")
	secretBytes := append([]byte("\x89PNG\r\n\x1a\n"), []byte("SECRET-0123456789-SECRET")...)
	if err := os.WriteFile(secret, secretBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	secretLog := filepath.Join(dir, "secret.jsonl")
	if err := os.WriteFile(secretLog, []byte(`{"step":1,"loss":424242.5}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.png")
	if err := os.WriteFile(big, secretBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxPictureBytes+1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		plant      func(path string) error
		want       string
	}{
		{"picture symlink", "denoised.png", func(p string) error { return os.Symlink(secret, p) }, "a symbolic link"},
		{"picture FIFO", "denoised.png", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "a named pipe"},
		{"picture /dev/zero", "denoised.png", func(p string) error { return os.Symlink("/dev/zero", p) }, "a symbolic link"},
		{"picture oversized", "denoised.png", func(p string) error { return os.Rename(big, p) }, "more than the"},
		{"log symlink", train.MetricsFile, func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink(secretLog, p)
		}, "a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(run, tc.file)
			orig, _ := os.ReadFile(path)
			if err := tc.plant(path); err != nil {
				t.Skip(err)
			}
			defer func() {
				os.Remove(path)
				if orig != nil {
					os.WriteFile(path, orig, 0o644)
				}
			}()
			out := filepath.Join(dir, "report.html")
			done := make(chan struct{})
			var code int
			var stderr string
			go func() {
				code, _, stderr = runCLI(t, "report", "-ckpt", run, "-out", out)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("report hangs")
			}
			warn := strings.TrimSpace(stderr)
			if code != 0 || !strings.HasPrefix(warn, "locus report: warning: ") || !strings.Contains(warn, tc.file) || !strings.Contains(warn, tc.want) || strings.Count(warn, "\n") > 0 {
				t.Errorf("exit %d, stderr %q; want 0 and a one-line warning naming %s with %q", code, stderr, tc.file, tc.want)
			}
			html, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, leak := range []string{base64.StdEncoding.EncodeToString(secretBytes), "SECRET", "424242"} {
				if bytes.Contains(html, []byte(leak)) {
					t.Errorf("the page holds the bytes of the file behind %s (%q)", tc.file, leak)
				}
			}
			if !bytes.Contains(html, []byte("warning: "+tc.file)) {
				t.Errorf("the page does not say that %s was left out", tc.file)
			}
		})
	}
}

// probePage renders a copy of an HTML page in headless Chromium at 1280×900 and
// returns what a script measured there: the page's scroll width, the window's width, the
// table's rows and the <pre> blocks wider than their box (scrolling inside); ok is false
// when Chromium is not installed.
func probePage(t *testing.T, path string) (scrollW, windowW, rows, widePre int, ok bool) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Logf("chromium not installed: the page is not measured")
		return 0, 0, 0, 0, false
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	probe := `<script>document.body.setAttribute("data-probe", document.documentElement.scrollWidth + " " + window.innerWidth + " " + document.querySelectorAll("table tr").length + " " + [...document.querySelectorAll("pre")].filter(e => e.scrollWidth > e.clientWidth).length)</script></body>`
	cp := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(cp, bytes.Replace(html, []byte("</body>"), []byte(probe), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900", "--dump-dom", "file://"+cp)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	m := regexp.MustCompile(`data-probe="(\d+) (\d+) (\d+) (\d+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("chromium ran no script: %.300s", dom)
	}
	fmt.Sscan(string(m[1]), &scrollW)
	fmt.Sscan(string(m[2]), &windowW)
	fmt.Sscan(string(m[3]), &rows)
	fmt.Sscan(string(m[4]), &widePre)
	return scrollW, windowW, rows, widePre, true
}

// TestReportExampleOutOfRange: an -example that names no validation example is a usage
// error, as in inspect -attention, not a page without its attention picture and exit 0.
func TestReportExampleOutOfRange(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, run)
	for ex, want := range map[string]string{
		"-1":                  "-example -1: want an index >= 0",
		"1000":                "-example 1000 is out of range 0..999",
		"9223372036854775807": "-example 9223372036854775807 is out of range 0..999",
	} {
		out := filepath.Join(t.TempDir(), "r.html")
		code, _, stderr := runCLI(t, "report", "-ckpt", run, "-out", out, "-example", ex)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
			t.Errorf("report -example %s: exit %d, stderr %q; want exit 2 and %q", ex, code, stderr, want)
		}
		if _, err := os.Lstat(out); err == nil {
			t.Errorf("report -example %s wrote %s", ex, out)
		}
	}
}
