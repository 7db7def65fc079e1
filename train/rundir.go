package train

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// RunFile marks a run directory: Run writes it into Dir once it holds the lock. Run
// writes only into a Dir that is new, empty, or a run directory (it holds a RunFile, or
// a LatestFile as the runs of earlier versions do), so that a Dir naming some other
// folder never has its own files (a config.json, a metrics.jsonl) replaced.
const RunFile = "LOCUS-RUN"

// ErrNotRunDir is wrapped by the error of a Loop whose Dir is a folder that holds
// files but is not a run directory.
var ErrNotRunDir = errors.New("not a run directory")

// notRunError is an error that is ErrNotRunDir without repeating it in its text.
type notRunError string

func (e notRunError) Error() string        { return string(e) }
func (e notRunError) Is(target error) bool { return target == ErrNotRunDir }

// checkRunDir creates dir if needed and refuses it if it holds files and is not a run
// directory. Before the lock, a regular LockFile (left by a run killed before it wrote
// its RunFile) and temporary files do not count.
func checkRunDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	var names []string
	hasRunFile, hasLatest := false, false
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) || (e.Name() == LockFile && e.Type().IsRegular()) {
			continue
		}
		switch e.Name() {
		case RunFile:
			hasRunFile = e.Type().IsRegular()
		case LatestFile:
			hasLatest = e.Type().IsRegular()
		}
		names = append(names, e.Name())
	}
	if !hasRunFile && !hasLatest && len(names) > 0 {
		held := strings.Join(names[:min(len(names), 3)], ", ")
		if len(names) > 3 {
			held += fmt.Sprintf(" and %d more", len(names)-3)
		}
		return notRunError(fmt.Sprintf("train: %s is not empty and is not a Locus run directory (it holds %s, and no %s or %s): train into a new or empty folder",
			dir, quoteNames(held), RunFile, LatestFile))
	}
	return nil
}

// markRunDir writes dir's RunFile if it has none. It is called under the lock, after
// cleanStale, which would remove the temporary file of another process's write.
func markRunDir(dir string) error {
	if info, err := os.Lstat(filepath.Join(dir, RunFile)); err == nil && info.Mode().IsRegular() {
		return nil
	}
	err := writeFileAtomic(filepath.Join(dir, RunFile), func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "a Locus run directory (format %d): see the train package's documentation\n", FormatVersion)
		return err
	})
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// quoteNames returns names as they may be printed on one line.
func quoteNames(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}
