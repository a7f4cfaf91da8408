package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Field is one named member of a Record.
type Field struct {
	Name  string
	Value any
}

// Record is an ordered set of named values; it marshals to a JSON object
// whose keys keep their order.
type Record []Field

// MarshalJSON writes the record as a JSON object in field order.
func (r Record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// FormatValue renders a property value for people: numbers in hex when hex is
// set (and the number is ≥ 10), lists in brackets, records in braces, and an
// absent value (nil) as "—".
func FormatValue(v any, hex bool) string {
	var b strings.Builder
	formatValue(&b, v, hex)
	return b.String()
}

func formatValue(b *strings.Builder, v any, hex bool) {
	switch x := v.(type) {
	case nil:
		b.WriteString("—")
	case uint64:
		formatUint(b, x, hex)
	case int:
		if x < 0 {
			fmt.Fprintf(b, "%d", x)
		} else {
			formatUint(b, uint64(x), hex)
		}
	case int32:
		if x < 0 {
			fmt.Fprintf(b, "%d", x)
		} else {
			formatUint(b, uint64(x), hex)
		}
	case uint32:
		formatUint(b, uint64(x), hex)
	case uint8:
		formatUint(b, uint64(x), hex)
	case bool:
		fmt.Fprintf(b, "%t", x)
	case string:
		b.WriteString(x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			formatValue(b, e, hex)
		}
		b.WriteByte(']')
	case Record:
		b.WriteByte('{')
		for i, f := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(": ")
			formatValue(b, f.Value, hex)
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%v", x)
	}
}

func formatUint(b *strings.Builder, x uint64, hex bool) {
	if hex && x >= 10 {
		fmt.Fprintf(b, "%#x", x)
		return
	}
	fmt.Fprintf(b, "%d", x)
}

// list converts a typed slice to []any for rendering and JSON.
func list[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// each evaluates f for i in [0, n) and collects the results; an error becomes nil (JSON null).
func each[T any](n int, f func(i int) (T, error)) []any {
	out := make([]any, n)
	for i := 0; i < n; i++ {
		v, err := f(i)
		if err != nil {
			out[i] = nil
			continue
		}
		out[i] = v
	}
	return out
}

// orNil returns v when ok and nil (absent) otherwise.
func orNil(v any, ok bool) any {
	if !ok {
		return nil
	}
	return v
}

// valueOrNil returns v when err is nil and nil (absent) otherwise.
func valueOrNil[T any](v T, err error) any {
	if err != nil {
		return nil
	}
	return v
}
