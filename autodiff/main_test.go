package autodiff

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the package's tests with poisonUnread: every backward op gets NaN in
// place of the forward values its kernel declares it does not read (gradReadsKernel),
// and every planned buffer is filled with NaN once its value is dead, so the gradient
// checks also check those declarations and the buffer plan. Not with -bench: the
// benchmarks time the ops as they run in a model.
func TestMain(m *testing.M) {
	flag.Parse()
	poisonUnread = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}
