package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteJSON(t *testing.T) {
	r := New(3)
	r.Slice("nc0.dve", "tensor_tensor", 2_500_000, 3_000_001, map[string]string{"dst": "sbuf[0:128,0]"})
	r.Slice("nc0.act", "activation", 1_000_000, 2_000_000, nil)
	r.Slice("dma 0/1", "copy", 1_000_000, 1_500_000, map[string]string{"bytes": "4096"})
	r.Slice("dropped", "x", 0, 1, nil)
	kept, dropped := r.Len()
	assert.Equal(t, [2]int{3, 1}, [2]int{kept, dropped})

	var a, b bytes.Buffer
	require.NoError(t, r.WriteJSON(&a))
	require.NoError(t, r.WriteJSON(&b))
	assert.Equal(t, a.String(), b.String(), "deterministic")
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
		Metadata    map[string]string
	}
	require.NoError(t, json.Unmarshal(a.Bytes(), &doc))
	assert.Equal(t, "1", doc.Metadata["dropped_slices"])
	var xs []map[string]any
	for _, e := range doc.TraceEvents {
		if e["ph"] == "X" {
			xs = append(xs, e)
		}
	}
	require.Len(t, xs, 3)
	assert.Equal(t, "copy", xs[0]["name"], "sorted by start, then track")
	assert.Equal(t, "activation", xs[1]["name"])
	assert.Equal(t, 2.5, xs[2]["ts"])
	assert.Equal(t, 0.500001, xs[2]["dur"], "ps precision")
}

// TestMaxBytes: a recorder bounded to n bytes writes at most n bytes of
// valid JSON, stops at the first slice that would pass the bound (later
// ones, even small, are dropped) and says so in its metadata.
func TestMaxBytes(t *testing.T) {
	for _, n := range []uint64{0, 600, 2000, 10000, 100000} {
		r := New(0)
		r.SetMaxBytes(n)
		for i := range 1000 {
			args := map[string]string{"op": "matmul <&>", "i": fmt.Sprint(i), "ü": "\x01"}
			r.Slice(fmt.Sprintf("core%d", i%7), fmt.Sprintf("rec \"%d\"", i), uint64(i)*1_234_567, uint64(i)*1_234_567+999_999_999, args)
		}
		var b bytes.Buffer
		require.NoError(t, r.WriteJSON(&b))
		assert.LessOrEqual(t, uint64(b.Len()), max(n, fixedBytes), "bound %d", n)
		var got struct {
			TraceEvents []map[string]any  `json:"traceEvents"`
			Metadata    map[string]string `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(b.Bytes(), &got), "bound %d: valid JSON", n)
		kept, dropped := r.Len()
		assert.Equal(t, 1000, kept+dropped)
		assert.Positive(t, dropped)
		assert.True(t, r.Full())
		assert.Equal(t, fmt.Sprint(dropped), got.Metadata["dropped_slices"])
		assert.Contains(t, got.Metadata["stopped"], "size limit")
	}
}

// FuzzSliceBytes: whatever a slice's name, track and arguments hold, the
// recorder's estimate bounds what WriteJSON writes, so a bounded trace
// never passes its bound.
func FuzzSliceBytes(f *testing.F) {
	f.Add("nc0.dve", "tensor_tensor", "dst", "sbuf[0:128,0]", uint64(2_500_000), uint64(500_001))
	f.Add("\x00\"<>&\\", "\u2028\xff", "\xe2\x80", "é", uint64(1)<<62, uint64(0))
	f.Fuzz(func(t *testing.T, track, name, k, v string, start, dur uint64) {
		r := New(0)
		r.SetMaxBytes(1 << 30)
		r.Slice(track, name, start, start+dur, map[string]string{k: v})
		r.Slice(track+"2", name, start, start+dur, nil)
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if uint64(b.Len()) > r.bytes {
			t.Fatalf("wrote %d bytes, estimated at most %d", b.Len(), r.bytes)
		}
	})
}

func TestNumLen(t *testing.T) {
	for _, ps := range []uint64{0, 999_999, 1_000_000, 9_999_999, 10_000_000, 123_456_789_012, ^uint64(0)} {
		assert.EqualValues(t, len(micros(ps)), numLen(ps), "%d", ps)
	}
}

// BenchmarkSlice: recording a slice does not allocate beyond the slice
// itself.
func BenchmarkSlice(b *testing.B) {
	r := New(0)
	r.SetMaxBytes(1 << 40)
	args := map[string]string{"dst": "sbuf[0:128,0]"}
	b.ReportAllocs()
	for i := range b.N {
		r.Slice("nc0.dve", "tensor_tensor", uint64(i), uint64(i)+1000, args)
		if len(r.slices) == DefaultLimit {
			r.slices = r.slices[:0]
		}
	}
}

// A recording stopped by its count of slices, not its size, says so in the
// metadata as one stopped by its size does: dropped_slices alone read as if
// nothing had stopped it (a run with --trace-max 1G past 1,048,576 slices).
func TestStoppedBySliceLimit(t *testing.T) {
	r := New(2)
	assert.Equal(t, "", r.Stopped())
	for i := range 3 {
		r.Slice("nc0.pe", "matmul", uint64(i)*1000, uint64(i)*1000+500, nil)
	}
	assert.False(t, r.Full(), "not the size bound")
	assert.Equal(t, "slice limit of 2 slices reached", r.Stopped())
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	var doc struct{ Metadata map[string]string }
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.Equal(t, map[string]string{"dropped_slices": "1", "stopped": "slice limit of 2 slices reached"}, doc.Metadata)
}
