package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

func init() {
	register("eval", "evaluate a checkpoint on fresh validation data", runEval)
	register("export", "write a checkpoint's weights as a safetensors file (PyTorch names)", runExport)
	register("inspect", "list a checkpoint's tensors, configuration and metrics", runInspect)
	register("sample", "generate text from a character LM checkpoint", runSample)
}

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", "-ckpt DIR [-n 1000] [-seed 12345] [-json]", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint or run directory")
	n := fs.Int("n", 1000, "validation examples (charlm: windows)")
	seed := fs.Uint64("seed", 12345, "seed of the fresh validation data")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n <= 0 {
		return usageErrorf("-n must be > 0, got %d", *n)
	}
	ld, err := fromCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	met, err := ld.sess.metrics(ld.run, *n, *seed)
	if err != nil {
		return fmt.Errorf("%s: %w", ld.ck.Dir, err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(met)
	}
	fmt.Fprintf(stdout, "%s (step %d, %s):", ld.ck.Dir, ld.ck.Step, ld.sess.describe())
	for _, k := range sortedKeys(met) {
		fmt.Fprintf(stdout, "  %s %.4f", k, met[k])
	}
	fmt.Fprintln(stdout)
	return nil
}

func runExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", "-ckpt DIR -out model.safetensors", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint or run directory")
	out := fs.String("out", "", "output safetensors file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageErrorf("missing -out FILE")
	}
	ck, err := openCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	meta := map[string]string{"format": "pt", "locus_config": string(ck.ModelConfig), "locus_family": ck.Family, "step": fmt.Sprint(ck.Step)}
	if err := train.ExportSafetensors(*out, ck.Params, meta); err != nil {
		return err
	}
	note := ""
	if name, _, err := checkpointFamily(ck); err == nil && name == transformer.Family {
		if cfg, err := transformer.ParseConfig(ck.ModelConfig); err == nil && !cfg.Standard() {
			note = " (not the standard Transformer, so PyTorch's reference LM computes another function: " + strings.Join(cfg.NonStandard(), "; ") + ")"
		}
	}
	var n int
	for _, t := range ck.Params {
		n += t.Shape().TotalSize()
	}
	fmt.Fprintf(stdout, "wrote %s: %d tensors, %d parameters%s\n", *out, len(ck.Params), n, note)
	return nil
}

// openCheckpoint loads a checkpoint, refusing a missing -ckpt.
func openCheckpoint(path string) (*train.Checkpoint, error) {
	if path == "" {
		return nil, usageErrorf("missing -ckpt DIR")
	}
	return train.LoadCheckpoint(path)
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", "-ckpt DIR [-plot loss.png] [-attention [-input TEXT | -example N]] [-kernels] [-bandwidths] [-out DIR]", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint or run directory")
	plot := fs.String("plot", "", "also copy the run's loss curve PNG to this file")
	pics := pictureFlagSet(fs)
	if err := parseFlags(fs, args); err != nil {
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
	if len(ck.TrainConfig) > 0 {
		fmt.Fprintf(stdout, "training settings:\n  %s\n", indent(ck.TrainConfig))
	}
	var total int
	for _, t := range ck.Params {
		total += t.Shape().TotalSize()
	}
	fmt.Fprintf(stdout, "tensors (%d, %d parameters):\n", len(ck.Params), total)
	for _, name := range sortedKeys(ck.Params) {
		t := ck.Params[name]
		fmt.Fprintf(stdout, "  %-28s %v %v\n", name, t.Dtype(), t.Shape())
	}
	// The bandwidths need the model; a checkpoint of a family this program does not
	// know is listed without them.
	if ld, err := loadModelOnly(ck); err == nil {
		if bw := ld.bandwidths(); len(bw) > 0 {
			fmt.Fprintln(stdout, "bandwidths:")
			printBandwidthTable(stdout, bw)
		}
	}
	if len(ck.History) > 0 {
		b, _ := json.Marshal(ck.History[len(ck.History)-1])
		fmt.Fprintf(stdout, "metrics: %s\n", b)
	}
	if *plot != "" {
		src := filepath.Join(filepath.Dir(ck.Dir), train.PlotFile)
		png, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("loss curve: %w", err)
		}
		if err := os.WriteFile(*plot, png, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "loss curve: %s\n", *plot)
	}
	return nil
}

func runSample(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sample", "-ckpt DIR -prompt TEXT [-n 200] [-temperature 0.8] [-topk 0] [-topp 0]", stderr)
	ckpt := fs.String("ckpt", "", "character LM checkpoint or run directory")
	prompt := fs.String("prompt", "", "text to continue (empty: start at the beginning of a line)")
	n := fs.Int("n", 200, "characters to generate")
	temp := fs.Float64("temperature", 0.8, "sampling temperature (0: greedy)")
	topK := fs.Int("topk", 0, "keep the k most likely characters (0: all)")
	topP := fs.Float64("topp", 0, "nucleus sampling threshold (0: off)")
	seed := fs.Uint64("seed", 1, "sampling seed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	smp := transformer.Sampling{Temperature: *temp, TopK: *topK, TopP: *topP}
	if err := smp.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	if *n <= 0 {
		return usageErrorf("-n must be > 0, got %d", *n)
	}
	ld, err := fromCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	s, ok := ld.sess.(*transformerSession)
	if !ok || s.data == nil || s.data.Corpus == nil || s.cfg.Arch != transformer.ArchLM {
		return fmt.Errorf("%s: sample needs a character LM checkpoint (task charlm), got %s", ld.ck.Dir, ld.sess.describe())
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
	gen, err := dec.Generate(nil, ids, *n, smp, -1, rand.New(rand.NewPCG(*seed, 0)))
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
