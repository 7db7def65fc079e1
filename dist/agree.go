package dist

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
)

// OtherNames is the name Mismatches reports for a process that has names rank 0 lacks.
const OtherNames = "(names rank 0 lacks)"

// Mismatches compares every process's named values with rank 0's and returns, the same
// on every process, the names whose values differ from rank 0's, by rank (ranks that
// agree are absent; nil when all agree). A name rank 0 has and a process lacks differs;
// names a process has and rank 0 lacks are reported as OtherNames.
//
// The values travel as SHA-256 digests, and the sizes of the collectives depend on rank
// 0's names only, so processes whose values differ in any way (in length too) still make
// the same MPI calls: it is the check to make before any collective whose sizes depend
// on the values, such as the parameters of a model built from a configuration. Every
// process must call it.
func (c *Comm) Mismatches(values map[string][]byte) (map[int][]string, error) {
	if !c.mpi || c.size == 1 {
		return nil, nil
	}
	// Rank 0's names and digests: the length first (fixed size), then the table.
	var table []byte
	if c.Root() {
		table = encodeDigests(values)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(table)))
	if err := c.Broadcast(n[:], 0); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > 1<<30 {
		return nil, errors.New("dist: mismatches: rank 0's table is too large")
	}
	if !c.Root() {
		table = make([]byte, size)
	}
	if err := c.Broadcast(table, 0); err != nil {
		return nil, err
	}
	names, digests, err := decodeDigests(table)
	if err != nil {
		return nil, err
	}
	// One flag per rank and name, and one for names rank 0 lacks; summed over the ranks,
	// where each rank sets only its own.
	k := len(names) + 1
	flags := make([]float64, c.size*k)
	mine := flags[c.rank*k : (c.rank+1)*k]
	for i, name := range names {
		if v, ok := values[name]; !ok || sha256.Sum256(v) != digests[i] {
			mine[i] = 1
		}
	}
	for name := range values {
		if !slices.Contains(names, name) {
			mine[len(names)] = 1
		}
	}
	if err := c.AllReduce(flags); err != nil {
		return nil, err
	}
	var out map[int][]string
	for r := range c.size {
		var differ []string
		for i, f := range flags[r*k : (r+1)*k] {
			if f == 0 {
				continue
			}
			if i == len(names) {
				differ = append(differ, OtherNames)
			} else {
				differ = append(differ, names[i])
			}
		}
		if len(differ) > 0 {
			if out == nil {
				out = map[int][]string{}
			}
			out[r] = differ
		}
	}
	return out, nil
}

// encodeDigests returns the sorted names of values, each with the SHA-256 of its value:
// for each, the name's length (4 bytes), the name and the digest.
func encodeDigests(values map[string][]byte) []byte {
	var b []byte
	for _, name := range slices.Sorted(maps.Keys(values)) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
		b = append(b, name...)
		d := sha256.Sum256(values[name])
		b = append(b, d[:]...)
	}
	return b
}

// decodeDigests reads the table of encodeDigests.
func decodeDigests(b []byte) ([]string, [][sha256.Size]byte, error) {
	var names []string
	var digests [][sha256.Size]byte
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, nil, errors.New("dist: mismatches: rank 0's table is cut short")
		}
		n := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if n > len(b) || len(b)-n < sha256.Size {
			return nil, nil, errors.New("dist: mismatches: rank 0's table is cut short")
		}
		names = append(names, string(b[:n]))
		digests = append(digests, [sha256.Size]byte(b[n:n+sha256.Size]))
		b = b[n+sha256.Size:]
	}
	return names, digests, nil
}
