package simkernel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newBudget(t testing.TB, pages int64) *PageBudget {
	t.Helper()
	b, err := NewPageBudget(pages)
	require.NoError(t, err)
	return b
}

// TestPageBudgetRefusesWhole: every way of making pages resident is counted
// against the budget, an access past it is refused whole (nothing written),
// and released pages return (issue 13 item 9).
func TestPageBudgetRefusesWhole(t *testing.T) {
	page := make([]byte, 3*PageSize)
	for i := range page {
		page[i] = 0xA5
	}
	tests := []struct {
		name    string
		run     func(m *Memory) error
		nowhere bool // more than any budget of 4 pages holds
	}{
		{"write across 3 pages", func(m *Memory) error { return m.Write(10*PageSize, page) }, false},
		{"write unaligned across 4 pages", func(m *Memory) error { return m.Write(10*PageSize+1, page) }, false},
		{"fill 3 pages", func(m *Memory) error { return m.Fill(10*PageSize, 3*PageSize, 7) }, false},
		{"fill the whole space", func(m *Memory) error { return m.Fill(0, AddressLimit, 7) }, true},
		{"copy 3 pages", func(m *Memory) error { return m.Copy(10*PageSize, 0, 3*PageSize) }, false},
		{"sparse copy", func(m *Memory) error { return m.Copy(1<<40, 0, 1<<30) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudget(t, 4)
			m := NewMemory()
			require.NoError(t, m.SetBudget(b))
			require.NoError(t, m.Write(0, page[:2*PageSize]), "2 pages fit")
			require.NoError(t, m.WriteU32(5*PageSize, 1), "a third fits")
			assert.Equal(t, int64(3), b.Used())
			before := m.State()
			err := tc.run(m)
			require.ErrorIs(t, err, ErrPageBudget)
			assert.Equal(t, int64(3), b.Used(), "nothing charged")
			assert.Equal(t, before, m.State(), "nothing written")
			require.NoError(t, m.WriteU64(7*PageSize, 1), "a fourth page fits")
			require.ErrorIs(t, m.WriteU64(6*PageSize, 1), ErrPageBudget, "not a fifth")
			require.NoError(t, m.Write(8*PageSize, make([]byte, PageSize)), "zeros cost nothing")
			assert.Equal(t, int64(4), b.Used())

			require.NoError(t, m.Fill(0, PageSize, 0), "a zero fill releases a page")
			assert.Equal(t, int64(3), b.Used())
			m.Clear()
			assert.Zero(t, b.Used())
			if tc.nowhere {
				require.ErrorIs(t, tc.run(m), ErrPageBudget)
				return
			}
			require.NoError(t, tc.run(m), "fits once memory is released")
			assert.Equal(t, int64(m.PagesTouched()), b.Used())
		})
	}
}

// TestPageBudgetShared: memories sharing a budget share its bound; moving
// a memory to another budget moves its pages; Restore is charged.
func TestPageBudgetShared(t *testing.T) {
	b := newBudget(t, 2)
	m1, m2 := NewMemory(), NewMemory()
	require.NoError(t, m1.SetBudget(b))
	require.NoError(t, m2.SetBudget(b))
	require.NoError(t, m1.WriteU32(0, 1))
	require.NoError(t, m2.WriteU32(0, 1))
	require.ErrorIs(t, m1.WriteU32(PageSize, 1), ErrPageBudget)
	require.NoError(t, m2.SetBudget(nil))
	assert.Equal(t, int64(1), b.Used())
	require.NoError(t, m1.WriteU32(PageSize, 1))

	s := m1.State()
	require.NoError(t, m2.Write(8*PageSize, make([]byte, PageSize))) // nothing resident added
	small := newBudget(t, 1)
	require.ErrorIs(t, m1.SetBudget(small), ErrPageBudget, "2 pages do not fit a budget of 1")
	assert.Equal(t, b, m1.Budget())
	m1.Clear()
	assert.Zero(t, b.Used())
	require.NoError(t, m1.Restore(s))
	assert.Equal(t, int64(2), b.Used())
	require.ErrorIs(t, m2.SetBudget(b), ErrPageBudget, "m2's page does not fit beside m1's two")
	assert.Equal(t, int64(2), b.Used())
}

// nodes counts the page table's interior and leaf nodes.
func (t *pageTable) nodes() int {
	if t.root == nil {
		return 0
	}
	n := 1
	for _, m1 := range t.root {
		if m1 == nil {
			continue
		}
		n++
		for _, m2 := range &m1.p {
			if m2 == nil {
				continue
			}
			n++
			for _, l := range &m2.p {
				if l != nil {
					n++
				}
			}
		}
	}
	return n
}

// TestPageTableFreesEmptyNodes: pages scattered over the address space and
// then released leave no nodes behind, so the table's own memory stays
// within three nodes per resident page (issue 13 item 9: the budget bounds
// pages, and the nodes cannot pile up beside them).
func TestPageTableFreesEmptyNodes(t *testing.T) {
	m := NewMemory()
	for i := range uint64(64) {
		require.NoError(t, m.WriteU32(i<<41|i<<30|i<<21, 1)) // a leaf, a mid2 and a mid1 each
	}
	require.LessOrEqual(t, m.pages.nodes(), 3*m.PagesTouched()+1)
	for i := range uint64(64) {
		require.NoError(t, m.Fill(i<<41|i<<30|i<<21, PageSize, 0))
	}
	assert.Zero(t, m.PagesTouched())
	assert.Equal(t, 1, m.pages.nodes(), "only the root is left")
	require.NoError(t, m.WriteU32(5<<30, 7), "the table works after")
	v, err := m.ReadU32(5 << 30)
	require.NoError(t, err)
	assert.Equal(t, uint32(7), v)
}
