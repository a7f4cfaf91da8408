package dve

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func TestNames(t *testing.T) {
	assert.Equal(t, "qDveTable", QueueName)
	assert.Equal(t, "qDveTbl", VringName)
	var b [8]byte
	copy(b[:], VringName)
	assert.Equal(t, uint64(0x6C625465764471), binary.LittleEndian.Uint64(b[:]),
		"the seed's qDveTbl immediate is the name read little-endian")
}

func TestBufferAndSlot(t *testing.T) {
	assert.True(t, Buffer{}.Empty())
	assert.False(t, Buffer{Addr: 1, Dest: 2, Size: 3}.Empty())
	var s State
	for i, name := range TableNames() {
		p := s.Slot(name)
		require.NotNil(t, p, name)
		*p = Buffer{Size: uint64(i + 1)}
	}
	assert.Equal(t, State{
		OpcodeTable: Buffer{Size: 1}, ControlFastTable: Buffer{Size: 2}, ControlSlowTable: Buffer{Size: 3},
		DatapathTable: Buffer{Size: 4}, BNParamRAM: Buffer{Size: 5},
	}, s)
	assert.Nil(t, s.Slot("nope"))
}

// stateFor builds the State a loader would fill for g on nc, with fake
// staging addresses.
func stateFor(t *testing.T, g hwarch.Generation, nc int) State {
	t.Helper()
	tr, err := Transfers(archFor(t, g), nc, defaults(t, g))
	require.NoError(t, err)
	st := State{DVETblHash: Fingerprint(g, defaults(t, g)), Queue: QueueName, Vring: VringName}
	staging := uint64(0x1000_0000)
	for _, x := range tr {
		*st.Slot(x.Name) = Buffer{Addr: staging, Dest: x.Addr, Size: x.Size}
		staging += x.Size
	}
	return st
}

func TestCache(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			c := NewCache()
			st := stateFor(t, g, 1)
			assert.Equal(t, g == hwarch.Sunda, st.ControlSlowTable.Empty(), "sunda's control_slow_table slot is 0")
			fp := st.DVETblHash
			_, ok := c.Lookup(1, fp)
			assert.False(t, ok, "empty cache")

			st.NC = 7 // Store sets NC to the core.
			c.Store(1, st)
			got, ok := c.Lookup(1, fp)
			require.True(t, ok)
			st.NC = 1
			assert.Equal(t, st, got)
			_, ok = c.Lookup(0, fp)
			assert.False(t, ok, "per NeuronCore")
			other := fp
			other[0] ^= 1
			_, ok = c.Lookup(1, other)
			assert.False(t, ok, "other tables")
			assert.Equal(t, 1, c.Len())

			// A second set on the same core coexists with the first.
			st2 := st
			st2.DVETblHash = other
			c.Store(1, st2)
			c.Store(0, st)
			assert.Equal(t, 3, c.Len())
			assert.True(t, c.Delete(1, other))
			assert.False(t, c.Delete(1, other))
			_, ok = c.Lookup(1, fp)
			assert.True(t, ok)

			gone := c.Forget(1)
			assert.Equal(t, []State{st}, gone)
			_, ok = c.Lookup(1, fp)
			assert.False(t, ok)
			_, ok = c.Lookup(0, fp)
			assert.True(t, ok, "other cores untouched")
			assert.Empty(t, c.Forget(5))
		})
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache()
	sts := map[hwarch.Generation]State{}
	for _, g := range hwarch.Generations() {
		sts[g] = stateFor(t, g, 0)
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				nc := (w + i) % 4
				for _, st := range sts {
					if _, ok := c.Lookup(nc, st.DVETblHash); !ok {
						c.Store(nc, st)
					}
				}
				if i%50 == 49 {
					c.Forget(nc)
				}
				_ = c.Len()
			}
		}()
	}
	wg.Wait()
	for nc := range 4 {
		c.Forget(nc)
	}
	assert.Zero(t, c.Len())
}
