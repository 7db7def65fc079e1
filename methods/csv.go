package methods

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ReadCSV reads a matrix of numbers from comma-separated text, one row per
// line, skipping a header line if there is one (see ReadCSVHeader).
func ReadCSV(r io.Reader) ([][]float64, error) {
	_, rows, err := ReadCSVHeader(r)
	return rows, err
}

// ReadCSVHeader reads a matrix of numbers from comma-separated text (RFC
// 4180 quoting; blank lines and lines starting with '#' are skipped;
// spaces around fields are ignored). The first line is a header, returned
// as header, if none of its fields is a number; otherwise header is nil.
// Every row must have the same number of columns and every field must be a
// finite number. Errors name the line and the 1-based column, e.g.
//
//	line 3: column 2: "abc" is not a number
//	line 4: has 3 columns, expected 2
//
// Input with no data rows is an error.
func ReadCSVHeader(r io.Reader) (header []string, rows [][]float64, err error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	cols := -1
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var perr *csv.ParseError
			if errors.As(err, &perr) {
				return nil, nil, fmt.Errorf("line %d: column %d: %w", perr.Line, perr.Column, perr.Err)
			}
			return nil, nil, err
		}
		line, _ := cr.FieldPos(0)
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if first {
			first = false
			if isHeader(rec) {
				header = rec
				cols = len(rec)
				continue
			}
		}
		if cols == -1 {
			cols = len(rec)
		}
		if len(rec) != cols {
			return nil, nil, fmt.Errorf("line %d: has %d columns, expected %d", line, len(rec), cols)
		}
		row := make([]float64, cols)
		for j, f := range rec {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: column %d: %q is not a number", line, j+1, f)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("line %d: column %d: %q is not a finite number", line, j+1, f)
			}
			row[j] = v
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, nil, errors.New("no data rows")
	}
	return header, rows, nil
}

// isHeader reports whether no field of rec parses as a number.
func isHeader(rec []string) bool {
	for _, f := range rec {
		if _, err := strconv.ParseFloat(f, 64); err == nil {
			return false
		}
	}
	return true
}

// WriteCSV writes rows as comma-separated text, after a header line if
// header is non-nil. Numbers are written in the shortest form that reads
// back to the same float64 ('g' format), so ReadCSV(WriteCSV(x)) == x.
func WriteCSV(w io.Writer, header []string, rows [][]float64) error {
	bw := bufio.NewWriter(w)
	if header != nil {
		cw := csv.NewWriter(bw)
		if err := cw.Write(header); err != nil {
			return err
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	}
	var buf []byte
	for _, row := range rows {
		buf = buf[:0]
		for j, v := range row {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}
