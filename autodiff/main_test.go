package autodiff

import (
	"os"
	"testing"
)

// TestMain runs the package's tests with poisonUnread: every backward op gets NaN in
// place of the forward values its kernel declares it does not read (gradReadsKernel),
// so the gradient checks also check those declarations, on which the buffer plan relies.
func TestMain(m *testing.M) {
	poisonUnread = true
	os.Exit(m.Run())
}
