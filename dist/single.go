//go:build !mpi

package dist

import (
	"errors"
	"unsafe"
)

// Built reports whether the program was built with MPI (the mpi build tag).
const Built = false

// Without MPI no Comm has mpi set, so none of these is called; they exist so that the
// package compiles the same way in both builds.

var errBuilt = errors.New("dist: MPI call in a build without MPI")

func mpiInit() (rank, size int, err error) { return 0, 1, errBuilt }
func mpiAllReduce32([]float32) error       { return errBuilt }
func mpiAllReduce64([]float64) error       { return errBuilt }
func mpiBcast(unsafe.Pointer, int, int) error {
	return errBuilt
}
func mpiBarrier() error  { return errBuilt }
func mpiAbort(int)       {}
func mpiFinalize() error { return errBuilt }
