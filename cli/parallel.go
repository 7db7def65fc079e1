package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/locusml/locus/dist"
	"github.com/locusml/locus/train"
)

// exitError ends the command with its exit status and no message: a process of a
// data-parallel run other than rank 0, whose error rank 0 reports.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// joinRun joins the processes of a data-parallel run (one, without mpirun) and returns
// them with the writers of this process: only rank 0 prints.
func joinRun(stdout, stderr io.Writer) (*dist.Comm, io.Writer, io.Writer, error) {
	comm, err := dist.Init()
	if err != nil {
		return nil, nil, nil, err
	}
	if !comm.Root() {
		stdout, stderr = io.Discard, io.Discard
	}
	return comm, stdout, stderr, nil
}

// leaveRun ends this process's part of the run. After an error the process leaves the
// MPI job without finalizing it, so that mpirun ends the other processes; the errors
// every process meets at the same step (divergence, processes out of sync,
// interruption) are reported by rank 0 only.
func leaveRun(comm *dist.Comm, err error) error {
	if err == nil {
		return comm.Finalize()
	}
	collective := errors.Is(err, train.ErrDiverged) || errors.Is(err, train.ErrOutOfSync) ||
		errors.Is(err, context.Canceled) || errors.Is(err, errInterrupted)
	if !comm.Root() && collective {
		if errors.Is(err, errInterrupted) {
			return exitError{130}
		}
		return exitError{1}
	}
	if comm.Size() > 1 {
		return fmt.Errorf("rank %d of %d: %w", comm.Rank(), comm.Size(), err)
	}
	return err
}

// reportReduce prints the cost of the gradient all-reduce of a data-parallel run.
func reportReduce(w io.Writer, comm *dist.Comm, sum *train.Summary) {
	st := comm.Stats()
	if st.Calls == 0 {
		return
	}
	per := st.Time / time.Duration(st.Calls)
	fmt.Fprintf(w, "all-reduce: %d processes, %d steps, %.1f KiB per step, %.3f ms per step (%.1f%% of the run)\n",
		comm.Size(), st.Calls, float64(st.Bytes)/float64(st.Calls)/1024, per.Seconds()*1e3, 100*st.Time.Seconds()/sum.Elapsed.Seconds())
}
