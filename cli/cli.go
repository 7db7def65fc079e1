// Package cli is the locus command line as a library: Main runs it. The command
// cmd/locus is Main over the built-in tasks and model families; a program of your own
// that registers tasks (datasets.RegisterTask) and model families (RegisterFamily)
// before calling Main has every command for them:
//
//	package main
//
//	import (
//		"os"
//
//		"github.com/locusml/locus/cli"
//		_ "example.com/myproj/tasks" // registers the tasks in its init
//	)
//
//	func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
//
// The commands train, evaluate, sample from, export and inspect Locus models, run sweeps
// of train settings × seeds, write run reports, time workloads and run the classical
// localization methods on CSV data. Run `locus <command> -h` for the flags of each
// command.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/internal/simd"
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

// exitNotDefined is the exit status of a command asked for a length at which the model
// or the task is not defined (datasets.ErrLength: eval -seqlen past a learned position
// table, addition at a length that is not 3·digits+3): the checkpoint is fine, the
// question has no answer. locus sweep records such an eval point as not defined.
const exitNotDefined = 3

// Main runs the command line args (without the program's name), writing to stdout and
// stderr, and returns the exit status: 0 on success, 2 for a usage error, 3 where the
// model or task is not defined at the length asked (exitNotDefined), 130 when
// interrupted, 1 for any other error.
func Main(args []string, stdout, stderr io.Writer) int {
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
		fmt.Fprintf(stderr, "locus: unknown command %s (run 'locus -h' for the list)\n", quote.Text(name))
		return 2
	}
	// LOCUS_CPU is read when the program starts, where no error can be returned: an
	// unknown value stops every command here rather than run on the machine's best.
	if err := simd.Err(); err != nil {
		fmt.Fprintf(stderr, "locus %s: %s\n", name, errorText(err))
		return 2
	}
	boundGarbage()
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
		fmt.Fprintf(stderr, "locus %s: %s\n", name, errorText(err))
		return 130
	case errors.Is(err, datasets.ErrLength):
		fmt.Fprintf(stderr, "locus %s: %s\n", name, errorText(err))
		return exitNotDefined
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "locus %s: %s\n", name, errorText(errors.New(strings.TrimPrefix(err.Error(), "usage: "))))
		return 2
	default:
		fmt.Fprintf(stderr, "locus %s: %s\n", name, errorText(err))
		return 1
	}
}

// Bounds of errorText: a message longer than maxErrorBytes keeps its first
// errorHeadBytes and last errorTailBytes.
const (
	maxErrorBytes  = 2048
	errorHeadBytes = 1024
	errorTailBytes = 512
)

// errorText is how every command prints an error: whatever an error echoes from a file
// or an argument, control characters (terminal escape sequences among them) and bytes
// that are not UTF-8 show as Go escapes, and a message longer than maxErrorBytes is cut
// in the middle, so that neither a hostile name nor a 20 MB value reaches the terminal
// as it is. Errors quote what they echo (quote.Text) already; this is the guarantee for
// the ones that do not. Newlines and tabs stay: some errors carry a tool's own output.
func errorText(err error) string {
	msg := err.Error()
	var b strings.Builder
	for i, r := range msg {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(msg[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", msg[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || r == 0x7f:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	msg = b.String()
	if len(msg) <= maxErrorBytes {
		return msg
	}
	head, tail := errorHeadBytes, len(msg)-errorTailBytes
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return msg[:head] + " … (" + strconv.Itoa(tail-head) + " bytes left out) … " + msg[tail:]
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
	if err := checkFinite(fs); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// checkFinite refuses a float flag of fs that holds Inf or NaN, which strconv parses but
// no setting means (and JSON cannot save): every command's flags, and the settings a run
// file or checkpoint sets through them, get this one check before anything runs.
func checkFinite(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(fl *flag.Flag) {
		g, ok := fl.Value.(flag.Getter)
		if !ok || err != nil {
			return
		}
		if v, ok := g.Get().(float64); ok && (math.IsInf(v, 0) || math.IsNaN(v)) {
			err = fmt.Errorf("-%s %v: want a finite number", fl.Name, v)
		}
	})
	return err
}
