package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/train"
)

// tinySweep are train flags of a model that trains 20 steps in well under a second.
var tinySweep = []string{"-task", "reverse", "-seqlen", "6", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "16", "-eval-every", "10", "-eval-n", "50", "-steps", "20"}

// sweepArgs is a sweep command line over tinySweep.
func sweepArgs(out string, args ...string) []string {
	return append(append([]string{"sweep", "-out", out}, args...), tinySweep...)
}

// helperSelf runs this test binary as locus (TestHelperProcess).
func helperSelf(args []string) (*exec.Cmd, error) {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "LOCUS_HELPER=run")
	return cmd, nil
}

// A sweep run by TestHelperProcess runs its cells so too.
func init() {
	if os.Getenv("LOCUS_HELPER") == "run" {
		selfCommand = helperSelf
	}
}

// asLocus makes the cells' processes run this test binary as locus.
func asLocus(t *testing.T) {
	saved := selfCommand
	selfCommand = helperSelf
	t.Cleanup(func() { selfCommand = saved })
}

func TestSweepGridParsing(t *testing.T) {
	for _, tc := range []struct {
		in   string
		key  string
		want []string
	}{
		{"kernel=exponential,exponential*distance(0.5),gaussian*window(32)", "kernel", []string{"exponential", "exponential*distance(0.5)", "gaussian*window(32)"}},
		{" kernel = mixture(exponential, laplacian) , mixture(gaussian*window(4), exponential * relbias(2)) ", "kernel", []string{"mixture(exponential, laplacian)", "mixture(gaussian*window(4), exponential * relbias(2))"}},
		{"-lr=1e-3", "lr", []string{"1e-3"}},
		{"positions=sinusoidal,\trotary ,none", "positions", []string{"sinusoidal", "rotary", "none"}},
	} {
		ax, err := parseSweepAxis(tc.in)
		if err != nil || ax.Key != tc.key || !slices.Equal(ax.Values, tc.want) {
			t.Errorf("parseSweepAxis(%q) = %q %q, %v; want %q %q", tc.in, ax.Key, ax.Values, err, tc.key, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"kernel", `"kernel": want KEY=V1,V2,...`},
		{"=a,b", `"=a,b": want KEY=V1,V2,...`},
		{"kernel=", "kernel: no values"},
		{"kernel= ", "kernel: no values"},
		{"lr=1e-3,,3e-3", "lr: empty value at column 9"},
		{"lr=1e-3,", "lr: empty value at column 9"},
		{"kernel=mixture(exponential, laplacian", `kernel: unbalanced ( in "mixture(exponential, laplacian"`},
		{"kernel=exponential),gaussian", `kernel: unbalanced ) at column 19`},
		{"lr=0.1, 0.1", `lr: value "0.1" given twice`},
	} {
		if _, err := parseSweepAxis(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseSweepAxis(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestSweepRefusesBadGrids: every refusal is one line naming the key (and the value),
// exit 2, before anything is written.
func TestSweepRefusesBadGrids(t *testing.T) {
	asLocus(t) // a grid wrongly accepted runs its cells rather than fail to start them
	base := t.TempDir()
	for i, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-grid", "kernal=exponential,gaussian"}, `-grid "kernal": unknown key: not a flag of locus train`},
		{[]string{"-grid", "kernel=exponential,gaussian*window(9)"}, "-grid cell kernel=gaussian*window(9),seed=0: transformer: kernel gaussian * window(9): window(9) is wider than the sequence (6 positions)"},
		{[]string{"-grid", "kernel=exponential,bogus(1)"}, `-grid cell kernel=bogus(1),seed=0: invalid value "bogus(1)" for flag -kernel`},
		{[]string{"-grid", "lr=1e-3,fast"}, `-grid cell lr=fast,seed=0: invalid value "fast" for flag -lr`},
		// each value is valid with some other, one combination is not
		{[]string{"-grid", "optim=sgd,adam", "-grid", "momentum=0.5,0.9"}, "-grid cell optim=adam,momentum=0.5,seed=0: -momentum is for sgd, nesterov and rmsprop (got -optim adam"},
		{[]string{"-grid", "lr=1e-3", "-grid", "lr=3e-3"}, "-grid lr is given twice"},
		{[]string{"-grid", "steps=10,20"}, "-grid steps: -steps is also given as a flag"},
		{[]string{"-grid", "lr="}, "invalid value \"lr=\" for flag -grid: lr: no values"},
		{[]string{"-grid", "seed=1,2", "-seeds", "3"}, "-grid seed=... and -seeds do not go together"},
		{[]string{"-grid", "seed=1,x"}, "-grid seed=x: want an unsigned integer"},
		{[]string{"-grid", "out=a,b"}, "-grid out: not a train flag that a sweep can vary"},
		{[]string{"-grid", "resume=a"}, "-grid resume: not a train flag that a sweep can vary"},
		{[]string{"-resume", "x"}, "flag provided but not defined: -resume"},
		{[]string{"-grid", "lr=1e-3", "-eval", "bogus=1,2"}, "-eval bogus=1: flag provided but not defined: -bogus"},
		{[]string{"-grid", "lr=1e-3", "-eval", "n=100,0"}, "-eval n=0: -n must be in 1.."},
		{[]string{"-grid", "lr=1e-3", "-eval", "ckpt=a"}, "-eval ckpt: the sweep sets eval's -ckpt itself"},
		{[]string{"-grid", "lr=1e-3", "-eval-flag", "bogus=1"}, "-eval-flag: flag provided but not defined: -bogus"},
		{[]string{"-grid", "lr=1e-3", "-eval-flag", "n=0"}, "-eval-flag: -n must be in 1.."},
		{[]string{"-grid", "lr=1e-3", "-eval-flag", "json=false"}, "-eval-flag json=false: the sweep sets eval's -json itself"},
		{[]string{"-grid", "lr=1e-3", "-eval", "seqlen=6,12", "-eval-flag", "seqlen=6"}, "-eval-flag seqlen=6: -eval varies -seqlen"},
		{[]string{"-grid", "lr=1e-3", "-eval-flag", "-n=5"}, `invalid value "-n=5" for flag -eval-flag: "-n=5": want KEY=VALUE`},
		{[]string{"-grid", "lr=1e-3", "-eval-flag", "n"}, `invalid value "n" for flag -eval-flag: "n": want KEY=VALUE`},
		{[]string{"-grid", "lr=1e-3", "-plot-by", "kernel"}, `-plot-by "kernel": not a -grid key (lr)`},
		{[]string{"-grid", "lr=1e-3,3e-3", "-plot-x", "lr", "-plot-by", "lr"}, `-plot-by "lr": it is the plot's x axis (-plot-x)`},
		{[]string{"-grid", "lr=1e-3", "-plot-x", "kernel"}, `-plot-x "kernel": not a -grid key or the -eval key (lr)`},
		{[]string{"-grid", "lr=1e-3", "-seeds", "2", "-plot-x", "seed"}, `-plot-x "seed": not a -grid key or the -eval key (lr)`},
		{[]string{"-seeds", "0"}, "-seeds must be in 1.."},
		{[]string{"-parallel", "0"}, "-parallel must be in 1.."},
	} {
		out := filepath.Join(base, strconv.Itoa(i))
		code, stdout, stderr := runCLI(t, sweepArgs(out, tc.args...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Lstat(out); !os.IsNotExist(err) {
			t.Errorf("%q: %s was written", tc.args, out)
		}
	}
	if code, _, stderr := runCLI(t, "sweep", "-grid", "lr=1e-3"); code != 2 || !strings.Contains(stderr, "missing -out DIR") {
		t.Errorf("no -out: exit %d, %q", code, stderr)
	}
	// A folder that is something else is not taken.
	other := filepath.Join(base, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if code, _, stderr := runCLI(t, sweepArgs(other, "-grid", "lr=1e-3")...); code != 2 || !strings.Contains(stderr, "is not empty and holds no sweep.json") {
		t.Errorf("a folder of other files: exit %d, %q", code, stderr)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 1 {
		t.Errorf("the other folder now holds %d entries", len(entries))
	}
}

func TestSweepCellNames(t *testing.T) {
	grid := []sweepAxis{{"kernel", []string{"exponential * distance(0.5)", "exponential*distance(0.5)", "gaussian"}}, {"data", []string{"a/b.txt"}}}
	cells := sweepCells(grid, []string{"0", "1"}, nil)
	var names []string
	for _, c := range cells {
		names = append(names, c.Dir)
	}
	// Equal after sanitising: both get a hash of their own settings; the others read as typed.
	h := func(s string) string { return strings.TrimPrefix(s[strings.LastIndex(s, "-"):], "-") }
	if names[4] != "kernel=gaussian,data=a_b.txt,seed=0" || names[5] != "kernel=gaussian,data=a_b.txt,seed=1" {
		t.Errorf("names %q", names)
	}
	if !strings.HasPrefix(names[0], "kernel=exponential*distance(0.5),data=a_b.txt,seed=0-") || !strings.HasPrefix(names[2], "kernel=exponential*distance(0.5),data=a_b.txt,seed=0-") || h(names[0]) == h(names[2]) {
		t.Errorf("colliding names %q, %q", names[0], names[2])
	}
	if again := sweepCells(grid, []string{"0", "1"}, nil); !slices.EqualFunc(again, cells, func(a, b sweepCell) bool { return a.Dir == b.Dir }) {
		t.Error("names differ between two runs")
	}
	long := sweepCells([]sweepAxis{{"kernel", []string{"mixture(" + strings.Repeat("exponential, ", 40) + "gaussian)"}}}, []string{"0"}, nil)
	if len(long[0].Dir) > maxCellNameBytes {
		t.Errorf("a %d-byte name", len(long[0].Dir))
	}
	if cells[0].Args[len(cells[0].Args)-1] != "-seed=0" || cells[0].Args[0] != "-kernel=exponential * distance(0.5)" {
		t.Errorf("args %q", cells[0].Args)
	}
}

// readCSV returns results.csv's rows as maps by column.
func readCSV(t *testing.T, path string) (head []string, rows []map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, k := range recs[0] {
			m[k] = r[i]
		}
		rows = append(rows, m)
	}
	return recs[0], rows
}

// finalVal is a run directory's val_ metrics at its last step, read from its own
// metrics log.
func finalVal(t *testing.T, dir string) (int, map[string]float64) {
	t.Helper()
	recs, err := train.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	m := map[string]float64{}
	for k, v := range last.Metrics {
		if strings.HasPrefix(k, train.ValPrefix) {
			m[k] = v
		}
	}
	return last.Step, m
}

// TestSweepRunsTheGrid: 2 kernels × 2 learning rates × 2 seeds, two cells at once: a run
// directory per cell holding that cell's settings, a CSV row per cell equal to the
// run's own final metrics, a table whose mean ± sd is that of the seeds' values, a plot
// with a line per kernel; rerun after a cell was cut short, only that cell trains.
func TestSweepRunsTheGrid(t *testing.T) {
	asLocus(t)
	out := filepath.Join(t.TempDir(), "sweep")
	args := sweepArgs(out, "-grid", "kernel=exponential, gaussian*window(4)", "-grid", "lr=1e-3,3e-3", "-seeds", "2", "-parallel", "2")
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "8 cells (4 configurations × 2 seeds), 2 at once") {
		t.Errorf("header: %s", stderr)
	}
	var m sweepManifest
	b, err := os.ReadFile(filepath.Join(out, sweepManifestFile))
	if err != nil || json.Unmarshal(b, &m) != nil || len(m.Cells) != 8 {
		t.Fatalf("manifest: %v\n%s", err, b)
	}
	_, rows := readCSV(t, filepath.Join(out, sweepCSVFile))
	if len(rows) != 8 {
		t.Fatalf("%d CSV rows, want 8", len(rows))
	}
	dirs := map[string]bool{}
	perConfig := map[string]map[string][]float64{} // kernel|lr -> metric -> per seed
	for i, c := range m.Cells {
		dir := filepath.Join(out, c.Dir)
		if dirs[dir] {
			t.Errorf("two cells in %s", dir)
		}
		dirs[dir] = true
		// The run in the directory is this cell's: its run file holds its kernel, lr and seed.
		rc, err := readRunConfig(filepath.Join(dir, runConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		kernel, lr, seed := c.Settings[0].Value, c.Settings[1].Value, c.Seed
		var mc struct {
			Kernel string `json:"kernel"`
		}
		var dc struct {
			Seed uint64 `json:"seed"`
		}
		var tc struct {
			LR float64 `json:"lr"`
		}
		json.Unmarshal(rc.ModelConfig, &mc)
		json.Unmarshal(rc.DataConfig, &dc)
		json.Unmarshal(rc.Train, &tc)
		wantLR, _ := strconv.ParseFloat(lr, 64)
		if strings.ReplaceAll(mc.Kernel, " ", "") != strings.ReplaceAll(kernel, " ", "") || strconv.FormatUint(dc.Seed, 10) != seed || tc.LR != wantLR {
			t.Errorf("%s holds kernel %q seed %d lr %g", c.Dir, mc.Kernel, dc.Seed, tc.LR)
		}
		// One run only: the log has steps 10 and 20 once each.
		recs, _ := train.ReadMetrics(dir)
		if len(recs) != 2 || recs[1].Step != 20 {
			t.Errorf("%s: %d records", c.Dir, len(recs))
		}
		step, val := finalVal(t, dir)
		row := rows[i]
		if row["kernel"] != kernel || row["lr"] != lr || row["seed"] != seed || row["dir"] != c.Dir || row["step"] != strconv.Itoa(step) {
			t.Errorf("row %d: %v, want cell %s", i, row, c.Dir)
		}
		key := kernel + "|" + lr
		if perConfig[key] == nil {
			perConfig[key] = map[string][]float64{}
		}
		for k, v := range val {
			got, err := strconv.ParseFloat(row[k], 64)
			if err != nil || got != v {
				t.Errorf("%s: CSV %s = %q, the run's own %v", c.Dir, k, row[k], v)
			}
			perConfig[key][k] = append(perConfig[key][k], v)
		}
	}
	// results.md: recompute mean ± sample sd from the runs' own metrics.
	md, err := os.ReadFile(filepath.Join(out, sweepTableFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(md) != stdout {
		t.Errorf("printed table differs from results.md:\n%s\n%s", stdout, md)
	}
	lines := strings.Split(strings.TrimSpace(string(md)), "\n")
	if len(lines) != 2+4 {
		t.Fatalf("table:\n%s", md)
	}
	head := splitRow(lines[0])
	if !slices.Equal(head[:3], []string{"kernel", "lr", "seeds"}) {
		t.Fatalf("table head %q", head)
	}
	for _, l := range lines[2:] {
		cells := splitRow(l)
		key := strings.Trim(cells[0], "`") + "|" + strings.Trim(cells[1], "`")
		want := perConfig[key]
		if want == nil || cells[2] != "2" {
			t.Errorf("table row %q", l)
			continue
		}
		for j, metric := range head[3:] {
			xs := want[metric]
			mean := (xs[0] + xs[1]) / 2
			sd := math.Sqrt((math.Pow(xs[0]-mean, 2) + math.Pow(xs[1]-mean, 2)) / 1)
			if w := fmt.Sprintf("%.4f ± %.4f", mean, sd); cells[3+j] != w {
				t.Errorf("%s %s: %q, want %q (from %v)", key, metric, cells[3+j], w, xs)
			}
		}
	}
	// The plot: val_loss against lr (the numeric key), a line per kernel, two points each.
	p, err := parseSweep(args[1:], &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	rowsNow := p.rows()
	x, metric, err := p.plotChoice(metricNames(rowsNow))
	if err != nil || x != "lr" || metric != "val_loss" {
		t.Fatalf("plot of %q against %q, %v", metric, x, err)
	}
	chart := sweepChart(p, p.groups(rowsNow), x, metric, sweepSetting{})
	if !slices.Equal(chart.Entries, []string{"kernel=exponential", "kernel=gaussian*window(4)"}) {
		t.Errorf("legend %q", chart.Entries)
	}
	for name, xy := range chart.Series {
		k := strings.TrimPrefix(name, "kernel=")
		if len(xy) != 2 || xy[0].X != 1e-3 || xy[1].X != 3e-3 {
			t.Errorf("%s: %v", name, xy)
			continue
		}
		for j, lr := range []string{"1e-3", "3e-3"} {
			xs := perConfig[k+"|"+lr]["val_loss"]
			if math.Abs(xy[j].Y-(xs[0]+xs[1])/2) > 1e-12 {
				t.Errorf("%s at lr %s: %g, want the mean of %v", name, lr, xy[j].Y, xs)
			}
		}
	}
	if png, err := os.ReadFile(filepath.Join(out, sweepPlotFile)); err != nil || len(png) < 1000 {
		t.Errorf("results.png: %v", err)
	}

	// A cell cut short (as a kill mid-training leaves it: its latest checkpoint at step
	// 10, no results): the rerun resumes it, and keeps every other cell.
	cut := m.Cells[5]
	cutDir := filepath.Join(out, cut.Dir)
	os.Remove(filepath.Join(cutDir, sweepCellFile))
	if err := os.WriteFile(filepath.Join(cutDir, train.LatestFile), []byte("step-000010\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mtimes := map[string]time.Time{}
	for _, c := range m.Cells {
		if fi, err := os.Stat(filepath.Join(out, c.Dir, sweepCellFile)); err == nil {
			mtimes[c.Dir] = fi.ModTime()
		}
	}
	code, _, stderr = runCLI(t, args...)
	if code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, stderr)
	}
	for _, c := range m.Cells {
		if c.Dir == cut.Dir {
			if !strings.Contains(stderr, c.Dir+": resuming from step 10\n") {
				t.Errorf("rerun: %s did not resume:\n%s", c.Dir, stderr)
			}
			continue
		}
		if !strings.Contains(stderr, c.Dir+": done before (step 20), kept\n") {
			t.Errorf("rerun: %s not kept:\n%s", c.Dir, stderr)
		}
		if fi, err := os.Stat(filepath.Join(out, c.Dir, sweepCellFile)); err != nil || !fi.ModTime().Equal(mtimes[c.Dir]) {
			t.Errorf("rerun: %s's results were rewritten", c.Dir)
		}
	}
	if strings.Count(stderr, "resuming") != 1 || strings.Count(stderr, "training") != 0 {
		t.Errorf("rerun trained more than the cut cell:\n%s", stderr)
	}
	log, _ := os.ReadFile(filepath.Join(out, sweepLogDir, cut.Dir+".log"))
	if !strings.Contains(string(log), "resuming "+cutDir+" at step 10 (to step 20)") {
		t.Errorf("the cut cell's log:\n%s", log)
	}
	if step, _ := finalVal(t, cutDir); step != 20 {
		t.Errorf("the cut cell ends at step %d", step)
	}

	// Another grid or other flags in the same directory: refused, nothing run.
	for _, other := range [][]string{
		sweepArgs(out, "-grid", "kernel=exponential", "-grid", "lr=1e-3,3e-3", "-seeds", "2"),
		append(sweepArgs(out, "-grid", "kernel=exponential, gaussian*window(4)", "-grid", "lr=1e-3,3e-3", "-seeds", "2"), "-wd", "0.1"),
		sweepArgs(out, "-grid", "kernel=exponential, gaussian*window(4)", "-grid", "lr=1e-3,3e-3", "-seeds", "3"),
	} {
		code, _, stderr := runCLI(t, other...)
		if code != 2 || !strings.Contains(stderr, "holds another sweep: its ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, %q", other, code, stderr)
		}
	}
	// A second sweep on the directory at once: refused by the directory's lock.
	release, err := train.LockDir(out)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, args...)
	release()
	if code != 1 || !strings.Contains(stderr, "is in use by another sweep") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a sweep in use: exit %d, %q", code, stderr)
	}
}

// splitRow returns the cells of a Markdown table row.
func splitRow(l string) []string {
	parts := strings.Split(strings.Trim(l, "| "), " | ")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// TestSweepEvalPoints: -eval runs locus eval per value; the CSV holds what eval prints
// for the cell's checkpoint, one row per eval point, and the plot's x is the eval key.
func TestSweepEvalPoints(t *testing.T) {
	asLocus(t)
	out := filepath.Join(t.TempDir(), "sweep")
	args := sweepArgs(out, "-grid", "kernel=exponential,laplacian", "-eval", "n=20,40,160")
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	head, rows := readCSV(t, filepath.Join(out, sweepCSVFile))
	if !slices.Equal(head, []string{"kernel", "seed", "n", "dir", "step", "val_loss", "val_seq_acc", "val_token_acc"}) || len(rows) != 6 {
		t.Fatalf("CSV head %q, %d rows", head, len(rows))
	}
	for _, row := range rows {
		code, stdout, stderr := runCLI(t, "eval", "-ckpt", filepath.Join(out, row["dir"]), "-json", "-n", row["n"])
		if code != 0 {
			t.Fatalf("eval: %s", stderr)
		}
		var met map[string]float64
		if err := json.Unmarshal([]byte(stdout), &met); err != nil {
			t.Fatal(err)
		}
		for k, v := range met {
			if got, _ := strconv.ParseFloat(row["val_"+k], 64); got != v {
				t.Errorf("%s at n=%s: CSV val_%s %q, eval prints %v", row["dir"], row["n"], k, row["val_"+k], v)
			}
		}
	}
	p, err := parseSweep(args[1:], &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	rs := p.rows()
	x, metric, _ := p.plotChoice(metricNames(rs))
	chart := sweepChart(p, p.groups(rs), x, metric, sweepSetting{})
	if x != "n" || len(chart.Entries) != 2 || len(chart.Series["kernel=laplacian"]) != 3 || chart.Series["kernel=laplacian"][2].X != 160 {
		t.Errorf("plot against %q: %q %v", x, chart.Entries, chart.Series)
	}
	if _, ok := chart.Plot.X.Scale.(plot.LogScale); !ok { // 20 … 160: a factor of 8
		t.Errorf("x scale %T, want a log scale", chart.Plot.X.Scale)
	}
	var labels []string
	for _, tk := range chart.Plot.X.Tick.Marker.Ticks(20, 160) {
		labels = append(labels, tk.Label)
	}
	if !slices.Equal(labels, []string{"20", "40", "160"}) {
		t.Errorf("x ticks %q, want the swept values", labels)
	}
	// A categorical x: the kernels at 0 and 1, a line per eval point.
	chart = sweepChart(p, p.groups(rs), "kernel", "val_token_acc", sweepSetting{})
	if !slices.Equal(chart.Entries, []string{"n=20", "n=40", "n=160"}) || len(chart.Series["n=40"]) != 2 || chart.Series["n=40"][1].X != 1 {
		t.Errorf("plot against kernel: %q %v", chart.Entries, chart.Series)
	}
	if _, _, err := p.plotChoice([]string{"val_loss"}); err != nil {
		t.Error(err)
	}
	p.metric = "val_bogus"
	if _, _, err := p.plotChoice(metricNames(rs)); err == nil || !strings.Contains(err.Error(), `-metric "val_bogus": the cells recorded val_loss, val_seq_acc, val_token_acc`) {
		t.Errorf("unknown metric: %v", err)
	}
}

// TestSweepStatePaths: the cell state is read without following links.
func TestSweepStatePaths(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	os.WriteFile(secret, []byte(`{"trained":true,"step":5,"done":true}`), 0o644)
	os.Symlink(secret, filepath.Join(dir, sweepCellFile))
	if st := readCellState(dir); st.Done {
		t.Error("a linked cell state was followed")
	}
	if err := writeCellState(dir, sweepCellState{}); err == nil {
		t.Error("a linked cell state was written through")
	}
	if b, _ := regularfile.ReadFile(secret, 1<<10); !strings.Contains(string(b), `"step":5`) {
		t.Errorf("secret now %s", b)
	}
}

// TestSweepCellFails: a cell that fails does not stop the others; the sweep names it,
// exits 1, and the results hold the cells that finished; a rerun retries it.
func TestSweepCellFails(t *testing.T) {
	asLocus(t)
	out := filepath.Join(t.TempDir(), "sweep")
	args := sweepArgs(out, "-grid", "lr=1e-3,3e-3")
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	// The second cell's folder now holds something else: train refuses it.
	bad := filepath.Join(out, "lr=3e-3,seed=0")
	os.RemoveAll(bad)
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "notes.txt"), []byte("mine"), 0o644)
	code, stdout, stderr := runCLI(t, args...)
	if code != 1 || !strings.Contains(stderr, "[2/2] lr=3e-3,seed=0: failed: locus train: exit 1: ") ||
		!strings.HasSuffix(stderr, "locus sweep: 1 of 2 cells failed (lr=3e-3,seed=0; the logs are in "+filepath.Join(out, sweepLogDir)+"); the results hold the others; run the same command again to retry\n") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if _, rows := readCSV(t, filepath.Join(out, sweepCSVFile)); len(rows) != 1 || rows[0]["lr"] != "1e-3" || !strings.Contains(stdout, "| `1e-3` | 1 |") || strings.Contains(stdout, "3e-3") {
		t.Errorf("results after a failed cell: %v\n%s", rows, stdout)
	}
	os.RemoveAll(bad)
	if code, _, stderr := runCLI(t, args...); code != 0 || !strings.Contains(stderr, "[2/2] lr=3e-3,seed=0: training") {
		t.Errorf("retry: exit %d\n%s", code, stderr)
	}
	if _, rows := readCSV(t, filepath.Join(out, sweepCSVFile)); len(rows) != 2 {
		t.Errorf("%d rows after the retry", len(rows))
	}
}

// TestSweepFromRunFile: -config FILE is the base of every cell, the grid overrides it;
// a cell cut short resumes without it (a resumed run keeps its configuration).
func TestSweepFromRunFile(t *testing.T) {
	asLocus(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI(t, append([]string{"train", "-out", run}, tinySweep...)...); code != 0 {
		t.Fatalf("train: %s", stderr)
	}
	out := filepath.Join(dir, "sweep")
	args := []string{"sweep", "-out", out, "-config", filepath.Join(run, runConfigFile), "-grid", "kernel=exponential,laplacian", "-steps", "30"}
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	for _, k := range []string{"exponential", "laplacian"} {
		cell := filepath.Join(out, "kernel="+k+",seed=0")
		ck, err := train.LoadCheckpoint(cell)
		if err != nil {
			t.Fatal(err)
		}
		var mc struct {
			Kernel string `json:"kernel"`
			Dim    int    `json:"dim"`
		}
		json.Unmarshal(ck.ModelConfig, &mc)
		if mc.Kernel != k || mc.Dim != 16 || ck.Step != 30 {
			t.Errorf("%s: kernel %q, dim %d, step %d; want %s, the run file's 16, 30", cell, mc.Kernel, mc.Dim, ck.Step, k)
		}
	}
	cut := filepath.Join(out, "kernel=laplacian,seed=0")
	os.Remove(filepath.Join(cut, sweepCellFile))
	os.WriteFile(filepath.Join(cut, train.LatestFile), []byte("step-000020\n"), 0o644)
	code, _, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(stderr, "kernel=laplacian,seed=0: resuming from step 20") {
		t.Fatalf("rerun: exit %d\n%s", code, stderr)
	}
	if ck, err := train.LoadCheckpoint(cut); err != nil || ck.Step != 30 {
		t.Errorf("the resumed cell: %v", err)
	}
}

// TestSweepSeriesStylesDiffer: the plot's lines stay apart past the palette's eight
// colours: no two of the first 24 share colour, dashes and glyph.
func TestSweepSeriesStylesDiffer(t *testing.T) {
	seen := map[string]int{}
	for i := range 24 {
		c, d, g := seriesStyle(i)
		key := fmt.Sprintf("%v %v %T", c, d, g)
		if j, ok := seen[key]; ok {
			t.Fatalf("lines %d and %d are drawn alike (%s)", j, i, key)
		}
		seen[key] = i
	}
}

// TestSweepNotDefinedPoints: an eval point at which a cell's model is not defined
// (learned positions past their table) is recorded as such, with the reason, in the cell,
// results.csv and results.md, and the sweep succeeds; -eval-flag reaches every eval.
func TestSweepNotDefinedPoints(t *testing.T) {
	asLocus(t)
	out := filepath.Join(t.TempDir(), "sweep")
	args := sweepArgs(out, "-grid", "positions=learned,sinusoidal", "-grid", "kernel=exponential,laplacian", "-eval", "seqlen=6,12", "-eval-flag", "n=30", "-plot-by", "positions")
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "seqlen=12 not defined") {
		t.Errorf("the progress line does not say the point is not defined:\n%s", stderr)
	}
	head, rows := readCSV(t, filepath.Join(out, sweepCSVFile))
	if len(rows) != 8 || head[len(head)-1] != sweepNotDefinedKey {
		t.Fatalf("CSV head %q, %d rows", head, len(rows))
	}
	reason := "transformer: learned positions: rows of 12 tokens, but the position table has 6 (max_len)"
	for _, r := range rows {
		undefined := r["positions"] == "learned" && r["seqlen"] == "12"
		if undefined != (r["val_loss"] == "") || undefined != strings.HasPrefix(r[sweepNotDefinedKey], reason) {
			t.Errorf("row %v: not defined %v, but val_loss %q and reason %q", r, undefined, r["val_loss"], r[sweepNotDefinedKey])
		}
	}
	table, _ := os.ReadFile(filepath.Join(out, sweepTableFile))
	if want := "— not defined (2 rows): " + reason; !strings.Contains(string(table), want) || !strings.Contains(stdout, want) {
		t.Errorf("results.md has no line %q:\n%s", want, table)
	}
	if !strings.Contains(string(table), "| `learned` | `laplacian` | 12 | 1 | — | — | — |") {
		t.Errorf("results.md has no empty row for learned at 12:\n%s", table)
	}
	logs, _ := filepath.Glob(filepath.Join(out, sweepLogDir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if n := strings.Count(string(b), "locus eval -ckpt="); n != 2 || strings.Count(string(b), "-json -n=30 -seqlen=") != 2 {
			t.Errorf("%s: %d evals, not each with -n=30:\n%s", l, n, b)
		}
	}
	// -plot-by: a plot per positions value, its lines the kernels, learned's at seqlen 6 only.
	p, err := parseSweep(args[1:], &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	rs := p.rows()
	var learned []*sweepGroup
	for _, g := range p.groups(rs) {
		if g.settings[0].Value == "learned" {
			learned = append(learned, g)
		}
	}
	chart := sweepChart(p, learned, "seqlen", "val_loss", sweepSetting{Key: "positions", Value: "learned"})
	if !slices.Equal(chart.Entries, []string{"kernel=exponential", "kernel=laplacian"}) || len(chart.Series["kernel=laplacian"]) != 1 ||
		!strings.HasPrefix(chart.Plot.Title.Text, "positions=learned: val_loss against seqlen") {
		t.Errorf("-plot-by positions: title %q, lines %q %v", chart.Plot.Title.Text, chart.Entries, chart.Series)
	}
	for _, v := range []string{"learned", "sinusoidal"} {
		if _, err := os.Stat(filepath.Join(out, "results-positions="+v+".png")); err != nil {
			t.Errorf("-plot-by positions: %v", err)
		}
	}
	// Another -eval-flag in the same directory is refused, naming it.
	other := slices.Clone(args)
	other[slices.Index(other, "n=30")] = "n=31"
	if code, _, stderr := runCLI(t, other...); code != 2 || !strings.Contains(stderr, `its -eval-flag are ["-n=30"], this command's ["-n=31"]`) {
		t.Errorf("another -eval-flag: exit %d, %q", code, stderr)
	}
	// -eval-flag alone at a length the model is not defined at: one point, not defined.
	alone := filepath.Join(t.TempDir(), "alone")
	code, _, stderr = runCLI(t, sweepArgs(alone, "-grid", "positions=learned", "-eval-flag", "seqlen=12")...)
	if code != 0 || !strings.Contains(stderr, "eval not defined") {
		t.Errorf("-eval-flag seqlen=12 alone: exit %d\n%s", code, stderr)
	}
	// eval itself: exit 3 and one line.
	code, _, stderr = runCLI(t, "eval", "-ckpt", filepath.Join(out, rows[0]["dir"]), "-seqlen", "12")
	if code != exitNotDefined || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, reason) {
		t.Errorf("eval -seqlen 12 of learned positions: exit %d, %q", code, stderr)
	}
}
