package train

import (
	"fmt"

	"github.com/locusml/locus/internal/sysmem"
)

// CheckMemory refuses a model or a run that needs more memory than this process may
// use (the machine's total memory, or its cgroup's limit). need is an estimate in bytes
// that the caller keeps on the low side, so that only what cannot fit is refused; what
// names the thing, e.g. "training transformer (batch 64, 128 tokens)".
func CheckMemory(what string, need uint64) error {
	total := sysmem.Total()
	if total == 0 || need <= total {
		return nil
	}
	return fmt.Errorf("%s needs at least %s of memory, more than the %s this machine has", what, FormatBytes(need), FormatBytes(total))
}

// FormatBytes writes a size in bytes with a binary unit, e.g. "1.5 GiB".
func FormatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.3g %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
