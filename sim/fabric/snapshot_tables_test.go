package fabric

import (
	"bytes"
	"encoding/binary"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadChargesPageTables: a snapshot whose pages lie one to a 2 MiB
// span (each needs a page-table leaf of 4,864 bytes, more than the page)
// loads within its limit: the page tables are charged before anything is
// built, and a limit too small for them is refused by name. Before, the
// first limit that loaded this file (1.15 times its decoded length) let
// Load allocate 2.6 times the limit, past the limit and LoadBuffers.
func TestLoadChargesPageTables(t *testing.T) {
	sys, err := New(Config{Generation: hwarch.Cayman, Devices: 1, Ready: true})
	require.NoError(t, err)
	page := make([]byte, 4096)
	for i := range page {
		page[i] = byte(i*7 + 1)
	}
	const n = 3000
	for i := range n {
		require.NoError(t, sys.Device(0).Land(uint64(i)<<21, page, udma.Reduce{}))
	}
	var file bytes.Buffer
	require.NoError(t, sys.Save(&file))
	decoded := int64(binary.LittleEndian.Uint64(file.Bytes()[24:]))
	_, _, err = loadMeasured(t, file.Bytes(), decoded+decoded/5)
	assert.ErrorIs(t, err, ErrSnapshotLimit)
	assert.ErrorContains(t, err, "the page tables of its memory pages take")
	for lim := decoded; lim < 4*decoded; lim += decoded / 10 {
		s, used, err := loadMeasured(t, file.Bytes(), lim)
		if err != nil {
			require.ErrorIs(t, err, ErrSnapshotLimit)
			continue
		}
		assert.LessOrEqual(t, used, uint64(lim+LoadBuffers), "bytes allocated to load within a limit of %d", lim)
		assert.Equal(t, sys.Snapshot().Device[0].HBM, s.Snapshot().Device[0].HBM, "the restored pages")
		return
	}
	t.Fatal("the file did not load within 4 times its decoded length")
}
