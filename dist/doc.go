// Package dist joins the processes of a data-parallel run: a thin layer over MPI, and a
// single-process stand-in for builds without it.
//
// Built with the mpi build tag (go build -tags mpi, which needs Open MPI's headers and
// pkg-config file: apt-get install libopenmpi-dev openmpi-bin), Init joins the MPI job
// that mpirun started, and the collectives (all-reduce, broadcast, barrier) are Open
// MPI's. Without the tag the package is pure Go: Init returns a Comm of one process, whose
// all-reduce and broadcast change nothing, unless the process was asked to be one of many
// (started by mpirun with more than one process, or LOCUS_MPI=1), which is an error
// telling how to build with MPI. The mpi build started without mpirun is a single process
// too.
//
// On top of the raw collectives, a Comm averages a parameter set's gradients across the
// processes (AverageGrads: the gradients are packed into a few large buffers, at most
// BucketBytes each, so one step costs one or a few all-reduce calls), broadcasts
// parameter values from rank 0 (BroadcastParams) and agrees on a checksum of them
// (SameParams). A *Comm is the train.Reducer of a data-parallel train.Loop. Before any
// of these, Mismatches compares named values (a run's configurations and data digests)
// with rank 0's, in collectives whose sizes do not depend on the values, and names the
// ranks and values that differ.
//
// MPI calls are made from one goroutine at a time (MPI_THREAD_SERIALIZED); a Comm is not
// safe for concurrent use.
package dist
