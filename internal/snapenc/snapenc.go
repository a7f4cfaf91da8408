// Package snapenc is the binary encoding of simulator state in snapshot
// files: a compact, deterministic encoding of plain Go values (booleans,
// integers, floats, strings, arrays, slices, maps, pointers and structs of
// them) whose decoder is made for untrusted input.
//
// The decoder never allocates on the word of its input alone. Before it
// makes a slice, a map or a string it checks the count against the bytes the
// input still holds (every element takes at least one byte, most more) and
// charges what the value will take against a memory budget
// ([Limits.MaxBytes]); a count that fails either check is refused with an
// error naming the value's path ("Device[3].HBM.Pages: 134217728 entries:
// …") before anything is allocated. Nesting is bounded too
// ([Limits.MaxDepth]). So decoding n bytes of input allocates at most
// Limits.MaxBytes, whatever the bytes say.
//
// The encoding of a value of type T:
//
//   - bool: one byte, 0 or 1 (anything else is refused);
//   - unsigned integers: an unsigned varint (encoding/binary), refused if it
//     does not fit T; signed integers: a zig-zag varint, likewise;
//   - float32, float64: their IEEE 754 bits, 4 or 8 bytes little-endian;
//   - string: its length as a varint, then its bytes;
//   - array [N]E: its N elements (an array of bytes: its N bytes);
//   - slice []E: 0 for a nil slice, else its length + 1 as a varint, then
//     its elements (a slice of bytes: its bytes);
//   - map: 0 for a nil map, else its length + 1, then its entries, key then
//     value, in strictly ascending key order (keys are integers or strings;
//     a repeated or unordered key is refused);
//   - pointer: one byte, 0 for nil or 1 followed by the value pointed to;
//   - struct: its exported fields in declaration order (unexported fields
//     are not state and are skipped).
//
// The encoding holds no field names or type information: both sides must
// use the same types. [Schema] describes a type's layout so a file can carry
// a fingerprint of it ([Fingerprint]) and a reader refuse a file of another
// layout by name instead of misreading it.
package snapenc

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// ErrDecode marks input that does not decode: truncated, malformed, or over
// a limit. The error says where (the value's path) and what.
var ErrDecode = errors.New("snapshot encoding")

// ErrLimit marks input refused because it would pass a limit (the memory
// budget or the nesting depth). Errors wrapping ErrLimit wrap ErrDecode too.
var ErrLimit = errors.New("over the decoding limit")

// ErrType marks a Go type the encoding does not handle (interfaces,
// functions, channels, complex numbers, recursive types, maps keyed by
// something other than an integer or a string).
var ErrType = errors.New("type not encodable")

// Limits bound what Decode may allocate.
type Limits struct {
	// MaxBytes is the memory budget: the bytes of every slice, map, string
	// and pointed-to value Decode makes, counted before they are made. A
	// map is counted at an upper estimate of a Go map's tables (MapBytes);
	// the rest at their size, which Go's allocator may round up to its size
	// class (by at most a fifth for values of 1 KiB or more).
	MaxBytes int64
	// MaxDepth bounds the nesting of values (a struct in a slice in a
	// struct is depth 3).
	MaxDepth int
}

// DefaultMaxDepth is a nesting bound far above any state type's.
const DefaultMaxDepth = 64

// typeInfo is what the codec knows of a type, computed once.
type typeInfo struct {
	kind   reflect.Kind
	min    int64       // the fewest bytes a value of the type encodes to
	size   int64       // the bytes a value takes in memory
	slot   int64       // map: the bytes of an entry in its tables (key and value, aligned)
	elem   *typeInfo   // array, slice, pointer: the element; map: the value
	key    *typeInfo   // map: the key
	fields []fieldInfo // struct: its exported fields
	schema string
}

// fieldInfo is an exported field of a struct.
type fieldInfo struct {
	index int
	name  string
	ti    *typeInfo
}

var infoCache sync.Map // reflect.Type → *typeInfo or error

// info returns the codec's view of t, or an error wrapping ErrType.
func info(t reflect.Type) (*typeInfo, error) {
	if v, ok := infoCache.Load(t); ok {
		if err, bad := v.(error); bad {
			return nil, err
		}
		return v.(*typeInfo), nil
	}
	ti, err := build(t, map[reflect.Type]bool{})
	if err != nil {
		infoCache.Store(t, err)
		return nil, err
	}
	return ti, nil
}

func build(t reflect.Type, visiting map[reflect.Type]bool) (*typeInfo, error) {
	if v, ok := infoCache.Load(t); ok {
		if err, bad := v.(error); bad {
			return nil, err
		}
		return v.(*typeInfo), nil
	}
	if visiting[t] {
		return nil, fmt.Errorf("snapenc: %v is recursive: %w", t, ErrType)
	}
	visiting[t] = true
	defer delete(visiting, t)
	ti := &typeInfo{kind: t.Kind(), size: int64(t.Size())}
	switch k := t.Kind(); k {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		ti.min, ti.schema = 1, k.String()
	case reflect.Float32:
		ti.min, ti.schema = 4, "float32"
	case reflect.Float64:
		ti.min, ti.schema = 8, "float64"
	case reflect.String:
		ti.min, ti.schema = 1, "string"
	case reflect.Array:
		e, err := build(t.Elem(), visiting)
		if err != nil {
			return nil, err
		}
		ti.elem, ti.min, ti.schema = e, int64(t.Len())*e.min, "["+strconv.Itoa(t.Len())+"]"+e.schema
	case reflect.Slice:
		e, err := build(t.Elem(), visiting)
		if err != nil {
			return nil, err
		}
		ti.elem, ti.min, ti.schema = e, 1, "[]"+e.schema
	case reflect.Pointer:
		e, err := build(t.Elem(), visiting)
		if err != nil {
			return nil, err
		}
		ti.elem, ti.min, ti.schema = e, 1, "*"+e.schema
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String:
		default:
			return nil, fmt.Errorf("snapenc: %v: map keys must be integers or strings: %w", t, ErrType)
		}
		kt, err := build(t.Key(), visiting)
		if err != nil {
			return nil, err
		}
		vt, err := build(t.Elem(), visiting)
		if err != nil {
			return nil, err
		}
		ti.key, ti.elem, ti.min, ti.schema = kt, vt, 1, "map["+kt.schema+"]"+vt.schema
		ti.slot = int64(reflect.StructOf([]reflect.StructField{{Name: "K", Type: t.Key()}, {Name: "V", Type: t.Elem()}}).Size())
	case reflect.Struct:
		var b strings.Builder
		b.WriteString("struct{")
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			ft, err := build(f.Type, visiting)
			if err != nil {
				return nil, fmt.Errorf("snapenc: %v.%s: %w", t, f.Name, err)
			}
			ti.fields = append(ti.fields, fieldInfo{index: i, name: f.Name, ti: ft})
			ti.min += ft.min
			if len(ti.fields) > 1 {
				b.WriteByte(';')
			}
			b.WriteString(f.Name + " " + ft.schema)
		}
		b.WriteByte('}')
		ti.schema = b.String()
	default:
		return nil, fmt.Errorf("snapenc: %v (%v): %w", t, k, ErrType)
	}
	infoCache.Store(t, ti)
	return ti, nil
}

// Schema describes the layout of t's encoding: every exported field's name
// and type, recursively. Two types with the same schema encode alike.
func Schema(t reflect.Type) (string, error) {
	ti, err := info(t)
	if err != nil {
		return "", err
	}
	return ti.schema, nil
}

// Fingerprint is the first 8 bytes of the SHA-256 of t's Schema, as a
// little-endian integer: what a file records of the layout it was written
// with.
func Fingerprint(t reflect.Type) (uint64, error) {
	s, err := Schema(t)
	if err != nil {
		return 0, err
	}
	sum := sha256.Sum256([]byte(s))
	return binary.LittleEndian.Uint64(sum[:8]), nil
}

// Encode writes v (any encodable value; a pointer is followed) to w.
func Encode(w io.Writer, v any) error {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if _, err := info(rv.Type()); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	e := encoder{w: bw}
	e.value(rv)
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

type encoder struct {
	w   *bufio.Writer
	err error
	buf [binary.MaxVarintLen64]byte
}

func (e *encoder) uvarint(x uint64) {
	if e.err == nil {
		_, e.err = e.w.Write(binary.AppendUvarint(e.buf[:0], x))
	}
}

func (e *encoder) bytes(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) value(v reflect.Value) {
	if e.err != nil {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		b := byte(0)
		if v.Bool() {
			b = 1
		}
		e.err = e.w.WriteByte(b)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.uvarint(v.Uint())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := v.Int()
		e.uvarint(uint64(x<<1) ^ uint64(x>>63))
	case reflect.Float32:
		e.bytes(binary.LittleEndian.AppendUint32(e.buf[:0], math.Float32bits(float32(v.Float()))))
	case reflect.Float64:
		e.bytes(binary.LittleEndian.AppendUint64(e.buf[:0], math.Float64bits(v.Float())))
	case reflect.String:
		e.uvarint(uint64(v.Len()))
		if e.err == nil {
			_, e.err = e.w.WriteString(v.String())
		}
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.CanAddr() {
				e.bytes(v.Bytes())
			} else {
				for i := range v.Len() {
					e.rawByte(byte(v.Index(i).Uint()))
				}
			}
			return
		}
		for i := range v.Len() {
			e.value(v.Index(i))
		}
	case reflect.Slice:
		if v.IsNil() {
			e.uvarint(0)
			return
		}
		e.uvarint(uint64(v.Len()) + 1)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			e.bytes(v.Bytes())
			return
		}
		for i := range v.Len() {
			e.value(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			e.uvarint(0)
			return
		}
		e.uvarint(uint64(v.Len()) + 1)
		keys := v.MapKeys()
		sortKeys(keys)
		for _, k := range keys {
			e.value(k)
			e.value(v.MapIndex(k))
		}
	case reflect.Pointer:
		if v.IsNil() {
			e.err = e.w.WriteByte(0)
			return
		}
		e.err = e.w.WriteByte(1)
		e.value(v.Elem())
	case reflect.Struct:
		ti, err := info(v.Type())
		if err != nil {
			e.err = err
			return
		}
		for _, f := range ti.fields {
			e.value(v.Field(f.index))
		}
	default:
		e.err = fmt.Errorf("snapenc: %v: %w", v.Type(), ErrType)
	}
}

// rawByte writes one byte of a byte array that is not addressable.
func (e *encoder) rawByte(b byte) {
	if e.err == nil {
		e.err = e.w.WriteByte(b)
	}
}

func sortKeys(keys []reflect.Value) {
	if len(keys) == 0 {
		return
	}
	switch keys[0].Kind() {
	case reflect.String:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.String(), b.String()) })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Int(), b.Int()) })
	default:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Uint(), b.Uint()) })
	}
}

// Decode reads exactly size bytes from r into v, a non-nil pointer, within
// the limits, and returns the bytes it charged against the memory budget
// (what the value it made takes, as [Limits.MaxBytes] counts it). It reads
// r as a stream, at most size bytes and no further (through a buffer of
// DecodeBuffer bytes): r may be a decompressor, and nothing of the input
// is held beyond that buffer. Input that is truncated, malformed, longer
// than the value, or that would pass a limit is refused with an error
// wrapping ErrDecode (and ErrLimit for a limit) that names the path of the
// value it was reading; what v holds then is unspecified (decode into a
// fresh value).
func Decode(r io.Reader, size int64, v any, lim Limits) (charged int64, err error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return 0, fmt.Errorf("snapenc: decode into %T: not a non-nil pointer: %w", v, ErrType)
	}
	ti, err := info(rv.Type().Elem())
	if err != nil {
		return 0, err
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultMaxDepth
	}
	d := &decoder{r: bufio.NewReaderSize(io.LimitReader(r, size), DecodeBuffer), left: size, budget: lim.MaxBytes, maxDepth: lim.MaxDepth}
	if size < ti.min {
		return 0, d.fail("%d bytes of input, a value takes at least %d", size, ti.min)
	}
	err = d.whole(rv.Elem(), ti)
	return lim.MaxBytes - d.budget, err
}

// DecodeBuffer is the buffer Decode reads its input through.
const DecodeBuffer = 64 << 10

// MapBytes is what Decode charges for a map of n entries of slot bytes
// each (key and value, aligned): three slots and their control bytes an
// entry, for eight entries more than it holds, and 64 bytes of header. A
// Go map doubles its tables when they are 7/8 full, so they hold at most
// 16/7 slots an entry, and its first group of 8 slots comes with it.
func MapBytes(n, slot int64) int64 {
	per := 3 * (slot + 1)
	if n > (math.MaxInt64-64)/per-8 {
		return math.MaxInt64
	}
	return 64 + per*(n+8)
}

// whole decodes the value v and checks that it takes the whole input.
func (d *decoder) whole(v reflect.Value, ti *typeInfo) error {
	d.value(v, ti, 0)
	if d.err != nil {
		return d.err
	}
	if d.left != 0 {
		if _, err := d.r.ReadByte(); err != nil {
			return fmt.Errorf("snapenc: the input ends %d bytes short of its declared length: %w", d.left, ErrDecode)
		}
		return fmt.Errorf("snapenc: %d bytes left over after the value: %w", d.left, ErrDecode)
	}
	return nil
}

type decoder struct {
	r        *bufio.Reader
	left     int64 // bytes of input not yet read
	budget   int64 // bytes that may still be allocated
	maxDepth int
	path     []pathElem // the value being read: field names and indices
	err      error
}

// pathElem is a step of a value's path: a field name, or an index (of an
// array, a slice or a map's entries) when name is "".
type pathElem struct {
	name  string
	index int
	entry bool // a map entry
}

// where formats the path of the value being read.
func (d *decoder) where() string {
	if len(d.path) == 0 {
		return "value"
	}
	var b strings.Builder
	for i, p := range d.path {
		switch {
		case p.name != "":
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p.name)
		case p.entry:
			b.WriteString("[entry " + strconv.Itoa(p.index) + "]")
		default:
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		}
	}
	return b.String()
}

func (d *decoder) fail(format string, args ...any) error {
	if d.err == nil {
		d.err = fmt.Errorf("snapenc: %s: %s: %w", d.where(), fmt.Sprintf(format, args...), ErrDecode)
	}
	return d.err
}

func (d *decoder) limit(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("snapenc: %s: %s: %w: %w", d.where(), fmt.Sprintf(format, args...), ErrLimit, ErrDecode)
	}
}

// charge takes n values of size bytes each from the memory budget.
func (d *decoder) charge(n, size int64, what string) bool {
	if size > 0 && n > d.budget/size {
		d.overBudget(what, fmt.Sprintf("%d × %d bytes", n, size))
		return false
	}
	d.budget -= n * size
	return true
}

// chargeMap takes a map of n entries from the memory budget (MapBytes).
func (d *decoder) chargeMap(n int64, ti *typeInfo) bool {
	b := MapBytes(n, ti.slot)
	if b > d.budget {
		d.overBudget(strconv.FormatInt(n, 10)+" entries", fmt.Sprintf("a map of %d bytes", b))
		return false
	}
	d.budget -= b
	return true
}

// overBudget refuses what, which would take cost.
func (d *decoder) overBudget(what, cost string) {
	d.limit("%s would take more than the %d bytes left of the memory budget (%s)", what, d.budget, cost)
}

// readErr reports a failed read: the input ended early, or its reader
// failed (a decompressor's error, say).
func (d *decoder) readErr(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		d.fail("truncated (%d of the declared bytes missing)", d.left)
		return
	}
	d.fail("reading: %v", err)
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	b, err := d.r.ReadByte()
	if err != nil {
		d.readErr(err)
		return 0
	}
	d.left--
	return b
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	var x uint64
	for i := 0; ; i++ {
		b := d.byte()
		if d.err != nil {
			return 0
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			d.fail("varint overflows 64 bits")
			return 0
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return x
		}
	}
}

func (d *decoder) read(p []byte) {
	if d.err != nil {
		return
	}
	if int64(len(p)) > d.left {
		d.fail("%d bytes needed, %d left", len(p), d.left)
		return
	}
	if _, err := io.ReadFull(d.r, p); err != nil {
		d.readErr(err)
		return
	}
	d.left -= int64(len(p))
}

// count reads a length (a slice, map or string: minus one for nil when
// nilable) and checks it against the input left at min bytes per element.
func (d *decoder) count(nilable bool, min int64, what string) (n int64, isNil bool) {
	x := d.uvarint()
	if d.err != nil {
		return 0, false
	}
	if nilable {
		if x == 0 {
			return 0, true
		}
		x--
	}
	if min < 1 {
		min = 1
	}
	if x > uint64(d.left/min) {
		d.fail("%d %s, but only %d bytes of input are left (at least %d each)", x, what, d.left, min)
		return 0, false
	}
	return int64(x), false
}

func (d *decoder) value(v reflect.Value, ti *typeInfo, depth int) {
	if d.err != nil {
		return
	}
	if depth > d.maxDepth {
		d.limit("nested deeper than %d", d.maxDepth)
		return
	}
	switch ti.kind {
	case reflect.Bool:
		switch b := d.byte(); b {
		case 0, 1:
			v.SetBool(b == 1)
		default:
			d.fail("boolean byte %d (want 0 or 1)", b)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x := d.uvarint()
		if d.err == nil && v.OverflowUint(x) {
			d.fail("%d does not fit a %v", x, v.Type())
			return
		}
		v.SetUint(x)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		u := d.uvarint()
		x := int64(u>>1) ^ -int64(u&1)
		if d.err == nil && v.OverflowInt(x) {
			d.fail("%d does not fit a %v", x, v.Type())
			return
		}
		v.SetInt(x)
	case reflect.Float32:
		var b [4]byte
		d.read(b[:])
		v.SetFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b[:]))))
	case reflect.Float64:
		var b [8]byte
		d.read(b[:])
		v.SetFloat(math.Float64frombits(binary.LittleEndian.Uint64(b[:])))
	case reflect.String:
		n, _ := d.count(false, 1, "bytes of string")
		if d.err != nil || !d.charge(n, 1, "a string") {
			return
		}
		b := make([]byte, n)
		d.read(b)
		// The string takes b's bytes, which nothing else holds: one
		// allocation, the one charged.
		v.SetString(unsafe.String(unsafe.SliceData(b), len(b)))
	case reflect.Array:
		if ti.elem.kind == reflect.Uint8 {
			d.read(v.Bytes())
			return
		}
		d.elements(v, v.Len(), ti.elem, depth)
	case reflect.Slice:
		d.slice(v, ti, depth)
	case reflect.Map:
		d.mapValue(v, ti, depth)
	case reflect.Pointer:
		d.pointer(v, ti, depth)
	case reflect.Struct:
		d.path = append(d.path, pathElem{})
		for _, f := range ti.fields {
			d.path[len(d.path)-1].name = f.name
			d.value(v.Field(f.index), f.ti, depth+1)
			if d.err != nil {
				return
			}
		}
		d.path = d.path[:len(d.path)-1]
	default:
		d.fail("%v: %v", v.Type(), ErrType)
	}
}

// slice decodes a slice: its count (or nil), charged against the budget
// before it is made, then its elements.
func (d *decoder) slice(v reflect.Value, ti *typeInfo, depth int) {
	n, isNil := d.count(true, ti.elem.min, "elements")
	if d.err != nil {
		return
	}
	if isNil {
		v.SetZero()
		return
	}
	if !d.charge(n, ti.elem.size, strconv.FormatInt(n, 10)+" elements") {
		return
	}
	s := reflect.MakeSlice(v.Type(), int(n), int(n))
	if ti.elem.kind == reflect.Uint8 {
		d.read(s.Bytes())
	} else {
		d.elements(s, int(n), ti.elem, depth)
	}
	if d.err == nil {
		v.Set(s)
	}
}

// mapValue decodes a map: its count (or nil), charged against the budget,
// then its entries, whose keys must be strictly ascending.
func (d *decoder) mapValue(v reflect.Value, ti *typeInfo, depth int) {
	n, isNil := d.count(true, ti.key.min+ti.elem.min, "entries")
	if d.err != nil {
		return
	}
	if isNil {
		v.SetZero()
		return
	}
	if !d.chargeMap(n, ti) {
		return
	}
	t := v.Type()
	m := reflect.MakeMapWithSize(t, int(n))
	key, prev := reflect.New(t.Key()).Elem(), reflect.New(t.Key()).Elem()
	val := reflect.New(t.Elem()).Elem()
	d.path = append(d.path, pathElem{entry: true})
	for i := range int(n) {
		d.path[len(d.path)-1].index = i
		d.value(key, ti.key, depth+1)
		if d.err == nil && i > 0 && !ascending(prev, key) {
			d.fail("key %v is not above the previous key %v (keys are strictly ascending)", key, prev)
		}
		val.SetZero()
		d.value(val, ti.elem, depth+1)
		if d.err != nil {
			return
		}
		m.SetMapIndex(key, val)
		prev.Set(key)
	}
	d.path = d.path[:len(d.path)-1]
	v.Set(m)
}

// pointer decodes a pointer: a byte, 0 for nil or 1 for a pointed-to
// value (charged against the budget) that follows.
func (d *decoder) pointer(v reflect.Value, ti *typeInfo, depth int) {
	switch b := d.byte(); {
	case d.err != nil:
	case b == 0:
		v.SetZero()
	case b == 1:
		if !d.charge(1, ti.elem.size, "a pointed-to value") {
			return
		}
		p := reflect.New(v.Type().Elem())
		d.value(p.Elem(), ti.elem, depth+1)
		v.Set(p)
	default:
		d.fail("pointer byte %d (want 0 or 1)", b)
	}
}

// elements decodes the n elements of an array or slice.
func (d *decoder) elements(v reflect.Value, n int, eti *typeInfo, depth int) {
	d.path = append(d.path, pathElem{})
	for i := range n {
		d.path[len(d.path)-1].index = i
		d.value(v.Index(i), eti, depth+1)
		if d.err != nil {
			return
		}
	}
	d.path = d.path[:len(d.path)-1]
}

// ascending reports whether key b is above key a.
func ascending(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return b.String() > a.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return b.Int() > a.Int()
	default:
		return b.Uint() > a.Uint()
	}
}
