// Command eval_checkpoint loads a Transformer checkpoint of a toy task, written by
// train_reverse or by `locus train`, rebuilds the model and its data from the configs the
// checkpoint records, and measures the model on fresh data.
//
//	go run ./examples/train_reverse
//	go run ./examples/eval_checkpoint -ckpt runs/example-reverse
//
// It exits with status 1 when the sequence accuracy is below -min (default 0.99).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

func main() {
	dir := flag.String("ckpt", "runs/example-reverse", "checkpoint or run directory")
	n := flag.Int("n", 1000, "fresh validation sequences")
	minAcc := flag.Float64("min", 0.99, "the sequence accuracy the model must reach")
	flag.Parse()
	log.SetFlags(0)
	met, ck, err := evaluate(*dir, *n, 7)
	if err != nil {
		log.Fatal(err)
	}
	acc := met[transformer.MetricSeqAcc]
	fmt.Printf("%s step %d: loss %.4f, token accuracy %.4f, sequence accuracy %.4f\n",
		ck.Dir, ck.Step, met[transformer.MetricLoss], met[transformer.MetricTokenAcc], acc)
	if acc < *minAcc {
		log.Fatalf("sequence accuracy %.4f is below %g", acc, *minAcc)
	}
}

// evaluate loads the checkpoint in dir and returns the metrics of its model on n fresh
// sequences drawn with seed.
func evaluate(dir string, n int, seed uint64) (train.Metrics, *train.Checkpoint, error) {
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		return nil, nil, err
	}
	if ck.Family != "" && ck.Family != transformer.Family { // "": saved before families were recorded
		return nil, nil, fmt.Errorf("%s: a checkpoint of family %q, want %q", ck.Dir, ck.Family, transformer.Family)
	}
	cfg, err := transformer.ParseConfig(ck.ModelConfig)
	if err != nil {
		return nil, nil, err
	}
	var dataCfg transformer.DataConfig
	if err := train.DecodeConfig(ck.DataConfig, &dataCfg); err != nil {
		return nil, nil, fmt.Errorf("%s: data config: %w", ck.Dir, err)
	}
	data, err := dataCfg.Open()
	if err != nil {
		return nil, nil, err
	}
	if data.Task == nil {
		return nil, nil, fmt.Errorf("%s: a model of the %s corpus, want a toy task", ck.Dir, dataCfg.Task)
	}
	ps, err := autodiff.NewParams(autodiff.Float32, 0)
	if err != nil {
		return nil, nil, err
	}
	model, err := transformer.New(cfg, ps)
	if err != nil {
		return nil, nil, err
	}
	if err := ck.ApplyParams(ps); err != nil {
		return nil, nil, err
	}
	run := autodiff.NewModel(ps, model.Builder(), 0)
	met, err := data.Metrics(context.Background(), run, cfg.Arch, n, seed)
	return met, ck, err
}
