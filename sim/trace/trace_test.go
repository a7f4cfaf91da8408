package trace

import (
	"bytes"
	"encoding/json"
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
