package dist_test

import (
	"fmt"

	"github.com/locusml/locus/dist"
)

// Init joins the job that mpirun started (in the mpi build), or is one process. A
// train.Loop with the Comm as its Reducer trains data-parallel:
//
//	loop := &train.Loop{Model: run, Optimizer: opt, Data: data, Steps: 1000, Reducer: comm}
//	if _, err := loop.Run(ctx); err != nil {
//		log.Fatal(err) // exiting without Finalize makes mpirun end the other processes
//	}
//	comm.Finalize()
func ExampleInit() {
	comm, err := dist.Init()
	if err != nil {
		fmt.Println(err) // e.g. the pure-Go build started by mpirun -np 2
		return
	}
	fmt.Printf("rank %d of %d\n", comm.Rank(), comm.Size())
	// Output: rank 0 of 1
}
