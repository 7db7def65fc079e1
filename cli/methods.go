package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/methods"
)

func init() {
	register("meanshift", "cluster the rows of a CSV file with MeanShift", runMeanShift)
	register("nw", "Nadaraya-Watson regression: fit x,y rows of a CSV, predict at query rows", runNW)
}

// maxCSVBytes bounds the CSV files of meanshift and nw.
const maxCSVBytes = 1 << 30

func readCSVFile(path string) ([]string, [][]float64, error) {
	if path == "" {
		return nil, nil, usageErrorf("missing -in FILE")
	}
	f, _, err := regularfile.Open(path, maxCSVBytes)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	header, rows, err := methods.ReadCSVHeader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return header, rows, nil
}

// createOut returns the writer of an -out CSV (stdout for "" and "-"), the function that
// completes the file, and one to defer that removes an incomplete one.
func createOut(path string, stdout io.Writer) (io.Writer, func() error, func(), error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, func() {}, nil
	}
	f, err := regularfile.Create(path)
	if err != nil {
		return nil, nil, nil, err
	}
	return f, f.Commit, func() { f.Close() }, nil
}

func runMeanShift(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("meanshift", "-in points.csv [-out labels.csv] [-kernel flat|gaussian] [-bandwidth H]", stderr)
	in := fs.String("in", "", "input CSV: one point per row, all columns numeric (an optional header line is kept)")
	out := fs.String("out", "-", "output CSV: the input columns plus a cluster label; - for stdout")
	kernel := fs.String("kernel", "flat", "kernel: flat or gaussian")
	bw := fs.Float64("bandwidth", 0, "bandwidth; 0 estimates it from the data")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *bw < 0 {
		return usageErrorf("-bandwidth must be >= 0, got %g", *bw)
	}
	header, rows, err := readCSVFile(*in)
	if err != nil {
		return err
	}
	opts := methods.MeanShiftOptions{Bandwidth: *bw}
	switch *kernel {
	case "flat":
		opts.Kernel = methods.Flat{}
	case "gaussian":
		opts.Kernel = layers.Gaussian{}
	default:
		if k, err := layers.ParseKernel(*kernel); err == nil {
			if err := contentOnly(k); err != nil {
				return err
			}
		}
		return usageErrorf("unknown -kernel %q (want flat or gaussian)", *kernel)
	}
	res, err := methods.MeanShift(rows, opts)
	if err != nil {
		return err
	}
	w, closeOut, discard, err := createOut(*out, stdout)
	if err != nil {
		return err
	}
	defer discard()
	outRows := make([][]float64, len(rows))
	for i, r := range rows {
		outRows[i] = append(append([]float64(nil), r...), float64(res.Labels[i]))
	}
	if header != nil {
		header = append(append([]string(nil), header...), "cluster")
	}
	if err := methods.WriteCSV(w, header, outRows); err != nil {
		return err
	}
	if err := closeOut(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "meanshift: %d points, %d clusters, bandwidth %.4g\n", len(rows), len(res.Centers), res.Bandwidth)
	return nil
}

func runNW(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("nw", "-in train.csv -query x.csv [-out pred.csv] [-kernel gaussian] [-bandwidth H] [-ycols 1]", stderr)
	in := fs.String("in", "", "training CSV: feature columns then -ycols target columns (an optional header line names them)")
	query := fs.String("query", "", "query CSV: feature columns only (default: the training features); an optional header line is kept")
	out := fs.String("out", "-", "output CSV: query columns plus predictions, with a header when the query rows have one; - for stdout")
	kernel := fs.String("kernel", "gaussian", "kernel spec without position factors, e.g. "+strings.Join(contentKernelNames(), ", "))
	bw := fs.Float64("bandwidth", 0, "bandwidth; 0 uses Scott's rule")
	ycols := fs.Int("ycols", 1, "number of target columns at the end of each training row")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *bw < 0 {
		return usageErrorf("-bandwidth must be >= 0, got %g", *bw)
	}
	k, err := layers.ParseKernel(*kernel)
	if err != nil {
		return usageErrorf("-kernel: %v", err)
	}
	if err := contentOnly(k); err != nil {
		return err
	}
	header, rows, err := readCSVFile(*in)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("%s: no data rows", *in)
	}
	if *ycols < 1 || *ycols >= len(rows[0]) {
		return usageErrorf("-ycols %d: the training rows have %d columns", *ycols, len(rows[0]))
	}
	d := len(rows[0]) - *ycols
	x := make([][]float64, len(rows))
	y := make([][]float64, len(rows))
	for i, r := range rows {
		x[i], y[i] = r[:d], r[d:]
	}
	// The output's header, as meanshift's: the echoed rows' header (the query file's, or
	// the training features'), then the targets' names.
	var outHeader []string
	if header != nil {
		outHeader = header[:d]
	}
	targets := make([]string, *ycols)
	for i := range targets {
		targets[i] = fmt.Sprintf("pred_%d", i+1)
		if header != nil {
			targets[i] = header[d+i]
		}
	}
	queries := x
	if *query != "" {
		outHeader, queries, err = readCSVFile(*query)
		if err != nil {
			return err
		}
		for i, q := range queries {
			if len(q) != d {
				return fmt.Errorf("%s: query row %d has %d columns, want %d", *query, i+1, len(q), d)
			}
		}
	}
	// A query no training point reaches is an error, not a silent row of zeros.
	pred, err := methods.NadarayaWatson(x, y, queries, methods.LocalMeanOptions{Kernel: k, Bandwidth: *bw, Empty: methods.EmptyError})
	if errors.Is(err, methods.ErrZeroWeights) {
		return fmt.Errorf("%w: no training point is within the kernel's reach (raise -bandwidth)", err)
	}
	if err != nil {
		return err
	}
	w, closeOut, discard, err := createOut(*out, stdout)
	if err != nil {
		return err
	}
	defer discard()
	outRows := make([][]float64, len(queries))
	for i, q := range queries {
		outRows[i] = append(append([]float64(nil), q...), pred[i]...)
	}
	if outHeader != nil {
		outHeader = append(append([]string(nil), outHeader...), targets...)
	}
	if err := methods.WriteCSV(w, outHeader, outRows); err != nil {
		return err
	}
	return closeOut()
}

// contentOnly refuses a kernel with position factors (layers.HasPositions): the rows
// of a CSV file have no positions, so such a kernel would weigh every row alike.
func contentOnly(k layers.ContentKernel) error {
	if layers.HasPositions(k) {
		return usageErrorf("-kernel %s has position factors, which weigh where a query and a key stand in a sequence: CSV rows have no positions (use a content kernel, e.g. gaussian)", k.Name())
	}
	return nil
}

// contentKernelNames returns the forms of the spec language whose example has no
// position factors.
func contentKernelNames() []string {
	var names []string
	for _, f := range layers.KernelForms() {
		if k, err := layers.ParseKernel(f.Example); err == nil && !layers.HasPositions(k) {
			names = append(names, f.Name)
		}
	}
	return names
}
