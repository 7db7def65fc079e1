//go:build mpi

package dist

/*
#cgo pkg-config: ompi-c
#include <stdlib.h>
#include <mpi.h>

// Open MPI's handlers for SIGSEGV, SIGBUS, SIGFPE and SIGABRT would take those signals
// from the Go runtime, which turns a nil dereference into a panic with a stack trace.
static int locus_init(int *provided) {
	setenv("OMPI_MCA_opal_signal", "", 0);
	int done = 0;
	MPI_Initialized(&done);
	if (done) {
		return MPI_Query_thread(provided);
	}
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
}
static int locus_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int locus_size(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int locus_allreduce_f32(float *buf, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static int locus_allreduce_f64(double *buf, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int locus_bcast(void *buf, int n, int root) { return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD); }
static int locus_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int locus_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }
static int locus_finalize(void) { return MPI_Finalize(); }
static void locus_error_string(int code, char *buf, int *len) {
	if (MPI_Error_string(code, buf, len) != MPI_SUCCESS) {
		*len = 0;
	}
}
static int locus_thread_serialized(void) { return MPI_THREAD_SERIALIZED; }
static int locus_max_error_string(void) { return MPI_MAX_ERROR_STRING; }
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// Built reports whether the program was built with MPI (the mpi build tag).
const Built = true

// maxCount is the most elements one MPI call takes (its count is a C int).
const maxCount = 1 << 30

func mpiError(call string, rc C.int) error {
	if rc == 0 { // MPI_SUCCESS
		return nil
	}
	buf := make([]byte, int(C.locus_max_error_string())+1)
	var n C.int
	C.locus_error_string(rc, (*C.char)(unsafe.Pointer(&buf[0])), &n)
	if n > 0 {
		return fmt.Errorf("%s: %s (error %d)", call, string(buf[:n]), int(rc))
	}
	return fmt.Errorf("%s: error %d", call, int(rc))
}

func mpiInit() (rank, size int, err error) {
	var provided, r, s C.int
	if err := mpiError("MPI_Init_thread", C.locus_init(&provided)); err != nil {
		return 0, 0, err
	}
	if provided < C.locus_thread_serialized() {
		return 0, 0, errors.New("MPI_Init_thread: this MPI does not support MPI_THREAD_SERIALIZED, which Go's threads need")
	}
	if err := mpiError("MPI_Comm_rank", C.locus_rank(&r)); err != nil {
		return 0, 0, err
	}
	if err := mpiError("MPI_Comm_size", C.locus_size(&s)); err != nil {
		return 0, 0, err
	}
	return int(r), int(s), nil
}

func mpiAllReduce32(v []float32) error {
	for lo := 0; lo < len(v); lo += maxCount {
		n := min(maxCount, len(v)-lo)
		if err := mpiError("MPI_Allreduce", C.locus_allreduce_f32((*C.float)(unsafe.Pointer(&v[lo])), C.int(n))); err != nil {
			return err
		}
	}
	return nil
}

func mpiAllReduce64(v []float64) error {
	for lo := 0; lo < len(v); lo += maxCount {
		n := min(maxCount, len(v)-lo)
		if err := mpiError("MPI_Allreduce", C.locus_allreduce_f64((*C.double)(unsafe.Pointer(&v[lo])), C.int(n))); err != nil {
			return err
		}
	}
	return nil
}

func mpiBcast(p unsafe.Pointer, n, root int) error {
	for lo := 0; lo < n; lo += maxCount {
		k := min(maxCount, n-lo)
		if err := mpiError("MPI_Bcast", C.locus_bcast(unsafe.Add(p, lo), C.int(k), C.int(root))); err != nil {
			return err
		}
	}
	return nil
}

func mpiBarrier() error { return mpiError("MPI_Barrier", C.locus_barrier()) }

func mpiAbort(code int) { C.locus_abort(C.int(code)) }

func mpiFinalize() error { return mpiError("MPI_Finalize", C.locus_finalize()) }
