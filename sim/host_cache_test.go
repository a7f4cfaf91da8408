package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cacheRef is what a host memory should hold, for the buffer cache's
// tests: every live buffer, its size, and whether it is lazy (its fill's
// seed) or plain (the seed of the pattern written into it).
type cacheRef struct {
	live map[uint64]cacheBuf
	seen []uint64 // every base ever handed out, ascending
}

// cacheBuf is one live buffer of a cacheRef.
type cacheBuf struct {
	size uint64
	lazy bool
	seed byte
}

// buffer returns the live buffer that holds [pa, pa+n), n > 0.
func (r *cacheRef) buffer(pa, n uint64) (uint64, cacheBuf, bool) {
	for base, b := range r.live {
		if pa >= base && pa-base < b.size && n <= b.size-(pa-base) {
			return base, b, true
		}
	}
	return 0, cacheBuf{}, false
}

// alloc allocates a buffer of size bytes, lazy or plain, whose bytes are
// the pattern of seed (written, for a plain one), and records it.
func (r *cacheRef) alloc(t *testing.T, h *HostMemory, size uint64, lazy bool, seed byte) uint64 {
	t.Helper()
	var pa uint64
	var err error
	if lazy {
		pa, err = h.AllocLazy(size, 64, (&patternFill{seed: seed}).fill)
	} else if pa, err = h.Alloc(size, 64); err == nil {
		p := make([]byte, size)
		for i := range p {
			p[i] = patternByte(seed, uint64(i))
		}
		err = h.Write(pa, p)
	}
	require.NoError(t, err)
	r.live[pa] = cacheBuf{size, lazy, seed}
	if i, found := slices.BinarySearch(r.seen, pa); !found {
		r.seen = slices.Insert(r.seen, i, pa)
	}
	return pa
}

// free frees the live buffer at base.
func (r *cacheRef) free(t *testing.T, h *HostMemory, base uint64) {
	t.Helper()
	require.NoError(t, h.Free(base))
	delete(r.live, base)
}

// probe reads, writes back and checks [pa, pa+n), n > 0, and requires each
// to be judged against the live buffer there: refused with ErrHostRange
// outside every one, the fill's or the written bytes inside one, a write
// into a lazy one refused with ErrHostLazy.
func (r *cacheRef) probe(t *testing.T, h *HostMemory, pa, n uint64, what string) {
	t.Helper()
	got := make([]byte, n)
	rerr, cerr := h.Read(pa, got), h.Check(pa, int(n))
	base, b, ok := r.buffer(pa, n)
	if !ok {
		require.ErrorIs(t, rerr, ErrHostRange, "%s: read [%#x, +%d)", what, pa, n)
		require.ErrorIs(t, cerr, ErrHostRange, "%s: check [%#x, +%d)", what, pa, n)
		require.ErrorIs(t, h.Write(pa, got), ErrHostRange, "%s: write [%#x, +%d)", what, pa, n)
		return
	}
	require.NoError(t, rerr, "%s: read [%#x, +%d)", what, pa, n)
	require.NoError(t, cerr, "%s: check [%#x, +%d)", what, pa, n)
	for i := range got {
		if want := patternByte(b.seed, pa-base+uint64(i)); got[i] != want {
			require.Failf(t, "wrong bytes", "%s: read [%#x, +%d) byte %d = %#x, want %#x (buffer at %#x, seed %d)", what, pa, n, i, got[i], want, base, b.seed)
		}
	}
	if b.lazy {
		require.ErrorIs(t, h.Write(pa, got), ErrHostLazy, "%s: write [%#x, +%d)", what, pa, n)
	} else {
		require.NoError(t, h.Write(pa, got), "%s: write [%#x, +%d) (the bytes it holds)", what, pa, n)
	}
}

// probeAll probes, around every base ever handed out, the first and last
// bytes of every page up to maxPages pages on, and bursts across each
// boundary, so that the cache holds an entry for each page touched and a
// stale one would be met.
func (r *cacheRef) probeAll(t *testing.T, h *HostMemory, maxPages uint64, what string) {
	t.Helper()
	for _, base := range r.seen {
		for pg := range maxPages + 1 {
			at := base + pg*PageSize
			r.probe(t, h, at, 1, what)
			r.probe(t, h, at+PageSize-1, 1, what)
			r.probe(t, h, at+PageSize-128, 256, what)
		}
		r.probe(t, h, base, 256, what)
		if base >= HostMemoryBase+64 {
			r.probe(t, h, base-64, 128, what) // across the boundary below
		}
	}
}

// TestHostCacheReuse: buffers freed and allocated again at the same
// address, with other sizes and of the other kind, are judged against the
// buffer live at each access, never one the cache remembers from before:
// every page of every base ever handed out is read, written and checked
// after each step, so the cache holds an entry for each.
func TestHostCacheReuse(t *testing.T) {
	type alloc struct {
		size uint64
		lazy bool
	}
	for _, tc := range []struct {
		name   string
		first  []alloc // allocated in order from an empty host memory
		freed  []int   // then freed, by index into first
		second []alloc // then allocated: the first lands at first[freed[0]]'s base
	}{
		{"plain to smaller lazy", []alloc{{3 * PageSize, false}, {PageSize, false}}, []int{0}, []alloc{{PageSize, true}}},
		{"lazy to smaller plain", []alloc{{3 * PageSize, true}, {PageSize, false}}, []int{0}, []alloc{{64, false}}},
		{"plain to larger lazy", []alloc{{PageSize, false}, {5 * PageSize, false}}, []int{0, 1}, []alloc{{4 * PageSize, true}}},
		{"lazy to larger plain", []alloc{{PageSize, true}, {2*PageSize + 64, true}}, []int{0, 1}, []alloc{{3 * PageSize, false}}},
		{"one lazy into two plain", []alloc{{4 * PageSize, true}, {64, false}}, []int{0}, []alloc{{PageSize + 64, false}, {2 * PageSize, false}}},
		{"two plain into one lazy", []alloc{{PageSize, false}, {PageSize, false}, {64, true}}, []int{0, 1}, []alloc{{2 * PageSize, true}}},
		{"same size, lazy to plain", []alloc{{2 * PageSize, true}, {64, true}}, []int{0}, []alloc{{2 * PageSize, false}}},
		{"same size, plain to lazy", []alloc{{2 * PageSize, false}, {64, true}}, []int{0}, []alloc{{2 * PageSize, true}}},
		{"small buffers sharing a page", []alloc{{64, false}, {128, true}, {64, false}, {256, true}}, []int{1, 2}, []alloc{{192, false}, {64, true}}},
		{"lazy with more pages than the cache has sets", []alloc{{(hostCacheMinSets + 8) * PageSize, true}, {64, false}}, []int{0},
			[]alloc{{PageSize, false}, {(hostCacheMinSets + 4) * PageSize, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHostMemory()
			ref := &cacheRef{live: map[uint64]cacheBuf{}}
			seed := byte(1)
			var bases []uint64
			for _, a := range tc.first {
				bases = append(bases, ref.alloc(t, h, a.size, a.lazy, seed))
				seed++
			}
			const maxPages = hostCacheMinSets + 9
			ref.probeAll(t, h, maxPages, "allocated")
			for _, i := range tc.freed {
				ref.free(t, h, bases[i])
				ref.probeAll(t, h, maxPages, fmt.Sprintf("freed %d", i))
			}
			for j, a := range tc.second {
				pa := ref.alloc(t, h, a.size, a.lazy, seed)
				seed++
				if j == 0 {
					require.Equal(t, bases[tc.freed[0]], pa, "the first buffer allocated again reuses the first freed one's address")
				}
				ref.probeAll(t, h, maxPages, fmt.Sprintf("allocated again %d", j))
			}
			require.NoError(t, validateHostState(h.State()))
		})
	}
}

// TestHostCacheRandom: random allocations of both kinds and frees, with
// enough buffers live that the cache grows, each followed by reads, writes
// and checks at random addresses of the space handed out and a probe of
// every page around the buffer just allocated or freed; each access is
// judged against the buffers live then.
func TestHostCacheRandom(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			h := NewHostMemory()
			ref := &cacheRef{live: map[uint64]cacheBuf{}}
			sizes := []uint64{64, 192, PageSize - 64, PageSize, 2*PageSize + 64, 5 * PageSize}
			top := uint64(HostMemoryBase)
			for step := range steps {
				var at uint64
				if len(ref.live) > 0 && rng.IntN(5) < 2 {
					bases := slices.Sorted(func(yield func(uint64) bool) {
						for b := range ref.live {
							if !yield(b) {
								return
							}
						}
					})
					at = bases[rng.IntN(len(bases))]
					ref.free(t, h, at)
				} else {
					at = ref.alloc(t, h, sizes[rng.IntN(len(sizes))], rng.IntN(2) == 0, byte(step))
					top = max(top, at+ref.live[at].size)
				}
				what := fmt.Sprintf("step %d", step)
				for pg := range uint64(6) {
					ref.probe(t, h, at+pg*PageSize, 64, what)
				}
				for range 8 {
					pa := HostMemoryBase + rng.Uint64N(top-HostMemoryBase)&^63
					ref.probe(t, h, pa, 64<<rng.IntN(4), what)
				}
			}
			assert.Greater(t, len(h.cache.sets), hostCacheMinSets, "the cache grew with the buffers")
			require.NoError(t, validateHostState(h.State()))
		})
	}
}

// TestHostCacheRestore: after Restore, an address whose buffer the cache
// remembered is judged against the restored buffers: a lazy buffer restored
// is a plain one of zeros, and one restored away is refused.
func TestHostCacheRestore(t *testing.T) {
	h := NewHostMemory()
	small, err := h.Alloc(PageSize, 64)
	require.NoError(t, err)
	before := h.State()
	filler, err := h.Alloc(2*PageSize, 64)
	require.NoError(t, err)
	require.NoError(t, h.Free(small))
	require.NoError(t, h.Free(filler))
	lazy, err := h.AllocLazy(3*PageSize, 64, (&patternFill{seed: 5}).fill)
	require.NoError(t, err)
	require.Equal(t, small, lazy)
	p := make([]byte, 64)
	for pg := range uint64(3) {
		require.NoError(t, h.Read(lazy+pg*PageSize, p))
	}
	lazyState := h.State()

	require.NoError(t, h.Restore(before))
	assert.ErrorIs(t, h.Read(lazy+PageSize, p), ErrHostRange, "past the restored buffer")
	assert.ErrorIs(t, h.Check(lazy+2*PageSize, 64), ErrHostRange, "past the restored buffer")
	require.NoError(t, h.Write(lazy, []byte{7}), "the restored buffer is plain")

	require.NoError(t, h.Restore(lazyState))
	for pg := range uint64(3) {
		require.NoError(t, h.Read(lazy+pg*PageSize, p))
		assert.Equal(t, make([]byte, 64), p, "a lazy buffer restored reads as zeros")
		require.NoError(t, h.Write(lazy+pg*PageSize, []byte{1}), "and is plain")
	}
}

// TestHostCacheSets: the cache has two sets for each live buffer, a power
// of two in [hostCacheMinSets, hostCacheMaxSets]; it grows as buffers are
// allocated and keeps its size when they are freed.
func TestHostCacheSets(t *testing.T) {
	h := NewHostMemory()
	assert.Len(t, h.cache.sets, hostCacheMinSets)
	var bases []uint64
	for range 300 {
		pa, err := h.Alloc(64, 64)
		require.NoError(t, err)
		bases = append(bases, pa)
	}
	assert.Len(t, h.cache.sets, 1024)
	for _, pa := range bases[1:] {
		require.NoError(t, h.Free(pa))
	}
	_, err := h.Alloc(64, 64)
	require.NoError(t, err)
	assert.Len(t, h.cache.sets, 1024, "kept when buffers are freed")

	for _, tc := range []struct{ buffers, want int }{
		{0, hostCacheMinSets}, {1, hostCacheMinSets}, {hostCacheMinSets / 2, hostCacheMinSets},
		{hostCacheMinSets/2 + 1, 2 * hostCacheMinSets}, {1000, 2048}, {1024, 2048}, {1025, 4096},
		{hostCacheMaxSets, hostCacheMaxSets}, {MaxHostBuffers, hostCacheMaxSets},
	} {
		assert.Equal(t, tc.want, hostCacheSets(tc.buffers), "%d buffers", tc.buffers)
	}
}
