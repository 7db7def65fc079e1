package cli

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/locusml/locus/train"
)

// sizeFlagCases says, for every integer flag of train, eval, sample and bench, what its
// type's maximum gets: an error naming the setting (want), or, for a count that
// allocates nothing (accepted is why), a normal run. TestSizeFlagsAtTheirMaximum lists
// the flags from each command's -h, so that a new integer flag fails it until it is here.
var sizeFlagCases = map[string]map[string]struct{ want, accepted string }{
	"train": {
		"accum":           {want: "-accum must be in 1..4096"},
		"batch":           {want: "-batch must be in 1..65536"},
		"dff":             {want: "transformer: hidden"},
		"dmodel":          {want: "transformer: dim"},
		"eval-n":          {want: "-eval-n"},
		"eval-iters":      {want: "-eval-iters must be in 0..16384"},
		"heads":           {want: "heads"},
		"layers":          {want: "transformer: layers"},
		"random-features": {want: "random_features"},
		"seqlen":          {want: "SeqLen"},
		"decay-every":     {accepted: "a period: the learning rate decays never"},
		"decay-steps":     {accepted: "a period: the cosine decay stops nowhere"},
		"eval-every":      {accepted: "a period: evaluation at the end only"},
		"keep":            {accepted: "a count of checkpoints kept, not made"},
		"maxbytes":        {want: "-maxbytes must be in 0..1073741824"},
		"patience":        {accepted: "a count of evaluations: never stops early"},
		"seed":            {accepted: "a seed"},
		"shards":          {accepted: "at most one part per batch row is made"},
		"warmup":          {accepted: "a period: the warm-up outlasts the run"},
		"steps":           {accepted: "a duration (not run here): the run goes on until interrupted, checkpointing as it goes"},
	},
	"eval": {
		"n":      {want: "-n must be in 1..1048576"},
		"seed":   {accepted: "a seed"},
		"seqlen": {want: "-seqlen must be in 0..1048576"},
	},
	"sample": {
		"n":    {want: "-n must be in 1..1048576"},
		"seed": {accepted: "a seed"},
		"topk": {accepted: "at most the vocabulary is kept"},
	},
	"bench": {
		"batch":           {want: "-batch"},
		"dmodel":          {want: "-dmodel"},
		"heads":           {want: "-heads"},
		"layers":          {want: "-layers"},
		"dff":             {want: "-dff"},
		"new-tokens":      {want: "-new-tokens"},
		"random-features": {want: "-random-features"},
		"seqlen":          {want: "-seqlen"},
		"steps":           {want: "-steps"},
		"warmup":          {want: "-warmup"},
		"seed":            {accepted: "a seed"},
		"shards":          {accepted: "at most one part per batch row is made"},
	},
}

// TestSizeFlagsAtTheirMaximum (-threads, a flag of its own type, has TestThreadsBoundedEverywhere): every integer flag of train, eval, sample and bench at
// int32's and int64's maximum (and the 1e9 that a user types) gives one line naming the
// setting, quickly, with no panic and no out-of-memory crash; the counts that allocate
// nothing run normally at the maximum.
func TestSizeFlagsAtTheirMaximum(t *testing.T) {
	run := charRun(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	base := map[string][]string{
		"train":  {"train", "-task", "reverse", "-steps", "1", "-eval-every", "0", "-eval-n", "8", "-batch", "4", "-dmodel", "8", "-heads", "2", "-dff", "8", "-layers", "1", "-out", out},
		"eval":   {"eval", "-ckpt", run, "-n", "8"},
		"sample": {"sample", "-ckpt", run, "-prompt", "the", "-n", "5"},
		"bench":  {"bench", "-workload", "charlm", "-steps", "1", "-warmup", "0", "-batch", "1", "-seqlen", "8"},
	}
	corpus := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(corpus, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := map[string][]string{"decay-every": {"-schedule", "step"}, "decay-steps": {"-schedule", "cosine"},
		"maxbytes": {"-task", "charlm", "-arch", "lm", "-data", corpus, "-seqlen", "8"}} // a charlm setting
	intFlag := regexp.MustCompile(`(?m)^  -([a-z-]+) u?int$`)
	for cmd, cases := range sizeFlagCases {
		_, _, help := runCLI(t, cmd, "-h")
		var flags []string
		for _, m := range intFlag.FindAllStringSubmatch(help, -1) {
			flags = append(flags, m[1])
			if _, ok := cases[m[1]]; !ok {
				t.Errorf("%s -%s: an integer flag that sizeFlagCases does not classify: bound it, or say why its maximum is harmless", cmd, m[1])
			}
		}
		for name, c := range cases {
			if !slices.Contains(flags, name) {
				t.Errorf("sizeFlagCases has %s -%s, which %s -h does not list", cmd, name, cmd)
				continue
			}
			if c.accepted != "" {
				if strings.HasPrefix(c.accepted, "a duration") || strings.HasPrefix(c.accepted, "(not run") {
					continue
				}
				os.RemoveAll(out)
				args := append(append(slices.Clone(base[cmd]), extra[name]...), "-"+name, strconv.FormatInt(math.MaxInt64, 10))
				if name == "seed" {
					args[len(args)-1] = strconv.FormatUint(math.MaxUint64, 10)
				}
				if code, _, stderr := runCLI(t, args...); code != 0 {
					t.Errorf("%v (%s): exit %d, want a normal run\n%s", args[1:], c.accepted, code, stderr)
				}
				continue
			}
			for _, v := range []string{strconv.Itoa(math.MaxInt32), strconv.Itoa(math.MaxInt64), "1e9", "1000000000"} {
				if name == "maxbytes" && v == "1000000000" {
					continue // within the 1 GiB a corpus may have
				}
				args := append(append(slices.Clone(base[cmd]), extra[name]...), "-"+name, v)
				start := time.Now()
				code, _, stderr := runCLI(t, args...)
				msg := strings.TrimSpace(stderr)
				want := c.want
				if v == "1e9" {
					want = `invalid value "1e9" for flag -` + name
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("%v: took %v", args[1:], d)
				}
				if code == 0 || strings.Contains(msg, "\n") || !strings.Contains(msg, want) || strings.Contains(msg, "goroutine") {
					t.Errorf("%v: exit %d, stderr %q; want one line with %q", args[1:], code, msg, want)
				}
			}
		}
	}
}

// TestSizeFlagsNegative: every integer flag of train, eval, sample and bench at -1 and
// at int64's minimum gives one line naming the flag (or, for a model size, its
// configuration field, as at the maximum); none is taken as a default or run.
func TestSizeFlagsNegative(t *testing.T) {
	run := charRun(t)
	out := filepath.Join(t.TempDir(), "run")
	base := map[string][]string{
		"train":  {"train", "-task", "reverse", "-steps", "1", "-eval-every", "0", "-eval-n", "8", "-batch", "4", "-dmodel", "8", "-heads", "2", "-dff", "8", "-layers", "1", "-out", out},
		"eval":   {"eval", "-ckpt", run, "-n", "8"},
		"sample": {"sample", "-ckpt", run, "-prompt", "the", "-n", "5"},
		"bench":  {"bench", "-workload", "charlm", "-steps", "1", "-warmup", "0", "-batch", "1", "-seqlen", "8"},
	}
	extra := map[string][]string{"decay-every": {"-schedule", "step"}, "decay-steps": {"-schedule", "cosine"}}
	intFlag := regexp.MustCompile(`(?m)^  -([a-z-]+) u?int$`)
	for cmd, cases := range sizeFlagCases {
		_, _, help := runCLI(t, cmd, "-h")
		for _, m := range intFlag.FindAllStringSubmatch(help, -1) {
			name := m[1]
			for _, v := range []string{"-1", strconv.FormatInt(math.MinInt64, 10)} {
				os.RemoveAll(out)
				args := append(append(slices.Clone(base[cmd]), extra[name]...), "-"+name, v)
				code, _, stderr := runCLI(t, args...)
				msg := strings.TrimSpace(stderr)
				named := strings.Contains(msg, "-"+name+" ") || strings.Contains(msg, "flag -"+name+":")
				if w := cases[name].want; w != "" && strings.Contains(msg, w) {
					named = true
				}
				if code == 0 || strings.Contains(msg, "\n") || !named || !strings.Contains(msg, strings.TrimPrefix(v, "-")) {
					t.Errorf("%s -%s %s: exit %d, stderr %q; want one line naming -%s and the value", cmd, name, v, code, msg, name)
				}
			}
		}
	}
}

// TestNonFiniteFloatsRefused: every float flag of every command refuses Inf, -Inf and
// NaN up front with one line (the flags are listed from each command's -h), and so does
// a run file's training setting; -clip Inf once failed after training had started.
func TestNonFiniteFloatsRefused(t *testing.T) {
	floatFlag := regexp.MustCompile(`(?m)^  -([a-z-]+) float$`)
	n := 0
	for cmd := range commands {
		_, _, help := runCLI(t, cmd, "-h")
		for _, m := range floatFlag.FindAllStringSubmatch(help, -1) {
			for _, v := range []string{"Inf", "-inf", "NaN"} {
				n++
				code, _, stderr := runCLI(t, cmd, "-"+m[1]+"="+v)
				msg := strings.TrimSpace(stderr)
				if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, "-"+m[1]+" ") || !strings.Contains(msg, "want a finite number") {
					t.Errorf("%s -%s %s: exit %d, stderr %q; want exit 2 and one line with \"want a finite number\"", cmd, m[1], v, code, msg)
				}
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d float flags found in the commands' -h", n/3)
	}
	run := charRun(t)
	rc := filepath.Join(t.TempDir(), "config.json")
	b, err := os.ReadFile(filepath.Join(run, runConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"clip": 0`, `"clip": "Inf"`, 1))
	if err := os.WriteFile(rc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	checkFails(t, 1, "training settings: -clip +Inf: want a finite number", "train", "-config", rc, "-out", filepath.Join(t.TempDir(), "r"))
}

// TestNullModelConfig: a run file or checkpoint whose model_config is null says the
// model configuration is missing (it said "vocab 0").
func TestNullModelConfig(t *testing.T) {
	run := charRun(t)
	rc := filepath.Join(t.TempDir(), "config.json")
	b, err := os.ReadFile(filepath.Join(run, runConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), `"model_config": {`)
	j := strings.Index(string(b), `"data_config"`)
	if i < 0 || j < i {
		t.Fatalf("run file layout:\n%s", b)
	}
	b = []byte(string(b[:i]) + `"model_config": null, ` + string(b[j:]))
	if err := os.WriteFile(rc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	checkFails(t, 1, "model_config is missing (empty or null)", "train", "-config", rc, "-out", filepath.Join(t.TempDir(), "r"))
	editMeta(t, run, "model_config", "vocab", 7) // rewrites checkpoint.json compactly, for the match below
	path := filepath.Join(latestDir(t, run), "checkpoint.json")
	meta, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	meta = regexp.MustCompile(`"model_config":\{[^}]*\}`).ReplaceAll(meta, []byte(`"model_config":null`))
	if err := os.WriteFile(path, meta, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range readers(run) {
		code, _, stderr := runCLI(t, args...)
		if last := strings.TrimSpace(stderr); code == 0 || !strings.Contains(last, "model_config is empty or null") || strings.Contains(last, "vocab 0") {
			t.Errorf("%v: exit %d, stderr %q; want the model config named missing", args, code, stderr)
		}
	}
}

// TestFileTextEchoedShortAndQuoted: what a run file or checkpoint holds reaches an error
// message quoted and cut short (internal/quote): a LATEST with terminal escape sequences
// prints no escape byte, and a huge name, key or kernel spec is echoed as a short prefix.
func TestFileTextEchoedShortAndQuoted(t *testing.T) {
	huge := strings.Repeat("z", 1<<20)
	check := func(args []string, stderr, want string) { // the error is the last line
		t.Helper()
		msg := strings.TrimSpace(stderr)
		last := msg[strings.LastIndex(msg, "\n")+1:]
		if strings.ContainsAny(msg, "\x1b\a") || len(last) > 1000 || !strings.Contains(last, want) {
			t.Errorf("%v: stderr %.300q, last line of %d bytes; want no escape bytes, and a last line under 1000 bytes with %q", args, msg, len(last), want)
		}
	}
	run := charRun(t)
	if err := os.WriteFile(filepath.Join(run, "LATEST"), []byte("step-000010\x1b]0;pwned\a\x1b[31m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range readers(run) {
		_, _, stderr := runCLI(t, args...)
		check(args, stderr, `LATEST holds "step-000010\x1b]0;pwned\a\x1b[31m", not the name of a checkpoint directory`)
	}
	for _, c := range []struct{ section, field, want string }{
		{"model_config", "kernel", "the spec is 1048576 bytes long"},
		{"model_config", "arch", "(1048576 bytes)"},
		{"model_config", huge, "unknown field"},
	} {
		run := charRun(t)
		if c.field == huge {
			editMeta(t, run, c.section, huge, 1)
		} else {
			editMeta(t, run, c.section, c.field, huge)
		}
		for _, args := range readers(run) {
			_, _, stderr := runCLI(t, args...)
			check(args, stderr, c.want)
		}
	}
	b, err := os.ReadFile(filepath.Join(run, runConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"model_family": "transformer"`, `"model_family": "` + huge + `"`, "(1048576 bytes)"},
		{`"model_family"`, `"` + huge + `": 1, "model_family"`, "unknown key"},
		{`"steps": 10`, `"steps": 10, "` + huge + `": 1`, "unknown key"},
	} {
		rc := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(rc, []byte(strings.Replace(string(b), c.from, c.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"train", "-config", rc, "-out", filepath.Join(t.TempDir(), "r")}
		_, _, stderr := runCLI(t, args...)
		check(args[:2], stderr, c.want)
	}
}

// TestLimitsSameFromFlagsRunFilesAndCheckpoints: a size beyond its limit gets the same
// message from a flag, a run file and a checkpoint, since one Validate checks all three.
func TestLimitsSameFromFlagsRunFilesAndCheckpoints(t *testing.T) {
	for _, c := range []struct {
		flag, section, key string
		value              float64
		want               string
	}{
		{"random-features", "model_config", "random_features", 1e12, "random_features 1000000000000, want 0 (exact attention) to 65536"},
		{"accum", "train_config", "accum", 1e15, "-accum must be in 1..4096, got 1000000000000000"},
		{"eval-n", "train_config", "eval_n", 2e9, "-eval-n 2000000000, want at most 1048576"},
		{"eval-iters", "train_config", "eval_iters", 2e9, "-eval-iters must be in 0..16384, got 2000000000"},
	} {
		run := charRun(t)
		b, err := os.ReadFile(filepath.Join(run, runConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "r")
		args := append(charlmArgs(tinyCorpus(t), out), "-"+c.flag, strconv.FormatFloat(c.value, 'f', -1, 64))
		checkFails(t, 2, c.want, args...)
		// The run file: the same key in its model_config or train.
		section := map[string]string{"model_config": `"model_config": {`, "train_config": `"train": {`}[c.section]
		rc := filepath.Join(t.TempDir(), "config.json")
		edited := strings.Replace(string(b), section, section+`"`+c.key+`": `+strconv.FormatFloat(c.value, 'f', -1, 64)+", ", 1)
		if c.section == "train_config" { // the key is there already: drop the old one
			edited = regexp.MustCompile(`(?s)("`+c.key+`": [0-9]+, .*)"`+c.key+`": [0-9]+,?`).ReplaceAllString(edited, "$1")
		}
		if err := os.WriteFile(rc, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, stderr := runCLI(t, "train", "-config", rc, "-out", out)
		if !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("-config with %s %g: stderr %q, want one line with %q", c.key, c.value, stderr, c.want)
		}
		editMeta(t, run, c.section, c.key, c.value)
		readersOf := readers(run)
		if c.section == "train_config" {
			readersOf = readersOf[len(readersOf)-1:] // only resume reads the training settings
		}
		for _, args := range readersOf {
			_, _, stderr := runCLI(t, args...)
			last := strings.TrimSpace(stderr)
			last = last[strings.LastIndex(last, "\n")+1:]
			if !strings.Contains(last, c.want) {
				t.Errorf("%v with %s %g in the checkpoint: stderr %q, want %q", args, c.key, c.value, stderr, c.want)
			}
		}
	}
}

// TestEveryCheckpointStringEchoedShort covers the class of TestFileTextEchoedShortAndQuoted:
// every string of a checkpoint's model, data and training configurations (found in the
// file, so a new field is covered), set to a terminal escape sequence followed by 1 MB,
// reaches no command's error as it is: no escape byte, and the error line bounded
// (errorText is the guarantee behind each error's own quoting).
func TestEveryCheckpointStringEchoedShort(t *testing.T) {
	huge := "\x1b]0;pwned\a\x1b[31m" + strings.Repeat("z", 1<<20)
	run := charRun(t)
	b, err := os.ReadFile(filepath.Join(latestDir(t, run), train.MetaFile))
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, section := range []string{"model_config", "data_config", "train_config"} {
		for field, v := range meta[section].(map[string]any) {
			if _, ok := v.(string); !ok {
				continue
			}
			n++
			run := charRun(t)
			editMeta(t, run, section, field, huge)
			for _, args := range readers(run) {
				_, _, stderr := runCLI(t, args...)
				msg := strings.TrimSpace(stderr)
				last := msg[strings.LastIndex(msg, "\n")+1:]
				if strings.ContainsAny(msg, "\x1b\a") || len(last) > maxErrorBytes+100 {
					t.Errorf("%s.%s: %s: stderr %.200q, last line of %d bytes; want no escape bytes and at most %d bytes", section, field, args[0], msg, len(last), maxErrorBytes+100)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d string fields in the checkpoint, want the configurations' strings", n)
	}
}

// TestErrorText: what every command prints of an error escapes control characters and
// bytes that are not UTF-8, keeps newlines, tabs and other text, and cuts a long
// message in the middle, keeping its start and its end.
func TestErrorText(t *testing.T) {
	for in, want := range map[string]string{
		"plain é ✓":            "plain é ✓",
		"a\x1b[31mb\a":         `a\x1b[31mb\a`,
		"c\x9bd":               `c\x9bd`,
		"e\u009bf":             `e\u009bf`,
		"two\nlines\tand tab":  "two\nlines\tand tab",
		"del\x7f":              `del\x7f`,
		"literal \uFFFD stays": "literal \uFFFD stays",
	} {
		if got := errorText(errors.New(in)); got != want {
			t.Errorf("errorText(%q) = %q, want %q", in, got, want)
		}
	}
	long := "start " + strings.Repeat("é", 1<<20) + " end (valid: a, b)"
	got := errorText(errors.New(long))
	if len(got) > maxErrorBytes+100 || !strings.HasPrefix(got, "start ") || !strings.HasSuffix(got, " end (valid: a, b)") || !strings.Contains(got, "bytes left out") || !utf8.ValidString(got) {
		t.Errorf("errorText of %d bytes: %d bytes, %.80q … %q", len(long), len(got), got, got[len(got)-40:])
	}
}
