package nccom

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// WriteJSON writes the report in nccom-test's JSON shape (see the package
// documentation): an object whose "results" array holds one object per row
// with exactly the keys of [Columns], in that order, followed by
// neuronsim's own keys sorted by name: "neuronsim_op" and "neuronsim_ranks"
// when Op and Ranks are set, and "neuronsim_<key>" for each Extra entry.
//
// The output is deterministic: one result per line, sizes and counts as JSON
// integers, times and bandwidths in the shortest decimal form that reads
// back to the same float64, always with a decimal point (58 µs is written
// 58.0) and never with an exponent. Unlike the table, numbers are not
// rounded, so [ReadJSON] gives back exactly the rows written.
func (r *Report) WriteJSON(w io.Writer) error {
	if err := r.Validate(); err != nil {
		return err
	}
	type member struct {
		key string
		val []byte
	}
	var extras []member
	if r.Op != "" {
		b, _ := json.Marshal(r.Op)
		extras = append(extras, member{ExtraPrefix + keyOp, b})
	}
	if r.Ranks != 0 {
		extras = append(extras, member{ExtraPrefix + keyRanks, []byte(strconv.Itoa(r.Ranks))})
	}
	for k, v := range r.Extra {
		b, err := json.Marshal(v)
		if err != nil { // unreachable after Validate, kept for safety
			return fmt.Errorf("%w: extra %q: %v", ErrBadReport, k, err)
		}
		extras = append(extras, member{ExtraPrefix + k, b})
	}
	slices.SortFunc(extras, func(a, b member) int { return strings.Compare(a.key, b.key) })

	bw := bufio.NewWriter(w)
	bw.WriteString("{\n  \"results\": [")
	for i, row := range r.Rows {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    {")
		typ, _ := json.Marshal(row.Type)
		algo, _ := json.Marshal(row.Algorithm)
		fmt.Fprintf(bw, `"size(B)":%d,"count(elems)":%d,"type":%s,"time:avg(us)":%s,"algbw(GB/s)":%s,"busbw(GB/s)":%s,"algorithm":%s`,
			row.Size, row.Count, typ, jsonFloat(row.TimeUS), jsonFloat(row.AlgBW), jsonFloat(row.BusBW), algo)
		bw.WriteByte('}')
	}
	if len(r.Rows) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
	for _, m := range extras {
		key, _ := json.Marshal(m.key)
		fmt.Fprintf(bw, ",\n  %s: %s", key, m.val)
	}
	bw.WriteString("\n}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("nccom: writing JSON report: %w", err)
	}
	return nil
}

// jsonFloat formats a finite float in the shortest form that reads back
// exactly, without exponent, always with a decimal point.
func jsonFloat(v float64) string {
	if v == 0 {
		return "0.0" // also turns -0 into 0
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// ReadJSON parses a report in the shape [Report.WriteJSON] writes (and
// nccom-test's JSON report, which has no "neuronsim_" keys). It is strict:
// the document must be one JSON object with a "results" array and nothing
// after it; every result must have exactly the seven keys of [Columns], with
// non-negative integers for "size(B)" and "count(elems)", finite
// non-negative numbers for the time and bandwidths, and non-empty single-word
// strings for "type" and "algorithm". Unknown keys, in a result or at the top
// level (other than "neuronsim_…"), duplicate keys, and values of the wrong
// type are errors naming the key and the result's index; every error wraps
// [ErrBadReport].
//
// "neuronsim_op" and "neuronsim_ranks" fill Op and Ranks; every other
// "neuronsim_<key>" goes to Extra[key], with JSON numbers decoded as int
// when they are whole and fit, float64 otherwise (also inside arrays and
// objects), strings as string, and so on as encoding/json decodes into any.
// Extra is nil when there is no such key, and Rows is nil when "results" is
// empty.
func ReadJSON(rd io.Reader) (*Report, error) {
	dec := json.NewDecoder(rd)
	dec.UseNumber()
	top, err := readObject(dec, "the document")
	if err != nil {
		return nil, err
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("%w: after the top-level object: %v", ErrBadReport, err)
		}
		return nil, fmt.Errorf("%w: unexpected %v after the top-level object", ErrBadReport, tok)
	}

	rep := &Report{}
	haveResults := false
	for _, m := range top {
		switch {
		case m.key == "results":
			haveResults = true
			rows, err := readResults(m.val)
			if err != nil {
				return nil, err
			}
			rep.Rows = rows
		case m.key == ExtraPrefix+keyOp:
			v, err := decodeValue(m.val)
			if err != nil {
				return nil, fmt.Errorf("%w: key %q: %v", ErrBadReport, m.key, err)
			}
			op, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%w: key %q: want a string, got %s", ErrBadReport, m.key, describe(v))
			}
			if op != "" {
				if _, err := BusFactor(op, 1); err != nil {
					return nil, fmt.Errorf("%w: key %q: %v", ErrBadReport, m.key, err)
				}
			}
			rep.Op = op
		case m.key == ExtraPrefix+keyRanks:
			n, err := intValue(m.val)
			if err != nil {
				return nil, fmt.Errorf("%w: key %q: %v", ErrBadReport, m.key, err)
			}
			if int64(int(n)) != n {
				return nil, fmt.Errorf("%w: key %q: %d ranks is too many", ErrBadReport, m.key, n)
			}
			rep.Ranks = int(n)
		case strings.HasPrefix(m.key, ExtraPrefix):
			name := strings.TrimPrefix(m.key, ExtraPrefix)
			if err := checkExtraKey(name); err != nil {
				return nil, fmt.Errorf("key %q: %w", m.key, err)
			}
			v, err := decodeValue(m.val)
			if err != nil {
				return nil, fmt.Errorf("%w: key %q: %v", ErrBadReport, m.key, err)
			}
			v, err = normalize(v)
			if err != nil {
				return nil, fmt.Errorf("%w: key %q: %v", ErrBadReport, m.key, err)
			}
			if rep.Extra == nil {
				rep.Extra = map[string]any{}
			}
			rep.Extra[name] = v
		default:
			return nil, fmt.Errorf("%w: unknown top-level key %q (want \"results\" or keys starting with %q)", ErrBadReport, m.key, ExtraPrefix)
		}
	}
	if !haveResults {
		return nil, fmt.Errorf("%w: no \"results\" key", ErrBadReport)
	}
	return rep, nil
}

type rawMember struct {
	key string
	val json.RawMessage
}

// readObject reads one JSON object from dec, refusing duplicate keys. what
// names the object in errors.
func readObject(dec *json.Decoder, what string) ([]rawMember, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: %s: empty input, want a JSON object", ErrBadReport, what)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrBadReport, what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: %s: want a JSON object, got %s", ErrBadReport, what, describeToken(tok))
	}
	var members []rawMember
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadReport, what, err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s: want a key, got %s", ErrBadReport, what, describeToken(tok))
		}
		if seen[key] {
			return nil, fmt.Errorf("%w: %s: duplicate key %q", ErrBadReport, what, key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: %s: key %q: %v", ErrBadReport, what, key, err)
		}
		members = append(members, rawMember{key, raw})
	}
	tok, err = dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadReport, what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '}' {
		return nil, fmt.Errorf("%w: %s: want '}', got %s", ErrBadReport, what, describeToken(tok))
	}
	return members, nil
}

func readResults(raw json.RawMessage) ([]Row, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: \"results\": %v", ErrBadReport, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("%w: \"results\": want an array, got %s", ErrBadReport, describeToken(tok))
	}
	var rows []Row
	for i := 0; dec.More(); i++ {
		what := fmt.Sprintf("results[%d]", i)
		members, err := readObject(dec, what)
		if err != nil {
			return nil, err
		}
		row, err := parseRow(what, members)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, fmt.Errorf("%w: \"results\": %v", ErrBadReport, err)
	}
	return rows, nil
}

func parseRow(what string, members []rawMember) (Row, error) {
	var row Row
	got := map[string]bool{}
	for _, m := range members {
		var err error
		switch m.key {
		case columns[0]:
			row.Size, err = intValue(m.val)
		case columns[1]:
			row.Count, err = intValue(m.val)
		case columns[2]:
			row.Type, err = stringValue(m.val)
		case columns[3]:
			row.TimeUS, err = floatValue(m.val)
		case columns[4]:
			row.AlgBW, err = floatValue(m.val)
		case columns[5]:
			row.BusBW, err = floatValue(m.val)
		case columns[6]:
			row.Algorithm, err = stringValue(m.val)
		default:
			return Row{}, fmt.Errorf("%w: %s: unknown key %q (want %s)", ErrBadReport, what, m.key, strings.Join(columns[:], ", "))
		}
		if err != nil {
			return Row{}, fmt.Errorf("%w: %s: key %q: %v", ErrBadReport, what, m.key, err)
		}
		got[m.key] = true
	}
	for _, c := range columns {
		if !got[c] {
			return Row{}, fmt.Errorf("%w: %s: missing key %q", ErrBadReport, what, c)
		}
	}
	if err := row.Validate(); err != nil {
		return Row{}, fmt.Errorf("%s: %w", what, err)
	}
	return row, nil
}

// decodeValue decodes one JSON value with numbers kept as json.Number.
func decodeValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func intValue(raw json.RawMessage) (int64, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return 0, err
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want an integer, got %s", describe(v))
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("integer %s out of range", n)
		}
		return 0, fmt.Errorf("want an integer, got %s", n)
	}
	if i < 0 {
		return 0, fmt.Errorf("negative value %d", i)
	}
	return i, nil
}

func floatValue(raw json.RawMessage) (float64, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return 0, err
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want a number, got %s", describe(v))
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("number %s out of range", n)
	}
	if f < 0 {
		return 0, fmt.Errorf("negative value %s", n)
	}
	if f == 0 {
		f = 0 // no -0
	}
	return f, nil
}

func stringValue(raw json.RawMessage) (string, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %s", describe(v))
	}
	return s, nil
}

// normalize turns the json.Numbers inside v into int (whole and in range)
// or float64.
func normalize(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil && int64(int(i)) == i {
			return int(i), nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s out of range", x)
		}
		return f, nil
	case []any:
		for i := range x {
			e, err := normalize(x[i])
			if err != nil {
				return nil, err
			}
			x[i] = e
		}
		return x, nil
	case map[string]any:
		for k := range x {
			e, err := normalize(x[k])
			if err != nil {
				return nil, err
			}
			x[k] = e
		}
		return x, nil
	}
	return v, nil
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(t))
	case string:
		return fmt.Sprintf("the string %q", t)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
