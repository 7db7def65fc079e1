package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
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
		errors.Is(err, context.Canceled) || errors.Is(err, errInterrupted) || errors.Is(err, errOtherRun)
	if !comm.Root() && collective {
		if errors.Is(err, errInterrupted) {
			return exitError{130}
		}
		return exitError{1}
	}
	if comm.Size() > 1 && !errors.Is(err, errOtherRun) { // errOtherRun names the ranks
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

// wholeBatcher is a Session whose batches cannot be split across processes (a localized
// DAE whose kernel has position factors: dae.Model.WholeBatches).
type wholeBatcher interface {
	WholeBatches() bool
}

// splitNote says, for the header of a data-parallel run, how the processes share each
// batch of batch examples.
func splitNote(s Session, batch, processes int) string {
	if w, ok := s.(wholeBatcher); ok && w.WholeBatches() {
		return fmt.Sprintf("rank 0 computes each batch of %d whole: the kernel's position factors make an image's place in its batch matter", batch)
	}
	if idle := processes - batch; idle > 0 {
		return fmt.Sprintf("batch %d split across them: %d of them idle at each step", batch, idle)
	}
	return fmt.Sprintf("batch %d split across them", batch)
}

// errOtherRun is wrapped by the error of a data-parallel run whose processes do not all
// train rank 0's run (checkSameRun).
var errOtherRun = errors.New("the processes do not train the same run")

// dataDigester is a Session that can digest its data beyond what its DataConfig records
// (the DAE's MNIST images, of which the configuration holds only the folder).
type dataDigester interface {
	DataDigest() []byte
}

// perProcess are the training settings that may differ between the processes of a run:
// they share out each one's CPUs.
var perProcess = map[string]bool{"threads": true, "shards": true}

// checkSameRun stops every process of a data-parallel run, with one error naming the
// ranks and what differs, unless all have rank 0's model family, model and data
// configurations (the corpus digest and vocabulary, the task's configuration, the
// MNIST images' digest), training settings, data position and step: processes started
// with the same flags in different working folders read different files. It runs
// before the first collective whose sizes depend on these (the parameters' broadcast).
func checkSameRun(comm *dist.Comm, famName string, modelCfg json.RawMessage, s Session, data train.Data, step int, st *trainSettings) error {
	if comm.Size() == 1 {
		return nil
	}
	values := map[string][]byte{"model_family": []byte(famName), "step": []byte(strconv.Itoa(step))}
	// Each key of a configuration separately, so that the error names the field.
	add := func(section string, raw []byte, skip map[string]bool) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			values[section] = raw
			return
		}
		for k, v := range obj {
			if !skip[k] {
				values[section+"."+k] = v
			}
		}
	}
	add("model_config", modelCfg, nil)
	dataCfg, err := json.Marshal(s.DataConfig())
	if err != nil {
		return err
	}
	add("data_config", dataCfg, nil)
	settings, err := json.Marshal(st)
	if err != nil {
		return err
	}
	add("train", settings, perProcess)
	if d, ok := s.(dataDigester); ok {
		values["data digest"] = d.DataDigest()
	}
	if state, err := data.State(); err == nil {
		values["data position"] = state
	}
	differ, err := comm.Mismatches(values)
	if err != nil {
		return fmt.Errorf("compare the processes' runs: %w", err)
	}
	if len(differ) == 0 {
		return nil
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(differ)) {
		parts = append(parts, fmt.Sprintf("rank %d differs from rank 0 in %s", r, strings.Join(differ[r], ", ")))
	}
	return fmt.Errorf("%w: %s (every process must read the same files with the same flags; a relative path is read in each process's working folder)", errOtherRun, strings.Join(parts, "; "))
}
