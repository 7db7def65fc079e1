package dist_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/dist"
)

// TestSingleChangesNothing: the collectives of one process are the identity.
func TestSingleChangesNothing(t *testing.T) {
	c := dist.Single()
	if c.Rank() != 0 || c.Size() != 1 || !c.Root() || c.MPI() {
		t.Fatalf("Single: rank %d, size %d, MPI %v", c.Rank(), c.Size(), c.MPI())
	}
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	w, _ := ps.Root().New("w", []int{4}, autodiff.Normal(0, 1))
	w.GradFloat32s()[2] = 3
	vals := []float64{1, 2}
	if err := c.AllReduce(vals); err != nil || vals[0] != 1 || vals[1] != 2 {
		t.Errorf("AllReduce: %v, %v", vals, err)
	}
	extra := []float64{5}
	total, err := c.AverageGrads(ps, 7, extra)
	if err != nil || total != 7 || extra[0] != 5 || w.GradFloat32s()[2] != 3 {
		t.Errorf("AverageGrads: total %v, extra %v, grad %v, %v", total, extra, w.GradFloat32s(), err)
	}
	before := dist.Checksum(ps)
	if same, err := c.SameParams(ps); !same || err != nil {
		t.Errorf("SameParams: %v, %v", same, err)
	}
	if err := c.BroadcastParams(ps); err != nil || dist.Checksum(ps) != before {
		t.Errorf("BroadcastParams changed the parameters (%v)", err)
	}
	w.SetAt(0, w.At(0)+1e-6)
	if dist.Checksum(ps) == before {
		t.Error("Checksum did not change with a parameter")
	}
}

// TestInitWithoutMPI: the pure-Go build asked to be one of several processes says, in
// one line, how to build with MPI; otherwise it is one process.
func TestInitWithoutMPI(t *testing.T) {
	if dist.Built {
		t.Skip("the mpi build")
	}
	c, err := dist.Init()
	if err != nil || c.Size() != 1 {
		t.Fatalf("Init without a launcher: %v, %v", c, err)
	}
	for _, env := range [][2]string{{"OMPI_COMM_WORLD_SIZE", "2"}, {"LOCUS_MPI", "1"}} {
		t.Run(env[0], func(t *testing.T) {
			t.Setenv(env[0], env[1])
			_, err := dist.Init()
			if !errors.Is(err, dist.ErrNoMPI) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "-tags mpi") {
				t.Fatalf("got %v, want one line wrapping ErrNoMPI that names -tags mpi", err)
			}
		})
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "1") // mpirun -np 1: one process is fine
	if c, err := dist.Init(); err != nil || c.Size() != 1 {
		t.Fatalf("Init under mpirun -np 1: %v, %v", c, err)
	}
}
