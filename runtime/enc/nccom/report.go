package nccom

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// UnitComment is the first line [Report.WriteTable] prints: it states the
// units of the table (see the package documentation for why GB/s is
// decimal).
const UnitComment = "# bandwidth unit: GB/s = 1e9 bytes/s; sizes in bytes"

// columns are the table's headers and the JSON result keys, in order.
var columns = [...]string{
	"size(B)", "count(elems)", "type", "time:avg(us)", "algbw(GB/s)", "busbw(GB/s)", "algorithm",
}

// Columns returns the table's column headers, in order: size(B),
// count(elems), type, time:avg(us), algbw(GB/s), busbw(GB/s), algorithm.
// They are also the keys of each JSON result.
func Columns() [7]string { return columns }

// Reserved metadata keys: Report.Op and Report.Ranks are written under
// these names (as "# op: …" comment lines and as "neuronsim_op" JSON keys),
// so Report.Extra may not use them.
const (
	keyOp    = "op"
	keyRanks = "ranks"
)

// ExtraPrefix is the prefix of neuronsim's own top-level JSON keys.
const ExtraPrefix = "neuronsim_"

// Report is a sweep's results for one collective op on one system.
type Report struct {
	// Op is the collective: one of [Ops], or "" when unknown (a report read
	// from a file without "neuronsim_op").
	Op string
	// Ranks is the number of ranks, or 0 when unknown.
	Ranks int
	// Rows are the results, one per size, in the order they are printed.
	Rows []Row
	// Extra is metadata about the run (model, device count, topology, …).
	// WriteTable prints each entry as a "# key: value" comment line above
	// the table, sorted by key; WriteJSON writes it as the top-level key
	// "neuronsim_<key>". Keys are non-empty words of letters, digits, '_',
	// '-' and '.', other than "op" and "ranks", given without the prefix.
	// Values must be encodable as JSON; strings print as they are, other
	// values print as their JSON encoding.
	Extra map[string]any
}

// Validate reports whether the report can be printed and written: a known or
// empty Op, Ranks ≥ 0, valid rows (see [Row.Validate]) and valid Extra keys
// and values. The error wraps [ErrBadReport] (or [ErrUnknownOp]).
func (r *Report) Validate() error {
	if r == nil {
		return fmt.Errorf("%w: nil report", ErrBadReport)
	}
	if r.Op != "" {
		if _, err := BusFactor(r.Op, 1); err != nil {
			return err
		}
	}
	if r.Ranks < 0 {
		return fmt.Errorf("%w: negative rank count %d", ErrBadReport, r.Ranks)
	}
	for i, row := range r.Rows {
		if err := row.Validate(); err != nil {
			return fmt.Errorf("row %d (size %d): %w", i, row.Size, err)
		}
	}
	for k, v := range r.Extra {
		if err := checkExtraKey(k); err != nil {
			return err
		}
		if _, err := json.Marshal(v); err != nil {
			return fmt.Errorf("%w: extra %q: value %v cannot be written as JSON: %v", ErrBadReport, k, v, err)
		}
	}
	return nil
}

func checkExtraKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: empty extra key", ErrBadReport)
	}
	if k == keyOp || k == keyRanks {
		return fmt.Errorf("%w: extra key %q is reserved for Report.Op and Report.Ranks", ErrBadReport, k)
	}
	for _, c := range k {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return fmt.Errorf("%w: extra key %q: only ASCII letters, digits, '_', '-' and '.' are allowed", ErrBadReport, k)
		}
	}
	return nil
}

// AvgBusBW returns the mean of the rows' bus bandwidths in GB/s (the
// unrounded values), or 0 for a report without rows. It is the number on
// nccom-test's "Avg bus bandwidth" line.
func (r *Report) AvgBusBW() float64 {
	if r == nil || len(r.Rows) == 0 {
		return 0
	}
	var sum float64
	for _, row := range r.Rows {
		sum += row.BusBW
	}
	return sum / float64(len(r.Rows))
}

// metadata returns the report's "# key: value" entries: op, ranks and
// extras, sorted by key, each value already formatted for a comment line.
func (r *Report) metadata() ([][2]string, error) {
	var md [][2]string
	if r.Op != "" {
		md = append(md, [2]string{keyOp, r.Op})
	}
	if r.Ranks != 0 {
		md = append(md, [2]string{keyRanks, strconv.Itoa(r.Ranks)})
	}
	for k, v := range r.Extra {
		s, ok := v.(string)
		if !ok || strings.IndexFunc(s, unicode.IsControl) >= 0 || s == "" {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("%w: extra %q: %v", ErrBadReport, k, err)
			}
			s = string(b)
		}
		md = append(md, [2]string{k, s})
	}
	slices.SortFunc(md, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return md, nil
}

// WriteTable writes the report as nccom-test prints it: comment lines (the
// unit line [UnitComment], then "# key: value" for op, ranks and each Extra
// entry, sorted by key), the header line naming the [Columns], one line per
// row, and the closing line "Avg bus bandwidth:\tX.XXXXGB/s".
//
// Every column is right-aligned, as nccom-test aligns them, to the width of
// its widest cell or header, and preceded by four spaces. Times and
// bandwidths have two decimals; the average has four. The average line
// separates label and value with a tab, as nccom-test's output does (it
// shows as six spaces on a terminal).
func (r *Report) WriteTable(w io.Writer) error {
	if err := r.Validate(); err != nil {
		return err
	}
	md, err := r.metadata()
	if err != nil {
		return err
	}
	cells := make([][]string, 0, len(r.Rows)+1)
	cells = append(cells, columns[:])
	for _, row := range r.Rows {
		cells = append(cells, []string{
			strconv.FormatInt(row.Size, 10),
			strconv.FormatInt(row.Count, 10),
			row.Type,
			strconv.FormatFloat(row.TimeUS, 'f', 2, 64),
			strconv.FormatFloat(row.AlgBW, 'f', 2, 64),
			strconv.FormatFloat(row.BusBW, 'f', 2, 64),
			row.Algorithm,
		})
	}

	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, UnitComment)
	for _, kv := range md {
		fmt.Fprintf(bw, "# %s: %s\n", kv[0], kv[1])
	}
	WriteColumns(bw, cells)
	fmt.Fprintf(bw, "Avg bus bandwidth:\t%.4fGB/s\n", r.AvgBusBW())
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("nccom: writing table: %w", err)
	}
	return nil
}

// WriteColumns writes cells as nccom-test's table does: each column right
// aligned to its widest cell (in runes), every cell after four spaces, a
// line per row. Rows may differ in length.
func WriteColumns(bw *bufio.Writer, cells [][]string) {
	var width []int
	for _, line := range cells {
		for c, cell := range line {
			if c == len(width) {
				width = append(width, 0)
			}
			width[c] = max(width[c], len([]rune(cell)))
		}
	}
	for _, line := range cells {
		for c, cell := range line {
			bw.WriteString("    ")
			bw.WriteString(strings.Repeat(" ", width[c]-len([]rune(cell))))
			bw.WriteString(cell)
		}
		bw.WriteByte('\n')
	}
}
