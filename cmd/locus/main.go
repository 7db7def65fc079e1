// Command locus trains, evaluates, samples from, exports and inspects Locus models, and
// runs the classical localization methods on CSV data: the command line of package cli
// over the built-in tasks and model families.
//
// Usage:
//
//	locus <command> [flags]
//
// Run `locus <command> -h` for the flags of each command.
package main

import (
	"os"

	"github.com/locusml/locus/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
