package dist

import (
	"errors"
	"fmt"
	"hash/crc64"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"github.com/locusml/locus/autodiff"
)

// BucketBytes is the largest buffer AverageGrads reduces in one call.
const BucketBytes = 32 << 20

// ErrNoMPI is wrapped by the error of Init when the process was asked to join an MPI
// job but the program was built without MPI.
var ErrNoMPI = errors.New("this program was built without MPI: rebuild it with 'go build -tags mpi' (needs Open MPI: apt-get install libopenmpi-dev openmpi-bin) to train on several processes")

// Comm is the group of processes of a run: its rank in the group and the group's
// size. The zero value is not usable; call Init or Single.
type Comm struct {
	rank, size int
	mpi        bool // joined through MPI: collectives are MPI calls
	finalized  bool
	grads      *buckets // AverageGrads' buffers, for the last Params seen
	stats      Stats
}

// Stats counts the gradient averaging of a Comm.
type Stats struct {
	Calls int           // AverageGrads calls that reduced (more than one process)
	Bytes int64         // bytes all-reduced by them, per process
	Time  time.Duration // wall time in them, packing and unpacking included
}

// Stats returns the counts of AverageGrads since Init.
func (c *Comm) Stats() Stats { return c.stats }

// Single returns a Comm of one process: rank 0 of 1, whose collectives change nothing.
func Single() *Comm { return &Comm{rank: 0, size: 1} }

// Init joins the job this process was started in: the MPI job of mpirun in the mpi
// build, one process otherwise (see the package comment). Call it once, before any other
// MPI use, and Finalize at the end of a successful run.
func Init() (*Comm, error) {
	if !launched() {
		if asked() {
			if !Built {
				return nil, fmt.Errorf("dist: LOCUS_MPI is set: %w", ErrNoMPI)
			}
			return nil, errors.New("dist: LOCUS_MPI is set but this process was not started by mpirun (run it as 'mpirun -np N ...')")
		}
		return Single(), nil
	}
	if !Built {
		if n := launcherSize(); n > 1 {
			return nil, fmt.Errorf("dist: started as one of %d processes: %w", n, ErrNoMPI)
		}
		return Single(), nil
	}
	rank, size, err := mpiInit()
	if err != nil {
		return nil, fmt.Errorf("dist: %w", err)
	}
	shareCPUs()
	return &Comm{rank: rank, size: size, mpi: true}, nil
}

// shareCPUs gives each of the processes on this machine its share of the CPUs it may
// run on, unless GOMAXPROCS is set: P processes of GOMAXPROCS = all CPUs each would
// fight over them.
func shareCPUs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if local, err := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_LOCAL_SIZE")); err == nil && local > 1 {
		runtime.GOMAXPROCS(max(1, runtime.NumCPU()/local))
	}
}

// launched reports whether an MPI launcher (mpirun, or a PMI/PMIx resource manager)
// started this process.
func launched() bool {
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

// launcherSize is the number of processes the launcher says it started, or 0.
func launcherSize() int {
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
			return n
		}
	}
	if os.Getenv("PMIX_RANK") != "" {
		return 2 // PMIx gives the size through its API only: assume a job
	}
	return 0
}

// asked reports whether LOCUS_MPI asks for MPI.
func asked() bool {
	v := os.Getenv("LOCUS_MPI")
	return v != "" && v != "0" && v != "false"
}

// Rank returns the process's rank, 0 ≤ rank < Size().
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of processes.
func (c *Comm) Size() int { return c.size }

// Root reports whether this is rank 0, the process that writes and prints.
func (c *Comm) Root() bool { return c.rank == 0 }

// MPI reports whether the Comm joined an MPI job (in the mpi build, under mpirun).
func (c *Comm) MPI() bool { return c.mpi }

// AllReduce replaces vals, on every process, by their sums over all processes.
func (c *Comm) AllReduce(vals []float64) error {
	if !c.mpi || len(vals) == 0 {
		return nil
	}
	return mpiAllReduce64(vals)
}

// AllReduceFloat32 is AllReduce for float32 values.
func (c *Comm) AllReduceFloat32(vals []float32) error {
	if !c.mpi || len(vals) == 0 {
		return nil
	}
	return mpiAllReduce32(vals)
}

// Broadcast copies root's buf into buf on every other process; every process passes
// a buffer of the same length.
func (c *Comm) Broadcast(buf []byte, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("dist: broadcast from rank %d of %d", root, c.size)
	}
	if !c.mpi || len(buf) == 0 {
		return nil
	}
	return mpiBcast(unsafe.Pointer(&buf[0]), len(buf), root)
}

// Barrier returns when every process has called it.
func (c *Comm) Barrier() error {
	if !c.mpi {
		return nil
	}
	return mpiBarrier()
}

// Abort ends every process of the job with the exit status code; it does not return
// in an MPI job. In a single process it exits with code.
func (c *Comm) Abort(code int) {
	if c.mpi {
		mpiAbort(code)
	}
	os.Exit(code)
}

// Finalize leaves the MPI job; call it once, when every process is done with the
// collectives. A process that exits without it, after Init, makes mpirun end the job.
func (c *Comm) Finalize() error {
	if !c.mpi || c.finalized {
		return nil
	}
	c.finalized = true
	return mpiFinalize()
}

// BroadcastParams copies rank 0's parameter values into every process's ps. Every
// process must hold the same parameters (names, shapes, dtypes, in the same order).
func (c *Comm) BroadcastParams(ps *autodiff.Params) error {
	if !c.mpi {
		return nil
	}
	for _, p := range ps.List() {
		if err := c.Broadcast(valueBytes(p), 0); err != nil {
			return fmt.Errorf("dist: broadcast %s: %w", p.Name(), err)
		}
	}
	return nil
}

// valueBytes is the memory of p's value.
func valueBytes(p *autodiff.Param) []byte {
	if p.Dtype() == autodiff.Float32 {
		v := p.Float32s()
		if len(v) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
	}
	v := p.Float64s()
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
}

var crcTable = crc64.MakeTable(crc64.ECMA)

// Checksum returns a CRC-64 of the bytes of every parameter value of ps, in order:
// equal parameters give equal checksums on every process.
func Checksum(ps *autodiff.Params) uint64 {
	var h uint64
	for _, p := range ps.List() {
		h = crc64.Update(h, crcTable, valueBytes(p))
	}
	return h
}

// SameParams reports whether every process holds the same parameter values, comparing
// their Checksums with one all-reduce; every process gets the same answer.
func (c *Comm) SameParams(ps *autodiff.Params) (bool, error) {
	if !c.mpi || c.size == 1 {
		return true, nil
	}
	// The checksum in four 16-bit parts and their squares: sums that float64 holds
	// exactly. The parts are equal on all P processes iff P·Σx² = (Σx)² for each.
	h := Checksum(ps)
	var v [8]float64
	for k := range 4 {
		x := float64((h >> (16 * k)) & 0xffff)
		v[k], v[4+k] = x, x*x
	}
	if err := c.AllReduce(v[:]); err != nil {
		return false, err
	}
	for k := range 4 {
		if float64(c.size)*v[4+k] != v[k]*v[k] {
			return false, nil
		}
	}
	return true, nil
}

// AverageGrads replaces every parameter gradient of ps by the weighted mean of the
// processes' gradients, Σ_r weight_r·grad_r / Σ_r weight_r, and every value of extra by
// its sum over the processes; it returns Σ_r weight_r, the same on every process. A
// process whose weight is 0 contributes nothing (its gradients may be anything finite).
// If the total weight is 0 the gradients become 0.
//
// weight is what the process's loss is a mean over (its scored tokens, its examples):
// then the average is the gradient of the mean loss over the whole global batch. The
// gradients and extra travel together in buffers of the parameters' dtype (so extra
// values in a float32 run are rounded to float32), at most BucketBytes each: one
// all-reduce call for models up to that size.
func (c *Comm) AverageGrads(ps *autodiff.Params, weight float64, extra []float64) (float64, error) {
	if !c.mpi || c.size == 1 {
		return weight, nil
	}
	t0 := time.Now()
	if c.grads == nil || !c.grads.fits(ps, len(extra)) {
		c.grads = newBuckets(ps, len(extra))
	}
	total, err := c.grads.average(c, weight, extra)
	c.stats.Calls++
	c.stats.Bytes += c.grads.bytes()
	c.stats.Time += time.Since(t0)
	return total, err
}
