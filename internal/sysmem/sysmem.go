// Package sysmem reports how much memory this process may use: the machine's total
// memory (MemTotal in /proc/meminfo), lowered by a cgroup limit (v2 memory.max, v1
// memory.limit_in_bytes) when the process runs in a container.
package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Total returns the memory in bytes this process may use, or 0 where the system does not
// say (then no estimate can be refused).
func Total() uint64 {
	total := memInfoTotal()
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		limit, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64) // "max": no limit
		if err == nil && limit > 0 && (total == 0 || limit < total) {
			total = limit
		}
	}
	return total
}

// memInfoTotal returns MemTotal from /proc/meminfo, or 0.
func memInfoTotal() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
