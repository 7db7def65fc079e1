package train

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/locusml/locus/internal/regularfile"
	"github.com/nlpodyssey/safetensors"
	"gorgonia.org/tensor"
)

// maxHeaderBytes bounds the JSON header of a safetensors file, as the reference
// implementation does, so that a corrupted length cannot make us allocate gigabytes.
const maxHeaderBytes = 100_000_000

// ExportSafetensors writes tensors to path in the safetensors format, with metadata as
// the header's "__metadata__" (nil for none). Float32 tensors are stored as F32, Float64
// as F64, and Int64 and Int as I64, little-endian and row-major. The write is atomic: the
// file is written and synced under a temporary name in the same folder, then renamed, so
// path holds either its previous contents or the complete new file.
func ExportSafetensors(path string, tensors map[string]*tensor.Dense, metadata map[string]string) error {
	if err := writeFileAtomic(path, func(w io.Writer) error {
		_, err := writeSafetensors(w, tensors, metadata)
		return err
	}); err != nil {
		return fmt.Errorf("export safetensors: %w", err)
	}
	return nil
}

// ReadSafetensors reads a safetensors file written by ExportSafetensors or by any other
// safetensors writer. F32 tensors come back as Float32, F64 as Float64 and I64 as Int64;
// other dtypes are an error naming the tensor. Errors name the file, and a file shorter
// than its header says is reported as truncated.
func ReadSafetensors(path string) (map[string]*tensor.Dense, map[string]string, error) {
	buf, err := regularfile.ReadFile(path, MaxTensorBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read safetensors: %w", err)
	}
	ts, meta, err := decodeSafetensors(buf)
	if err != nil {
		return nil, nil, fmt.Errorf("read safetensors %s: %w", path, err)
	}
	return ts, meta, nil
}

// view adapts a tensor's bytes to safetensors.View. (The library's TensorView counts a
// scalar as zero elements, so it cannot hold one.)
type view struct {
	dtype safetensors.DType
	shape []uint64
	data  []byte
}

func (v view) DType() safetensors.DType { return v.dtype }
func (v view) Shape() []uint64          { return v.shape }
func (v view) Data() []byte             { return v.data }
func (v view) DataLen() uint64          { return uint64(len(v.data)) }

// writeSafetensors encodes tensors to w and returns the number of bytes written.
func writeSafetensors(w io.Writer, tensors map[string]*tensor.Dense, metadata map[string]string) (int64, error) {
	views := make(map[string]view, len(tensors))
	for _, name := range slices.Sorted(maps.Keys(tensors)) {
		v, err := encodeTensor(tensors[name])
		if err != nil {
			return 0, fmt.Errorf("tensor %q: %w", name, err)
		}
		views[name] = v
	}
	cw := &countingWriter{w: w}
	if err := safetensors.SerializeToWriter(views, metadata, cw); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encodeTensor returns t's elements as little-endian bytes in row-major order.
func encodeTensor(t *tensor.Dense) (view, error) {
	if t == nil {
		return view{}, fmt.Errorf("nil tensor")
	}
	if t.IsMaterializable() || t.RequiresIterator() {
		t = t.Materialize().(*tensor.Dense)
	}
	shape := make([]uint64, len(t.Shape()))
	for i, d := range t.Shape() {
		shape[i] = uint64(d)
	}
	n := t.Shape().TotalSize()
	if len(t.Shape()) == 0 {
		n = 1
	}
	switch d := t.Data().(type) {
	case []float32:
		b := make([]byte, 4*n)
		for i, x := range d[:n] {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return view{safetensors.F32, shape, b}, nil
	case float32:
		return view{safetensors.F32, shape, binary.LittleEndian.AppendUint32(nil, math.Float32bits(d))}, nil
	case []float64:
		b := make([]byte, 8*n)
		for i, x := range d[:n] {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return view{safetensors.F64, shape, b}, nil
	case float64:
		return view{safetensors.F64, shape, binary.LittleEndian.AppendUint64(nil, math.Float64bits(d))}, nil
	case []int64:
		b := make([]byte, 8*n)
		for i, x := range d[:n] {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
		}
		return view{safetensors.I64, shape, b}, nil
	case int64:
		return view{safetensors.I64, shape, binary.LittleEndian.AppendUint64(nil, uint64(d))}, nil
	case []int:
		b := make([]byte, 8*n)
		for i, x := range d[:n] {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(x)))
		}
		return view{safetensors.I64, shape, b}, nil
	case int:
		return view{safetensors.I64, shape, binary.LittleEndian.AppendUint64(nil, uint64(int64(d)))}, nil
	}
	return view{}, fmt.Errorf("unsupported dtype %v (want float32, float64, int64 or int)", t.Dtype())
}

// decodeSafetensors parses a whole safetensors file. It checks the length first, so that
// a truncated file is reported as such rather than as a malformed header.
func decodeSafetensors(buf []byte) (map[string]*tensor.Dense, map[string]string, error) {
	if err := checkLength(buf); err != nil {
		return nil, nil, err
	}
	st, err := safetensors.Deserialize(buf)
	if err != nil {
		return nil, nil, fmt.Errorf("corrupted file: %w", err)
	}
	_, md, err := safetensors.ReadMetadata(buf)
	if err != nil {
		return nil, nil, fmt.Errorf("corrupted file: %w", err)
	}
	out := make(map[string]*tensor.Dense, st.Len())
	for _, nv := range st.Tensors() {
		t, err := decodeTensor(nv.TensorView)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", nv.Name, err)
		}
		out[nv.Name] = t
	}
	return out, md.Metadata(), nil
}

// checkLength compares the file size with the end of the last tensor in the header.
func checkLength(buf []byte) error {
	if len(buf) < 8 {
		return fmt.Errorf("truncated file: %d bytes, too short for the 8-byte header length", len(buf))
	}
	n := binary.LittleEndian.Uint64(buf[:8])
	if n > maxHeaderBytes {
		return fmt.Errorf("corrupted file: header length %d exceeds %d bytes", n, maxHeaderBytes)
	}
	if 8+n > uint64(len(buf)) {
		return fmt.Errorf("truncated file: %d bytes, but the header alone needs %d", len(buf), 8+n)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(buf[8:8+n], &header); err != nil {
		return fmt.Errorf("corrupted file: header is not valid JSON: %w", err)
	}
	var end uint64
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var info struct {
			DataOffsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &info); err != nil || len(info.DataOffsets) != 2 {
			return fmt.Errorf("corrupted file: tensor %q: bad header entry %s", name, raw)
		}
		if info.DataOffsets[0] > info.DataOffsets[1] || info.DataOffsets[1] > uint64(len(buf)) {
			return fmt.Errorf("truncated file: %d bytes, but tensor %q ends at data offset %d", len(buf), name, info.DataOffsets[1])
		}
		end = max(end, info.DataOffsets[1])
	}
	if want := 8 + n + end; uint64(len(buf)) < want {
		return fmt.Errorf("truncated file: %d bytes, but the header describes %d", len(buf), want)
	}
	return nil
}

// decodeTensor copies a view's bytes into a new tensor.
func decodeTensor(tv safetensors.TensorView) (*tensor.Dense, error) {
	shape := make([]int, len(tv.Shape()))
	b := tv.Data()
	n := 1
	for i, d := range tv.Shape() {
		// The elements must fit in the tensor's bytes: this bounds the product, so it
		// cannot overflow, and the allocation below by the file's size.
		if d > uint64(len(b)) || (d > 0 && uint64(n) > uint64(len(b))/d) {
			return nil, fmt.Errorf("shape %v does not fit in %d bytes", tv.Shape(), len(b))
		}
		shape[i] = int(d)
		n *= int(d)
	}
	size := map[safetensors.DType]int{safetensors.F32: 4, safetensors.F64: 8, safetensors.I64: 8}[tv.DType()]
	if size > 0 && n*size != len(b) {
		return nil, fmt.Errorf("shape %v of %v needs %d bytes, the file has %d", tv.Shape(), tv.DType(), n*size, len(b))
	}
	var backing any
	switch tv.DType() {
	case safetensors.F32:
		d := make([]float32, n)
		for i := range d {
			d[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		backing = d
	case safetensors.F64:
		d := make([]float64, n)
		for i := range d {
			d[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		backing = d
	case safetensors.I64:
		d := make([]int64, n)
		for i := range d {
			d[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
		backing = d
	default:
		return nil, fmt.Errorf("unsupported dtype %v (want F32, F64 or I64)", tv.DType())
	}
	if len(shape) == 0 {
		switch d := backing.(type) {
		case []float32:
			return tensor.New(tensor.FromScalar(d[0])), nil
		case []float64:
			return tensor.New(tensor.FromScalar(d[0])), nil
		case []int64:
			return tensor.New(tensor.FromScalar(d[0])), nil
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("empty tensor of shape %v is not supported", shape)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing)), nil
}

// shapeString formats a shape as [3 4], the way error messages show shapes.
func shapeString(s tensor.Shape) string { return fmt.Sprint([]int(slices.Clone(s))) }
