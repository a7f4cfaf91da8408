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

// oneLeaf is what the page table of a memory whose pages lie in one 2 MiB
// span costs the budget beside the pages: its root, a level-1 and a level-2
// node and a leaf.
const oneLeaf = 4

// TestDevicePageBudget: a device's BAR4 and register writes and its host
// memory share the budget; a BAR write past it is refused whole. The
// budget counts each memory's page table beside its pages (oneLeaf each).
func TestDevicePageBudget(t *testing.T) {
	h := readyDev(t, hwarch.Cayman, 0)
	b := newBudget(t, 3+2*oneLeaf)
	require.NoError(t, h.d.SetPageBudget(b))
	w := h.d.BAR4().Windows()[0]
	words := make([]uint32, (3+2*oneLeaf)*PageSize/4+1)
	for i := range words {
		words[i] = uint32(i + 1)
	}
	now := h.d.Now()
	err := h.d.WriteBAR(hwarch.BAR4, w.BAR4Offset+PageSize, words) // a page more than the budget, and a word
	require.ErrorIs(t, err, ErrPageBudget)
	assert.Equal(t, now, h.d.Now(), "a refused write takes no time")
	assert.Zero(t, h.read4(w.BAR4Offset+PageSize), "nothing written")
	assert.Zero(t, b.Used())
	require.NoError(t, h.d.WriteBAR(hwarch.BAR4, w.BAR4Offset, words[:PageSize/4]))
	assert.Equal(t, int64(1+oneLeaf), b.Used())

	// A host buffer's pages are charged when it is allocated (committed),
	// so that nothing else spending the budget can leave its owner unable
	// to write it: 3 pages and their table do not fit in the 6 left.
	_, err = h.d.HostAlloc(3*PageSize, PageSize)
	require.ErrorIs(t, err, ErrPageBudget)
	require.ErrorIs(t, err, ErrHostNoMemory)
	assert.Equal(t, int64(1+oneLeaf), b.Used(), "a refused allocation charges nothing")
	pa, err := h.d.HostAlloc(2*PageSize, PageSize)
	require.NoError(t, err)
	assert.Equal(t, int64(3+2*oneLeaf), b.Used(), "2 pages and their table, charged at the allocation")
	require.ErrorIs(t, h.d.WriteBAR(hwarch.BAR4, w.BAR4Offset+4*PageSize, words[:1]), ErrPageBudget, "the budget is spent")
	buf := make([]byte, 2*PageSize)
	buf[0], buf[PageSize] = 1, 2
	require.NoError(t, h.d.HostWrite(pa, buf), "the buffer's owner still writes all of it")
	got := make([]byte, 1)
	require.NoError(t, h.d.HostRead(pa+PageSize, got))
	assert.Equal(t, byte(2), got[0])
	require.NoError(t, h.d.HostFree(pa))
	assert.Equal(t, int64(1+oneLeaf+1), b.Used(), "a freed buffer's pages return, with their table but its root")

	// Unmapped register offsets land in the register file: counted too.
	require.NoError(t, h.d.Write32(h.reg, 0x3F0_0000, 1))
	assert.Equal(t, int64(3+2*oneLeaf), b.Used(), "a register page and its table")
	err = h.d.Write32(h.reg, 0x3F0_1000, 1)
	require.ErrorIs(t, err, ErrPageBudget)
}
