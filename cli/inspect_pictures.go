package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/locusml/locus/internal/regularfile"
)

// pictureFlags are inspect's flags for pictures.
type pictureFlags struct {
	attention  bool
	kernels    bool
	bandwidths bool
	input      string
	example    int // −1: not given
	out        string
}

// wantsPictures reports whether inspect should draw rather than list.
func (f *pictureFlags) wantsPictures() bool { return f.attention || f.kernels || f.bandwidths }

// check refuses a flag that the mode the flags choose would ignore: the input of
// -attention without it, -out without a picture to write, -plot (a flag of the
// listing, given as plot) with the pictures.
func (f *pictureFlags) check(plot string) error {
	switch {
	case f.input != "" && f.example >= 0:
		return usageErrorf("give -input or -example, not both")
	case !f.attention && f.input != "":
		return usageErrorf("-input goes with -attention (the input whose attention it draws): add -attention -out DIR")
	case !f.attention && f.example >= 0:
		return usageErrorf("-example goes with -attention (the example whose attention it draws): add -attention -out DIR")
	case f.out == "" && (f.attention || f.kernels):
		return usageErrorf("missing -out DIR (the folder for the pictures)")
	case f.out != "" && !f.attention && !f.kernels:
		return usageErrorf("-out goes with -attention or -kernels (the folder for their pictures)")
	case plot != "" && f.wantsPictures():
		return usageErrorf("-plot goes with the checkpoint's listing, not with -attention, -kernels or -bandwidths: run inspect -plot on its own")
	}
	return nil
}

// inspectPictures draws what the flags ask for into f.out: attention.png and
// attention.json (the matrices drawn), kernels.png. Everything is rendered before the
// first file is written, and each file is written atomically, so a bad input or an
// unwritable directory leaves nothing half-written.
func inspectPictures(ckpt string, f *pictureFlags, stdout io.Writer) error {
	if err := f.check(""); err != nil {
		return err
	}
	ld, err := fromCheckpoint(ckpt, os.Stderr)
	if err != nil {
		return err
	}
	if f.out != "" && (f.attention || f.kernels) {
		if err := checkOutsideRun("-out", f.out, ld.ck); err != nil {
			return err
		}
	}
	if f.bandwidths {
		if err := printBandwidths(stdout, ld); err != nil {
			return err
		}
	}
	files := map[string][]byte{}
	title := fmt.Sprintf("%s, step %d: %s", runName(ld.ck.Dir), ld.ck.Step, ld.sess.Describe())
	if f.attention {
		as, ok := attentionOf(ld.sess)
		if !ok {
			return fmt.Errorf("%s: the model family %s has no attention to draw", ld.ck.Dir, ld.family)
		}
		example := f.example
		if f.input == "" && example < 0 {
			example = 0
		}
		view, err := as.attention(ld.run, f.input, example)
		if err != nil {
			return err
		}
		png, err := renderAttention(view, title+"\ninput: "+truncate(view.Input, 90))
		if err != nil {
			return fmt.Errorf("draw attention: %w", err)
		}
		js, err := json.MarshalIndent(view, "", " ")
		if err != nil {
			return err
		}
		files["attention.png"], files["attention.json"] = png, js
	}
	if f.kernels {
		png, err := renderKernels(ld, title)
		if err != nil {
			return err
		}
		files["kernels.png"] = png
	}
	if len(files) == 0 {
		return nil
	}
	if err := writeFilesAtomic(f.out, files); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(f.out, n))
	}
	return nil
}

// runName names a run by its directory: the run directory of a step checkpoint.
func runName(ckDir string) string {
	dir := filepath.Clean(ckDir)
	if _, ok := parseStepName(filepath.Base(dir)); ok || filepath.Base(dir) == "best" {
		dir = filepath.Dir(dir)
	}
	return filepath.Base(dir)
}

func parseStepName(name string) (int, bool) {
	var n int
	if _, err := fmt.Sscanf(name, "step-%d", &n); err != nil {
		return 0, false
	}
	return n, true
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// writeFilesAtomic creates dir if needed and writes every file into it as
// regularfile.WriteFile does (a target that is not a regular file is refused); every
// target is checked before the first is written, and on an error it removes what it
// wrote.
func writeFilesAtomic(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output folder: %w", unwrapPath(err))
	}
	for name := range files {
		if err := regularfile.CheckTarget(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	var written []string
	for name, data := range files {
		dst := filepath.Join(dir, name)
		if err := regularfile.WriteFile(dst, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			for _, p := range written {
				os.Remove(p)
			}
			return fmt.Errorf("output folder %s: %w", dir, unwrapPath(err))
		}
		written = append(written, dst)
	}
	return nil
}

// unwrapPath shortens a *PathError to its path and cause, for a one-line message.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// pictureFlagSet defines the picture flags of inspect on fs.
func pictureFlagSet(fs *flag.FlagSet) *pictureFlags {
	f := &pictureFlags{}
	fs.BoolVar(&f.attention, "attention", false, "draw the local-mean weights of every layer and head for one input (attention.png, attention.json)")
	fs.BoolVar(&f.bandwidths, "bandwidths", false, "print the learned bandwidths by layer and head (per-query ones: their distribution on a validation batch)")
	fs.BoolVar(&f.kernels, "kernels", false, "draw each layer's kernel profile at its learned bandwidths (kernels.png)")
	fs.StringVar(&f.input, "input", "", "the input of -attention: text for a character LM, token ids separated by spaces for a task")
	f.example = -1
	fs.Var((*optionalIndex)(&f.example), "example", "the input of -attention: the `N`-th validation example (a task: 0..999 of the examples drawn with eval's seed; a corpus: the N-th window of its validation text; a DAE: test image N); default 0 without -input")
	fs.StringVar(&f.out, "out", "", "folder for the pictures")
	return f
}

// optionalIndex is an int flag that is −1 until set, to a value >= 0. Its String is
// empty for 0 and below, so that -h shows no default.
type optionalIndex int

func (o *optionalIndex) String() string {
	if o == nil || *o <= 0 {
		return ""
	}
	return strconv.Itoa(int(*o))
}

func (o *optionalIndex) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want an index >= 0")
	}
	*o = optionalIndex(n)
	return nil
}
