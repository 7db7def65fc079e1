package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/onnx"
	"github.com/locusml/locus/train"
)

func init() {
	register("eval", "evaluate a checkpoint on fresh validation data", runEval)
	register("export", "write a checkpoint as PyTorch weights, Locus safetensors or an ONNX model", runExport)
	register("inspect", "list a checkpoint's tensors, configuration and metrics", runInspect)
	register("sample", "generate text from a character LM checkpoint", runSample)
}

// maxEvalSeqLen bounds eval -seqlen, as transformer.MaxLen bounds a model's rows: a
// mistyped length is refused before the checkpoint is read.
const maxEvalSeqLen = 1 << 20

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", "-ckpt DIR [-n 1000] [-seed 12345] [-seqlen T] [-json]", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint or run directory")
	n := fs.Int("n", 1000, fmt.Sprintf("validation examples (charlm: windows), at most %d", maxEvalN))
	seed := fs.Uint64("seed", 12345, "seed of the fresh validation data")
	seqLen := fs.Int("seqlen", 0, "evaluate at this sequence length, in train -seqlen's unit (charlm: validation windows of T tokens; toy tasks: the task posed at length T, addition at 3·digits+3); 0: the training length. Learned positions refuse T past their table; sinusoidal, rotary and none run at any T")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n <= 0 || *n > maxEvalN {
		return usageErrorf("-n must be in 1..%d, got %d", maxEvalN, *n)
	}
	if *seqLen < 0 || *seqLen > maxEvalSeqLen {
		return usageErrorf("-seqlen must be in 0..%d (0: the training length), got %d", maxEvalSeqLen, *seqLen)
	}
	ld, err := fromCheckpoint(*ckpt, stderr)
	if err != nil {
		return err
	}
	sess, run, at := ld.sess, ld.run, ""
	if *seqLen > 0 {
		if sess, run, err = ld.atLength(*seqLen); err != nil {
			return err
		}
		at = fmt.Sprintf(", at seqlen %d", *seqLen)
	}
	ctx, stop := interruptible()
	defer stop()
	met, err := sess.Metrics(ctx, run, *n, *seed)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: evaluation %w", ld.ck.Dir, errInterrupted)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ld.ck.Dir, err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(met)
	}
	fmt.Fprintf(stdout, "%s (step %d, %s%s):", ld.ck.Dir, ld.ck.Step, sess.Describe(), at)
	for _, k := range slices.Sorted(maps.Keys(met)) {
		fmt.Fprintf(stdout, "  %s %.4f", k, met[k])
	}
	fmt.Fprintln(stdout)
	return nil
}

// Export formats of runExport.
const (
	formatTorch       = "torch"
	formatSafetensors = "safetensors"
	formatONNX        = "onnx"
)

func runExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", "-ckpt DIR -out FILE [-format torch|safetensors|onnx]", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint or run directory")
	out := fs.String("out", "", "output file: new, or a regular file to replace; not inside the run it reads")
	format := fs.String("format", formatTorch, "torch: PyTorch's reference LM layout (standard Transformers only); safetensors: every tensor under Locus's names, reloadable; onnx: a self-contained ONNX model")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageErrorf("missing -out FILE")
	}
	switch *format {
	case formatTorch, formatSafetensors, formatONNX:
	default:
		return usageErrorf("-format %q, want torch, safetensors or onnx", *format)
	}
	ck, err := openCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	if err := checkConfigs(ck); err != nil {
		return err
	}
	if err := checkExportable(ck, *format); err != nil {
		return err
	}
	if err := checkOutFile("-out", *out, ck); err != nil {
		return err
	}
	var n int
	for _, t := range ck.Params {
		n += t.Shape().TotalSize()
	}
	switch *format {
	case formatTorch:
		meta := map[string]string{"format": "pt", train.MetaConfig: string(ck.ModelConfig), train.MetaFamily: ck.Family, train.MetaStep: fmt.Sprint(ck.Step)}
		if err := train.ExportSafetensors(*out, ck.Params, meta); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d tensors, %d parameters, PyTorch's reference LM layout\n", *out, len(ck.Params), n)
	case formatSafetensors:
		if err := train.ExportModel(*out, ck); err != nil {
			return err
		}
		var cfg bytes.Buffer
		if json.Compact(&cfg, ck.ModelConfig) != nil {
			cfg.Reset()
			cfg.Write(ck.ModelConfig)
		}
		fmt.Fprintf(stdout, "wrote %s: %d tensors, %d parameters, Locus's names; model family %s, config %s\n", *out, len(ck.Params), n, ck.Family, cfg.Bytes())
	case formatONNX:
		if ck.Family == "" { // an early checkpoint: the family follows from its task
			name, _, err := checkpointFamily(ck)
			if err != nil {
				return err
			}
			ck.Family = name
		}
		m, _, err := ck.Build(autodiff.Float32)
		if err != nil {
			return err
		}
		e, ok := m.(onnx.Exporter)
		if !ok {
			return fmt.Errorf("%s: model family %s has no ONNX export", ck.Dir, ck.Family)
		}
		om, err := e.ExportONNX()
		if err != nil {
			return fmt.Errorf("%s: onnx export: %w", ck.Dir, err)
		}
		if err := onnx.WriteFile(*out, om); err != nil {
			return err
		}
		var sig []string
		for _, v := range append(om.Inputs(), om.Outputs()...) {
			dims := make([]string, len(v.Dims))
			for i, d := range v.Dims {
				dims[i] = d.String()
			}
			sig = append(sig, fmt.Sprintf("%s %s [%s]", v.Name, v.Type, strings.Join(dims, ", ")))
		}
		fmt.Fprintf(stdout, "wrote %s: ONNX opset 17, %d parameters; inputs and outputs: %s\n", *out, n, strings.Join(sig, "; "))
	}
	return nil
}

// checkExportable returns nil if the checkpoint may be exported in the format, before
// anything is written: its model is rebuilt as eval rebuilds it (a family this program
// knows, a valid configuration, and every tensor a parameter of that model with its
// shape and a float dtype, none missing and none extra), and for -format torch it must
// be the standard Transformer that PyTorch's reference LM computes.
func checkExportable(ck *train.Checkpoint, format string) error {
	if _, err := loadModelOnly(ck); err != nil {
		return err
	}
	if format == formatTorch {
		return torchExportable(ck)
	}
	return nil
}

// torchExportable returns nil if PyTorch's reference LM computes the checkpoint's model
// from its weights, and otherwise an error naming every setting that differs.
func torchExportable(ck *train.Checkpoint) error {
	name, _, err := checkpointFamily(ck)
	if err != nil {
		return err
	}
	if name != transformer.Family {
		return fmt.Errorf("%s: -format torch writes the layout of PyTorch's reference LM (a standard softmax Transformer); a %s model has none: use -format safetensors or -format onnx", ck.Dir, name)
	}
	cfg, err := transformer.ParseConfig(ck.ModelConfig)
	if err != nil {
		return fmt.Errorf("%s: %w", ck.Dir, err)
	}
	if ns := cfg.NonStandard(); len(ns) > 0 {
		return fmt.Errorf("%s: -format torch refused: PyTorch's reference LM would load these weights and compute another function, since the model differs from the standard Transformer in: %s; use -format safetensors or -format onnx", ck.Dir, strings.Join(ns, "; "))
	}
	return nil
}

// errMissingCkpt is the usage error of a command run without its -ckpt: what a
// command whose other flags are all valid returns first (sweep checks eval's flags so).
var errMissingCkpt = fmt.Errorf("%w: missing -ckpt DIR", errUsage)

// openCheckpoint loads a checkpoint, refusing a missing -ckpt.
func openCheckpoint(path string) (*train.Checkpoint, error) {
	if path == "" {
		return nil, errMissingCkpt
	}
	return train.LoadCheckpoint(path)
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", "-ckpt DIR [-plot loss.png] [-attention [-input TEXT | -example N]] [-kernels] [-bandwidths] [-out DIR]", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint or run directory")
	plot := fs.String("plot", "", "also copy the run's loss curve PNG to this file (not inside the run)")
	pics := pictureFlagSet(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := pics.check(*plot); err != nil {
		return err
	}
	if pics.wantsPictures() {
		return inspectPictures(*ckpt, pics, stdout)
	}
	ck, err := openCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	indent := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if len(raw) == 0 || json.Indent(&b, raw, "  ", "  ") != nil {
			return "(none)"
		}
		return b.String()
	}
	family := ck.Family
	if family == "" {
		family = "(not recorded)"
	}
	fmt.Fprintf(stdout, "checkpoint %s\n  step %d, written by locus %s (%s)\n", ck.Dir, ck.Step, ck.Versions.Locus, ck.Versions.Go)
	fmt.Fprintf(stdout, "model family %s, config:\n  %s\ndata config:\n  %s\n", family, indent(ck.ModelConfig), indent(ck.DataConfig))
	cfgErr := checkConfigs(ck)
	if cfgErr != nil {
		fmt.Fprintf(stdout, "invalid configuration: %v\n", cfgErr)
	}
	if len(ck.TrainConfig) > 0 {
		fmt.Fprintf(stdout, "training settings:\n  %s\n", indent(ck.TrainConfig))
	}
	var total int
	for _, t := range ck.Params {
		total += t.Shape().TotalSize()
	}
	fmt.Fprintf(stdout, "tensors (%d, %d parameters):\n", len(ck.Params), total)
	for _, name := range slices.Sorted(maps.Keys(ck.Params)) {
		t := ck.Params[name]
		fmt.Fprintf(stdout, "  %-28s %v %v\n", name, t.Dtype(), t.Shape())
	}
	// The bandwidths need the model; a checkpoint of a family this program does not
	// know is listed without them.
	if ld, err := loadModelOnly(ck); err == nil {
		if bw := ld.Bandwidths(); len(bw) > 0 {
			fmt.Fprintln(stdout, "bandwidths:")
			printBandwidthTable(stdout, bw)
		}
	}
	if len(ck.History) > 0 {
		b, _ := json.Marshal(ck.History[len(ck.History)-1])
		fmt.Fprintf(stdout, "metrics: %s\n", b)
	}
	if *plot != "" {
		if err := checkOutFile("-plot", *plot, ck); err != nil {
			return err
		}
		src := filepath.Join(filepath.Dir(ck.Dir), train.PlotFile)
		png, err := regularfile.ReadFile(src, 64<<20)
		if err != nil {
			return fmt.Errorf("loss curve: %w", err)
		}
		if err := regularfile.WriteFile(*plot, func(w io.Writer) error { _, err := w.Write(png); return err }); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "loss curve: %s\n", *plot)
	}
	if cfgErr != nil {
		// Listed above; the exit status says the checkpoint cannot be used as it is.
		return fmt.Errorf("%s: invalid configuration: %w", ck.Dir, cfgErr)
	}
	return nil
}

// maxSampleN bounds sample -n: the characters are generated one model step each and
// printed at the end, so a mistyped count would run for days without a word.
const maxSampleN = 1 << 20

func runSample(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sample", "-ckpt DIR -prompt TEXT [-n 200] [-temperature 0.8] [-topk 0] [-topp 0]", stderr)
	ckpt := fs.String("ckpt", "", "character LM checkpoint or run directory")
	prompt := fs.String("prompt", "", "text to continue (empty: start at the beginning of a line)")
	n := fs.Int("n", 200, fmt.Sprintf("characters to generate (at most %d)", maxSampleN))
	temp := fs.Float64("temperature", 0.8, "sampling temperature (0: greedy)")
	topK := fs.Int("topk", 0, "keep the k most likely characters (0: all)")
	topP := fs.Float64("topp", 0, "nucleus sampling threshold (0: off)")
	seed := fs.Uint64("seed", 1, "sampling seed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *temp < 0:
		return usageErrorf("-temperature must be >= 0, got %g", *temp)
	case *topK < 0:
		return usageErrorf("-topk must be >= 0, got %d", *topK)
	case *topP < 0 || *topP > 1:
		return usageErrorf("-topp must be in [0, 1], got %g", *topP)
	}
	smp := transformer.Sampling{Temperature: *temp, TopK: *topK, TopP: *topP}
	if err := smp.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	if *n <= 0 || *n > maxSampleN {
		return usageErrorf("-n must be in 1..%d, got %d", maxSampleN, *n)
	}
	ld, err := fromCheckpoint(*ckpt, stderr)
	if err != nil {
		return err
	}
	s, ok := ld.sess.(*transformerSession)
	if !ok || s.data == nil || s.data.Corpus == nil || s.cfg.Arch != transformer.ArchLM {
		return fmt.Errorf("%s: sample needs a character LM checkpoint (task charlm), got %s", ld.ck.Dir, ld.sess.Describe())
	}
	corpus := s.data.Corpus
	start := *prompt
	if start == "" {
		start = "\n" // the start symbol: a line begins after a newline
	}
	ids, err := corpus.Vocab.Encode([]byte(start))
	if err != nil {
		if *prompt == "" {
			return fmt.Errorf("%s: the corpus has no newline to start from: give a -prompt", ld.ck.Dir)
		}
		return fmt.Errorf("-prompt: %w", err)
	}
	dec, err := transformer.NewGenerator(s.model)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	gen, err := dec.GenerateContext(ctx, nil, ids, *n, smp, -1, rand.New(rand.NewPCG(*seed, 0)))
	if ctx.Err() != nil {
		return fmt.Errorf("%s: sampling %w", ld.ck.Dir, errInterrupted)
	}
	if err != nil {
		return err
	}
	text, err := corpus.Vocab.Decode(gen)
	if err != nil {
		return err
	}
	// The vocabulary is bytes: sampled bytes that do not form UTF-8 are shown as U+FFFD.
	out := strings.ToValidUTF8(*prompt+strings.TrimRight(string(text), "\x00"), "\uFFFD")
	fmt.Fprintf(stdout, "%s\n", out)
	return nil
}
