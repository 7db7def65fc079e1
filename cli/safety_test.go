//go:build unix

package cli

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/locusml/locus/train"
)

// The regression tests of issue 36's writes: Locus writes only the paths a user names
// and the files of a run directory it created, only as regular files, never through a
// symbolic link, and never into the run a command reads.

// snapshot returns every file and link under path (a file or a folder) with its
// content or link target, keyed by the path relative to path.
func snapshot(t *testing.T, path string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			m[rel] = "-> " + target
			return err
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			m[rel] = string(b)
			return err
		case d.IsDir():
			m[rel] = "dir"
		default:
			m[rel] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshot(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// lastErrorLine fails the test if stderr holds a panic trace, and returns its last line.
func lastErrorLine(t *testing.T, args []string, stderr string) string {
	t.Helper()
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Errorf("%v: panic trace:\n%s", args, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return lines[len(lines)-1]
}

// TestRunFilesAreNeverFollowed: every file and folder a run writes (LOCK, LOCUS-RUN,
// LATEST, config.json, metrics.jsonl, loss.png, the checkpoints and the files in them,
// best/), made a symbolic link to a copy outside the run, is never written through: a
// resumed run either refuses with one line naming the link, or (for a checkpoint, which
// is only read and pruned) continues; what the link points to is never changed, and a
// dangling LOCK link does not create its target.
func TestRunFilesAreNeverFollowed(t *testing.T) {
	base := charRun(t)
	var names []string
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(base, p); rel != "." {
			names = append(names, rel)
		}
		return err
	})
	names = append(names, train.LockFile, "dangling "+train.LockFile)
	// What a resume always writes: a link there must be refused.
	mustRefuse := []string{train.LockFile, "dangling " + train.LockFile, train.RunFile, train.LatestFile, train.MetricsFile, train.PlotFile, runConfigFile}
	for _, want := range mustRefuse[2:] {
		if !slices.Contains(names, want) {
			t.Errorf("a finished run has no %s", want)
		}
	}
	for _, name := range names {
		run := charRun(t)
		rel := strings.TrimPrefix(name, "dangling ")
		inRun := filepath.Join(run, rel)
		outside := filepath.Join(t.TempDir(), filepath.Base(rel))
		switch {
		case name != rel: // a link to nothing
		case rel == train.LockFile:
			if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		default: // the real file or folder moves outside; the run reads it through the link
			if err := os.Rename(inRun, outside); err != nil {
				t.Fatal(err)
			}
		}
		var before map[string]string
		if name == rel {
			before = snapshot(t, outside)
		}
		if err := os.Symlink(outside, inRun); err != nil {
			t.Fatal(err)
		}
		args := []string{"train", "-resume", run, "-steps", "15", "-keep", "1"}
		code, _, stderr := runCLI(t, args...)
		last := lastErrorLine(t, args, stderr)
		if name == rel {
			if after := snapshot(t, outside); !sameSnapshot(before, after) {
				t.Errorf("%s as a link: the file outside the run changed\nbefore %q\nafter  %q", name, before, after)
			}
		} else if _, err := os.Lstat(outside); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the link's target was created", name)
		}
		refused := code == 1 && strings.Contains(last, inRun) && strings.Contains(last, "not a regular file (a symbolic link)")
		switch {
		case slices.Contains(mustRefuse, name) && !refused:
			t.Errorf("%s as a link: exit %d, %q; want exit 1 naming %s as a symbolic link", name, code, last, inRun)
		case code != 0 && !refused && !strings.Contains(last, "not a directory (a symbolic link)"):
			t.Errorf("%s as a link: exit %d, %q; want exit 0 or a refusal naming the link", name, code, last)
		}
	}
}

// TestTrainOutRefusesAFolderThatIsNotARun: -out (or the folder of a resumed checkpoint)
// that holds files but no LOCUS-RUN or LATEST is refused before anything is written; an
// empty folder and a run of an earlier version (LATEST, no LOCUS-RUN) are runs.
func TestTrainOutRefusesAFolderThatIsNotARun(t *testing.T) {
	corpus := tinyCorpus(t)
	mine := t.TempDir()
	for _, f := range []string{runConfigFile, train.MetricsFile} {
		if err := os.WriteFile(filepath.Join(mine, f), []byte("my own "+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	linked := t.TempDir() // a fresh folder holding only a LOCK link
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(linked, train.LockFile)); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{mine, linked} {
		before := snapshot(t, dir)
		checkFails(t, 1, "is not empty and is not a Locus run directory", charlmArgs(corpus, dir)...)
		if after := snapshot(t, dir); !sameSnapshot(before, after) {
			t.Errorf("-out %s: the folder changed: %q -> %q", dir, before, after)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "precious\n" {
		t.Errorf("the LOCK link's target holds %q", b)
	}

	// A checkpoint copied into a folder of other files: resuming it there is refused,
	// resuming it into a new -out works.
	run := charRun(t)
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(other, "ck")
	if err := os.CopyFS(ck, os.DirFS(latestDir(t, run))); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, other)
	checkFails(t, 1, "is not empty and is not a Locus run directory (it holds ck, notes.txt", "train", "-resume", ck, "-steps", "15")
	if after := snapshot(t, other); !sameSnapshot(before, after) {
		t.Errorf("-resume into a folder of other files changed it")
	}
	if code, _, stderr := runCLI(t, "train", "-resume", ck, "-steps", "15", "-out", filepath.Join(t.TempDir(), "new")); code != 0 {
		t.Errorf("-resume CK -out NEW: exit %d\n%s", code, stderr)
	}

	empty := t.TempDir()
	if code, _, stderr := runCLI(t, charlmArgs(corpus, empty)...); code != 0 {
		t.Fatalf("-out an empty folder: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(empty, train.RunFile)); err != nil {
		t.Errorf("a new run has no %s: %v", train.RunFile, err)
	}
	os.Remove(filepath.Join(empty, train.RunFile)) // as an earlier version left it
	if code, _, stderr := runCLI(t, "train", "-resume", empty, "-steps", "15"); code != 0 {
		t.Errorf("-resume of a run without %s: exit %d\n%s", train.RunFile, code, stderr)
	}
}

// outTargets makes, in dir, one path of every kind an output must not replace: a link
// to the file outside (which must keep its content), a dangling link, a folder, a FIFO,
// a socket and, as root, a character device with /dev/full's numbers (made here: the
// real /dev is never touched). The values are the kinds the errors must name.
func outTargets(t *testing.T, dir, outside string) map[string]string {
	t.Helper()
	m := map[string]string{}
	mk := func(name, kind string, make func(string) error) {
		p := filepath.Join(dir, name)
		if err := make(p); err != nil {
			t.Logf("no %s here: %v", kind, err)
			return
		}
		m[p] = kind
	}
	mk("link.out", "a symbolic link", func(p string) error { return os.Symlink(outside, p) })
	mk("dangling.out", "a symbolic link", func(p string) error { return os.Symlink(filepath.Join(dir, "nothing"), p) })
	mk("folder.out", "a directory", func(p string) error { return os.Mkdir(p, 0o755) })
	mk("fifo.out", "a named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) })
	mk("socket.out", "a socket", func(p string) error {
		l, err := net.Listen("unix", p)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	})
	if os.Geteuid() == 0 {
		mk("full.out", "a character device", func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|7) })
	}
	return m
}

// writers are the commands that write one file named by a flag from a run.
func writers(run, out string) [][]string {
	return [][]string{
		{"export", "-format", "torch", "-ckpt", run, "-out", out},
		{"export", "-format", "safetensors", "-ckpt", run, "-out", out},
		{"export", "-format", "onnx", "-ckpt", run, "-out", out},
		{"report", "-ckpt", run, "-out", out},
		{"inspect", "-ckpt", run, "-plot", out},
	}
}

// TestOutputsThatAreNotRegularFilesAreRefused: export (every format), report and
// inspect -plot given an -out that is a link, a folder, a FIFO, a socket or a device
// exit 1 with one line naming it and what it is, and leave it as it was (a device is
// not turned into a file, a link's target keeps its content).
func TestOutputsThatAreNotRegularFilesAreRefused(t *testing.T) {
	run := charRun(t)
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	targets := outTargets(t, dir, outside)
	before := snapshot(t, dir)
	for path, kind := range targets {
		for _, args := range writers(run, path) {
			checkFails(t, 1, path+": not a regular file ("+kind+")", args...)
		}
	}
	if after := snapshot(t, dir); !sameSnapshot(before, after) {
		t.Errorf("the targets changed:\nbefore %q\nafter  %q", before, after)
	}
	if b, _ := os.ReadFile(outside); string(b) != "precious\n" {
		t.Errorf("the link's target holds %q", b)
	}
	// The same commands write a new file and replace a regular one.
	out := filepath.Join(dir, "regular.out")
	for _, args := range writers(run, out) {
		for range 2 {
			if code, _, stderr := runCLI(t, args...); code != 0 {
				t.Errorf("%v: exit %d\n%s", args, code, stderr)
			}
		}
	}
}

// TestOutputsInsideTheRunAreRefused: export (every format), report and inspect (-plot,
// and -out for pictures) refuse an output inside the checkpoint or the run they read:
// every file of the checkpoint (model.safetensors, checkpoint.json,
// optimizer.safetensors), LATEST, best/, the run's logs, a new file in the run, and the
// run reached through a link; -ckpt naming the run or the checkpoint. The run is
// unchanged and still loads.
func TestOutputsInsideTheRunAreRefused(t *testing.T) {
	run := charRun(t)
	ck := latestDir(t, run)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(run, alias); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, run)
	var outs []string
	for _, f := range []string{train.ModelFile, train.MetaFile, train.OptimizerFile} {
		outs = append(outs, filepath.Join(ck, f), filepath.Join(run, train.BestDir, f))
	}
	outs = append(outs, filepath.Join(run, train.LatestFile), filepath.Join(run, train.MetricsFile), filepath.Join(run, runConfigFile),
		filepath.Join(run, "model.onnx"), filepath.Join(alias, train.LatestFile), filepath.Join(alias, filepath.Base(ck), train.ModelFile))
	for _, from := range []string{run, ck} {
		for _, out := range outs {
			for _, args := range writers(from, out) {
				checkFails(t, 2, "-ckpt reads: write it elsewhere", args...)
			}
		}
		checkFails(t, 2, "inside the run directory", "inspect", "-ckpt", from, "-kernels", "-out", run)
	}
	if after := snapshot(t, run); !sameSnapshot(before, after) {
		t.Errorf("the run changed")
	}
	if code, _, stderr := runCLI(t, "eval", "-ckpt", run, "-n", "16"); code != 0 {
		t.Errorf("eval of the run after the refused writes: exit %d\n%s", code, stderr)
	}
}

// TestRunFileReaderRefusesWhatIsNotARegularFile: -config naming a FIFO, a device or a
// folder is one line, not a hang or an out-of-memory crash.
func TestRunFileReaderRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a named pipe", zero: "a character device", dir: "a directory"} {
		checkFails(t, 1, path+": not a regular file ("+kind+")", "train", "-config", path)
	}
}

// TestDAEPictureIsNeverFollowed: the DAE's denoised.png, a link to a file outside the
// run, is refused with one line when the resumed run draws it, and the file is unchanged.
func TestDAEPictureIsNeverFollowed(t *testing.T) {
	dir := t.TempDir()
	writeMNIST(t, dir, 32, 3)
	run := filepath.Join(dir, "run")
	args := []string{"train", "-model", "dae", "-mnist", dir, "-batch", "8", "-steps", "2", "-eval-every", "2", "-eval-n", "10", "-out", run}
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("dae: exit %d\n%s", code, stderr)
	}
	pic := filepath.Join(run, "denoised.png")
	outside := filepath.Join(t.TempDir(), "denoised.png")
	if err := os.Rename(pic, outside); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, outside)
	if err := os.Symlink(outside, pic); err != nil {
		t.Fatal(err)
	}
	checkFails(t, 1, pic+": not a regular file (a symbolic link)", "train", "-resume", run, "-steps", "4")
	if after := snapshot(t, outside); !sameSnapshot(before, after) {
		t.Errorf("the picture outside the run changed")
	}
}
