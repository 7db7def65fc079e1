package main

import (
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
	s, ck, err := fromCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	met, err := s.metrics(*n, *seed)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(met)
	}
	fmt.Fprintf(stdout, "%s (step %d, task %s):", ck.Dir, ck.Step, s.data.Task)
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
	s, ck, err := fromCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	cfg, _ := json.Marshal(s.modelConfig())
	meta := map[string]string{"format": "pt", "locus_config": string(cfg), "step": fmt.Sprint(ck.Step)}
	if err := train.ExportSafetensors(*out, train.ParamTensors(s.params), meta); err != nil {
		return err
	}
	note := ""
	if s.dae == nil && !s.cfg.Standard() {
		note = " (not the standard configuration: PyTorch's reference LM cannot load every tensor)"
	}
	fmt.Fprintf(stdout, "wrote %s: %d tensors, %d parameters%s\n", *out, s.params.Len(), s.params.NumElements(), note)
	return nil
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", "-ckpt DIR [-plot loss.png]", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint or run directory")
	plot := fs.String("plot", "", "also copy the run's loss curve PNG to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, ck, err := fromCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	cfg, _ := json.MarshalIndent(s.modelConfig(), "  ", "  ")
	fmt.Fprintf(stdout, "checkpoint %s\n  step %d, written by locus %s (%s)\n", ck.Dir, ck.Step, ck.Versions.Locus, ck.Versions.Go)
	fmt.Fprintf(stdout, "  task %s, batch %d, seed %d\nmodel config:\n  %s\n", s.data.Task, s.data.Batch, s.data.Seed, cfg)
	fmt.Fprintf(stdout, "tensors (%d, %d parameters):\n", s.params.Len(), s.params.NumElements())
	for _, name := range s.params.SortedNames() {
		p := s.params.Get(name)
		fmt.Fprintf(stdout, "  %-28s %v %v\n", name, p.Dtype(), p.Shape())
	}
	if bw := s.bandwidths(); len(bw) > 0 {
		fmt.Fprintln(stdout, "bandwidths:")
		for _, k := range sortedKeys(bw) {
			fmt.Fprintf(stdout, "  %s %.4g\n", k, bw[k])
		}
	}
	if len(ck.History) > 0 {
		last := ck.History[len(ck.History)-1]
		b, _ := json.Marshal(last)
		fmt.Fprintf(stdout, "metrics (%d records), last: %s\n", len(ck.History), b)
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
	prompt := fs.String("prompt", "", "text to continue")
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
	s, _, err := fromCheckpoint(*ckpt)
	if err != nil {
		return err
	}
	if s.corpus == nil || s.cfg.Arch != transformer.ArchLM {
		return fmt.Errorf("%s: sample needs a character LM checkpoint (task charlm), got task %s", *ckpt, s.data.Task)
	}
	ids, err := s.corpus.Vocab.Encode([]byte(*prompt))
	if err != nil {
		return fmt.Errorf("-prompt: %w", err)
	}
	if len(ids) == 0 {
		return usageErrorf("-prompt must not be empty")
	}
	dec, err := transformer.NewGenerator(s.model)
	if err != nil {
		return err
	}
	gen, err := dec.Generate(nil, ids, *n, smp, -1, rand.New(rand.NewPCG(*seed, 0)))
	if err != nil {
		return err
	}
	text, err := s.corpus.Vocab.Decode(gen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s%s\n", *prompt, strings.TrimRight(string(text), "\x00"))
	return nil
}
