package sim

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hostWindow = HostMemoryLimit - HostMemoryBase

// TestHostAllocRequests: an alignment is a power of two in [1, MaxHostAlign]
// and anything else is refused naming the value, never raised or reported as
// exhaustion; a size is in [1, the window].
func TestHostAllocRequests(t *testing.T) {
	for _, tc := range []struct {
		size, align uint64
		want        error  // nil: granted
		text        string // in the error
	}{
		{64, 0, ErrHostBadRequest, "alignment 0 "},
		{64, 3, ErrHostBadRequest, "alignment 3 "},
		{64, 65, ErrHostBadRequest, "alignment 65 "},
		{64, 1 << 63, ErrHostBadRequest, "alignment 9223372036854775808 "},
		{64, MaxHostAlign << 1, ErrHostBadRequest, "alignment 2147483648 "},
		{64, ^uint64(0), ErrHostBadRequest, "alignment 18446744073709551615 "},
		{0, 64, ErrHostBadRequest, "alloc 0 bytes"},
		{hostWindow + 1, 64, ErrHostBadRequest, "size must be in"},
		{^uint64(0), 64, ErrHostBadRequest, "size must be in"},
		{1, 1, nil, ""},
		{100, 16, nil, ""},
		{64, 64, nil, ""},
		{4096, 4096, nil, ""},
		{8 << 30, MaxHostAlign, nil, ""},
		{hostWindow - 3*HostGranule, 1, nil, ""}, // all the window the three buffers leave
	} {
		t.Run(strconv.FormatUint(tc.size, 10)+"/"+strconv.FormatUint(tc.align, 10), func(t *testing.T) {
			h := NewHostMemory()
			for range 3 { // a few live buffers so alignment has something to skip
				_, err := h.Alloc(64, 64)
				require.NoError(t, err)
			}
			before := h.State()
			pa, err := h.Alloc(tc.size, tc.align)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				assert.NotErrorIs(t, err, ErrHostNoMemory)
				assert.Contains(t, err.Error(), tc.text)
				assert.Equal(t, before, h.State(), "a refused request changes nothing")
				return
			}
			require.NoError(t, err)
			assert.Zero(t, pa%max(tc.align, HostGranule), "address %#x aligned to %d", pa, tc.align)
			assert.GreaterOrEqual(t, pa, uint64(HostMemoryBase))
			size := (tc.size + HostGranule - 1) &^ (HostGranule - 1)
			assert.LessOrEqual(t, size, HostMemoryLimit-pa)
			require.NoError(t, h.Check(pa, int(min(size, 1<<20))))
			require.NoError(t, validateHostState(h.State()))
		})
	}
}

// TestHostExhaustion: the window's last bytes are reachable, and exhaustion
// is reported only when no free space can hold the buffer — also when the
// fitting space is a free extent that ends at the next pointer together with
// the never-used space above it.
func TestHostExhaustion(t *testing.T) {
	const top = HostMemoryLimit
	h := NewHostMemory()
	require.NoError(t, h.Restore(HostState{
		Blocks: []HostExtent{{HostMemoryBase, top - 192 - HostMemoryBase}},
		Free:   []HostExtent{{top - 192, 128}},
		Next:   top - 64,
	}))
	_, err := h.Alloc(64, 1<<30)
	require.ErrorIs(t, err, ErrHostNoMemory, "no 1 GiB boundary is free")
	pa, err := h.Alloc(192, 64)
	require.NoError(t, err, "128 free bytes below Next and 64 above it hold 192")
	assert.Equal(t, uint64(top-192), pa)
	_, err = h.Alloc(1, 1)
	require.ErrorIs(t, err, ErrHostNoMemory)
	assert.Contains(t, err.Error(), "largest free extent 0 bytes")
	require.NoError(t, h.Free(pa))
	pa, err = h.Alloc(128, 128)
	require.NoError(t, err)
	assert.Equal(t, uint64(top-128), pa, "freed space is reused, at the alignment")
	pa, err = h.Alloc(64, 64)
	require.NoError(t, err)
	assert.Equal(t, uint64(top-192), pa, "and what the alignment skipped too")
	require.NoError(t, validateHostState(h.State()))

	t.Run("buffer limit", func(t *testing.T) {
		s := HostState{Next: HostMemoryBase + MaxHostBuffers*HostGranule}
		for i := range uint64(MaxHostBuffers) {
			s.Blocks = append(s.Blocks, HostExtent{HostMemoryBase + i*HostGranule, HostGranule})
		}
		h := NewHostMemory()
		require.NoError(t, h.Restore(s))
		_, err := h.Alloc(64, 64)
		require.ErrorIs(t, err, ErrHostNoMemory)
		assert.Contains(t, err.Error(), "live buffers, the limit")
		require.NoError(t, h.Free(HostMemoryBase))
		_, err = h.Alloc(64, 64)
		require.NoError(t, err)
		s.Blocks = append(s.Blocks, HostExtent{s.Next, HostGranule})
		s.Next += HostGranule
		err = h.Restore(s)
		require.ErrorIs(t, err, ErrInvalidState)
		assert.Contains(t, err.Error(), "Blocks: 1048577 live buffers")
	})
}

// hostIssueState is the state of issue 13 item 10: 48 live buffers, and
// the next pointer 64 bytes below 2^64, where an 8 GiB Alloc aligned to
// 4 KiB used to wrap to address 0.
func hostIssueState() HostState {
	var s HostState
	for i := range uint64(48) {
		s.Blocks = append(s.Blocks, HostExtent{HostMemoryBase + i*4096, 4096})
	}
	s.Next = ^uint64(0) - 63
	return s
}

// TestHostRestoreRefuses: every invariant a restored state must keep is
// checked, the error names the field, and a refused state leaves the host
// memory exactly as it was.
func TestHostRestoreRefuses(t *testing.T) {
	const B = HostMemoryBase
	ok := HostState{Blocks: []HostExtent{{B, 64}, {B + 128, 64}}, Free: []HostExtent{{B + 64, 64}}, Next: B + 192}
	page := func(pn uint64, off int) MemoryState {
		var pg Page
		pg[off] = 7
		return MemoryState{Pages: map[uint64]*Page{pn: &pg}}
	}
	for _, tc := range []struct {
		name string
		s    HostState
		text string
	}{
		{"next near 2^64 (issue)", hostIssueState(), "Next 0xffffffffffffffc0"},
		{"next below the window", HostState{Next: B - 64}, "Next 0xffffffc0"},
		{"next past the window", HostState{Next: HostMemoryLimit + 64}, "Next 0x10000000040"},
		{"next unaligned", HostState{Blocks: []HostExtent{{B, 64}}, Next: B + 65}, "Next 0x100000041"},
		{"free list of the whole space (issue)", HostState{Free: []HostExtent{{0, ^uint64(0)}}, Next: B}, "Free[0] [0x0, +0xffffffffffffffff)"},
		{"free extent below the window", HostState{Free: []HostExtent{{B - 64, 128}}, Next: B + 64}, "Free[0] [0xffffffc0, +0x80): outside"},
		{"block past Next", HostState{Blocks: []HostExtent{{B, 128}}, Next: B + 64}, "Blocks[0] [0x100000000, +0x80): outside"},
		{"block wraps", HostState{Blocks: []HostExtent{{B, ^uint64(0) - 63}}, Next: B + 64}, "Blocks[0]"},
		{"empty block", HostState{Blocks: []HostExtent{{B, 0}}, Next: B}, "Blocks[0] [0x100000000, +0x0): want a non-empty"},
		{"unaligned block", HostState{Blocks: []HostExtent{{B + 8, 64}}, Next: B + 128}, "Blocks[0] [0x100000008, +0x40): want a non-empty extent on 64-byte boundaries"},
		{"unaligned size", HostState{Blocks: []HostExtent{{B, 100}}, Next: B + 128}, "Blocks[0] [0x100000000, +0x64)"},
		{"blocks overlap", HostState{Blocks: []HostExtent{{B, 128}, {B + 64, 128}}, Next: B + 192}, "Blocks[1] [0x100000040, +0x80): below the end"},
		{"blocks descend", HostState{Blocks: []HostExtent{{B + 64, 64}, {B, 64}}, Next: B + 128}, "Blocks[1]"},
		{"duplicate block", HostState{Blocks: []HostExtent{{B, 64}, {B, 64}}, Next: B + 64}, "Blocks[1]"},
		{"free extents adjacent", HostState{Free: []HostExtent{{B, 64}, {B + 64, 64}}, Next: B + 128}, "Free[1] [0x100000040, +0x40): adjacent"},
		{"free overlaps a block", HostState{Blocks: []HostExtent{{B, 128}}, Free: []HostExtent{{B + 64, 128}}, Next: B + 192}, "Free[0] [0x100000040, +0x80): overlaps Blocks[0]"},
		{"block inside a free extent", HostState{Blocks: []HostExtent{{B + 64, 64}}, Free: []HostExtent{{B, 192}}, Next: B + 192}, "Blocks[0] [0x100000040, +0x40): overlaps Free[0]"},
		{"hole in the tiling", HostState{Blocks: []HostExtent{{B, 64}, {B + 128, 64}}, Next: B + 192}, "the range from 0x100000040 is neither"},
		{"nothing tiles [Base, Next)", HostState{Next: B + 64}, "the range from 0x100000000 is neither"},
		{"data in free space", HostState{Memory: page(B>>pageShift, 100), Blocks: ok.Blocks, Free: ok.Free, Next: ok.Next}, "Memory: page 0x100000 holds a non-zero byte at 0x100000064"},
		{"data past Next", HostState{Memory: page(B>>pageShift, 300), Blocks: ok.Blocks, Free: ok.Free, Next: ok.Next}, "at 0x10000012c"},
		{"data below the window", HostState{Memory: page(5, 0), Next: B}, "Memory: page 0x5"},
		{"page outside the address space", HostState{Memory: MemoryState{Pages: map[uint64]*Page{1 << 60: new(Page)}}, Next: B}, "page 0x1000000000000000"},
		{"nil page", HostState{Memory: MemoryState{Pages: map[uint64]*Page{B >> pageShift: nil}}, Blocks: ok.Blocks, Free: ok.Free, Next: ok.Next}, "is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHostMemory()
			a, err := h.Alloc(100, 64)
			require.NoError(t, err)
			require.NoError(t, h.Write(a, []byte{1, 2, 3}))
			b, err := h.Alloc(64, 4096)
			require.NoError(t, err)
			require.NoError(t, h.Free(a))
			before := h.State()
			err = h.Restore(tc.s)
			require.ErrorIs(t, err, ErrInvalidState)
			assert.Contains(t, err.Error(), tc.text)
			assert.Equal(t, before, h.State(), "a refused state changes nothing")
			require.NoError(t, h.Check(b, 64))
			c, err := h.Alloc(64, 64)
			require.NoError(t, err)
			assert.Equal(t, a, c, "the allocator goes on as before")
		})
	}
	t.Run("valid", func(t *testing.T) {
		var pg Page
		pg[10], pg[130] = 1, 2 // both inside live buffers
		s := ok
		s.Memory = MemoryState{Pages: map[uint64]*Page{B >> pageShift: &pg}}
		h := NewHostMemory()
		require.NoError(t, h.Restore(s))
		assert.Equal(t, s, h.State())
	})
}

// refHost is the reference model of the allocation policy: the free extents
// in a sorted slice, every search linear.
type refHost struct {
	live map[uint64]uint64 // base → size
	free []HostExtent
	next uint64
}

func alignUp64(x, a uint64) (uint64, bool) {
	r := (x + a - 1) &^ (a - 1)
	return r, r >= x
}

func (r *refHost) alloc(size, align uint64) (uint64, bool) {
	size = (size + HostGranule - 1) &^ (HostGranule - 1)
	a := max(align, HostGranule)
	take := func(i int, base uint64) {
		f := r.free[i]
		r.free = slices.Delete(r.free, i, i+1)
		var keep []HostExtent
		if base > f.Base {
			keep = append(keep, HostExtent{f.Base, base - f.Base})
		}
		if base+size < f.End() {
			keep = append(keep, HostExtent{base + size, f.End() - base - size})
		}
		r.free = slices.Insert(r.free, i, keep...)
	}
	for i, f := range r.free {
		if base, ok := alignUp64(f.Base, a); ok && base < f.End() && size <= f.End()-base {
			take(i, base)
			r.live[base] = size
			return base, true
		}
	}
	if base, ok := alignUp64(r.next, a); ok && base <= HostMemoryLimit && size <= HostMemoryLimit-base {
		if base > r.next {
			r.release(r.next, base-r.next)
		}
		r.next = base + size
		r.live[base] = size
		return base, true
	}
	if n := len(r.free); n > 0 && r.free[n-1].End() == r.next {
		f := r.free[n-1]
		if base, ok := alignUp64(f.Base, a); ok && base <= HostMemoryLimit && size <= HostMemoryLimit-base {
			r.free = r.free[:n-1]
			if base > f.Base {
				r.free = append(r.free, HostExtent{f.Base, base - f.Base})
			}
			r.next = base + size
			r.live[base] = size
			return base, true
		}
	}
	return 0, false
}

func (r *refHost) release(base, size uint64) {
	i, _ := slices.BinarySearchFunc(r.free, base, func(f HostExtent, b uint64) int {
		if f.Base < b {
			return -1
		}
		return 1
	})
	r.free = slices.Insert(r.free, i, HostExtent{base, size})
	if i+1 < len(r.free) && r.free[i].End() == r.free[i+1].Base {
		r.free[i].Size += r.free[i+1].Size
		r.free = slices.Delete(r.free, i+1, i+2)
	}
	if i > 0 && r.free[i-1].End() == r.free[i].Base {
		r.free[i-1].Size += r.free[i].Size
		r.free = slices.Delete(r.free, i, i+1)
	}
}

// fits reports whether any range of the window outside the live buffers
// holds size bytes at alignment align: the ground truth for exhaustion.
func (r *refHost) fits(size, align uint64) bool {
	size = (size + HostGranule - 1) &^ (HostGranule - 1)
	bases := slices.Sorted(maps.Keys(r.live))
	pos := uint64(HostMemoryBase)
	gap := func(end uint64) bool {
		base, ok := alignUp64(pos, max(align, HostGranule))
		return ok && base < end && size <= end-base
	}
	for _, b := range bases {
		if gap(b) {
			return true
		}
		pos = b + r.live[b]
	}
	return gap(HostMemoryLimit)
}

// TestHostAllocProperty runs random allocation and free sequences, from an
// empty window and from one nearly full, against the reference model: the
// same addresses, no overlaps, everything inside the window and aligned,
// freed space reusable and zeroed, exhaustion only when nothing fits.
func TestHostAllocProperty(t *testing.T) {
	nearlyFull := HostState{Blocks: []HostExtent{{HostMemoryBase, hostWindow - 64<<20}}, Next: HostMemoryLimit - 32<<20,
		Free: []HostExtent{{HostMemoryLimit - 64<<20, 32 << 20}}}
	for _, start := range []struct {
		name string
		s    *HostState
	}{{"empty", nil}, {"nearly full", &nearlyFull}} {
		for seed := range uint64(4) {
			t.Run(start.name+"/"+strconv.FormatUint(seed, 10), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				h := NewHostMemory()
				ref := &refHost{live: map[uint64]uint64{}, next: HostMemoryBase}
				if start.s != nil {
					require.NoError(t, h.Restore(*start.s))
					for _, b := range start.s.Blocks {
						ref.live[b.Base] = b.Size
					}
					ref.free, ref.next = slices.Clone(start.s.Free), start.s.Next
				}
				var exhausted int
				for step := range 3000 {
					if len(ref.live) > 0 && rng.IntN(5) < 2 {
						bases := slices.Sorted(maps.Keys(ref.live))
						base := bases[rng.IntN(len(bases))]
						require.NoError(t, h.Free(base), "step %d", step)
						ref.release(base, ref.live[base])
						delete(ref.live, base)
						require.ErrorIs(t, h.Free(base), ErrHostBadFree)
						continue
					}
					var size uint64
					switch rng.IntN(10) {
					case 0:
						size = 1 + rng.Uint64N(hostWindow/3)
					case 1:
						size = 1 + rng.Uint64N(64<<20)
					default:
						size = 1 + rng.Uint64N(8192)
					}
					align := uint64(1) << rng.IntN(31)
					want, ok := ref.alloc(size, align)
					pa, err := h.Alloc(size, align)
					if !ok {
						require.ErrorIs(t, err, ErrHostNoMemory, "step %d: alloc %d aligned %d", step, size, align)
						require.False(t, ref.fits(size, align), "step %d: exhaustion reported while free space holds %d bytes aligned %d", step, size, align)
						exhausted++
						continue
					}
					require.NoError(t, err, "step %d", step)
					require.Equal(t, want, pa, "step %d: alloc %d aligned %d", step, size, align)
					require.Zero(t, pa%align)
					var b [8]byte
					require.NoError(t, h.Read(pa, b[:]))
					require.Equal(t, [8]byte{}, b, "step %d: a new buffer reads zeros", step)
					require.NoError(t, h.Write(pa, []byte{0xAA, byte(step)}))
					if step%100 == 0 {
						s := h.State()
						require.NoError(t, validateHostState(s), "step %d", step)
						require.Equal(t, ref.next, s.Next)
						require.Equal(t, len(ref.live), len(s.Blocks))
						require.True(t, slices.Equal(ref.free, s.Free), "step %d: free extents", step)
					}
				}
				t.Logf("%d allocations refused for exhaustion", exhausted)
				if start.s != nil {
					assert.NotZero(t, exhausted, "the nearly full window exercises exhaustion")
				}
				require.NoError(t, validateHostState(h.State()))
			})
		}
	}
}

// TestHostStateRoundTrip: a restored copy continues exactly as the
// original, restored from a copy of the state's pages or from the pages
// themselves (RestoreOwned, whose memory then writes to them).
func TestHostStateRoundTrip(t *testing.T) {
	for _, r := range []struct {
		name    string
		restore func(*HostMemory, HostState) error
	}{{"Restore", (*HostMemory).Restore}, {"RestoreOwned", (*HostMemory).RestoreOwned}} {
		t.Run(r.name, func(t *testing.T) {
			h := NewHostMemory()
			var pas []uint64
			for i := range 50 {
				pa, err := h.Alloc(uint64(64+i*100), uint64(1)<<(i%13))
				require.NoError(t, err)
				require.NoError(t, h.Write(pa, []byte{byte(i + 1)}))
				pas = append(pas, pa)
			}
			for i := 0; i < len(pas); i += 3 {
				require.NoError(t, h.Free(pas[i]))
			}
			s := h.State()
			require.NoError(t, validateHostState(s))
			c := NewHostMemory()
			require.NoError(t, r.restore(c, s))
			assert.Equal(t, h.State(), c.State())
			require.NoError(t, c.Write(pas[1], []byte{0xAB}))
			assert.Equal(t, r.name == "RestoreOwned", s.Memory.Pages[pas[1]>>pageShift][pas[1]%PageSize] == 0xAB, "the state's own page written")
			require.NoError(t, c.Write(pas[1], []byte{2}))
			for i := range 20 {
				x, err1 := h.Alloc(uint64(1000*i+1), 256)
				y, err2 := c.Alloc(uint64(1000*i+1), 256)
				require.NoError(t, err1)
				require.NoError(t, err2)
				require.Equal(t, x, y)
			}
			assert.Equal(t, h.State(), c.State())
		})
	}
}

// decodeHostState builds a HostState from fuzz input: mostly a tiling of
// [HostMemoryBase, Next) by buffers and free extents, then perturbed, so
// that both accepted and refused states are common.
func decodeHostState(data []byte) HostState {
	var s HostState
	if len(data) == 0 {
		return HostState{Next: HostMemoryBase}
	}
	mode, data := data[0], data[1:]
	u64 := func() uint64 {
		var v uint64
		for i := 0; i < 8 && len(data) > 0; i++ {
			v |= uint64(data[0]) << (8 * i)
			data = data[1:]
		}
		return v
	}
	if mode&0x80 != 0 { // raw values
		s.Next = u64()
		for i := 0; len(data) >= 16 && i < 32; i++ {
			e := HostExtent{u64(), u64()}
			if e.Base&1 == 0 {
				s.Blocks = append(s.Blocks, e)
			} else {
				s.Free = append(s.Free, HostExtent{e.Base &^ 1, e.Size})
			}
		}
		return s
	}
	pos := uint64(HostMemoryBase)
	for i := 0; len(data) >= 2 && i < 64; i++ {
		n := (uint64(data[0]>>1) | uint64(data[1])<<7) + 1
		e := HostExtent{pos, n * HostGranule}
		if data[0]&1 == 0 {
			s.Blocks = append(s.Blocks, e)
		} else {
			s.Free = append(s.Free, e)
		}
		pos += e.Size
		data = data[2:]
	}
	s.Next = pos
	if mode&1 != 0 && len(s.Blocks) > 0 {
		s.Blocks[len(s.Blocks)/2].Base += uint64(mode>>1&7) * 8
	}
	if mode&0x10 != 0 {
		s.Next += uint64(mode>>5&3) * HostGranule
	}
	if len(data) >= 3 {
		var pg Page
		off := uint64(data[0]) | uint64(data[1])<<8
		addr := HostMemoryBase + off*16
		if n := len(s.Blocks); n > 0 && off&1 == 0 { // a byte of a buffer
			b := s.Blocks[int(off>>1)%n]
			addr = b.Base + uint64(data[2])%max(b.Size, 1)
		}
		pg[addr%PageSize] = data[2] | 1
		s.Memory.Pages = map[uint64]*Page{addr >> pageShift: &pg}
	}
	return s
}

// FuzzHostRestore restores arbitrary states: Restore never panics, a
// refused state leaves the host memory as it was, an accepted one reads
// back as given and keeps every invariant through allocations and frees.
func FuzzHostRestore(f *testing.F) {
	f.Add([]byte{0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01})
	f.Add([]byte{0x01, 0x02, 0x00, 0x05, 0x00, 0x04, 0x00, 0x10, 0x00, 0x07})
	f.Add([]byte{0x10 | 0x20, 0x00, 0x00, 0x03, 0x00})
	f.Add(append([]byte{0x80}, []byte(strings.Repeat("\xff", 24))...))
	f.Add([]byte{0x80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := decodeHostState(data)
		h := NewHostMemory()
		a, err := h.Alloc(64, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Write(a, []byte{9}); err != nil {
			t.Fatal(err)
		}
		before := h.State()
		if err := h.Restore(s); err != nil {
			if !errors.Is(err, ErrInvalidState) {
				t.Fatalf("refusal %v does not wrap ErrInvalidState", err)
			}
			if got := h.State(); !hostStatesEqual(got, before) {
				t.Fatalf("refused state changed the host memory: %+v", got)
			}
			return
		}
		got := h.State()
		if !hostStatesEqual(got, s) {
			t.Fatalf("accepted state reads back as %+v, want %+v", got, s)
		}
		if err := validateHostState(got); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(len(data)), 1))
		for range 20 {
			if st := h.State(); len(st.Blocks) > 0 && rng.IntN(2) == 0 {
				if err := h.Free(st.Blocks[rng.IntN(len(st.Blocks))].Base); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if _, err := h.Alloc(1+rng.Uint64N(1<<16), uint64(1)<<rng.IntN(31)); err != nil && !errors.Is(err, ErrHostNoMemory) {
				t.Fatal(err)
			}
		}
		if err := validateHostState(h.State()); err != nil {
			t.Fatal(err)
		}
	})
}

func hostStatesEqual(a, b HostState) bool {
	return a.Next == b.Next && slices.Equal(a.Blocks, b.Blocks) && slices.Equal(a.Free, b.Free) &&
		maps.EqualFunc(a.Memory.Pages, b.Memory.Pages, func(x, y *Page) bool { return x != nil && y != nil && *x == *y })
}
