package simkernel

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refMemory is the obvious model a Memory must agree with: plain page arrays
// by page number, created by the first non-zero write and never freed, so
// that it shares none of Memory's sparse-page logic. Bytes never written read
// as zero. (It was a map of single bytes, which made each fuzz input cost
// thousands of map operations per access.)
type refMemory map[uint64]*[PageSize]byte

// at returns the page holding addr, creating it when create is set.
func (r refMemory) at(addr uint64, create bool) *[PageSize]byte {
	pg := r[addr>>pageShift]
	if pg == nil && create {
		pg = new([PageSize]byte)
		r[addr>>pageShift] = pg
	}
	return pg
}

// chunks calls f for each piece of [addr, addr+n) that lies in one page.
func refChunks(addr, n uint64, f func(addr, off, c uint64)) {
	for done := uint64(0); done < n; {
		a := addr + done
		c := min(PageSize-a&pageMask, n-done)
		f(a, done, c)
		done += c
	}
}

func (r refMemory) write(addr uint64, p []byte) {
	refChunks(addr, uint64(len(p)), func(a, off, c uint64) {
		pg := r.at(a, false)
		if pg == nil && !slices.ContainsFunc(p[off:off+c], func(b byte) bool { return b != 0 }) {
			return // zeros onto a page never written: nothing to record
		}
		if pg == nil {
			pg = r.at(a, true)
		}
		copy(pg[a&pageMask:], p[off:off+c])
	})
}

func (r refMemory) read(addr, n uint64) []byte {
	out := make([]byte, n)
	refChunks(addr, n, func(a, off, c uint64) {
		if pg := r.at(a, false); pg != nil {
			copy(out[off:off+c], pg[a&pageMask:])
		}
	})
	return out
}

// nonZero calls f for every non-zero byte of the reference.
func (r refMemory) nonZero(f func(addr uint64, b byte)) {
	for pn, pg := range r {
		for i, b := range pg {
			if b != 0 {
				f(pn<<pageShift+uint64(i), b)
			}
		}
	}
}

// zero clears the bytes of [addr, addr+n) that lie in known pages.
func (r refMemory) zero(addr, n uint64) {
	for pn, pg := range r {
		lo, hi := max(addr, pn<<pageShift), min(addr+n, pn<<pageShift+PageSize) // addr+n ≤ AddressLimit
		if lo < hi {
			clear(pg[lo&pageMask : (hi-1)&pageMask+1])
		}
	}
}

func (r refMemory) copy(dst, src, n uint64) {
	if n <= 1<<20 {
		r.write(dst, r.read(src, n))
		return
	}
	moved := map[uint64]byte{} // a huge range: move the known bytes only
	r.nonZero(func(a uint64, b byte) {
		if a-src < n {
			moved[a-src+dst] = b
		}
	})
	r.zero(dst, n)
	for a, b := range moved {
		r.write(a, []byte{b})
	}
}

func (r refMemory) fill(addr, n uint64, b byte) {
	if b == 0 {
		r.zero(addr, n)
		return
	}
	refChunks(addr, n, func(a, _, c uint64) {
		fillBytes(r.at(a, true)[a&pageMask:a&pageMask+c], b)
	})
}

// pattern returns n bytes that are non-zero and differ from position to position.
func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) + seed | 1
	}
	return p
}

func TestMemoryReadWriteCrossPage(t *testing.T) {
	tests := []struct {
		name  string
		addr  uint64
		n     int
		pages int
	}{
		{"inside one page", 0x1000 + 16, 64, 1},
		{"straddles one boundary", 0x2000 - 3, 8, 2},
		{"spans three pages", 0x3000 - 1, PageSize + 2, 3},
		{"page aligned, whole pages", 0x10000, 2 * PageSize, 2},
		{"last bytes of the space", AddressLimit - 10, 10, 1},
		{"straddles into the last page", AddressLimit - PageSize - 2, PageSize + 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			data := pattern(tc.n, 3)
			require.NoError(t, m.Write(tc.addr, data))
			assert.Equal(t, tc.pages, m.PagesTouched())
			got := make([]byte, tc.n)
			require.NoError(t, m.Read(tc.addr, got))
			assert.Equal(t, data, got)
			// Read a window one byte wider on each side (where there is room).
			if tc.addr > 0 && tc.addr+uint64(tc.n) < AddressLimit {
				wide := make([]byte, tc.n+2)
				require.NoError(t, m.Read(tc.addr-1, wide))
				assert.Equal(t, append(append([]byte{0}, data...), 0), wide)
			}
		})
	}
}

func TestMemoryWords(t *testing.T) {
	tests := []struct {
		name string
		addr uint64
	}{
		{"aligned", 0x100},
		{"unaligned", 0x103},
		{"straddles a page", 0x1FFE},
		{"straddles a page by one", 0x1FFD},
		{"top of the space", AddressLimit - 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			require.NoError(t, m.WriteU64(tc.addr, 0x0807060504030201))
			b := make([]byte, 8)
			require.NoError(t, m.Read(tc.addr, b))
			assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, b, "little-endian")
			v64, err := m.ReadU64(tc.addr)
			require.NoError(t, err)
			assert.Equal(t, uint64(0x0807060504030201), v64)

			require.NoError(t, m.WriteU32(tc.addr+4, 0xDDCCBBAA))
			v32, err := m.ReadU32(tc.addr + 4)
			require.NoError(t, err)
			assert.Equal(t, uint32(0xDDCCBBAA), v32)
			v32, err = m.ReadU32(tc.addr)
			require.NoError(t, err)
			assert.Equal(t, uint32(0x04030201), v32)
		})
	}
}

func TestMemoryUntouchedReadsZero(t *testing.T) {
	var m Memory
	v, err := m.ReadU32(0x1234)
	require.NoError(t, err)
	assert.Zero(t, v)
	v64, err := m.ReadU64(0x1FFC)
	require.NoError(t, err)
	assert.Zero(t, v64)
	b := bytes.Repeat([]byte{0xFF}, 3*PageSize)
	require.NoError(t, m.Read(0x7FFF, b))
	assert.True(t, allZero(b))
	assert.Zero(t, m.PagesTouched())
}

func TestMemoryZeroWritesDoNotAllocate(t *testing.T) {
	var m Memory
	require.NoError(t, m.Write(0x5000, make([]byte, 3*PageSize)))
	require.NoError(t, m.WriteU32(0x10, 0))
	require.NoError(t, m.WriteU64(0x1FFC, 0))
	require.NoError(t, m.Fill(0, 1<<30, 0))
	require.NoError(t, m.Copy(0x9000, 0x20000, 5*PageSize))
	assert.Zero(t, m.PagesTouched())

	// A zero write to a resident page does write.
	require.NoError(t, m.WriteU32(0x10, 0xFFFFFFFF))
	require.NoError(t, m.WriteU32(0x10, 0))
	v, err := m.ReadU32(0x10)
	require.NoError(t, err)
	assert.Zero(t, v)
	assert.Equal(t, 1, m.PagesTouched())
}

func TestMemoryFill(t *testing.T) {
	tests := []struct {
		name string
		addr uint64
		n    uint64
		b    byte
	}{
		{"small", 0x10, 5, 0xAB},
		{"cross page", 0x1FF0, 0x20, 0x5A},
		{"many pages", 0x3001, 5*PageSize + 7, 0x11},
		{"zero over data", 0x1003, 3 * PageSize, 0},
		{"zero everything", 0, AddressLimit, 0},
		{"zero a huge sparse range", 0x1001, AddressLimit - 0x2000, 0},
		{"empty", 0x1000, 0, 0xFF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			ref := refMemory{}
			for _, a := range []uint64{0, 0x1000, 0x2FF8, 0x4000, AddressLimit - 16} {
				data := pattern(16, byte(a))
				require.NoError(t, m.Write(a, data))
				ref.write(a, data)
			}
			require.NoError(t, m.Fill(tc.addr, tc.n, tc.b))
			known := map[uint64]bool{} // the bytes set before the fill
			ref.nonZero(func(a uint64, _ byte) { known[a] = true })
			ref.fill(tc.addr, tc.n, tc.b)
			for a := range known { // a window around each of them
				lo := a &^ 63
				n := min(128, AddressLimit-lo)
				got := make([]byte, n)
				require.NoError(t, m.Read(lo, got))
				assert.Equal(t, ref.read(lo, n), got, "at %#x", lo)
			}
			if tc.b == 0 && tc.n == AddressLimit {
				assert.Zero(t, m.PagesTouched(), "a zero fill frees whole pages")
			}
		})
	}
}

// TestMemoryCopyOverlap copies between overlapping and disjoint ranges in
// both directions and compares with the reference model.
func TestMemoryCopyOverlap(t *testing.T) {
	const base = 0x10000 - 5 // unaligned, near a page boundary
	tests := []struct {
		name     string
		dst, src uint64
		n        uint64
	}{
		{"forward overlap by one", base, base + 1, 3 * PageSize},
		{"backward overlap by one", base + 1, base, 3 * PageSize},
		{"forward overlap by a page", base, base + PageSize, 2*PageSize + 100},
		{"backward overlap by a page", base + PageSize, base, 2*PageSize + 100},
		{"backward overlap, odd shift", base + 1234, base, 3*PageSize + 17},
		{"forward overlap, odd shift", base, base + 1234, 3*PageSize + 17},
		{"disjoint up", base + 10*PageSize, base, 2 * PageSize},
		{"disjoint down", base, base + 10*PageSize, 2 * PageSize},
		{"same range", base, base, PageSize},
		{"within a page backward", 0x10010, 0x10000, 100},
		{"within a page forward", 0x10000, 0x10010, 100},
		{"page aligned backward", 0x10000 + PageSize, 0x10000, 3 * PageSize},
		{"into a hole", 0x80000, base, 2 * PageSize},
		{"from a hole over data", base, 0x80000, 2 * PageSize},
		{"empty", base, base + 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			ref := refMemory{}
			// Data in pages 0x10-0x13 and 0x1a-0x1c, a hole between.
			for _, a := range []uint64{base - PageSize, base + 10*PageSize} {
				data := pattern(4*PageSize, byte(a>>12))
				require.NoError(t, m.Write(a, data))
				ref.write(a, data)
			}
			require.NoError(t, m.Copy(tc.dst, tc.src, tc.n))
			ref.copy(tc.dst, tc.src, tc.n)
			lo := min(tc.dst, tc.src) - 2*PageSize
			hi := max(tc.dst, tc.src) + tc.n + 2*PageSize
			got := make([]byte, hi-lo)
			require.NoError(t, m.Read(lo, got))
			assert.True(t, bytes.Equal(ref.read(lo, hi-lo), got), "memory differs from the reference")
		})
	}
}

// TestMemoryCopySparse copies ranges far larger than memory holds, which
// Copy does by visiting resident pages rather than the range.
func TestMemoryCopySparse(t *testing.T) {
	const top = AddressLimit
	tests := []struct {
		name     string
		dst, src uint64
		n        uint64
	}{
		{"whole space up by one byte", 1, 0, top - 1},
		{"whole space down by one byte", 0, 1, top - 1},
		{"lower half to upper half", top / 2, 0, top / 2},
		{"upper half to lower half, unaligned", 3, top/2 + 5, top/2 - 5},
		{"overlap by pages, upward", 0x1000 + 3*PageSize, 0x1000, 1 << 40},
		{"overlap by pages, downward", 0x1000, 0x1000 + 3*PageSize - 7, 1 << 40},
		{"64 MiB hole over data", 0x1000, 0x7000_0000_0000, 64 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			ref := refMemory{}
			for _, a := range []uint64{0, 0x1FFE, 0x3000, 0x4000_0000_0000, top/2 - 3, top/2 + 0x1000, top - 10} {
				data := pattern(10, byte(a>>3))
				require.NoError(t, m.Write(a, data))
				ref.write(a, data)
			}
			known := map[uint64]bool{} // every byte set before or after the copy
			ref.nonZero(func(a uint64, _ byte) { known[a] = true })
			require.NoError(t, m.Copy(tc.dst, tc.src, tc.n))
			ref.copy(tc.dst, tc.src, tc.n)
			ref.nonZero(func(a uint64, _ byte) { known[a] = true })
			for a := range known {
				got := []byte{0xEE}
				require.NoError(t, m.Read(a, got))
				assert.Equal(t, ref.read(a, 1)[0], got[0], "at %#x", a)
			}
			nonZero := 0
			for _, pg := range m.State().Pages {
				nonZero += PageSize - bytes.Count(pg[:], []byte{0})
			}
			refNonZero := 0
			ref.nonZero(func(uint64, byte) { refNonZero++ })
			assert.Equal(t, refNonZero, nonZero, "no stray bytes")
		})
	}
}

func TestMemoryCopyFreesAndSkips(t *testing.T) {
	var m Memory
	require.NoError(t, m.Write(0x3000, pattern(PageSize, 1)))
	require.NoError(t, m.Copy(0x3000, 0x9000, PageSize)) // whole page from a hole
	assert.Zero(t, m.PagesTouched())
	require.NoError(t, m.Write(0x3000, make([]byte, 8)))
	require.NoError(t, m.WriteU32(0x3010, 1))
	require.NoError(t, m.Copy(0x7000, 0x3000, 0x10)) // zeros into a hole: no page
	assert.Equal(t, 1, m.PagesTouched())
}

func TestMemoryRangeErrors(t *testing.T) {
	var m Memory
	require.NoError(t, m.WriteU32(AddressLimit-4, 0xA1B2C3D4))
	require.NoError(t, m.Write(0, pattern(PageSize, 9)))
	before := m.State()

	buf := make([]byte, 8)
	tests := []struct {
		name string
		run  func() error
		want string // a fragment of the message
	}{
		{"write past the end", func() error { return m.Write(AddressLimit-4, pattern(8, 1)) }, "[0xfffffffffffc, +0x8)"},
		{"write at the end", func() error { return m.Write(AddressLimit, []byte{1}) }, "[0x1000000000000, +0x1)"},
		{"read past the end", func() error { return m.Read(AddressLimit-7, buf) }, "read"},
		{"u32 straddling the end", func() error { return m.WriteU32(AddressLimit-2, 1) }, "+0x4"},
		{"u64 straddling the end", func() error { return m.WriteU64(AddressLimit-4, 1) }, "+0x8"},
		{"read u32", func() error { _, err := m.ReadU32(AddressLimit); return err }, "read"},
		{"read u64", func() error { _, err := m.ReadU64(math.MaxUint64 - 3); return err }, "0xfffffffffffffffc"},
		{"overflowing uint64", func() error { return m.Write(math.MaxUint64, []byte{1}) }, "write"},
		{"fill overflowing", func() error { return m.Fill(0x10, math.MaxUint64, 1) }, "fill"},
		{"fill past the end", func() error { return m.Fill(0x1000, AddressLimit, 1) }, "fill"},
		{"copy source", func() error { return m.Copy(0, AddressLimit-2, 4) }, "copy source"},
		{"copy destination", func() error { return m.Copy(AddressLimit-2, 0, 4) }, "copy destination"},
		{"copy huge", func() error { return m.Copy(0, 1, math.MaxUint64) }, "copy source"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.ErrorIs(t, err, ErrAddressRange)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "sim memory: "), err.Error())
			assert.Equal(t, before, m.State(), "memory unchanged")
		})
	}
	// Zero-length accesses at the very end are in range.
	require.NoError(t, m.Write(AddressLimit, nil))
	require.NoError(t, m.Fill(AddressLimit, 0, 1))
}

// TestMemorySparseFarAddresses writes one word in each corner of a 144 GiB
// device map and checks that only those pages exist.
func TestMemorySparseFarAddresses(t *testing.T) {
	addrs := []uint64{
		0,                                 // HBM 0
		0x8040_0000_0000 + 36<<30 - 4,     // end of a 36 GiB HBM in the bit-47 half
		0x4000_0000_0000,                  // host window (bit 46)
		0xFFFF_FFFF_FFFC,                  // last word of the space
		0x8040_0000_0000 + 36<<30 - 0x100, // a second word in the same page
	}
	var m Memory
	for i, a := range addrs {
		require.NoError(t, m.WriteU32(a, uint32(i)+0xC0DE0000))
	}
	for i, a := range addrs {
		v, err := m.ReadU32(a)
		require.NoError(t, err)
		assert.Equal(t, uint32(i)+0xC0DE0000, v, "at %#x", a)
	}
	assert.Equal(t, 4, m.PagesTouched())
	assert.Equal(t, uint64(4*PageSize), m.FootprintBytes())
	v, err := m.ReadU32(0x8040_0000_0000)
	require.NoError(t, err)
	assert.Zero(t, v)
	assert.Equal(t, 4, m.PagesTouched(), "reads allocate nothing")
}

func TestMemoryStateRestore(t *testing.T) {
	var m Memory
	require.NoError(t, m.Write(0x1FFE, pattern(10, 4)))
	require.NoError(t, m.WriteU64(AddressLimit-8, 42))
	s := m.State()
	assert.Len(t, s.Pages, 3)

	// Deep copy both ways.
	s.Pages[1][0] = 0xEE
	v, err := m.ReadU32(0x1000)
	require.NoError(t, err)
	assert.Zero(t, v)

	var m2 Memory
	require.NoError(t, m2.WriteU32(0x777000, 5))
	require.NoError(t, m2.Restore(m.State()))
	assert.Equal(t, m.State(), m2.State())
	v, err = m2.ReadU32(0x777000)
	require.NoError(t, err)
	assert.Zero(t, v, "restore replaces the old contents")

	tests := []struct {
		name  string
		state MemoryState
		want  string
	}{
		{"page past the space", MemoryState{Pages: map[uint64]*Page{1: {}, pageLimit: {}}}, "page 0x1000000000 (address 0x1000000000000)"},
		{"page number overflowing an address", MemoryState{Pages: map[uint64]*Page{math.MaxUint64: {}}}, "page 0xffffffffffffffff outside"},
		{"nil page", MemoryState{Pages: map[uint64]*Page{3: nil, 4: {}}}, "page 0x3 (address 0x3000) is nil"},
		{"lowest bad page named", MemoryState{Pages: map[uint64]*Page{9: nil, 3: nil, pageLimit + 1: {}}}, "page 0x3 "},
	}
	for _, tc := range tests {
		for _, r := range restores {
			t.Run(tc.name+" "+r.name, func(t *testing.T) {
				before := m2.State()
				err := r.restore(&m2, tc.state)
				require.ErrorIs(t, err, ErrInvalidState)
				assert.Contains(t, err.Error(), tc.want)
				assert.Equal(t, before, m2.State())
			})
		}
	}
	require.NoError(t, m2.Restore(MemoryState{}), "an empty state is valid")
	assert.Zero(t, m2.PagesTouched())
}

// restores are a memory's two restores: of a copy, and of the state's own
// pages.
var restores = []struct {
	name    string
	restore func(*Memory, MemoryState) error
}{{"Restore", (*Memory).Restore}, {"RestoreOwned", (*Memory).RestoreOwned}}

// TestMemoryRestoreOwned: RestoreOwned restores what Restore does, but
// keeps the state's pages themselves (the memory writes to them) and
// allocates nothing of their size.
func TestMemoryRestoreOwned(t *testing.T) {
	var m Memory
	const n = 256
	for i := range uint64(n) {
		require.NoError(t, m.WriteU32(i*PageSize*3, uint32(i+1)))
	}
	for _, r := range restores {
		t.Run(r.name, func(t *testing.T) {
			s := m.State()
			var got Memory
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			require.NoError(t, r.restore(&got, s))
			runtime.ReadMemStats(&after)
			assert.Equal(t, m.State(), got.State())
			used := after.TotalAlloc - before.TotalAlloc
			require.NoError(t, got.WriteU32(3*PageSize, 0xAB))
			owned := s.Pages[3][0] == 0xAB
			if r.name == "RestoreOwned" {
				assert.True(t, owned, "the memory writes to the state's page")
				assert.Less(t, used, uint64(n*PageSize/8), "allocated for the pages")
			} else {
				assert.False(t, owned, "the memory writes to a copy")
				assert.GreaterOrEqual(t, used, uint64(n*PageSize), "the pages copied")
			}
		})
	}
}

// TestMemoryCacheInvalidation checks that the cache of pages looked up
// never serves a page that Restore, Clear, Adopt, or a freeing Fill or Copy
// removed, whether it was the last page looked up or an older one.
func TestMemoryCacheInvalidation(t *testing.T) {
	tests := []struct {
		name string
		drop func(m *Memory, saved MemoryState)
		want uint32
	}{
		{"clear", func(m *Memory, _ MemoryState) { m.Clear() }, 0},
		{"restore", func(m *Memory, s MemoryState) { _ = m.Restore(s) }, 0x1111},
		{"zero fill of the page", func(m *Memory, _ MemoryState) { _ = m.Fill(0x5000, PageSize, 0) }, 0},
		{"copy of a hole over the page", func(m *Memory, _ MemoryState) { _ = m.Copy(0x5000, 0x9000, PageSize) }, 0},
		{"adopt", func(m *Memory, s MemoryState) {
			var o Memory
			_ = o.Restore(s)
			m.Adopt(&o)
		}, 0x1111},
	}
	for _, tc := range tests {
		for behind := 0; behind <= olderPageCount+1; behind++ { // pages looked up after it
			t.Run(fmt.Sprintf("%s/%d behind", tc.name, behind), func(t *testing.T) {
				var m Memory
				require.NoError(t, m.WriteU32(0x5000, 0x1111))
				saved := m.State()
				require.NoError(t, m.WriteU32(0x5000, 0x2222)) // now cached
				for k := range behind {
					require.NoError(t, m.WriteU32(0x20000+uint64(k)*PageSize, 1))
				}
				tc.drop(&m, saved)
				v, err := m.ReadU32(0x5000)
				require.NoError(t, err)
				assert.Equal(t, tc.want, v)
				// A write after the drop must land in the live page set.
				require.NoError(t, m.WriteU32(0x5000, 0x3333))
				assert.Equal(t, uint32(0x3333), binaryU32(m.State().Pages[5][:]))
				for k := range behind { // the pages looked up after it: theirs
					v, err := m.ReadU32(0x20000 + uint64(k)*PageSize)
					require.NoError(t, err)
					if tc.want == 0x1111 || tc.name == "clear" { // replaced or cleared with the rest
						continue
					}
					assert.Equal(t, uint32(1), v)
				}
			})
		}
	}
}

// TestMemoryPageCacheTurns reads pages in turns of more pages than the
// cache holds, and fewer, over writes and frees, against the reference.
func TestMemoryPageCacheTurns(t *testing.T) {
	var m Memory
	ref := refMemory{}
	for round := range 40 {
		for k := range 2 + round%(olderPageCount+4) {
			addr := uint64(k)*PageSize*3 + uint64(round%7)*8
			switch (round + k) % 5 {
			case 0: // a freeing fill of the page
				require.NoError(t, m.Fill(addr&^pageMask, PageSize, 0))
				ref.write(addr&^pageMask, make([]byte, PageSize))
			case 1, 2:
				v := uint32(round*100 + k + 1)
				require.NoError(t, m.WriteU32(addr, v))
				ref.write(addr, []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
			}
			v, err := m.ReadU32(addr)
			require.NoError(t, err)
			b := ref.read(addr, 4)
			assert.Equal(t, binaryU32(b), v, "round %d page %d", round, k)
		}
	}
}

func binaryU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func TestMemoryHotPathDoesNotAllocate(t *testing.T) {
	var m Memory
	require.NoError(t, m.WriteU32(0x1000, 1))
	require.NoError(t, m.WriteU32(0x2000, 1))
	var sink uint32
	allocs := testing.AllocsPerRun(100, func() {
		for i := uint64(0); i < 64; i += 4 {
			_ = m.WriteU32(0x1000+i, uint32(i))
			v, _ := m.ReadU32(0x2000 + i) // alternate pages: cache misses too
			sink += v
			v64, _ := m.ReadU64(0x1FFC) // straddles two pages: the slow path
			sink += uint32(v64)
		}
	})
	assert.Zero(t, allocs)
	_ = sink
}
