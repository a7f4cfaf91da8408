package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
)

// TestFabricSweepArchProduct: fabric sweep builds the devices --arch names
// — inf2 is an Inferentia2 (PCI id 0x7264), a sunda device of its own, not
// a Trn1 — as serve's --arch does; the report names the product its
// devices report. A product word that contradicts --system is refused.
func TestFabricSweepArchProduct(t *testing.T) {
	for _, tc := range []struct{ arch, product string }{
		{"inf2", "Inf2"}, {"INF2", "Inf2"}, {"trn1", "Trn1"}, {"sunda", "Trn1"}, {"trn2", "Trn2"}, {"mariana", "Trn3"},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			out, err := runCLI(t, "fabric", "sweep", "--arch", tc.arch, "--devices", "2", "-b", "1K", "-e", "1K", "--json", js)
			require.NoError(t, err, out)
			assert.Contains(t, out, "# product: "+tc.product)
			f, err := os.Open(js)
			require.NoError(t, err)
			defer f.Close()
			rep, err := nccom.ReadJSON(f)
			require.NoError(t, err)
			assert.Equal(t, tc.product, rep.Extra["product"])
		})
	}
	_, err := runCLI(t, "fabric", "sweep", "--arch", "inf2", "--system", "trn1-32xl")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--arch inf2 contradicts --system trn1-32xl")
	_, err = runCLI(t, "fabric", "topo", "--arch", "trn1", "--system", "trn1-32xl")
	assert.NoError(t, err)
}
