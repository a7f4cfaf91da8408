package snapenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	A      uint8
	B      int16
	hidden int // not state: skipped
	Raw    [5]byte
}

type sample struct {
	Flag   bool
	U      uint64
	I      int64
	F32    float32
	F64    float64
	S      string
	Arr    [3]int32
	Bytes  []byte
	Empty  []byte
	Nil    []int
	Inners []inner
	M      map[uint64]uint64
	SM     map[string]int
	NilMap map[int]bool
	P      *inner
	NilP   *inner
	Pages  map[uint64]*[16]byte
}

func sampleValue() sample {
	return sample{
		Flag: true, U: math.MaxUint64, I: math.MinInt64, F32: -1.5, F64: math.Inf(1), S: "héllo",
		Arr: [3]int32{-1, 0, math.MaxInt32}, Bytes: []byte{1, 2, 3}, Empty: []byte{},
		Inners: []inner{{A: 255, B: -300, Raw: [5]byte{9, 8, 7, 6, 5}}, {}},
		M:      map[uint64]uint64{1 << 40: 1, 3: 4, 0: 0}, SM: map[string]int{"b": -2, "a": 1},
		P: &inner{A: 1}, Pages: map[uint64]*[16]byte{7: {1}, 2: {}},
	}
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, Encode(&b, v))
	return b.Bytes()
}

var big = Limits{MaxBytes: 1 << 30}

// TestRoundTrip: a decoded value equals the encoded one, nil and empty
// slices kept apart, unexported fields skipped; the encoding is
// deterministic (map order does not show).
func TestRoundTrip(t *testing.T) {
	in := sampleValue()
	in.Inners[0].hidden = 42
	b := encode(t, &in)
	assert.Equal(t, b, encode(t, &in), "deterministic")
	var out sample
	_, err := Decode(bytes.NewReader(b), int64(len(b)), &out, big)
	require.NoError(t, err)
	in.Inners[0].hidden = 0
	assert.Equal(t, in, out)
	assert.NotNil(t, out.Empty)
	assert.Nil(t, out.Nil)
	assert.Nil(t, out.NilMap)
}

// TestRefused: every malformed input is an error naming where it is.
func TestRefused(t *testing.T) {
	good := encode(t, &sample{})
	uv := func(x uint64) []byte { return binary.AppendUvarint(nil, x) }
	cases := []struct {
		name  string
		v     any
		input []byte
		lim   Limits
		want  string
		limit bool
	}{
		{"bool 2", new(bool), []byte{2}, big, "value: boolean byte 2", false},
		{"uint8 overflow", new(uint8), uv(256), big, "256 does not fit a uint8", false},
		{"int8 overflow", new(int8), uv(256), big, "128 does not fit a int8", false},
		{"varint too long", new(uint64), bytes.Repeat([]byte{0xff}, 11), big, "varint overflows", false},
		{"truncated", new(uint32), []byte{0x80}, big, "truncated", false},
		{"trailing", new(uint8), []byte{1, 2}, big, "1 bytes left over", false},
		{"slice count over the input", new([]uint64), uv(1 << 27), big, "134217727 elements, but only 0 bytes", false},
		{"map count over the input", new(map[uint64]uint64), uv(1<<27 + 1), big, "134217728 entries, but only 0 bytes", false},
		{"string over the input", new(string), uv(1000), big, "1000 bytes of string", false},
		{"slice over the budget", new([]uint64), append(uv(101), make([]byte, 100)...), Limits{MaxBytes: 799}, "100 elements would take more than the 799 bytes", true},
		{"map over the budget", new(map[uint32]uint32), append(uv(3), 1, 1, 2, 2), Limits{MaxBytes: 15}, "2 entries would take", true},
		{"pointer over the budget", new(*[64]byte), append([]byte{1}, make([]byte, 64)...), Limits{MaxBytes: 63}, "a pointed-to value", true},
		{"unordered keys", new(map[uint8]uint8), append(uv(3), 5, 0, 4, 0), big, "[entry 1]: key 4 is not above the previous key 5", false},
		{"repeated keys", new(map[string]uint8), append(uv(3), 1, 'a', 0, 1, 'a', 0), big, "key a is not above", false},
		{"pointer byte", new(*uint8), []byte{7}, big, "pointer byte 7", false},
		{"depth", new([][][][]uint8), []byte{2, 2, 2, 1}, Limits{MaxBytes: 1 << 20, MaxDepth: 2}, "nested deeper than 2", true},
		{"shorter than the value", new(sample), good[:3], big, "at least", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(bytes.NewReader(c.input), int64(len(c.input)), c.v, c.lim)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrDecode)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, c.limit, errors.Is(err, ErrLimit), "ErrLimit")
		})
	}
}

// TestErrorNamesThePath: an error deep inside a value names the field and
// index.
func TestErrorNamesThePath(t *testing.T) {
	type wrap struct{ S sample }
	v := wrap{S: sample{Inners: []inner{{}, {}}}}
	b := encode(t, &v)
	// Find Inners[1].A: encode a value with a marker there and diff.
	v.S.Inners[1].A = 0x55
	b2 := encode(t, &v)
	at := -1
	for i := range b {
		if b[i] != b2[i] {
			at = i
			break
		}
	}
	require.GreaterOrEqual(t, at, 0)
	// Overlong: A is a uint8; 300 takes two bytes and does not fit.
	bad := append(append(append([]byte(nil), b[:at]...), 0xac, 0x02), b[at+1:]...)
	var out wrap
	_, err := Decode(bytes.NewReader(bad), int64(len(bad)), &out, big)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "S.Inners[1].A: 300 does not fit a uint8")
}

// TestHugeCountAllocatesNothing: a count of 2^27 entries in a few bytes of
// input (the crafted Host.Blocks of issue 13, item 11) is refused before
// anything of its size is allocated, even under a generous budget.
func TestHugeCountAllocatesNothing(t *testing.T) {
	type host struct {
		Blocks map[uint64]uint64
		Free   [][2]uint64
	}
	for _, input := range [][]byte{
		binary.AppendUvarint(nil, 1<<27+1),                                     // Blocks
		append(append([]byte{0}, binary.AppendUvarint(nil, 1<<27+1)...), 1, 1), // Free
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var h host
		_, err := Decode(bytes.NewReader(input), int64(len(input)), &h, Limits{MaxBytes: 1 << 40})
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, ErrDecode)
		assert.Contains(t, err.Error(), "134217728")
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "allocated for a refused count")
	}
}

// TestTypes: what cannot be encoded is refused by name.
func TestTypes(t *testing.T) {
	type rec struct{ Next *rec }
	type withIface struct{ X any }
	type badKey struct{ M map[[2]int]int }
	for _, v := range []any{&rec{}, &withIface{}, &badKey{}, new(complex64)} {
		assert.ErrorIs(t, Encode(&bytes.Buffer{}, v), ErrType, "%T", v)
		_, err := Fingerprint(reflect.TypeOf(v).Elem())
		assert.ErrorIs(t, err, ErrType, "%T", v)
	}
}

// TestSchema: the schema names every exported field, so a change of
// layout changes the fingerprint.
func TestSchema(t *testing.T) {
	type a struct {
		X uint32
		y int
	}
	type b struct{ X uint64 }
	type c struct{ Y uint32 }
	s, err := Schema(reflect.TypeOf(a{}))
	require.NoError(t, err)
	assert.Equal(t, "struct{X uint32}", s)
	fa, _ := Fingerprint(reflect.TypeOf(a{}))
	fb, _ := Fingerprint(reflect.TypeOf(b{}))
	fc, _ := Fingerprint(reflect.TypeOf(c{}))
	assert.NotEqual(t, fa, fb)
	assert.NotEqual(t, fa, fc)
}

// FuzzDecode: no input makes Decode panic or pass its budget; what it
// accepts encodes back to the same bytes (the encoding is canonical for
// accepted input up to varint form, so compare by decoding again).
func FuzzDecode(f *testing.F) {
	f.Add(encode(f, ptr(sampleValue())))
	f.Add(encode(f, &sample{}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var v sample
		if _, err := Decode(bytes.NewReader(data), int64(len(data)), &v, Limits{MaxBytes: 1 << 20}); err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("an error not wrapping ErrDecode: %v", err)
			}
			return
		}
		b := encode(t, &v)
		var w sample
		_, err := Decode(bytes.NewReader(b), int64(len(b)), &w, Limits{MaxBytes: 1 << 20})
		require.NoError(t, err)
		if !reflect.DeepEqual(normalise(v), normalise(w)) {
			t.Fatalf("re-encoding changed the value: %+v vs %+v", v, w)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// normalise replaces NaNs (never equal to themselves) for comparison.
func normalise(s sample) sample {
	if s.F32 != s.F32 {
		s.F32 = 0
	}
	if s.F64 != s.F64 {
		s.F64 = 0
	}
	return s
}

// TestDecodeTakesWhatItCharges: what Decode allocates to decode a value —
// memory pages, a long string, many small maps, empty maps, byte slices —
// is at most what it charges against the budget and returns, plus its
// read buffer and the allocator's rounding to size classes (a fifth for
// values of 1 KiB and more): the budget bounds the decoded value's memory.
func TestDecodeTakesWhatItCharges(t *testing.T) {
	pages := map[uint64]*[4096]byte{}
	for i := range uint64(1024) {
		pages[i*3] = &[4096]byte{byte(i)}
	}
	small := make([]map[uint32]uint32, 10_000)
	for i := range small {
		small[i] = map[uint32]uint32{uint32(i): 1}
	}
	empty := make([]map[uint8]uint8, 10_000)
	for i := range empty {
		empty[i] = map[uint8]uint8{}
	}
	chunks := make([][]byte, 1000)
	for i := range chunks {
		chunks[i] = bytes.Repeat([]byte{byte(i)}, 1000)
	}
	for _, c := range []struct {
		name string
		v    any
		out  func() any
	}{
		{"pages", &pages, func() any { return new(map[uint64]*[4096]byte) }},
		{"a 1 MiB string", ptr(string(bytes.Repeat([]byte{'x'}, 1<<20))), func() any { return new(string) }},
		{"small maps", &small, func() any { return new([]map[uint32]uint32) }},
		{"empty maps", &empty, func() any { return new([]map[uint8]uint8) }},
		{"byte slices", &chunks, func() any { return new([][]byte) }},
		{"sample", ptr(sampleValue()), func() any { return new(sample) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := encode(t, c.v)
			out := c.out()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			charged, err := Decode(bytes.NewReader(b), int64(len(b)), out, big)
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			assert.Equal(t, c.v, out)
			used := int64(after.TotalAlloc - before.TotalAlloc)
			assert.LessOrEqual(t, used, charged+charged/5+DecodeBuffer+4<<10, "allocated beyond the charge and the read buffer (%d charged)", charged)
		})
	}
}
