package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	iofs "io/fs"
	"maps"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/train"
)

func init() {
	register("sweep", "train a grid of settings × seeds, one run per cell, and tabulate and plot the results", runSweep)
}

// The files of a sweep directory, beside one run directory per cell.
const (
	sweepManifestFile = "sweep.json"      // the grid, the base flags, the cells
	sweepCellFile     = "sweep-cell.json" // in a cell's run directory: its step and results
	sweepLogDir       = "logs"            // <cell>.log: the cell's train and eval output
	sweepCSVFile      = "results.csv"     // one row per cell and eval point
	sweepTableFile    = "results.md"      // mean ± sd over seeds per configuration
	sweepPlotFile     = "results.png"     // -metric against -plot-x
)

// Bounds and names of the sweep command.
const (
	sweepFormat      = 1               // sweepManifest.Format
	maxSweepParallel = 256             // -parallel's bound
	maxSweepCells    = 100000          // the product of the grids and seeds
	maxCellNameBytes = 200             // longer cell names are cut and hashed
	maxNamedTicks    = 12              // at most this many swept values are results.png's ticks
	sweepSeedKey     = "seed"          // the seed column; -grid seed=... sets the seeds
	sweepValPrefix   = train.ValPrefix // eval's metrics are recorded as val_<name>
	sweepNoValue     = "—"             // a table cell without a value
	// sweepNotDefinedKey is results.csv's column of the reason an eval point is not
	// defined (only where one is).
	sweepNotDefinedKey = "not_defined"
	sweepSynopsis      = "-out DIR -grid 'KEY=V1,V2,...' [-grid ...] [-seeds N] [-parallel N] [-eval 'KEY=V1,V2,...'] [-eval-flag KEY=V ...] [-plot-x KEY] [-metric NAME] [train flags]"
	sweepFlagsNote     = "Every other flag is a flag of locus train (see locus train -h), given to every cell; -out names the sweep directory and -resume is not taken (run the same command again to resume)."
)

// sweepAxis is one -grid (or the -eval) key and its values, as typed.
type sweepAxis struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// sweepSetting is one key's value in a cell.
type sweepSetting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// sweepCell is one run of the sweep: a configuration (one value of each grid key) and a
// seed, trained in Dir (relative to the sweep directory).
type sweepCell struct {
	Dir      string         `json:"dir"`
	Settings []sweepSetting `json:"settings"`
	Seed     string         `json:"seed"`
	Args     []string       `json:"train_args"` // without -out, -resume and -threads
}

// sweepManifest is DIR/sweep.json. A sweep resumed in DIR must have the same Grid,
// Seeds, Base and Eval.
type sweepManifest struct {
	Format int         `json:"format"`
	Grid   []sweepAxis `json:"grid"`
	Seeds  []string    `json:"seeds"`
	Base   []string    `json:"base_flags"` // train flags given to every cell, as -name=value
	Eval   *sweepAxis  `json:"eval,omitempty"`
	// EvalFlags are eval flags given at every eval point (-eval-flag), as -name=value.
	EvalFlags []string    `json:"eval_flags,omitempty"`
	Cells     []sweepCell `json:"cells"`
}

// sweepPoint is a cell's metrics at one eval point (EvalValue "" without -eval). A point
// at which the cell's model or task is not defined (eval exits exitNotDefined: learned
// positions past their table, addition at a length that is not 3·digits+3) has no
// metrics and says why in NotDefined.
type sweepPoint struct {
	EvalValue  string       `json:"eval_value,omitempty"`
	Metrics    train.Record `json:"metrics"` // Step: the checkpoint's
	NotDefined string       `json:"not_defined,omitempty"`
}

// sweepCellState is a cell's sweepCellFile: Trained once its train finished (at Step),
// Done once every eval point is recorded in Points.
type sweepCellState struct {
	Trained bool         `json:"trained"`
	Step    int          `json:"step"`
	Done    bool         `json:"done"`
	Points  []sweepPoint `json:"results"`
}

// gridFlag collects the repeated -grid flag.
type gridFlag []sweepAxis

func (g *gridFlag) String() string { return "" }

func (g *gridFlag) Set(s string) error {
	ax, err := parseSweepAxis(s)
	if err != nil {
		return err
	}
	*g = append(*g, ax)
	return nil
}

// parseSweepAxis parses 'KEY=V1,V2,...': the values are split at the commas outside
// parentheses (a kernel spec's mixture(a, b) is one value) and trimmed of space; an
// empty value, an empty list, unbalanced parentheses and a value given twice are
// errors naming the key.
func parseSweepAxis(s string) (sweepAxis, error) {
	key, list, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return sweepAxis{}, fmt.Errorf("%s: want KEY=V1,V2,... (a train flag's name, then its values)", quote.Text(s))
	}
	key = strings.TrimPrefix(key, "-")
	var values []string
	depth, start := 0, 0
	cut := func(end int) error {
		v := strings.TrimSpace(list[start:end])
		if v == "" {
			return fmt.Errorf("%s: empty value at column %d (values are separated by commas)", key, len(key)+2+start)
		}
		if slices.Contains(values, v) {
			return fmt.Errorf("%s: value %s given twice", key, quote.Text(v))
		}
		values = append(values, v)
		return nil
	}
	if strings.TrimSpace(list) == "" {
		return sweepAxis{}, fmt.Errorf("%s: no values (want %s=V1,V2,...)", key, key)
	}
	for i, r := range list {
		switch r {
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return sweepAxis{}, fmt.Errorf("%s: unbalanced ) at column %d of %s", key, len(key)+2+i, quote.Text(list))
			}
		case ',':
			if depth == 0 {
				if err := cut(i); err != nil {
					return sweepAxis{}, err
				}
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return sweepAxis{}, fmt.Errorf("%s: unbalanced ( in %s", key, quote.Text(list))
	}
	if err := cut(len(list)); err != nil {
		return sweepAxis{}, err
	}
	return sweepAxis{Key: key, Values: values}, nil
}

// sweepPlan is a parsed and checked sweep command.
type sweepPlan struct {
	dir         string
	m           sweepManifest
	parallel    int
	threads     string // -threads of every cell ("" when a grid or base flag sets it)
	plotX       string
	plotBy      string // -plot-by: a results-KEY=V.png per value of this grid key
	metric      string
	userThreads []string // a -threads given on the command line, passed to every cell
}

// runSweep is locus sweep. Its cells run as processes of their own, not as Main calls
// in this one: -threads sets GOMAXPROCS and train's Ctrl-C handling takes the signals,
// both for the whole process, and a cell that crashes or is killed takes only itself
// down.
func runSweep(args []string, stdout, stderr io.Writer) error {
	p, err := parseSweep(args, stderr)
	if err != nil {
		return err
	}
	return p.run(stdout, stderr)
}

// parseSweep parses the command line and checks the sweep before anything is written:
// each configuration's train command line as train checks it (checkTrainArgs), and
// each eval value as eval checks its flags.
func parseSweep(args []string, stderr io.Writer) (*sweepPlan, error) {
	fs := newFlagSet("sweep", sweepSynopsis, stderr)
	var grid gridFlag
	var evalAxis *sweepAxis
	p := &sweepPlan{}
	fs.Var(&grid, "grid", "KEY=V1,V2,...: a train flag and its values, split at top-level commas (kernel specs keep theirs); repeat for more keys: the cells are the product of the grids and the seeds")
	seeds := fs.Int("seeds", 1, "seeds per configuration: train -seed 0..N-1 (or give -grid seed=..., or one -seed S)")
	fs.IntVar(&p.parallel, "parallel", 1, fmt.Sprintf("cells trained at once, each a separate process with GOMAXPROCS/N threads (train's -threads), at most %d", maxSweepParallel))
	fs.Func("eval", "KEY=V1,V2,...: after training, run locus eval once per value of this eval flag (e.g. seqlen=64,128,256) and record its metrics as val_<name> (default: the run's final val metrics)", func(s string) error {
		if evalAxis != nil {
			return errors.New("given twice: one eval key per sweep")
		}
		ax, err := parseSweepAxis(s)
		if err != nil {
			return err
		}
		evalAxis = &ax
		return nil
	})
	var evalFlags []string
	fs.Func("eval-flag", "KEY=VALUE: an eval flag given at every eval point, e.g. n=200 (repeat for more; with it and no -eval, each cell is evaluated once with these flags)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) == "" || strings.HasPrefix(k, "-") {
			return fmt.Errorf("%s: want KEY=VALUE, an eval flag without its dash (e.g. n=200)", quote.Text(s))
		}
		evalFlags = append(evalFlags, "-"+k+"="+v)
		return nil
	})
	fs.StringVar(&p.plotBy, "plot-by", "", "also draw a plot per value of this -grid key, results-KEY=VALUE.png, with the lines of the cells that have it (for grids with too many lines for one plot)")
	fs.StringVar(&p.plotX, "plot-x", "", "the x axis of results.png: a -grid key or the -eval key (default: the -eval key, else the last numeric -grid key, else the first)")
	fs.StringVar(&p.metric, "metric", "", "the metric of results.png (default: val_loss, else the first recorded)")
	fs.StringVar(&p.dir, "out", "", "the sweep directory: new, empty, or a sweep of the same command to resume (required)")
	own := map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) { own[fl.Name] = true })
	// The train flags, bound to a train command line of their own.
	tfs := flag.NewFlagSet("train", flag.ContinueOnError)
	defineTrainFlags(tfs, &trainFlags{ModelFlags: ModelFlags{set: map[string]bool{}}})
	tfs.VisitAll(func(fl *flag.Flag) {
		if !own[fl.Name] && fl.Name != "resume" {
			fs.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
	fs.Usage = func() { sweepUsage(stderr, own, fs) }
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if p.dir == "" {
		return nil, usageErrorf("missing -out DIR (the sweep directory)")
	}
	if p.parallel < 1 || p.parallel > maxSweepParallel {
		return nil, usageErrorf("-parallel must be in 1..%d, got %d", maxSweepParallel, p.parallel)
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	// The base flags: every train flag given, in the flag package's order.
	var base []string
	baseSeed := ""
	fs.Visit(func(fl *flag.Flag) {
		switch {
		case own[fl.Name]:
		case fl.Name == sweepSeedKey:
			baseSeed = fl.Value.String()
		case fl.Name == "threads":
			p.userThreads = []string{"-threads=" + fl.Value.String()}
		default:
			base = append(base, "-"+fl.Name+"="+fl.Value.String())
		}
	})
	// The grid keys: train flags, each once, none also given as a flag.
	seen := map[string]bool{}
	var axes []sweepAxis
	var seedAxis *sweepAxis
	for _, ax := range grid {
		switch {
		case seen[ax.Key]:
			return nil, usageErrorf("-grid %s is given twice: one -grid per key, with all its values", ax.Key)
		case own[ax.Key] || ax.Key == "resume":
			return nil, usageErrorf("-grid %s: not a train flag that a sweep can vary", ax.Key)
		case tfs.Lookup(ax.Key) == nil:
			return nil, usageErrorf("-grid %s: unknown key: not a flag of locus train (see locus train -h)", quote.Text(ax.Key))
		case given[ax.Key]:
			return nil, usageErrorf("-grid %s: -%s is also given as a flag: give it once, in the grid or as a flag", ax.Key, ax.Key)
		}
		seen[ax.Key] = true
		if ax.Key == sweepSeedKey {
			seedAxis = &ax
			continue
		}
		axes = append(axes, ax)
	}
	switch {
	case seedAxis != nil && given["seeds"]:
		return nil, usageErrorf("-grid seed=... and -seeds do not go together: the grid's seeds are the seeds")
	case baseSeed != "" && given["seeds"]:
		return nil, usageErrorf("-seed and -seeds do not go together: -seeds N trains seeds 0..N-1")
	case *seeds < 1 || *seeds > maxSweepCells:
		return nil, usageErrorf("-seeds must be in 1..%d, got %d", maxSweepCells, *seeds)
	}
	var seedList []string
	switch {
	case seedAxis != nil:
		seedList = seedAxis.Values
	case baseSeed != "":
		seedList = []string{baseSeed}
	default:
		for s := range *seeds {
			seedList = append(seedList, strconv.Itoa(s))
		}
	}
	n := len(seedList)
	for _, ax := range axes {
		if n *= len(ax.Values); n > maxSweepCells {
			return nil, usageErrorf("the grid has more than %d cells", maxSweepCells)
		}
	}
	p.m = sweepManifest{Format: sweepFormat, Grid: axes, Seeds: seedList, Base: base, Eval: evalAxis, EvalFlags: evalFlags}
	if p.m.Grid == nil {
		p.m.Grid = []sweepAxis{}
	}
	if p.m.Base == nil {
		p.m.Base = []string{}
	}
	switch {
	case given["threads"] || seen["threads"]:
	default:
		p.threads = strconv.Itoa(max(1, runtime.GOMAXPROCS(0)/p.parallel))
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

// sweepUsage prints the sweep's own flags, then a note on the train flags.
func sweepUsage(w io.Writer, own map[string]bool, fs *flag.FlagSet) {
	show := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.VisitAll(func(fl *flag.Flag) {
		if own[fl.Name] {
			show.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
	fmt.Fprintf(w, "Usage: locus sweep %s\n\n", sweepSynopsis)
	fmt.Fprint(w, `Trains one run per cell (a value of each -grid key × a seed) in DIR/<cell>, e.g.
DIR/kernel=exponential*distance(0.5),positions=rotary,seed=1, each as its own process
(locus train, then locus eval per -eval value); records the grid and the cells in
DIR/sweep.json; writes DIR/results.csv (a row per cell and eval point), DIR/results.md
(mean ± sample standard deviation over the seeds) and DIR/results.png (-metric against
-plot-x, a line per configuration, error bars ±1 sd), and prints the table. Every cell
is checked before anything runs. Run the same command again to resume: finished cells
are kept, an interrupted one resumes from its checkpoint; another grid or other flags
in the same DIR are refused. Ctrl-C stops the running cells at a checkpoint.

Flags:
`)
	show.SetOutput(w)
	show.PrintDefaults()
	fmt.Fprintf(w, "\n%s\n", sweepFlagsNote)
}

// check checks -plot-x, each eval value and each seed, then builds the cells and checks
// each configuration (whole: a value may be valid only with another key's, -momentum
// with -optim sgd), writing nothing.
func (p *sweepPlan) check() error {
	for _, f := range p.m.EvalFlags {
		k, _, _ := strings.Cut(strings.TrimPrefix(f, "-"), "=")
		switch {
		case k == "ckpt" || k == "json" || k == "h" || k == "help":
			return usageErrorf("-eval-flag %s: the sweep sets eval's -%s itself", strings.TrimPrefix(f, "-"), k)
		case p.m.Eval != nil && p.m.Eval.Key == k:
			return usageErrorf("-eval-flag %s: -eval varies -%s", strings.TrimPrefix(f, "-"), k)
		}
	}
	if len(p.m.EvalFlags) > 0 {
		if err := runEval(append(slices.Clone(p.m.EvalFlags), "-json"), io.Discard, io.Discard); !errors.Is(err, errMissingCkpt) {
			return usageErrorf("-eval-flag: %s", usageText(err))
		}
	}
	if ax := p.m.Eval; ax != nil {
		switch ax.Key {
		case "ckpt", "json", "h", "help":
			return usageErrorf("-eval %s: the sweep sets eval's -%s itself; vary another eval flag", ax.Key, ax.Key)
		}
		for _, v := range ax.Values {
			err := runEval(append(slices.Clone(p.m.EvalFlags), "-"+ax.Key+"="+v, "-json"), io.Discard, io.Discard)
			if !errors.Is(err, errMissingCkpt) {
				return usageErrorf("-eval %s=%s: %s", ax.Key, v, usageText(err))
			}
		}
	}
	if p.plotBy != "" && !slices.ContainsFunc(p.m.Grid, func(a sweepAxis) bool { return a.Key == p.plotBy }) {
		return usageErrorf("-plot-by %s: not a -grid key (%s)", quote.Text(p.plotBy), strings.Join(p.gridKeys(), ", "))
	}
	if p.plotBy != "" && p.plotBy == p.plotX {
		return usageErrorf("-plot-by %s: it is the plot's x axis (-plot-x)", quote.Text(p.plotBy))
	}
	if p.plotX != "" && !slices.ContainsFunc(p.m.Grid, func(a sweepAxis) bool { return a.Key == p.plotX }) && (p.m.Eval == nil || p.m.Eval.Key != p.plotX) {
		return usageErrorf("-plot-x %s: not a -grid key or the -eval key (%s)", quote.Text(p.plotX), strings.Join(p.axisKeys(), ", "))
	}
	for _, s := range p.m.Seeds {
		if _, err := strconv.ParseUint(s, 0, 64); err != nil {
			return usageErrorf("-grid seed=%s: want an unsigned integer", s)
		}
	}
	p.m.Cells = sweepCells(p.m.Grid, p.m.Seeds, p.m.Base)
	// A seed cannot make a configuration invalid: each configuration is checked with
	// its first seed.
	checked := map[string]bool{}
	for _, c := range p.m.Cells {
		key := configKey(c.Settings)
		if checked[key] {
			continue
		}
		checked[key] = true
		if err := checkTrainArgs(c.Args); err != nil {
			return usageErrorf("-grid cell %s: %s", cellLabel(c.Settings, c.Seed), usageText(err))
		}
	}
	return nil
}

// usageText is an error's text without the usage marker.
func usageText(err error) string {
	if err == nil {
		return "no error"
	}
	return strings.TrimPrefix(err.Error(), "usage: ")
}

// axisKeys are the keys -plot-x may name.
// gridKeys returns the -grid keys.
func (p *sweepPlan) gridKeys() []string {
	var keys []string
	for _, a := range p.m.Grid {
		keys = append(keys, a.Key)
	}
	return keys
}

func (p *sweepPlan) axisKeys() []string {
	keys := p.gridKeys()
	if p.m.Eval != nil {
		keys = append(keys, p.m.Eval.Key)
	}
	return keys
}

// sweepCells returns the product of the grid and the seeds, the first key varying
// slowest and the seed fastest, each with a directory name unique in the sweep.
func sweepCells(grid []sweepAxis, seeds []string, base []string) []sweepCell {
	combos := [][]sweepSetting{{}}
	for _, ax := range grid {
		var next [][]sweepSetting
		for _, c := range combos {
			for _, v := range ax.Values {
				next = append(next, append(slices.Clone(c), sweepSetting{ax.Key, v}))
			}
		}
		combos = next
	}
	var cells []sweepCell
	for _, c := range combos {
		for _, s := range seeds {
			args := slices.Clone(base)
			for _, kv := range c {
				args = append(args, "-"+kv.Key+"="+kv.Value)
			}
			args = append(args, "-seed="+s)
			cells = append(cells, sweepCell{Settings: c, Seed: s, Args: args})
		}
	}
	// Names: the cell's settings, made safe for the file system; names that the
	// sanitising makes equal, or that are too long, get a hash of the settings.
	names := make([]string, len(cells))
	count := map[string]int{}
	for i, c := range cells {
		names[i] = sanitizeCellName(cellLabel(c.Settings, c.Seed))
		count[names[i]]++
	}
	for i, c := range cells {
		raw := cellLabel(c.Settings, c.Seed)
		if count[names[i]] > 1 || len(names[i]) > maxCellNameBytes {
			sum := sha256.Sum256([]byte(raw))
			cut := names[i][:min(len(names[i]), maxCellNameBytes-9)]
			names[i] = cut + "-" + hex.EncodeToString(sum[:4])
		}
		cells[i].Dir = names[i]
	}
	return cells
}

// cellLabel is a cell's name before sanitising: key=value,...,seed=S.
func cellLabel(settings []sweepSetting, seed string) string {
	parts := make([]string, 0, len(settings)+1)
	for _, kv := range settings {
		parts = append(parts, kv.Key+"="+kv.Value)
	}
	return strings.Join(append(parts, sweepSeedKey+"="+seed), ",")
}

// configKey identifies a cell's configuration (its settings without the seed).
func configKey(settings []sweepSetting) string {
	b, _ := json.Marshal(settings)
	return string(b)
}

// sanitizeCellName keeps letters, digits and . _ = , ( ) * + - of a cell's label, drops
// space, and writes any other byte as _.
func sanitizeCellName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ' || r == '\t':
		case r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._=,()*+-", r)):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// run takes the sweep directory, runs the cells that are not done and writes the
// results.
func (p *sweepPlan) run(stdout, stderr io.Writer) error {
	release, err := p.open()
	if err != nil {
		return err
	}
	defer release()
	ctx, stop := interruptible()
	defer stop()
	// A closed terminal (SIGHUP) stops the cells as Ctrl-C does: they run in process
	// groups of their own, which the hangup does not reach.
	ctx, stopHup := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stopHup()
	cells := p.m.Cells
	fmt.Fprintf(stderr, "locus sweep: %d cells (%d configurations × %d seeds), %d at once%s -> %s\n",
		len(cells), len(cells)/len(p.m.Seeds), len(p.m.Seeds), p.parallel, p.threadsNote(), p.dir)
	var mu sync.Mutex
	failed := map[int]error{}
	interrupted := 0
	todo := make(chan int)
	var wg sync.WaitGroup
	for range p.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				err := p.runCell(ctx, i, stderr, &mu)
				mu.Lock()
				switch {
				case err == nil:
				case errors.Is(err, errInterrupted):
					interrupted++
				default:
					failed[i] = err
					fmt.Fprintf(stderr, "[%d/%d] %s: failed: %s\n", i+1, len(cells), cells[i].Dir, errorText(err))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range cells {
		if ctx.Err() != nil {
			break
		}
		select {
		case todo <- i:
		case <-ctx.Done():
		}
	}
	close(todo)
	wg.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s stopped at a checkpoint; run the same command again to resume", errInterrupted, plural(interrupted, "running cell"))
	}
	if err := p.writeResults(stdout, stderr); err != nil {
		return err
	}
	if len(failed) > 0 {
		var names []string
		for _, i := range slices.Sorted(maps.Keys(failed)) {
			names = append(names, cells[i].Dir)
		}
		return fmt.Errorf("%d of %s failed (%s; the logs are in %s); the results hold the others; run the same command again to retry",
			len(failed), plural(len(cells), "cell"), strings.Join(names, ", "), filepath.Join(p.dir, sweepLogDir))
	}
	return nil
}

// plural is "1 cell", "2 cells".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func (p *sweepPlan) threadsNote() string {
	if p.threads == "" {
		return ""
	}
	return ", -threads " + p.threads + " each"
}

// open creates or reopens the sweep directory, takes its lock and checks or writes its
// manifest; release gives the lock back.
func (p *sweepPlan) open() (release func(), err error) {
	if err := regularfile.CheckDirTarget(p.dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p.dir)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		isSweep := false
		others := 0
		for _, e := range entries {
			switch {
			case e.Name() == sweepManifestFile:
				isSweep = true
			case e.Name() != train.LockFile:
				others++
			}
		}
		if !isSweep && others > 0 {
			return nil, usageErrorf("%s is not empty and holds no %s: give a new or empty folder, or a sweep to resume", p.dir, sweepManifestFile)
		}
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	release, err = train.LockDir(p.dir)
	if err != nil {
		if errors.Is(err, train.ErrRunInUse) {
			return nil, fmt.Errorf("sweep directory %s is in use by another sweep (%s)", p.dir, strings.TrimPrefix(err.Error(), "train: "))
		}
		return nil, err
	}
	path := filepath.Join(p.dir, sweepManifestFile)
	b, err := regularfile.ReadFileNoFollow(path, maxRunFileBytes)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		out, err := json.MarshalIndent(p.m, "", "  ")
		if err == nil {
			err = regularfile.WriteFile(path, func(w io.Writer) error { _, err := w.Write(append(out, '\n')); return err })
		}
		if err != nil {
			release()
			return nil, err
		}
	case err != nil:
		release()
		return nil, err
	default:
		var had sweepManifest
		if err := json.Unmarshal(b, &had); err != nil {
			release()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := sameSweep(&had, &p.m); err != nil {
			release()
			return nil, usageErrorf("%s holds another sweep: %v; give a new -out, or the same command to resume it", p.dir, err)
		}
	}
	// The logs come after the manifest: a folder holding anything but a LOCK is a sweep.
	logs := filepath.Join(p.dir, sweepLogDir)
	if err := regularfile.CheckDirTarget(logs); err != nil {
		release()
		return nil, err
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// sameSweep returns nil if the manifest had is the sweep now, and otherwise names the
// first difference.
func sameSweep(had, now *sweepManifest) error {
	show := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	switch {
	case had.Format != now.Format:
		return fmt.Errorf("format %d, this Locus writes %d", had.Format, now.Format)
	case !reflect.DeepEqual(had.Grid, now.Grid):
		return fmt.Errorf("its grid is %s, this command's %s", show(had.Grid), show(now.Grid))
	case !slices.Equal(had.Seeds, now.Seeds):
		return fmt.Errorf("its seeds are %s, this command's %s", show(had.Seeds), show(now.Seeds))
	case !slices.Equal(had.Base, now.Base):
		return fmt.Errorf("its train flags are %s, this command's %s", show(had.Base), show(now.Base))
	case !reflect.DeepEqual(had.Eval, now.Eval):
		return fmt.Errorf("its -eval is %s, this command's %s", show(had.Eval), show(now.Eval))
	case !slices.Equal(had.EvalFlags, now.EvalFlags):
		return fmt.Errorf("its -eval-flag are %s, this command's %s", show(had.EvalFlags), show(now.EvalFlags))
	}
	return nil
}

// readCellState reads a cell's sweepCellFile; a missing or unreadable one is a cell
// not started.
func readCellState(dir string) sweepCellState {
	var st sweepCellState
	b, err := regularfile.ReadFileNoFollow(filepath.Join(dir, sweepCellFile), maxRunFileBytes)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return sweepCellState{}
	}
	return st
}

func writeCellState(dir string, st sweepCellState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return regularfile.WriteFile(filepath.Join(dir, sweepCellFile), func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err })
}

// checkpointStep returns the step of the run directory's latest checkpoint, -1 if it
// has none.
func checkpointStep(dir string) int {
	if _, err := os.Lstat(filepath.Join(dir, train.LatestFile)); err != nil {
		return -1
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		return -1
	}
	return ck.Step
}

// runCell brings cell i to done: trains it (new, or resumed from its checkpoint) unless
// its train finished at its checkpoint's step, then records its eval points.
func (p *sweepPlan) runCell(ctx context.Context, i int, stderr io.Writer, mu *sync.Mutex) error {
	c := p.m.Cells[i]
	dir := filepath.Join(p.dir, c.Dir)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "[%d/%d] %s: %s\n", i+1, len(p.m.Cells), c.Dir, fmt.Sprintf(format, args...))
	}
	st := readCellState(dir)
	step := checkpointStep(dir)
	if st.Done && st.Trained && step == st.Step {
		say("done before (step %d), kept", step)
		return nil
	}
	logPath := filepath.Join(p.dir, sweepLogDir, c.Dir+".log")
	log, err := regularfile.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	t0 := time.Now()
	if !st.Trained || step != st.Step {
		args := []string{"train"}
		for _, a := range c.Args {
			if !strings.HasPrefix(a, "-config=") || step < 0 { // a resumed run keeps its configuration
				args = append(args, a)
			}
		}
		if p.threads != "" {
			args = append(args, "-threads="+p.threads)
		}
		args = append(args, p.userThreads...)
		if step >= 0 {
			say("resuming from step %d", step)
			args = append(args, "-resume="+dir)
		} else {
			say("training")
			args = append(args, "-out="+dir)
		}
		if _, err := p.child(ctx, args, log, nil); err != nil {
			return err
		}
		if step = checkpointStep(dir); step < 0 {
			return fmt.Errorf("train left no checkpoint in %s", dir)
		}
		st = sweepCellState{Trained: true, Step: step}
		if err := writeCellState(dir, st); err != nil {
			return err
		}
	}
	points, err := p.evalCell(ctx, dir, step, log)
	if err != nil {
		return err
	}
	st.Points, st.Done = points, true
	if err := writeCellState(dir, st); err != nil {
		return err
	}
	var summary []string
	for _, pt := range points {
		if pt.NotDefined != "" {
			at := "eval"
			if p.m.Eval != nil {
				at = p.m.Eval.Key + "=" + pt.EvalValue
			}
			summary = append(summary, at+" not defined")
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(pt.Metrics.Metrics)) {
			if k == p.shownMetric(pt.Metrics.Metrics) {
				s := fmt.Sprintf("%s %.4f", k, pt.Metrics.Metrics[k])
				if pt.EvalValue != "" {
					s = p.m.Eval.Key + "=" + pt.EvalValue + " " + s
				}
				summary = append(summary, s)
			}
		}
	}
	say("step %d, %s (%.1fs)", step, strings.Join(summary, ", "), time.Since(t0).Seconds())
	return nil
}

// shownMetric is the metric of a cell's progress line: -metric, val_loss or the first.
func (p *sweepPlan) shownMetric(m train.Metrics) string {
	if _, ok := m[p.metric]; ok {
		return p.metric
	}
	if _, ok := m[sweepValPrefix+train.MetricLoss]; ok {
		return sweepValPrefix + train.MetricLoss
	}
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// evalCell returns the cell's metrics: eval's per -eval value, or without -eval the val
// (and train_) metrics its run recorded at the checkpoint's step.
func (p *sweepPlan) evalCell(ctx context.Context, dir string, step int, log *os.File) ([]sweepPoint, error) {
	if p.m.Eval == nil && len(p.m.EvalFlags) == 0 {
		recs, err := train.ReadMetrics(dir)
		if err != nil {
			return nil, err
		}
		for _, r := range slices.Backward(recs) {
			if r.Step != step {
				continue
			}
			m := train.Metrics{}
			for k, v := range r.Metrics {
				if strings.HasPrefix(k, train.ValPrefix) || strings.HasPrefix(k, train.TrainPrefix) {
					m[k] = v
				}
			}
			if len(m) > 0 {
				return []sweepPoint{{Metrics: train.Record{Step: step, Metrics: m}}}, nil
			}
		}
		return nil, fmt.Errorf("%s: no val metrics recorded at step %d", filepath.Join(dir, train.MetricsFile), step)
	}
	var points []sweepPoint
	values := []string{""} // -eval-flag alone: one point
	if p.m.Eval != nil {
		values = p.m.Eval.Values
	}
	for _, v := range values {
		var env []string
		if p.threads != "" {
			env = []string{"GOMAXPROCS=" + p.threads}
		}
		args := append([]string{"eval", "-ckpt=" + dir, "-json"}, p.m.EvalFlags...)
		at := "eval"
		if p.m.Eval != nil {
			args = append(args, "-"+p.m.Eval.Key+"="+v)
			at = "eval -" + p.m.Eval.Key + "=" + v
		}
		out, err := p.child(ctx, args, log, env)
		var exit childExit
		if errors.As(err, &exit) && exit.code == exitNotDefined {
			points = append(points, sweepPoint{EvalValue: v, Metrics: train.Record{Step: step, Metrics: train.Metrics{}}, NotDefined: notDefinedReason(exit.msg)})
			continue
		}
		if err != nil {
			return nil, err
		}
		var raw map[string]*float64
		if err := json.Unmarshal(bytes.TrimSpace(out), &raw); err != nil {
			return nil, fmt.Errorf("%s: its output is not a JSON object of metrics: %w", at, err)
		}
		m := train.Metrics{}
		for k, x := range raw {
			if !strings.HasPrefix(k, sweepValPrefix) {
				k = sweepValPrefix + k
			}
			m[k] = math.NaN()
			if x != nil {
				m[k] = *x
			}
		}
		points = append(points, sweepPoint{EvalValue: v, Metrics: train.Record{Step: step, Metrics: m}})
	}
	return points, nil
}

// selfCommand returns the command that runs this program with the command line args
// (the program is a locus: cmd/locus, or a program of one's own that calls Main with
// its arguments). Tests replace it, their binary being no locus.
var selfCommand = func(args []string) (*exec.Cmd, error) {
	if testing.Testing() { // a test binary run with these arguments would run its tests
		return nil, errors.New("sweep: a test binary is no locus to run the cells with (replace selfCommand)")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sweep: the running program: %w", err)
	}
	return exec.Command(exe, args...), nil
}

// child runs this program with args as a process of its own (in its own process group,
// so that a terminal's Ctrl-C reaches it once, through ctx), its stderr (and stdout,
// unless returned) appended to log. On ctx's end it gets one interrupt, and stops at a
// checkpoint.
func (p *sweepPlan) child(ctx context.Context, args []string, log *os.File, env []string) ([]byte, error) {
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	fmt.Fprintf(log, "== %s locus %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(args, " "))
	cmd, err := selfCommand(args)
	if err != nil {
		return nil, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, env...)
	// The process writes into the log itself (no pipe through this one), so that what
	// it says after a sweep died is kept, and its writes cannot fail for want of a
	// reader.
	var out bytes.Buffer
	from, err := log.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	if args[0] == "eval" {
		cmd.Stdout = &out
	} else {
		cmd.Stdout = log
	}
	cmd.SysProcAttr = ownProcessGroup()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Signal(os.Interrupt)
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.Bytes(), nil
	case errors.As(err, &exit) && (exit.ExitCode() == 130 || ctx.Err() != nil):
		return nil, errInterrupted
	case errors.As(err, &exit):
		return nil, childExit{cmd: args[0], code: exit.ExitCode(), msg: logTail(log, from)}
	default:
		return nil, err
	}
}

// childExit is a cell's process that exited non-zero: its command, status and last line.
type childExit struct {
	cmd  string
	code int
	msg  string
}

func (e childExit) Error() string { return fmt.Sprintf("locus %s: exit %d: %s", e.cmd, e.code, e.msg) }

// notDefinedReason is the reason of a point eval refused with exitNotDefined: its
// message after the checkpoint and flag it names ("locus eval: DIR: -seqlen 128: ").
func notDefinedReason(msg string) string {
	if i := strings.LastIndex(msg, ": -"); i >= 0 {
		if j := strings.Index(msg[i+3:], ": "); j >= 0 {
			return msg[i+3+j+2:]
		}
	}
	return strings.TrimPrefix(msg, "locus eval: ")
}

// logTail returns the last line that log holds after offset from (read from at most
// its last 64 KiB).
func logTail(log *os.File, from int64) string {
	fi, err := log.Stat()
	if err != nil {
		return ""
	}
	start := max(from, fi.Size()-64<<10)
	b := make([]byte, max(fi.Size()-start, 0))
	n, _ := log.ReadAt(b, start)
	var tail lastLineWriter
	tail.Write(b[:n])
	return tail.String()
}

// lastLineWriter keeps the last non-empty line written to it (its last maxErrorBytes), the
// error of a cell's process.
type lastLineWriter struct{ line, cur []byte }

func (l *lastLineWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		switch {
		case b == '\n' || b == '\r':
			if len(bytes.TrimSpace(l.cur)) > 0 {
				l.line = append(l.line[:0], l.cur...)
			}
			l.cur = l.cur[:0]
		case len(l.cur) < maxErrorBytes:
			l.cur = append(l.cur, b)
		}
	}
	return len(p), nil
}

func (l *lastLineWriter) String() string {
	if len(bytes.TrimSpace(l.cur)) > 0 {
		return string(l.cur)
	}
	return string(l.line)
}

// sweepRow is one cell's metrics at one eval point.
type sweepRow struct {
	cell  sweepCell
	point sweepPoint
}

// rows returns the done cells' rows, in the manifest's order.
func (p *sweepPlan) rows() []sweepRow {
	var rows []sweepRow
	for _, c := range p.m.Cells {
		st := readCellState(filepath.Join(p.dir, c.Dir))
		if !st.Done {
			continue
		}
		for _, pt := range st.Points {
			rows = append(rows, sweepRow{c, pt})
		}
	}
	return rows
}

// metricNames are the metrics of the rows, sorted.
func metricNames(rows []sweepRow) []string {
	set := map[string]bool{}
	for _, r := range rows {
		for k := range r.point.Metrics.Metrics {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// writeResults writes results.csv, results.md and results.png from the cells' own
// records and prints the table.
func (p *sweepPlan) writeResults(stdout, stderr io.Writer) error {
	rows := p.rows()
	metrics := metricNames(rows)
	csvPath := filepath.Join(p.dir, sweepCSVFile)
	if err := regularfile.WriteFile(csvPath, func(w io.Writer) error { return p.writeCSV(w, rows, metrics) }); err != nil {
		return err
	}
	groups := p.groups(rows)
	var table bytes.Buffer
	p.writeTable(&table, groups, metrics)
	if err := regularfile.WriteFile(filepath.Join(p.dir, sweepTableFile), func(w io.Writer) error { _, err := w.Write(table.Bytes()); return err }); err != nil {
		return err
	}
	stdout.Write(table.Bytes())
	written := []string{csvPath, filepath.Join(p.dir, sweepTableFile)}
	x, metric, err := p.plotChoice(metrics)
	if err != nil {
		return err
	}
	draw := func(file string, groups []*sweepGroup, by sweepSetting) error {
		chart := sweepChart(p, groups, x, metric, by)
		png, err := chart.PNG(sweepChartWidth(chart), train.ChartHeight)
		if err != nil {
			return fmt.Errorf("results plot: %w", err)
		}
		path := filepath.Join(p.dir, file)
		if err := regularfile.WriteFile(path, func(w io.Writer) error { _, err := w.Write(png); return err }); err != nil {
			return err
		}
		written = append(written, path)
		return nil
	}
	if x != "" && len(rows) > 0 {
		if err := draw(sweepPlotFile, groups, sweepSetting{}); err != nil {
			return err
		}
		for _, ax := range p.m.Grid {
			if ax.Key != p.plotBy {
				continue
			}
			for _, v := range ax.Values {
				by := sweepSetting{Key: ax.Key, Value: v}
				var some []*sweepGroup
				for _, g := range groups {
					if slices.Contains(g.settings, by) {
						some = append(some, g)
					}
				}
				if len(some) == 0 {
					continue
				}
				if err := draw(sweepPlotByFile(by), some, by); err != nil {
					return err
				}
			}
		}
	}
	fmt.Fprintf(stderr, "locus sweep: wrote %s\n", strings.Join(written, ", "))
	return nil
}

// plotChoice returns results.png's x key and metric: -plot-x and -metric, or the
// defaults (x "" when nothing is swept but the seed).
func (p *sweepPlan) plotChoice(metrics []string) (x, metric string, err error) {
	x = p.plotX
	if x == "" {
		switch {
		case p.m.Eval != nil:
			x = p.m.Eval.Key
		case len(p.m.Grid) > 0:
			x = p.m.Grid[0].Key
			for _, ax := range p.m.Grid {
				if numericValues(ax.Values) {
					x = ax.Key
				}
			}
		}
	}
	metric = p.metric
	switch {
	case metric != "" && len(metrics) > 0 && !slices.Contains(metrics, metric):
		return "", "", usageErrorf("-metric %s: the cells recorded %s", quote.Text(metric), strings.Join(metrics, ", "))
	case metric == "" && slices.Contains(metrics, sweepValPrefix+train.MetricLoss):
		metric = sweepValPrefix + train.MetricLoss
	case metric == "" && len(metrics) > 0:
		metric = metrics[0]
	}
	return x, metric, nil
}

func numericValues(vs []string) bool {
	for _, v := range vs {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return false
		}
	}
	return len(vs) > 0
}

// writeCSV writes one row per cell and eval point: the grid keys, the seed, the eval
// value, then every metric ("" where a cell has none), at full precision.
func (p *sweepPlan) writeCSV(w io.Writer, rows []sweepRow, metrics []string) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, ax := range p.m.Grid {
		head = append(head, ax.Key)
	}
	head = append(head, sweepSeedKey)
	if p.m.Eval != nil {
		head = append(head, p.m.Eval.Key)
	}
	head = append(head, "dir", "step")
	notDefined := slices.ContainsFunc(rows, func(r sweepRow) bool { return r.point.NotDefined != "" })
	head = append(head, metrics...)
	if notDefined {
		head = append(head, sweepNotDefinedKey)
	}
	cw.Write(head)
	for _, r := range rows {
		var rec []string
		for _, kv := range r.cell.Settings {
			rec = append(rec, kv.Value)
		}
		rec = append(rec, r.cell.Seed)
		if p.m.Eval != nil {
			rec = append(rec, r.point.EvalValue)
		}
		rec = append(rec, r.cell.Dir, strconv.Itoa(r.point.Metrics.Step))
		for _, m := range metrics {
			v, ok := r.point.Metrics.Metrics[m]
			if ok {
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			} else {
				rec = append(rec, "")
			}
		}
		if notDefined {
			rec = append(rec, r.point.NotDefined)
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// sweepGroup is a configuration at an eval point, over its seeds.
type sweepGroup struct {
	settings  []sweepSetting
	evalValue string
	values    map[string][]float64 // per metric, one per seed that recorded it
	seeds     int
	// notDefined is the reason of the seeds whose model or task is not defined at this
	// eval point (one reason: the seeds differ only in their seed).
	notDefined string
}

// groups gathers the rows per configuration and eval point, in the manifest's order.
func (p *sweepPlan) groups(rows []sweepRow) []*sweepGroup {
	var out []*sweepGroup
	index := map[string]*sweepGroup{}
	for _, r := range rows {
		key := configKey(r.cell.Settings) + "\x00" + r.point.EvalValue
		g := index[key]
		if g == nil {
			g = &sweepGroup{settings: r.cell.Settings, evalValue: r.point.EvalValue, values: map[string][]float64{}}
			index[key] = g
			out = append(out, g)
		}
		g.seeds++
		if r.point.NotDefined != "" {
			g.notDefined = r.point.NotDefined
		}
		for k, v := range r.point.Metrics.Metrics {
			g.values[k] = append(g.values[k], v)
		}
	}
	return out
}

// meanSD returns the mean and the sample standard deviation (n − 1 in the denominator;
// NaN for one value).
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// formatMeanSD is a table cell: "mean ± sd", the mean alone for one seed.
func formatMeanSD(xs []float64) string {
	if len(xs) == 0 {
		return sweepNoValue
	}
	mean, sd := meanSD(xs)
	if math.IsNaN(sd) {
		return fmt.Sprintf("%.4f", mean)
	}
	return fmt.Sprintf("%.4f ± %.4f", mean, sd)
}

// writeTable writes the Markdown table: a row per configuration and eval point, with
// the number of seeds and each metric's mean ± sample standard deviation over them.
func (p *sweepPlan) writeTable(w io.Writer, groups []*sweepGroup, metrics []string) {
	var head []string
	for _, ax := range p.m.Grid {
		head = append(head, ax.Key)
	}
	if p.m.Eval != nil {
		head = append(head, p.m.Eval.Key)
	}
	head = append(head, "seeds")
	head = append(head, metrics...)
	line := func(cells []string) {
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, g := range groups {
		var cells []string
		for _, kv := range g.settings {
			cells = append(cells, "`"+kv.Value+"`")
		}
		if p.m.Eval != nil {
			cells = append(cells, g.evalValue)
		}
		cells = append(cells, strconv.Itoa(g.seeds))
		for _, m := range metrics {
			cells = append(cells, formatMeanSD(g.values[m]))
		}
		line(cells)
	}
	// The reasons of the rows without values, each once, with the rows it holds for.
	var reasons []string
	count := map[string]int{}
	for _, g := range groups {
		if g.notDefined != "" {
			if count[g.notDefined] == 0 {
				reasons = append(reasons, g.notDefined)
			}
			count[g.notDefined]++
		}
	}
	if len(reasons) > 0 {
		fmt.Fprintln(w)
	}
	for _, r := range reasons {
		fmt.Fprintf(w, "%s not defined (%s): %s\n", sweepNoValue, plural(count[r], "row"), r)
	}
}

// sweepChartWidth is results.png's width: the Loop's plots', or wider where the legend's
// labels (the configurations) would leave the data less than two thirds of it.
func sweepChartWidth(c *train.Chart) vg.Length {
	var legend vg.Length
	for _, e := range c.Entries {
		legend = max(legend, c.Plot.Legend.TextStyle.Width(e))
	}
	legend += c.Plot.Legend.ThumbnailWidth + vg.Centimeter
	return max(train.ChartWidth, 3*legend)
}

// sweepChart draws metric against the x key: a line per configuration of the other
// keys, at the mean over the seeds, with error bars of ±1 sample standard deviation.
// Values of x that are not all numbers are placed in the grid's order and named on the
// axis.
// seriesStyle is line i's colour, dashes and point glyph: the eight colours of headColor,
// then again dashed with squares, then dotted with triangles, so that no two of the first 24
// lines look alike.
func seriesStyle(i int) (color.Color, []vg.Length, draw.GlyphDrawer) {
	const colours = 8
	switch (i / colours) % 3 {
	case 1:
		return headColor(i), []vg.Length{vg.Points(5), vg.Points(3)}, draw.SquareGlyph{}
	case 2:
		return headColor(i), []vg.Length{vg.Points(1.5), vg.Points(2)}, draw.TriangleGlyph{}
	}
	return headColor(i), nil, draw.CircleGlyph{}
}

// sweepPlotByFile is the plot of the cells with setting by (-plot-by): results-KEY=V.png,
// the setting made safe for the file system as cell names are.
func sweepPlotByFile(by sweepSetting) string {
	return "results-" + sanitizeCellName(by.Key+"="+by.Value) + ".png"
}

// sweepChart draws groups; by, if set (-plot-by), is the setting they all have: it is
// named in the title and left out of the lines' labels.
func sweepChart(p *sweepPlan, groups []*sweepGroup, x, metric string, by sweepSetting) *train.Chart {
	var xValues []string
	if p.m.Eval != nil && p.m.Eval.Key == x {
		xValues = p.m.Eval.Values
	}
	for _, ax := range p.m.Grid {
		if ax.Key == x {
			xValues = ax.Values
		}
	}
	numeric := numericValues(xValues)
	xOf := func(v string) float64 {
		if numeric {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
		return float64(slices.Index(xValues, v))
	}
	type line struct {
		label string
		xy    plotter.XYs
		errs  plotter.YErrors
	}
	var lines []*line
	byLabel := map[string]*line{}
	for _, g := range groups {
		var xv string
		var rest []string
		for _, kv := range g.settings {
			switch kv.Key {
			case x:
				xv = kv.Value
			case by.Key:
			default:
				rest = append(rest, kv.Key+"="+kv.Value)
			}
		}
		if p.m.Eval != nil && p.m.Eval.Key == x {
			xv = g.evalValue
		} else if p.m.Eval != nil {
			rest = append(rest, p.m.Eval.Key+"="+g.evalValue)
		}
		label := strings.Join(rest, ", ")
		if label == "" {
			label = "all cells"
		}
		l := byLabel[label]
		if l == nil {
			l = &line{label: label}
			byLabel[label] = l
			lines = append(lines, l)
		}
		mean, sd := meanSD(g.values[metric])
		if math.IsNaN(mean) {
			continue
		}
		if math.IsNaN(sd) {
			sd = 0
		}
		l.xy = append(l.xy, plotter.XY{X: xOf(xv), Y: mean})
		l.errs = append(l.errs, struct{ Low, High float64 }{sd, sd})
	}
	c := train.NewChart()
	seeds := len(p.m.Seeds)
	c.Plot.Title.Text = fmt.Sprintf("%s against %s: mean ± sd over %d seed%s", metric, x, seeds, map[bool]string{true: "", false: "s"}[seeds == 1])
	if by.Key != "" {
		c.Plot.Title.Text = by.Key + "=" + by.Value + ": " + c.Plot.Title.Text
	}
	c.Plot.X.Label.Text = x
	c.Plot.Y.Label.Text = metric
	c.Plot.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(lo, hi)
		for i := range ticks { // enough digits that no two labels read the same
			if ticks[i].Label != "" {
				ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'g', 4, 64)
			}
		}
		return ticks
	})
	switch {
	case !numeric:
		var ticks []plot.Tick
		for i, v := range xValues {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: v})
		}
		c.Plot.X.Tick.Marker = plot.ConstantTicks(ticks)
		c.Plot.X.Min, c.Plot.X.Max = -0.5, float64(len(xValues))-0.5
	case len(xValues) <= maxNamedTicks:
		// The swept values are the ticks, as typed; values spread over a factor of 8 or
		// more (lengths 64 … 1024, learning rates) are placed on a log scale.
		var ticks []plot.Tick
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range xValues {
			f := xOf(v)
			lo, hi = min(lo, f), max(hi, f)
			ticks = append(ticks, plot.Tick{Value: f, Label: v})
		}
		c.Plot.X.Tick.Marker = plot.ConstantTicks(ticks)
		if lo > 0 && hi >= 8*lo {
			c.Plot.X.Scale = plot.LogScale{}
		}
	}
	for i, l := range lines {
		if len(l.xy) == 0 {
			continue
		}
		ln, pts, err := plotter.NewLinePoints(l.xy)
		if err != nil {
			continue
		}
		col, dashes, glyph := seriesStyle(i)
		ln.Color, ln.Width, ln.Dashes = col, vg.Points(1.3), dashes
		pts.Color, pts.Radius, pts.Shape = col, vg.Points(2), glyph
		bars := &plotter.YErrorBars{XYs: slices.Clone(l.xy), YErrors: l.errs}
		bars.LineStyle.Color = col
		bars.LineStyle.Width = ln.Width
		bars.CapWidth = vg.Points(6)
		c.Plot.Add(ln, pts, bars)
		c.Add(l.label, l.xy, ln, pts)
	}
	return c
}
