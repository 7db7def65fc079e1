//go:build unix

package cli

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/locusml/locus/train"
)

// The regression tests of issue 17: no input may crash, hang, or mix two runs. Each
// checks a one-line error and its exit status, never a panic trace.

// tinyCorpus is a text of a few kilobytes for character LMs.
func tinyCorpus(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "corpus.txt")
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 100)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	charRunOnce sync.Once
	charRunDir  string
	charRunErr  string
)

// charlmArgs are the flags of a tiny character LM run.
func charlmArgs(corpus, out string) []string {
	return []string{"train", "-task", "charlm", "-data", corpus, "-seqlen", "16", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32",
		"-batch", "8", "-steps", "10", "-eval-every", "5", "-eval-n", "16", "-out", out}
}

// charRun returns a copy of a finished tiny character LM run.
func charRun(t *testing.T) string {
	t.Helper()
	charRunOnce.Do(func() {
		dir, err := os.MkdirTemp("", "locus-reliability-")
		if err != nil {
			charRunErr = err.Error()
			return
		}
		corpus := filepath.Join(dir, "corpus.txt")
		if err := os.WriteFile(corpus, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 100)), 0o644); err != nil {
			charRunErr = err.Error()
			return
		}
		charRunDir = filepath.Join(dir, "run")
		if code, _, stderr := runCLI(t, charlmArgs(corpus, charRunDir)...); code != 0 {
			charRunErr = stderr
		}
	})
	if charRunErr != "" {
		t.Fatalf("tiny charlm run: %s", charRunErr)
	}
	dst := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dst, os.DirFS(charRunDir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// latestDir returns the latest checkpoint of a run.
func latestDir(t *testing.T, run string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, train.LatestFile))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(run, strings.TrimSpace(string(b)))
}

// checkFails runs the command line and wants exit code and want in the last line of
// stderr, without a panic trace.
func checkFails(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	got, _, stderr := runCLI(t, args...)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if got != code || !strings.Contains(last, want) {
		t.Errorf("%v: exit %d, last line %q; want exit %d and %q", args, got, last, code, want)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Errorf("%v: panic trace in output:\n%s", args, stderr)
	}
}

// readers are the commands that read a checkpoint.
func readers(run string) [][]string {
	return [][]string{
		{"eval", "-ckpt", run, "-n", "16"},
		{"sample", "-ckpt", run, "-prompt", "the", "-n", "5"},
		{"export", "-ckpt", run, "-out", filepath.Join(run, "export.safetensors")},
		{"inspect", "-ckpt", run},
		{"train", "-resume", run, "-steps", "20"},
	}
}

func TestFIFOInsteadOfModelFileIsRefused(t *testing.T) {
	run := charRun(t)
	file := filepath.Join(latestDir(t, run), train.ModelFile)
	os.Remove(file)
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	for _, args := range readers(run) {
		checkFails(t, 1, "not a regular file (a named pipe)", args...)
	}
}

func TestSymlinkToDevZeroIsRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, name := range []string{train.ModelFile, train.MetaFile, train.OptimizerFile} {
		run := charRun(t)
		file := filepath.Join(latestDir(t, run), name)
		os.Remove(file)
		if err := os.Symlink("/dev/zero", file); err != nil {
			t.Fatal(err)
		}
		for _, args := range readers(run) {
			checkFails(t, 1, "not a regular file (a character device)", args...)
		}
	}
}

func TestDataFIFOIsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	checkFails(t, 1, "not a regular file (a named pipe)", charlmArgs(fifo, filepath.Join(dir, "run"))...)
}

// twoAtOnce runs the command line twice concurrently and returns the exit codes and
// standard errors.
func twoAtOnce(t *testing.T, a, b []string) (codes [2]int, stderr [2]string) {
	var wg sync.WaitGroup
	for i, args := range [][]string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, stderr[i] = runCLI(t, args...)
		}()
	}
	wg.Wait()
	return codes, stderr
}

// exactlyOneRan checks that one of two runs succeeded and the other was refused with a
// one-line reason.
func exactlyOneRan(t *testing.T, codes [2]int, stderr [2]string) {
	t.Helper()
	if (codes[0] == 0) == (codes[1] == 0) {
		t.Fatalf("exit codes %v, want exactly one success:\n%s\n---\n%s", codes, stderr[0], stderr[1])
	}
	loser := stderr[0]
	if codes[1] != 0 {
		loser = stderr[1]
	}
	lines := strings.Split(strings.TrimSpace(loser), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "in use by") && !strings.Contains(last, "already holds a run") && !strings.Contains(last, "moved from") {
		t.Errorf("refused run says %q", last)
	}
}

func TestTwoTrainsIntoOneDirectory(t *testing.T) {
	corpus := tinyCorpus(t)
	out := filepath.Join(t.TempDir(), "run")
	a := append(charlmArgs(corpus, out), "-steps", "30", "-seed", "1")
	b := append(charlmArgs(corpus, out), "-steps", "30", "-seed", "2")
	codes, stderr := twoAtOnce(t, a, b)
	exactlyOneRan(t, codes, stderr)
	ck, err := train.LoadCheckpoint(out)
	if err != nil || ck.Step != 30 {
		t.Fatalf("the run directory after two trains: %v", err)
	}
	if len(ck.History) != 0 && ck.History[len(ck.History)-1].Step != 30 {
		t.Errorf("history ends at step %d", ck.History[len(ck.History)-1].Step)
	}
	// The run file is the winner's, not the refused run's.
	winner := uint64(1)
	if codes[1] == 0 {
		winner = 2
	}
	var rc struct {
		Data struct {
			Seed uint64 `json:"seed"`
		} `json:"data_config"`
	}
	if b, err := os.ReadFile(filepath.Join(out, runConfigFile)); err != nil || json.Unmarshal(b, &rc) != nil || rc.Data.Seed != winner {
		t.Errorf("%s holds seed %d, the run that trained has seed %d (%v)", runConfigFile, rc.Data.Seed, winner, err)
	}
}

func TestTwoResumesOfOneRun(t *testing.T) {
	run := charRun(t)
	args := []string{"train", "-resume", run, "-steps", "40"}
	codes, stderr := twoAtOnce(t, args, args)
	exactlyOneRan(t, codes, stderr)
	ck, err := train.LoadCheckpoint(run)
	if err != nil || ck.Step != 40 {
		t.Fatalf("the run after two resumes: %v", err)
	}
	for i, r := range ck.History[1:] {
		if r.Step <= ck.History[i].Step {
			t.Fatalf("history is not in step order: %d after %d", r.Step, ck.History[i].Step)
		}
	}
}

// poison writes v into the last value of the last tensor of a checkpoint file, keeping
// the checksums right (a re-signed file), and returns the tensor's name.
func poison(t *testing.T, run, file string, v float32) string {
	t.Helper()
	ck, err := train.LoadCheckpoint(run)
	if err != nil {
		t.Fatal(err)
	}
	ts := ck.Params
	if file == train.OptimizerFile {
		ts = ck.Optimizer
	}
	names := slices.Sorted(maps.Keys(ts))
	name := names[len(names)-1]
	d := ts[name].Data().([]float32)
	d[len(d)-1] = v
	if err := train.SaveCheckpoint(ck.Dir, ck); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestNaNCheckpointIsRefused(t *testing.T) {
	run := charRun(t)
	name := poison(t, run, train.OptimizerFile, float32(math.NaN()))
	checkFails(t, 1, `damaged values: tensor "`+name+`" holds NaN`, "train", "-resume", run, "-steps", "20")
	if got := latestDir(t, run); filepath.Base(got) != "step-000010" {
		t.Errorf("LATEST moved to %s", got)
	}
	run = charRun(t)
	name = poison(t, run, train.ModelFile, float32(math.Inf(1)))
	for _, args := range readers(run) {
		checkFails(t, 1, `damaged values: tensor "`+name+`" holds +Inf`, args...)
	}
}

// editMeta rewrites a field of the latest checkpoint's checkpoint.json, as a hand edit
// would: section is "model_config" or "data_config".
func editMeta(t *testing.T, run, section, field string, value any) {
	t.Helper()
	path := filepath.Join(latestDir(t, run), train.MetaFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	meta[section].(map[string]any)[field] = value
	if b, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSizesBeyondLimitsOrMemory: sizes beyond the configuration's limits, or that
// together cannot fit in memory, are refused before anything is allocated, from flags
// and from checkpoints alike.
func TestSizesBeyondLimitsOrMemory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-dmodel", "1000000"}, 2, "dim 1000000"},
		{[]string{"-dff", "1000000000"}, 2, "hidden 1000000000"},
		{[]string{"-layers", "100000"}, 2, "layers 100000"},
		{[]string{"-batch", "100000000"}, 2, "-batch must be in 1..65536"},
		{[]string{"-seqlen", "1048576", "-batch", "1"}, 1, "more than the"},
		{[]string{"-layers", "1024", "-dmodel", "32768"}, 1, "more than the"},
		{[]string{"-task", "charlm", "-data", tinyCorpus(t), "-seqlen", "100000000"}, 1, "seq_len 100000000, want 1 to"},
	} {
		checkFails(t, tc.code, tc.want, append([]string{"train", "-steps", "1", "-out", out}, tc.args...)...)
	}
	for _, tc := range []struct {
		section, field string
		value          any
		want           string
	}{
		{"model_config", "max_len", 1e9, "max_len 1000000000, want 1 to"},
		{"model_config", "dim", 1e6, "dim 1000000 and heads"},
		{"model_config", "dim", 32768, "more than the"},
		{"data_config", "batch", 0, "batch 0, want 1 to"},
	} {
		run := charRun(t)
		editMeta(t, run, tc.section, tc.field, tc.value)
		if tc.want == "more than the" {
			editMeta(t, run, "model_config", "layers", 1024) // beyond any machine's memory
		}
		for _, args := range readers(run) {
			switch args[0] {
			case "inspect": // lists what it can, then fails naming what is wrong
				code, stdout, stderr := runCLI(t, args...)
				if tc.want == "more than the" {
					if code != 0 {
						t.Errorf("%v: exit %d, %s", args, code, stderr)
					}
				} else if code != 1 || !strings.Contains(stdout, "tensors (") || !strings.Contains(stderr, "invalid configuration") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
					t.Errorf("%v: exit %d, stderr %q; want the listing, then one line naming the invalid configuration and exit 1", args, code, stderr)
				}
			case "export":
				if tc.want != "more than the" { // the weights fit; only a model would not
					checkFails(t, 1, tc.want, args...)
				}
			default:
				checkFails(t, 1, tc.want, args...)
			}
		}
	}
}

func TestCorpusTooShortFailsBeforeStepOne(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "small.txt")
	if err := os.WriteFile(corpus, []byte(strings.Repeat("abcdefghij", 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := charlmArgs(corpus, filepath.Join(dir, "run"))
	args = append(args, "-seqlen", "64")
	checkFails(t, 1, "too few for one window of seq_len 64", args...)
	if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
		t.Errorf("the refused run created its directory: %v", err)
	}
}

func TestDAESigmaNaNRefused(t *testing.T) {
	for v, want := range map[string]string{"NaN": "-sigma NaN: want a finite number", "Inf": "-sigma +Inf: want a finite number", "-1": "want a finite value >= 0"} {
		checkFails(t, 2, want, "train", "-model", "dae", "-sigma", v, "-steps", "1", "-out", filepath.Join(t.TempDir(), "run"))
	}
}

func TestResumeWithFewerStepsIsExplained(t *testing.T) {
	run := charRun(t)
	checkFails(t, 1, "resumed at step 10, beyond Steps 5", "train", "-resume", run, "-steps", "5")
}

func TestMethodsEdgeCases(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	train := write("t.csv", "x,y\n0,0\n1,1\n2,4\n3,9\n")
	// A tiny bandwidth predicts each training point exactly...
	code, stdout, stderr := runCLI(t, "nw", "-in", train, "-bandwidth", "1e-170")
	if code != 0 || !strings.HasSuffix(stdout, "\n0,0\n1,1\n2,4\n3,9\n") {
		t.Errorf("nw -bandwidth 1e-170 at the training points: exit %d, %q %s", code, stdout, stderr)
	}
	// ...and a query it cannot reach is an error, not a zero.
	checkFails(t, 1, "no training point is within the kernel's reach", "nw", "-in", train, "-query", write("q.csv", "x\n0.5\n"), "-bandwidth", "1e-170")
	checkFails(t, 1, "cannot estimate a bandwidth from 5 points", "meanshift", "-in", write("m.csv", "1,1\n1.1,1\n5,5\n5.1,5\n9,9\n"))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		checkFails(t, 1, "not a regular file", "meanshift", "-in", fifo)
	}
}

// writeMNIST writes a tiny MNIST in IDX form: train and test images of random pixels.
func writeMNIST(t *testing.T, dir string, nTrain, nTest int) {
	t.Helper()
	idx := func(name string, magic uint32, dims ...uint32) {
		var b []byte
		b = binary.BigEndian.AppendUint32(b, magic)
		size := 1
		for _, d := range dims {
			b = binary.BigEndian.AppendUint32(b, d)
			size *= int(d)
		}
		for i := range size {
			b = append(b, byte(i*37%251)%10)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx("train-images-idx3-ubyte", 0x803, uint32(nTrain), 28, 28)
	idx("train-labels-idx1-ubyte", 0x801, uint32(nTrain))
	idx("t10k-images-idx3-ubyte", 0x803, uint32(nTest), 28, 28)
	idx("t10k-labels-idx1-ubyte", 0x801, uint32(nTest))
}

// TestDAEWithFewTestImages: a test set of fewer than 16 images still gets its picture
// grid and its evaluation.
func TestDAEWithFewTestImages(t *testing.T) {
	dir := t.TempDir()
	writeMNIST(t, dir, 32, 3)
	out := filepath.Join(dir, "run")
	code, stdout, stderr := runCLI(t, "train", "-model", "dae", "-mnist", dir, "-batch", "8", "-steps", "2", "-eval-every", "2", "-eval-n", "10", "-out", out)
	if code != 0 || !strings.Contains(stdout, "denoised.png") {
		t.Fatalf("dae on 3 test images: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "eval", "-ckpt", out); code != 0 {
		t.Errorf("eval: exit %d: %s", code, stderr)
	}
}

// TestCheckpointCorpusIsAnnouncedAndChecked: the corpus a checkpoint names is read with
// a notice saying so, and refused when it is not the text the run was trained on.
func TestCheckpointCorpusIsAnnouncedAndChecked(t *testing.T) {
	run := charRun(t)
	other := filepath.Join(t.TempDir(), "other.txt")
	if err := os.WriteFile(other, []byte(strings.Repeat("the lazy dog jumps over the quick brown fox. ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "eval", "-ckpt", run, "-n", "16")
	if code != 0 || !strings.Contains(stderr, "locus: reading the corpus ") {
		t.Errorf("eval: exit %d, no notice of the corpus read: %q", code, stderr)
	}
	editMeta(t, run, "data_config", "corpus", other)
	for _, args := range readers(run) {
		if args[0] == "export" || args[0] == "inspect" {
			continue // they read no data
		}
		checkFails(t, 1, "corpus "+other+" is not the text this run was trained on", args...)
	}
}
