// Command eval_checkpoint loads a toy-task checkpoint written by train_reverse (or by
// `locus train`) and measures its accuracy on fresh data.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

func main() {
	dir := flag.String("ckpt", "runs/example-reverse", "checkpoint or run directory")
	flag.Parse()
	ck, err := train.LoadCheckpoint(*dir)
	check(err)
	var cfg transformer.Config
	check(json.Unmarshal(ck.ModelConfig, &cfg))
	var data struct {
		Task       string              `json:"task"`
		TaskConfig datasets.TaskConfig `json:"task_config"`
	}
	check(json.Unmarshal(ck.DataConfig, &data))
	task, err := datasets.TaskByName(data.Task, data.TaskConfig)
	check(err)
	ps, err := autodiff.NewParams(autodiff.Float32, 0)
	check(err)
	model, err := transformer.New(cfg, ps)
	check(err)
	check(ck.ApplyParams(ps))
	met, err := transformer.TaskMetrics(context.Background(), autodiff.NewModel(ps, model.Builder(), 0), task, datasets.Aligned, 1000, 7)
	check(err)
	fmt.Printf("%s step %d: loss %.4f, token accuracy %.4f, sequence accuracy %.4f\n",
		ck.Dir, ck.Step, met[transformer.MetricLoss], met[transformer.MetricTokenAcc], met[transformer.MetricSeqAcc])
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
