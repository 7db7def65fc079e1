// Command locus trains, evaluates, samples from, exports and inspects Locus models, and
// runs the classical localization methods on CSV data.
//
// Usage:
//
//	locus <command> [flags]
//
// Run `locus <command> -h` for the flags of each command.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand: it parses its own flags from args.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	commands[name] = command{summary: summary, run: run}
}

// errUsage marks an error in the command line (exit status 2, like the flag package).
var errUsage = errors.New("usage")

func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Locus: neural networks built from localization methods.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: locus <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'locus <command> -h' for a command's flags.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" || name == "help" {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "locus: unknown command %q (run 'locus -h' for the list)\n", name)
		return 2
	}
	err := cmd.run(args[1:], stdout, stderr)
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errInterrupted):
		fmt.Fprintf(stderr, "locus %s: %v\n", name, err)
		return 130
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "locus %s: %s\n", name, strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	default:
		fmt.Fprintf(stderr, "locus %s: %v\n", name, err)
		return 1
	}
}

// newFlagSet returns a flag set that reports errors instead of exiting, with a usage
// text naming the command, printed for -h only: a bad flag gets one line.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("locus "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: locus %s %s\n\nFlags:\n", name, synopsis)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parseFlags parses args; a parse error becomes a one-line usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	printUsage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = printUsage
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage()
		return err
	case err != nil:
		return usageErrorf("%v (run '%s -h' for the flags)", err, fs.Name())
	case fs.NArg() > 0:
		return usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
