package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func newBudget(t testing.TB, pages int64) *PageBudget {
	t.Helper()
	b, err := NewPageBudget(pages)
	require.NoError(t, err)
	return b
}

// TestDevicePageBudget: a device's BAR4 and register writes and its host
// memory share the budget; a BAR write past it is refused whole.
func TestDevicePageBudget(t *testing.T) {
	h := readyDev(t, hwarch.Cayman, 0)
	b := newBudget(t, 3)
	require.NoError(t, h.d.SetPageBudget(b))
	w := h.d.BAR4().Windows()[0]
	words := make([]uint32, 3*PageSize/4+1)
	for i := range words {
		words[i] = uint32(i + 1)
	}
	now := h.d.Now()
	err := h.d.WriteBAR(hwarch.BAR4, w.BAR4Offset+PageSize, words) // 3 pages and a word
	require.ErrorIs(t, err, ErrPageBudget)
	assert.Equal(t, now, h.d.Now(), "a refused write takes no time")
	assert.Zero(t, h.read4(w.BAR4Offset+PageSize), "nothing written")
	assert.Zero(t, b.Used())
	require.NoError(t, h.d.WriteBAR(hwarch.BAR4, w.BAR4Offset, words[:PageSize/4]))
	assert.Equal(t, int64(1), b.Used())

	pa, err := h.d.HostAlloc(3*PageSize, PageSize)
	require.NoError(t, err)
	require.NoError(t, h.d.HostWrite(pa, []byte{1}))
	assert.Equal(t, int64(2), b.Used())
	buf := make([]byte, 3*PageSize)
	buf[0], buf[PageSize], buf[2*PageSize] = 1, 1, 1 // 2 new pages: 4 in all
	require.ErrorIs(t, h.d.HostWrite(pa, buf), ErrPageBudget)
	got := make([]byte, 2)
	require.NoError(t, h.d.HostRead(pa+PageSize, got))
	assert.Zero(t, got[0], "the refused host write wrote nothing")
	require.NoError(t, h.d.HostFree(pa))
	assert.Equal(t, int64(1), b.Used(), "a freed buffer's pages return")

	// Unmapped register offsets land in the register file: counted too.
	require.NoError(t, h.d.Write32(h.reg, 0x3F0_0000, 1))
	require.NoError(t, h.d.Write32(h.reg, 0x3F0_1000, 1))
	err = h.d.Write32(h.reg, 0x3F0_2000, 1)
	require.ErrorIs(t, err, ErrPageBudget)
}
