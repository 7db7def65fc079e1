package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// trainSettings are the training settings saved with a run (the checkpoint's
// train_config, the "train" object of config.json). On -resume or with -config, the ones
// not given on the command line keep the saved values. Settings that the chosen
// optimizer or schedule does not use (conditionals) are zero and left out of the JSON.
type trainSettings struct {
	Steps int `json:"steps"`

	Optimizer   optimizerKind `json:"optimizer"`
	LR          float64       `json:"lr"`
	Momentum    float64       `json:"momentum"`
	Betas       betas         `json:"betas"`
	Eps         float64       `json:"eps"`
	Alpha       float64       `json:"alpha"`
	WeightDecay float64       `json:"weight_decay"`
	DecayParams decayParams   `json:"decay_params"`

	Schedule   scheduleKind `json:"schedule"`
	Warmup     int          `json:"warmup"`
	MinLR      float64      `json:"min_lr"`
	DecaySteps int          `json:"decay_steps"`
	DecayEvery int          `json:"decay_every"`
	Gamma      float64      `json:"gamma"`

	Clip     float64  `json:"clip"`
	Accum    int      `json:"accum"`
	Patience int      `json:"patience"`
	Best     string   `json:"best"`
	BestMode bestMode `json:"best_mode"`

	EvalEvery int         `json:"eval_every"`
	EvalN     int         `json:"eval_n"`
	EvalIters int         `json:"eval_iters"`
	Keep      int         `json:"keep"`
	Dtype     dtypeName   `json:"dtype"`
	Threads   threadCount `json:"threads"`
	Shards    int         `json:"shards"`
}

// settingsFlags are the flags of the training settings, by JSON key.
var settingsFlags = map[string]string{
	"steps": "steps", "optimizer": "optim", "lr": "lr", "momentum": "momentum", "betas": "betas",
	"eps": "eps", "alpha": "alpha", "weight_decay": "wd", "decay_params": "decay-params", "schedule": "schedule", "warmup": "warmup",
	"min_lr": "min-lr", "decay_steps": "decay-steps", "decay_every": "decay-every", "gamma": "gamma",
	"clip": "clip", "accum": "accum", "patience": "patience", "best": "best", "best_mode": "best-mode",
	"eval_every": "eval-every", "eval_n": "eval-n", "eval_iters": "eval-iters", "keep": "keep", "dtype": "dtype", "threads": "threads",
	"shards": "shards",
}

// defineSettingsFlags binds the training settings' flags to st.
func defineSettingsFlags(fs *flag.FlagSet, st *trainSettings) {
	fs.IntVar(&st.Steps, "steps", 1000, "training steps, in optimizer updates (dae, ldae: 469 steps of batch 128 make one MNIST epoch)")
	fs.TextVar(&st.Optimizer, "optim", optimAdam, "optimizer: "+strings.Join(optimizerNames(), ", "))
	fs.Float64Var(&st.LR, "lr", 0, "learning rate (default: the optimizer's: 1e-3 for sgd, nesterov, adam, adamw; 1e-2 for rmsprop, adagrad)")
	fs.Float64Var(&st.Momentum, "momentum", 0, "sgd, rmsprop: momentum (default 0); nesterov: 0.9")
	fs.Var(&st.Betas, "betas", "adam, adamw: the moment decay rates β1,β2 (default 0.9,0.999)")
	fs.Float64Var(&st.Eps, "eps", 0, "adam, adamw, rmsprop: denominator epsilon (default 1e-8); adagrad: 1e-10")
	fs.Float64Var(&st.Alpha, "alpha", 0, "rmsprop: decay rate of the squared-gradient average (default 0.99)")
	fs.Float64Var(&st.WeightDecay, "wd", 0, "weight decay: L2 penalty, decoupled for adamw (default 0; adamw: 0.01)")
	fs.TextVar(&st.DecayParams, "decay-params", decayAll, "the parameters weight decay applies to: all, or matrices (the tensors of two or more dimensions: weight matrices and embeddings, not biases and norms, as nanoGPT)")
	fs.TextVar(&st.Schedule, "schedule", scheduleConstant, "learning-rate schedule after the warm-up: "+strings.Join(scheduleNames(), ", "))
	fs.IntVar(&st.Warmup, "warmup", 0, "linear learning-rate warm-up over this many steps")
	fs.Float64Var(&st.MinLR, "min-lr", 0, "cosine: the learning rate at the end of the decay")
	fs.IntVar(&st.DecaySteps, "decay-steps", 0, "cosine: steps of the decay after the warm-up (default: -steps minus -warmup)")
	fs.IntVar(&st.DecayEvery, "decay-every", 0, "step: multiply the learning rate by -gamma every this many steps (required)")
	fs.Float64Var(&st.Gamma, "gamma", 0, "step: the decay factor (default 0.1); exponential: the factor per step (required)")
	fs.Float64Var(&st.Clip, "clip", 0, "clip the global gradient norm to this value (0: no clipping)")
	fs.IntVar(&st.Accum, "accum", 1, fmt.Sprintf("gradient accumulation: batches per optimizer step (at most %d)", train.MaxAccumulate))
	fs.IntVar(&st.Patience, "patience", 0, "stop after this many evaluations without improvement of -best (0: never)")
	fs.StringVar(&st.Best, "best", "", "metric that selects the best checkpoint and early stopping, e.g. val_seq_acc (default: val_loss; dae, ldae: val_mse_clean)")
	fs.TextVar(&st.BestMode, "best-mode", bestMin, "whether -best is better when lower (min) or higher (max)")
	fs.IntVar(&st.EvalEvery, "eval-every", 200, "evaluate and checkpoint every N steps (0: at the end only)")
	fs.IntVar(&st.EvalN, "eval-n", 1000, fmt.Sprintf("validation examples per evaluation (at most %d)", maxEvalN))
	fs.IntVar(&st.EvalIters, "eval-iters", 0, fmt.Sprintf("charlm: evaluate as nanoGPT: train_loss and val_loss each the mean of N batches of -batch random windows of its split (0: val_loss over -eval-n validation windows; at most %d)", maxEvalIters))
	fs.IntVar(&st.Keep, "keep", 3, "step checkpoints to keep (0: all); best/ is kept apart")
	fs.TextVar(&st.Dtype, "dtype", dtypeName{autodiff.Float32}, "parameter and activation type: float32 or float64")
	fs.Var(&st.Threads, "threads", "GOMAXPROCS while training (0: leave as is; at most 64 per CPU)")
	fs.IntVar(&st.Shards, "shards", 0, "run each batch as this many parts at once, one per core, each part's operations serial (0: one per GOMAXPROCS; 1: the batch whole, every operation split across cores)")
}

// conditional is a setting that only some optimizers or schedules use.
type conditional struct {
	key     string
	uses    func(*trainSettings) bool
	users   string
	initial func(*trainSettings) (string, error) // the value when not given
}

func usedBy[K comparable](get func(*trainSettings) K, kinds ...K) func(*trainSettings) bool {
	return func(st *trainSettings) bool { return slices.Contains(kinds, get(st)) }
}

func optimOf(st *trainSettings) optimizerKind { return st.Optimizer }
func schedOf(st *trainSettings) scheduleKind  { return st.Schedule }

func fixed(v string) func(*trainSettings) (string, error) {
	return func(*trainSettings) (string, error) { return v, nil }
}

func required(what string) func(*trainSettings) (string, error) {
	return func(*trainSettings) (string, error) { return "", usageErrorf("%s", what) }
}

var conditionals = []conditional{
	{"lr", func(*trainSettings) bool { return true }, "", func(st *trainSettings) (string, error) {
		return fmt.Sprint(optimizers[st.Optimizer].lr), nil
	}},
	{"momentum", usedBy(optimOf, optimSGD, optimNesterov, optimRMSProp), "sgd, nesterov and rmsprop", func(st *trainSettings) (string, error) {
		if st.Optimizer == optimNesterov {
			return "0.9", nil
		}
		return "0", nil
	}},
	{"betas", usedBy(optimOf, optimAdam, optimAdamW), "adam and adamw", fixed("0.9,0.999")},
	{"eps", usedBy(optimOf, optimAdam, optimAdamW, optimRMSProp, optimAdagrad), "adam, adamw, rmsprop and adagrad", func(st *trainSettings) (string, error) {
		if st.Optimizer == optimAdagrad {
			return "1e-10", nil
		}
		return "1e-8", nil
	}},
	{"alpha", usedBy(optimOf, optimRMSProp), "rmsprop", fixed("0.99")},
	{"weight_decay", func(*trainSettings) bool { return true }, "", func(st *trainSettings) (string, error) {
		if st.Optimizer == optimAdamW {
			return "0.01", nil
		}
		return "0", nil
	}},
	{"min_lr", usedBy(schedOf, scheduleCosine), "-schedule cosine", fixed("0")},
	{"decay_steps", usedBy(schedOf, scheduleCosine), "-schedule cosine", func(st *trainSettings) (string, error) {
		return strconv.Itoa(max(st.Steps-st.Warmup, 1)), nil
	}},
	{"decay_every", usedBy(schedOf, scheduleStep), "-schedule step", required("-schedule step needs -decay-every N")},
	{"gamma", usedBy(schedOf, scheduleStep, scheduleExponential), "-schedule step and exponential", func(st *trainSettings) (string, error) {
		if st.Schedule == scheduleStep {
			return "0.1", nil
		}
		return "", usageErrorf("-schedule exponential needs -gamma G (the learning rate's factor per step)")
	}},
}

// resolveSettings completes the settings bound to fs: a conditional setting the
// optimizer or schedule uses takes its default unless given (named in given, by flag),
// and one it does not use must not be given and is zeroed.
func resolveSettings(fs *flag.FlagSet, st *trainSettings, given map[string]bool) error {
	for _, c := range conditionals {
		name := settingsFlags[c.key]
		switch {
		case !c.uses(st) && given[name]:
			return usageErrorf("-%s is for %s (got -optim %s -schedule %s)", name, c.users, st.Optimizer, st.Schedule)
		case !c.uses(st):
			if err := fs.Set(name, zeroText(fs.Lookup(name))); err != nil {
				return err
			}
		case !given[name]:
			v, err := c.initial(st)
			if err != nil {
				return err
			}
			if err := fs.Set(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// zeroText is the text of a flag's zero value.
func zeroText(fl *flag.Flag) string {
	if fl.Name == "betas" {
		return "0,0"
	}
	return "0"
}

// MarshalJSON writes the settings in their order, without the conditional ones that the
// optimizer and schedule do not use.
func (st trainSettings) MarshalJSON() ([]byte, error) {
	unused := map[string]bool{}
	for _, c := range conditionals {
		unused[c.key] = !c.uses(&st)
	}
	v := reflect.ValueOf(st)
	b := []byte{'{'}
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if unused[key] {
			continue
		}
		val, err := json.Marshal(v.Field(i).Interface())
		if err != nil {
			return nil, err
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(strconv.AppendQuote(b, key), ':')
		b = append(b, val...)
	}
	return append(b, '}'), nil
}

// settingsKeys returns the JSON keys of trainSettings.
func settingsKeys() []string {
	keys := make([]string, 0, len(settingsFlags))
	for k := range settingsFlags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// readSettings applies saved settings (JSON; the keys of trainSettings) to the flag set
// fs bound to st, whose other flags hold their defaults, and resolves them: a setting
// missing from raw (a checkpoint from before it existed) takes its default. what names
// the JSON in errors.
func readSettings(raw json.RawMessage, fs *flag.FlagSet, st *trainSettings, what string) error {
	var m map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	given := map[string]bool{}
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		name, ok := settingsFlags[k]
		if !ok {
			return unknownKey(what, "", k, settingsKeys())
		}
		var v any
		if err := json.Unmarshal(m[k], &v); err != nil {
			return fmt.Errorf("%s: %s: %w", what, k, err)
		}
		text := fmt.Sprint(v)
		if f, ok := v.(float64); ok {
			text = strconv.FormatFloat(f, 'g', -1, 64)
			if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				text = strconv.FormatFloat(f, 'f', -1, 64) // an integer setting
			}
		}
		if err := fs.Set(name, text); err != nil {
			return fmt.Errorf("%s: %s: %w", what, k, err)
		}
		given[name] = true
	}
	if err := resolveSettings(fs, st, given); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := checkFinite(fs); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// optimizerKind names an optimizer of package optim.
type optimizerKind string

// The optimizers.
const (
	optimSGD      optimizerKind = "sgd"
	optimNesterov optimizerKind = "nesterov"
	optimAdam     optimizerKind = "adam"
	optimAdamW    optimizerKind = "adamw"
	optimRMSProp  optimizerKind = "rmsprop"
	optimAdagrad  optimizerKind = "adagrad"
)

// optimizers holds each optimizer's default learning rate and constructor.
var optimizers = map[optimizerKind]struct {
	lr  float64
	new func(groups []optim.Group, st trainSettings, sched optim.Schedule) (optim.Optimizer, error)
}{
	optimSGD: {1e-3, func(g []optim.Group, st trainSettings, s optim.Schedule) (optim.Optimizer, error) {
		return optim.NewSGD(g, optim.SGDConfig{LR: st.LR, Momentum: st.Momentum, WeightDecay: st.WeightDecay, Schedule: s, MaxGradNorm: st.Clip})
	}},
	optimNesterov: {1e-3, func(g []optim.Group, st trainSettings, s optim.Schedule) (optim.Optimizer, error) {
		return optim.NewSGD(g, optim.SGDConfig{LR: st.LR, Momentum: st.Momentum, Nesterov: true, WeightDecay: st.WeightDecay, Schedule: s, MaxGradNorm: st.Clip})
	}},
	optimAdam: {1e-3, func(g []optim.Group, st trainSettings, s optim.Schedule) (optim.Optimizer, error) {
		return optim.NewAdam(g, adamConfig(st, s))
	}},
	optimAdamW: {1e-3, func(g []optim.Group, st trainSettings, s optim.Schedule) (optim.Optimizer, error) {
		return optim.NewAdamW(g, adamConfig(st, s))
	}},
	optimRMSProp: {1e-2, func(g []optim.Group, st trainSettings, s optim.Schedule) (optim.Optimizer, error) {
		return optim.NewRMSProp(g, optim.RMSPropConfig{LR: st.LR, Alpha: st.Alpha, Eps: st.Eps, WeightDecay: st.WeightDecay, Momentum: st.Momentum, Schedule: s, MaxGradNorm: st.Clip})
	}},
	optimAdagrad: {1e-2, func(g []optim.Group, st trainSettings, s optim.Schedule) (optim.Optimizer, error) {
		return optim.NewAdagrad(g, optim.AdagradConfig{LR: st.LR, Eps: st.Eps, WeightDecay: st.WeightDecay, Schedule: s, MaxGradNorm: st.Clip})
	}},
}

func adamConfig(st trainSettings, s optim.Schedule) optim.AdamConfig {
	return optim.AdamConfig{LR: st.LR, Beta1: st.Betas[0], Beta2: st.Betas[1], Eps: st.Eps, WeightDecay: st.WeightDecay, Schedule: s, MaxGradNorm: st.Clip}
}

func optimizerNames() []string {
	return []string{string(optimSGD), string(optimNesterov), string(optimAdam), string(optimAdamW), string(optimRMSProp), string(optimAdagrad)}
}

// MarshalText returns the optimizer's name.
func (k optimizerKind) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText accepts the name of an optimizer.
func (k *optimizerKind) UnmarshalText(b []byte) error {
	if _, ok := optimizers[optimizerKind(b)]; !ok {
		return fmt.Errorf("unknown optimizer %s (valid: %s)", quote.Text(string(b)), strings.Join(optimizerNames(), ", "))
	}
	*k = optimizerKind(b)
	return nil
}

// scheduleKind names a learning-rate schedule of package optim.
type scheduleKind string

// The schedules.
const (
	scheduleConstant    scheduleKind = "constant"
	scheduleCosine      scheduleKind = "cosine"
	scheduleStep        scheduleKind = "step"
	scheduleExponential scheduleKind = "exponential"
)

func scheduleNames() []string {
	return []string{string(scheduleConstant), string(scheduleCosine), string(scheduleStep), string(scheduleExponential)}
}

// MarshalText returns the schedule's name.
func (k scheduleKind) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText accepts the name of a schedule.
func (k *scheduleKind) UnmarshalText(b []byte) error {
	if !slices.Contains(scheduleNames(), string(b)) {
		return fmt.Errorf("unknown schedule %s (valid: %s)", quote.Text(string(b)), strings.Join(scheduleNames(), ", "))
	}
	*k = scheduleKind(b)
	return nil
}

// schedule returns the learning-rate schedule of the settings, warm-up included.
func (st trainSettings) schedule() optim.Schedule {
	var s optim.Schedule
	switch st.Schedule {
	case scheduleCosine:
		min := 0.0
		if st.LR > 0 {
			min = st.MinLR / st.LR
		}
		s = optim.Cosine{Steps: st.DecaySteps, MinFactor: min}
	case scheduleStep:
		s = optim.StepDecay{Every: st.DecayEvery, Gamma: st.Gamma}
	case scheduleExponential:
		s = optim.Exponential{Gamma: st.Gamma}
	default:
		s = optim.Constant{}
	}
	if st.Warmup > 0 {
		return optim.WithWarmup(st.Warmup, s)
	}
	return s
}

// newOptimizer returns the optimizer of the settings over ps.
func (st trainSettings) newOptimizer(ps *autodiff.Params) (optim.Optimizer, error) {
	groups := optim.All(ps.List())
	if st.DecayParams == decayMatrices {
		groups = optim.DecayGroups(ps.List(), optim.NoDecayVectors)
	}
	opt, err := optimizers[st.Optimizer].new(groups, st, st.schedule())
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return opt, nil
}

// uses reports whether the optimizer or schedule of st uses the conditional setting key.
func (st *trainSettings) uses(key string) bool {
	for _, c := range conditionals {
		if c.key == key {
			return c.uses(st)
		}
	}
	return true
}

// validate checks the ranges the optimizer constructors do not.
func (st trainSettings) validate() error {
	switch {
	case st.Steps <= 0:
		return usageErrorf("-steps must be > 0, got %d", st.Steps)
	case !(st.LR > 0):
		return usageErrorf("-lr must be > 0, got %g", st.LR)
	case st.EvalEvery < 0:
		return usageErrorf("-eval-every must be >= 0, got %d", st.EvalEvery)
	case st.EvalN <= 0:
		return usageErrorf("-eval-n must be > 0, got %d", st.EvalN)
	case st.EvalN > maxEvalN:
		return usageErrorf("-eval-n %d, want at most %d", st.EvalN, maxEvalN)
	case st.EvalIters < 0 || st.EvalIters > maxEvalIters:
		return usageErrorf("-eval-iters must be in 0..%d, got %d", maxEvalIters, st.EvalIters)
	case st.Keep < 0:
		return usageErrorf("-keep must be >= 0, got %d", st.Keep)
	case st.Accum < 1 || st.Accum > train.MaxAccumulate:
		return usageErrorf("-accum must be in 1..%d, got %d", train.MaxAccumulate, st.Accum)
	case !(st.Clip >= 0):
		return usageErrorf("-clip must be >= 0, got %g", st.Clip)
	case st.DecayParams == decayMatrices && st.WeightDecay == 0:
		return usageErrorf("-decay-params matrices needs a weight decay: -wd is 0")
	case st.Patience < 0:
		return usageErrorf("-patience must be >= 0, got %d", st.Patience)
	case st.Warmup < 0:
		return usageErrorf("-warmup must be >= 0, got %d", st.Warmup)
	case st.Shards < 0:
		return usageErrorf("-shards must be >= 0, got %d", st.Shards)
	case st.Threads.check() != nil:
		return usageErrorf("-threads %v", st.Threads.check())
	case st.Schedule == scheduleCosine && (st.DecaySteps <= 0 || !(st.MinLR >= 0 && st.MinLR <= st.LR)):
		return usageErrorf("-schedule cosine needs -decay-steps > 0 and 0 <= -min-lr <= -lr (got %d, %g)", st.DecaySteps, st.MinLR)
	}
	// Settings whose zero package optim would take for "the default" (or refuse): a
	// zero typed here is an error naming the flag, not a silent default.
	switch {
	case st.uses("eps") && !(st.Eps > 0 && !math.IsInf(st.Eps, 0)):
		return usageErrorf("-eps %g: want a finite value > 0", st.Eps)
	case st.uses("alpha") && !(st.Alpha > 0 && st.Alpha <= 1):
		return usageErrorf("-alpha %g: want a value in (0, 1]", st.Alpha)
	case st.uses("betas") && st.Betas[1] == 0:
		return usageErrorf("-betas %s: β2 0, want a value in (0, 1)", st.Betas.String())
	case st.uses("decay_every") && st.DecayEvery <= 0:
		return usageErrorf("-decay-every %d: want > 0", st.DecayEvery)
	case st.uses("gamma") && !(st.Gamma > 0 && !math.IsInf(st.Gamma, 0)):
		return usageErrorf("-gamma %g: want a finite value > 0", st.Gamma)
	}
	if v, ok := st.schedule().(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return usageErrorf("-schedule %s: %v", st.Schedule, err)
		}
	}
	return nil
}

// maxEvalN bounds the validation examples of one evaluation (train -eval-n, eval -n), so
// that a mistyped size is an error instead of an evaluation that runs for hours: at least
// a hundred times any reference workload's evaluation set (MNIST's test set is 10000).
const maxEvalN = 1 << 20

// maxEvalIters bounds train -eval-iters in the same way (nanoGPT's default is 200).
const maxEvalIters = 1 << 14

// betas are Adam's β1 and β2, as text "0.9,0.999".
type betas [2]float64

// MarshalText returns "β1,β2".
func (b betas) MarshalText() ([]byte, error) {
	return fmt.Appendf(nil, "%s,%s", strconv.FormatFloat(b[0], 'g', -1, 64), strconv.FormatFloat(b[1], 'g', -1, 64)), nil
}

// String returns "β1,β2" (flag.Value).
func (b *betas) String() string {
	t, _ := b.MarshalText()
	return string(t)
}

// Set reads "β1,β2" (flag.Value).
func (b *betas) Set(s string) error { return b.UnmarshalText([]byte(s)) }

// UnmarshalText reads "β1,β2".
func (b *betas) UnmarshalText(text []byte) error {
	s1, s2, ok := strings.Cut(string(text), ",")
	if !ok {
		return fmt.Errorf("betas %s: want two numbers, as in 0.9,0.999", quote.Text(string(text)))
	}
	var v betas
	for i, s := range []string{s1, s2} {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(f >= 0 && f < 1) {
			return fmt.Errorf("betas %s: want two numbers in [0, 1), as in 0.9,0.999", quote.Text(string(text)))
		}
		v[i] = f
	}
	*b = v
	return nil
}

// decayParams names the parameters that weight decay applies to.
type decayParams string

// The decay rules.
const (
	decayAll      decayParams = "all"      // every parameter (optim.All)
	decayMatrices decayParams = "matrices" // the tensors of rank >= 2 (optim.NoDecayVectors)
)

// MarshalText returns the rule's name.
func (d decayParams) MarshalText() ([]byte, error) { return []byte(d), nil }

// UnmarshalText accepts "all" or "matrices".
func (d *decayParams) UnmarshalText(b []byte) error {
	if decayParams(b) != decayAll && decayParams(b) != decayMatrices {
		return fmt.Errorf("decay params %s: want all or matrices", quote.Text(string(b)))
	}
	*d = decayParams(b)
	return nil
}

// bestMode says whether the best metric is the lowest or the highest.
type bestMode string

// The best modes, as train.Loop.BestMode.
const (
	bestMin bestMode = "min"
	bestMax bestMode = "max"
)

// MarshalText returns "min" or "max".
func (m bestMode) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText accepts "min" or "max".
func (m *bestMode) UnmarshalText(b []byte) error {
	if bestMode(b) != bestMin && bestMode(b) != bestMax {
		return fmt.Errorf("best mode %s: want min or max", quote.Text(string(b)))
	}
	*m = bestMode(b)
	return nil
}

// dtypeName is a parameter dtype as text: "float32" or "float64".
type dtypeName struct{ autodiff.Dtype }

// MarshalText returns the dtype's name.
func (d dtypeName) MarshalText() ([]byte, error) {
	if d.Dtype == autodiff.Float64 {
		return []byte("float64"), nil
	}
	return []byte("float32"), nil
}

// UnmarshalText accepts "float32" or "float64".
func (d *dtypeName) UnmarshalText(b []byte) error {
	switch string(b) {
	case "float32":
		d.Dtype = autodiff.Float32
	case "float64":
		d.Dtype = autodiff.Float64
	default:
		return fmt.Errorf("dtype %s: want float32 or float64", quote.Text(string(b)))
	}
	return nil
}

// unknownKey is the error of a key of what that is not one of valid, naming the
// nearest; prefix is the path of the object that holds them.
func unknownKey(what, prefix, key string, valid []string) error {
	near, best := "", -1
	for _, v := range valid {
		if d := editDistance(key, v); best < 0 || d < best {
			near, best = v, d
		}
	}
	return usageErrorf("%s: unknown key %s (did you mean %q?)", what, quote.Text(prefix+key), prefix+near)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describe returns the optimizer and schedule in a few words, for the start of
// training.
func (st trainSettings) describe() string {
	s := fmt.Sprintf("%s lr %g", st.Optimizer, st.LR)
	if st.Schedule != scheduleConstant {
		s += " " + string(st.Schedule)
	}
	if st.Warmup > 0 {
		s += fmt.Sprintf(" warm-up %d", st.Warmup)
	}
	if st.DecayParams == decayMatrices {
		s += ", weight decay on matrices"
	}
	if st.Accum > 1 {
		s += fmt.Sprintf(", %d batches per step", st.Accum)
	}
	return s
}
