package nccom_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

func TestWriteJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, sampleReport(t).WriteJSON(&buf))
	golden(t, "report.golden.json", buf.Bytes())
	assert.True(t, json.Valid(buf.Bytes()), "output is valid JSON")
}

func TestWriteJSONDeterministic(t *testing.T) {
	var first bytes.Buffer
	require.NoError(t, sampleReport(t).WriteJSON(&first))
	for range 20 { // map iteration order changes between runs
		var again bytes.Buffer
		require.NoError(t, sampleReport(t).WriteJSON(&again))
		require.Equal(t, first.String(), again.String())
	}
}

func TestWriteJSONShape(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, sampleReport(t).WriteJSON(&buf))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))

	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []string{
		"results", "neuronsim_op", "neuronsim_ranks", "neuronsim_model", "neuronsim_devices", "neuronsim_topology",
	}, keys)
	for _, k := range keys {
		if k != "results" {
			assert.True(t, strings.HasPrefix(k, "neuronsim_"), k)
		}
	}
	assert.Equal(t, "aware", doc["neuronsim_model"])
	assert.Equal(t, 32.0, doc["neuronsim_devices"])

	results := doc["results"].([]any)
	require.Len(t, results, 5)
	first := results[0].(map[string]any)
	assert.Len(t, first, 7)
	for _, c := range nccom.Columns() {
		assert.Contains(t, first, c)
	}
	assert.Equal(t, 1024.0, first["size(B)"])
	assert.Equal(t, 256.0, first["count(elems)"])
	assert.Equal(t, "fp32", first["type"])
	assert.Equal(t, 58.0, first["time:avg(us)"])
	assert.Equal(t, "rdh", first["algorithm"])
	assert.Contains(t, buf.String(), `"time:avg(us)":58.0,`, "whole floats keep a decimal point")
}

func TestWriteJSONPlainNccomShape(t *testing.T) {
	rep := &nccom.Report{Rows: []nccom.Row{{Size: 1024, Count: 256, Type: "fp32", TimeUS: 58, AlgBW: 0.02, BusBW: 0.03, Algorithm: "ring"}}}
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	want := `{"results":[{"size(B)":1024,"count(elems)":256,"type":"fp32","time:avg(us)":58.0,"algbw(GB/s)":0.02,"busbw(GB/s)":0.03,"algorithm":"ring"}]}`
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, buf.Bytes()))
	assert.Equal(t, want, compact.String())

	var empty bytes.Buffer
	require.NoError(t, (&nccom.Report{}).WriteJSON(&empty))
	assert.Equal(t, "{\n  \"results\": []\n}\n", empty.String())
}

func TestJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		rep  *nccom.Report
	}{
		{"sample", sampleReport(t)},
		{"no metadata", &nccom.Report{Rows: sampleReport(t).Rows}},
		{"no rows", &nccom.Report{Op: "permute", Ranks: 2}},
		{"awkward floats", &nccom.Report{Rows: []nccom.Row{
			{Size: 1, Count: 1, Type: "int8", TimeUS: 1e-7, AlgBW: 1.0 / 3, BusBW: 2.0 / 3, Algorithm: "ring"},
			{Size: 1 << 62, Count: 1 << 61, Type: "bf16", TimeUS: 1e300, AlgBW: 5e-324, BusBW: 0, Algorithm: "hier"},
		}}},
		{"nested extras", &nccom.Report{Extra: map[string]any{
			"list": []any{1, 2.5, "x", nil, true},
			"obj":  map[string]any{"a": 1, "b": []any{}},
			"name": "<&>\"quoted\"",
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, tt.rep.WriteJSON(&buf))
			got, err := nccom.ReadJSON(&buf)
			require.NoError(t, err)
			assert.Equal(t, tt.rep, got)
		})
	}
}

func TestReadJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, sampleReport(t).WriteJSON(&buf))
	golden(t, "report.golden.json", buf.Bytes()) // make sure the file exists under -update
	got, err := nccom.ReadJSON(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, sampleReport(t), got)
}

func TestReadJSONNccomShape(t *testing.T) {
	in := `{"results":[{"size(B)":1024,"count(elems)":256,"type":"fp32","time:avg(us)":58.0,"algbw(GB/s)":0.02,"busbw(GB/s)":0.03,"algorithm":"ring"}]}`
	got, err := nccom.ReadJSON(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, &nccom.Report{Rows: []nccom.Row{
		{Size: 1024, Count: 256, Type: "fp32", TimeUS: 58, AlgBW: 0.02, BusBW: 0.03, Algorithm: "ring"},
	}}, got)
}

func TestReadJSONErrors(t *testing.T) {
	const row = `"size(B)":1024,"count(elems)":256,"type":"fp32","time:avg(us)":58.0,"algbw(GB/s)":0.02,"busbw(GB/s)":0.03,"algorithm":"ring"`
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"empty input", ``, "empty input"},
		{"not JSON", `hello`, "invalid character"},
		{"array at top", `[]`, "want a JSON object"},
		{"null at top", `null`, "want a JSON object"},
		{"no results", `{}`, `no "results"`},
		{"results not array", `{"results":{}}`, "want an array"},
		{"results null", `{"results":null}`, "want an array"},
		{"result not object", `{"results":[1]}`, "results[0]: want a JSON object"},
		{"unknown result key", `{"results":[{` + row + `,"error":0}]}`, `results[0]: unknown key "error"`},
		{"wrong case key", `{"results":[{"SIZE(B)":1024` + row[len(`"size(B)":1024`):] + `}]}`, `unknown key "SIZE(B)"`},
		{"missing key", `{"results":[{"size(B)":1024}]}`, `results[0]: missing key "count(elems)"`},
		{"duplicate key", `{"results":[{` + row + `,"type":"bf16"}]}`, `results[0]: duplicate key "type"`},
		{"duplicate top key", `{"results":[],"results":[]}`, `duplicate key "results"`},
		{"size not integer", `{"results":[{"size(B)":1024.5` + row[len(`"size(B)":1024`):] + `}]}`, `"size(B)": want an integer, got 1024.5`},
		{"size string", `{"results":[{"size(B)":"1024"` + row[len(`"size(B)":1024`):] + `}]}`, `"size(B)": want an integer, got a string`},
		{"size negative", `{"results":[{"size(B)":-4` + row[len(`"size(B)":1024`):] + `}]}`, `negative`},
		{"size overflow", `{"results":[{"size(B)":99999999999999999999` + row[len(`"size(B)":1024`):] + `}]}`, `out of range`},
		{"time null", `{"results":[{` + strings.Replace(row, `58.0`, `null`, 1) + `}]}`, `"time:avg(us)": want a number, got null`},
		{"time overflow", `{"results":[{` + strings.Replace(row, `58.0`, `1e999`, 1) + `}]}`, `out of range`},
		{"bandwidth negative", `{"results":[{` + strings.Replace(row, `0.03`, `-0.03`, 1) + `}]}`, `"busbw(GB/s)": negative`},
		{"type number", `{"results":[{` + strings.Replace(row, `"fp32"`, `32`, 1) + `}]}`, `"type": want a string, got a number`},
		{"type with space", `{"results":[{` + strings.Replace(row, `"fp32"`, `"fp 32"`, 1) + `}]}`, `results[0]: nccom: bad report: type name "fp 32"`},
		{"empty algorithm", `{"results":[{` + strings.Replace(row, `"ring"`, `""`, 1) + `}]}`, `empty algorithm`},
		{"second result bad", `{"results":[{` + row + `},{}]}`, `results[1]: missing key`},
		{"unknown top key", `{"results":[],"model":"aware"}`, `unknown top-level key "model"`},
		{"bad extra key", `{"results":[],"neuronsim_a b":1}`, `only ASCII letters`},
		{"empty extra key", `{"results":[],"neuronsim_":1}`, `empty extra key`},
		{"extra overflow", `{"results":[],"neuronsim_x":1e999}`, `out of range`},
		{"op not string", `{"results":[],"neuronsim_op":3}`, `want a string`},
		{"op unknown", `{"results":[],"neuronsim_op":"bcast"}`, `unknown collective op`},
		{"ranks negative", `{"results":[],"neuronsim_ranks":-2}`, `negative`},
		{"ranks fraction", `{"results":[],"neuronsim_ranks":2.5}`, `want an integer`},
		{"trailing data", `{"results":[]} {}`, `after the top-level object`},
		{"trailing garbage", `{"results":[]} x`, `after the top-level object`},
		{"truncated", `{"results":[{` + row, `key "results": unexpected EOF`},
		{"unterminated results", `{"results":[`, `"results"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nccom.ReadJSON(strings.NewReader(tt.in))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, nccom.ErrBadReport)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func FuzzReadJSON(f *testing.F) {
	var buf bytes.Buffer
	require.NoError(f, sampleReport(f).WriteJSON(&buf))
	f.Add(buf.String())
	f.Add(`{"results":[{"size(B)":1024,"count(elems)":256,"type":"fp32","time:avg(us)":58.0,"algbw(GB/s)":0.02,"busbw(GB/s)":0.03,"algorithm":"ring"}]}`)
	f.Add(`{"results":[],"neuronsim_x":[1,2.0,{"a":null}],"neuronsim_op":"permute","neuronsim_ranks":4}`)
	f.Add(`{"results":[{}]}`)
	f.Add(`{"results":null}`)
	f.Add(`[`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, in string) {
		rep, err := nccom.ReadJSON(strings.NewReader(in))
		if err != nil {
			require.Nil(t, rep)
			require.ErrorIs(t, err, nccom.ErrBadReport)
			return
		}
		// Whatever reads must write, and must read back to the same output.
		var once, twice bytes.Buffer
		require.NoError(t, rep.WriteJSON(&once))
		require.NoError(t, rep.WriteTable(&bytes.Buffer{}))
		again, err := nccom.ReadJSON(bytes.NewReader(once.Bytes()))
		require.NoError(t, err, "re-reading %s", once.String())
		require.NoError(t, again.WriteJSON(&twice))
		require.Equal(t, once.String(), twice.String())
	})
}
