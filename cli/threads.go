package cli

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
)

// threadCount is the value of every command's -threads flag, and of a run's saved
// "threads" setting: GOMAXPROCS while the command runs, 0 to leave it as it is. Set
// refuses what the runtime cannot take (a count past its int32, or so many threads that
// the system cannot start them) with the same line for a flag and a run file.
type threadCount int

// maxThreadsPerCPU bounds -threads by the machine: more threads than that many per CPU
// only add scheduling, and beyond maxThreads the runtime or the system fails (fatal
// "procresize: invalid arg", or pthread_create failing).
const (
	maxThreadsPerCPU = 64
	maxThreads       = 1 << 16
)

// threadLimit is the largest thread count this machine accepts.
func threadLimit() int { return min(maxThreadsPerCPU*runtime.NumCPU(), maxThreads) }

// check reports a count outside 0..threadLimit().
func (n threadCount) check() error { return checkThreads(int64(n)) }

func checkThreads(n int64) error {
	if n < 0 || n > int64(threadLimit()) {
		return fmt.Errorf("%d is not in 0..%d (0 leaves GOMAXPROCS as it is; at most %d threads per CPU, and this machine has %d)",
			n, threadLimit(), maxThreadsPerCPU, runtime.NumCPU())
	}
	return nil
}

// String returns the count (flag.Value).
func (n *threadCount) String() string { return strconv.Itoa(int(*n)) }

// Set parses and checks a count (flag.Value).
func (n *threadCount) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	if err := checkThreads(v); err != nil {
		return err
	}
	*n = threadCount(v)
	return nil
}

// apply sets GOMAXPROCS to n when it is not 0, and returns the function that restores
// the previous value.
func (n threadCount) apply() (restore func()) {
	if n <= 0 {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(int(n))
	return func() { runtime.GOMAXPROCS(prev) }
}
