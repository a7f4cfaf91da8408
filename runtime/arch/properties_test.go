package arch

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated part of docs/seed-conformance.md")

// testFuncs returns the names of the Test functions declared in the _test.go
// files of the given directories.
func testFuncs(t *testing.T, dirs ...string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		for _, f := range files {
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, d := range file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && (strings.HasPrefix(fn.Name.Name, "Test") || strings.HasPrefix(fn.Name.Name, "Fuzz")) {
					names[fn.Name.Name] = true
				}
			}
		}
	}
	return names
}

func TestPropertiesComplete(t *testing.T) {
	tests := testFuncs(t, ".", "../../hw/arch")
	require.Contains(t, tests, "TestPropertiesComplete", "the parser finds test functions")
	groups := map[string]bool{"geometry": true, "tdrv": true, "soc": true, "khal": true}
	keys := map[string]bool{}
	slots := map[int]string{}
	for _, p := range Properties() {
		t.Run(p.Key, func(t *testing.T) {
			assert.False(t, keys[p.Key], "duplicate key")
			keys[p.Key] = true
			assert.True(t, groups[p.Group], "group %q", p.Group)
			assert.NotEmpty(t, p.Symbol)
			assert.NotEmpty(t, p.Source)
			assert.NotEmpty(t, p.Accessor)
			assert.True(t, tests[p.Test], "test %s does not exist", p.Test)
			assert.False(t, strings.HasPrefix(p.Key, "aws_hal_"), "keys drop aws_hal_")
			for _, a := range []string{"sunda_", "cayman_", "mariana_"} {
				assert.False(t, strings.HasPrefix(p.Key, a), "keys drop the arch prefix")
			}
			if p.Slot >= 0 {
				prev, dup := slots[p.Slot]
				assert.False(t, dup, "slot %d also used by %s", p.Slot, prev)
				slots[p.Slot] = p.Key
				off, ok := SocSlotOffset(strings.Fields(strings.ReplaceAll(p.Symbol, "<arch>_", ""))[0])
				assert.True(t, ok)
				assert.Equal(t, p.Slot, off)
			}
			for _, g := range hwarch.Generations() {
				for _, sw := range []hwarch.SwitchFamily{hwarch.SwitchNone, hwarch.SwitchV1} {
					v := p.Get(MustFor(g, Options{Switch: sw}))
					_, err := json.Marshal(v)
					assert.NoError(t, err, "%s", g)
				}
			}
		})
	}
	assert.Len(t, slots, len(SocSlots), "every soc_struct_t slot has a property")
}

func TestJSONKeysOfTheIssue(t *testing.T) {
	keys := map[string]bool{}
	for _, p := range Properties() {
		keys[p.Key] = true
	}
	for _, k := range []string{"get_max_devs", "get_mesh_max_folds", "get_valid_sbuf_partition_size",
		"get_num_sbuf_partitions", "get_inter_rdh_dma_id", "get_tpb_base", "get_dve_table_offsets",
		"get_dve_parameter_ram_params", "get_hbm_size", "num_tpb"} {
		assert.True(t, keys[k], k)
	}
}

func TestRecordJSONKeepsOrder(t *testing.T) {
	b, err := json.Marshal(Record{{"z", 1}, {"a", nil}, {"m", []any{uint64(2), Record{{"x", true}}}}})
	require.NoError(t, err)
	assert.Equal(t, `{"z":1,"a":null,"m":[2,{"x":true}]}`, string(b))
	assert.Equal(t, "{z: 0x1f, a: —, m: [2, -1]}", FormatValue(Record{{"z", 31}, {"a", nil}, {"m", []any{uint8(2), int32(-1)}}}, true))
}

func provenanceCell(p Property) string {
	var parts []string
	for _, g := range hwarch.Generations() {
		parts = append(parts, p.ProvenanceOf(g).String())
	}
	if parts[0] == parts[1] && parts[1] == parts[2] {
		return parts[0]
	}
	return strings.Join(parts, " / ")
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// conformanceTable renders the generated part of docs/seed-conformance.md.
func conformanceTable() string {
	var b bytes.Buffer
	group := ""
	for _, p := range Properties() {
		if p.Group != group {
			group = p.Group
			fmt.Fprintf(&b, "\n### %s\n\n", group)
			b.WriteString("| key | seed symbol | slot | source | sunda | cayman | mariana | provenance (S/C/M) | Go accessor | test |\n")
			b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		}
		slot := ""
		if p.Slot >= 0 {
			slot = fmt.Sprintf("+%d", p.Slot)
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |", p.Key, p.Symbol, slot, p.Source)
		for _, g := range hwarch.Generations() {
			sw := hwarch.SwitchNone
			v := FormatValue(p.Get(MustFor(g, Options{Switch: sw})), p.Hex)
			if g == hwarch.Mariana && (p.Key == "get_max_devs" || p.Key == "get_mesh_max_folds") {
				v += " (v1: " + FormatValue(p.Get(MustFor(g, Options{Switch: hwarch.SwitchV1})), p.Hex) + ")"
			}
			fmt.Fprintf(&b, " %s |", cell(v))
		}
		fmt.Fprintf(&b, " %s | `%s` | `%s` |\n", provenanceCell(p), p.Accessor, p.Test)
	}
	return b.String()
}

const (
	genBegin = "<!-- BEGIN GENERATED: go test ./runtime/arch -run TestSeedConformanceDoc -update -->"
	genEnd   = "<!-- END GENERATED -->"
)

func TestSeedConformanceDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "seed-conformance.md")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(raw)
	i, j := strings.Index(doc, genBegin), strings.Index(doc, genEnd)
	require.True(t, i >= 0 && j > i, "markers missing in %s", path)
	want := doc[:i+len(genBegin)] + "\n" + conformanceTable() + "\n" + doc[j:]
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, doc, "docs/seed-conformance.md is stale: run go test ./runtime/arch -run TestSeedConformanceDoc -update")
	// Every test the hand-written rows name must exist too.
	tests := testFuncs(t, ".", "../../hw/arch", "../csr", "../ndl", "../bringup", "../dve", "../dmem", "../dma", "../isa", "../../hw/isa", "../../sim", "../../sim/bar", "../../sim/tpb", "../../sim/dma", "../../sim/fabric", "../enc", "../../cmd/neuronsim", "../../internal/systemtest", "../../internal/calibrate")
	for _, line := range strings.Split(doc[:i]+doc[j:], "\n") {
		for _, f := range strings.Split(line, "`") {
			if (strings.HasPrefix(f, "Test") || strings.HasPrefix(f, "Fuzz")) && !strings.ContainsAny(f, " .") {
				assert.True(t, tests[f], "the doc names %s, which does not exist", f)
			}
		}
	}
}
