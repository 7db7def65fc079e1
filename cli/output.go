package cli

import (
	"os"
	"path/filepath"

	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/train"
)

// checkOutsideRun refuses an output path (the value of flag) that lies inside the
// checkpoint ck or the run directory holding it: a command that reads a run writes its
// results elsewhere, so that no output can replace a checkpoint's files, LATEST or the
// run's logs. Links and second names of the folders are seen through.
func checkOutsideRun(flag, out string, ck *train.Checkpoint) error {
	for _, dir := range runFolders(ck.Dir) {
		if regularfile.Within(out, dir) {
			what := "the checkpoint"
			if dir != filepath.Clean(ck.Dir) {
				what = "the run directory"
			}
			return usageErrorf("%s %s is inside %s %s that -ckpt reads: write it elsewhere, so that no file of the run is replaced", flag, out, what, dir)
		}
	}
	return nil
}

// checkOutFile is checkOutsideRun for an output file, which must also name nothing yet
// or a regular file (regularfile.CheckTarget): checked before the work that fills it,
// and again when it is written.
func checkOutFile(flag, out string, ck *train.Checkpoint) error {
	if err := checkOutsideRun(flag, out, ck); err != nil {
		return err
	}
	return regularfile.CheckTarget(out)
}

// runFolders returns the checkpoint directory ckDir and, when it is a checkpoint of a
// run (step-N or best, or beside a LATEST or RunFile), the run directory.
func runFolders(ckDir string) []string {
	dir := filepath.Clean(ckDir)
	parent := filepath.Dir(dir)
	if _, ok := parseStepName(filepath.Base(dir)); ok || filepath.Base(dir) == train.BestDir {
		return []string{dir, parent}
	}
	for _, f := range []string{train.LatestFile, train.RunFile} {
		if _, err := os.Lstat(filepath.Join(parent, f)); err == nil {
			return []string{dir, parent}
		}
	}
	return []string{dir}
}
