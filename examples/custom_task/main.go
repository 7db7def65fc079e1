// Command localmax is the locus command line with a task and a model family of its own:
// the task "localmax" (predict the largest symbol within two positions) and the model
// family "kattn" (one kernel-attention layer and a linear read-out), both registered by
// package localmax. Every locus command works on them:
//
//	go build -o mylocus .
//	./mylocus train -model kattn -task localmax -bandwidth head -steps 300 -out runs/lm
//	./mylocus eval -ckpt runs/lm
//	./mylocus inspect -ckpt runs/lm -attention -kernels -bandwidths -out pics
//	./mylocus report -ckpt runs/lm -out report.html
//	./mylocus export -ckpt runs/lm -format onnx -out lm.onnx
//
// The built-in tasks and families (the Transformer, the DAEs) are there too.
package main

import (
	"os"

	"github.com/locusml/locus/cli"

	_ "example.com/localmax/localmax" // registers the task and the family in its init
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
