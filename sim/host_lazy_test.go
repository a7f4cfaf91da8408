package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim/dma"
)

// patternFill is a lazy buffer's fill whose byte at offset i is
// patternByte(seed, i); it counts its calls.
type patternFill struct {
	seed  byte
	calls int
}

func patternByte(seed byte, i uint64) byte { return byte(i*31) ^ byte(i>>9) ^ seed }

func (f *patternFill) fill(off uint64, p []byte) error {
	f.calls++
	for i := range p {
		p[i] = patternByte(f.seed, off+uint64(i))
	}
	return nil
}

// TestHostLazyRead: a read inside a lazy buffer is fill's bytes for the
// range's offset from the buffer's base, whatever part of the buffer it
// covers; a range that runs out of the buffer is refused without calling
// fill; a read of no bytes calls nothing.
func TestHostLazyRead(t *testing.T) {
	const size = 3 * PageSize
	for _, tc := range []struct {
		name   string
		off, n uint64
		want   error // nil: fill's bytes
		calls  int
	}{
		{"whole", 0, size, nil, 1},
		{"first byte", 0, 1, nil, 1},
		{"last byte", size - 1, 1, nil, 1},
		{"across pages", PageSize - 8, 16, nil, 1},
		{"middle", 1000, 5000, nil, 1},
		{"no bytes", 100, 0, nil, 0},
		{"past the end", size - 8, 16, ErrHostRange, 0},
		{"one past the end", size, 1, ErrHostRange, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHostMemory()
			plain, err := h.Alloc(64, 64) // a plain neighbour below
			require.NoError(t, err)
			f := &patternFill{seed: 7}
			pa, err := h.AllocLazy(size, PageSize, f.fill)
			require.NoError(t, err)
			assert.Zero(t, pa%PageSize)
			require.NoError(t, h.Check(pa, size))
			got := make([]byte, tc.n)
			err = h.Read(pa+tc.off, got)
			assert.Equal(t, tc.calls, f.calls, "fill calls")
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			for i := range got {
				require.Equal(t, patternByte(7, tc.off+uint64(i)), got[i], "byte %d", i)
			}
			one := make([]byte, 1)
			require.NoError(t, h.Read(plain, one), "the plain neighbour still reads from memory")
			assert.Zero(t, one[0])
			assert.Equal(t, tc.calls, f.calls, "a plain buffer's read calls no fill")
		})
	}
}

// TestHostLazyRefusals: a write into a lazy buffer is refused with
// ErrHostLazy naming the range and the buffer, and changes nothing; a nil
// fill is a bad request; a fill's error is the read's.
func TestHostLazyRefusals(t *testing.T) {
	h := NewHostMemory()
	f := &patternFill{seed: 1}
	pa, err := h.AllocLazy(4096, 64, f.fill)
	require.NoError(t, err)
	err = h.Write(pa+64, []byte{1, 2, 3})
	require.ErrorIs(t, err, ErrHostLazy)
	assert.Contains(t, err.Error(), fmt.Sprintf("[%#x, +3) into the lazy buffer at %#x", pa+64, pa))
	assert.Empty(t, h.State().Memory.Pages, "a refused write stores nothing")
	got := make([]byte, 3)
	require.NoError(t, h.Read(pa+64, got))
	assert.Equal(t, []byte{patternByte(1, 64), patternByte(1, 65), patternByte(1, 66)}, got)

	_, err = h.AllocLazy(4096, 64, nil)
	assert.ErrorIs(t, err, ErrHostBadRequest)
	_, err = h.AllocLazy(0, 64, f.fill)
	assert.ErrorIs(t, err, ErrHostBadRequest)
	_, err = h.AllocLazy(64, 3, f.fill)
	assert.ErrorIs(t, err, ErrHostBadRequest)
	assert.Equal(t, 1, h.Live(), "refused requests allocate nothing")

	errGone := errors.New("range let go")
	bad, err := h.AllocLazy(4096, 64, func(uint64, []byte) error { return errGone })
	require.NoError(t, err)
	err = h.Read(bad+128, got)
	require.ErrorIs(t, err, errGone)
	assert.Contains(t, err.Error(), fmt.Sprintf("lazy buffer at %#x (offset 128)", bad))
}

// TestHostLazyFillUnlocked: fill runs without the host memory's lock, so it
// may read (and write) other buffers of the same host memory.
func TestHostLazyFillUnlocked(t *testing.T) {
	h := NewHostMemory()
	src, err := h.Alloc(64, 64)
	require.NoError(t, err)
	require.NoError(t, h.Write(src, []byte("from a plain buffer")))
	pa, err := h.AllocLazy(64, 64, func(off uint64, p []byte) error { return h.Read(src+off, p) })
	require.NoError(t, err)
	got := make([]byte, 19)
	require.NoError(t, h.Read(pa, got))
	assert.Equal(t, "from a plain buffer", string(got))
}

// TestHostLazyFree: Free releases a lazy buffer — its address is refused
// after, its fill never called again — and a plain buffer in its place is
// zeroed and stored.
func TestHostLazyFree(t *testing.T) {
	h := NewHostMemory()
	f := &patternFill{seed: 3}
	pa, err := h.AllocLazy(4096, 4096, f.fill)
	require.NoError(t, err)
	require.NoError(t, h.Read(pa, make([]byte, 8)))
	require.NoError(t, h.Free(pa))
	calls := f.calls
	assert.ErrorIs(t, h.Read(pa, make([]byte, 8)), ErrHostRange)
	assert.ErrorIs(t, h.Check(pa, 8), ErrHostRange)
	assert.ErrorIs(t, h.Write(pa, []byte{1}), ErrHostRange)
	assert.ErrorIs(t, h.Free(pa), ErrHostBadFree)
	again, err := h.Alloc(4096, 4096)
	require.NoError(t, err)
	require.Equal(t, pa, again, "the freed space is reused")
	got := make([]byte, 4096)
	require.NoError(t, h.Read(again, got))
	assert.Equal(t, make([]byte, 4096), got)
	require.NoError(t, h.Write(again, []byte{9}))
	require.NoError(t, h.Read(again, got[:1]))
	assert.Equal(t, byte(9), got[0])
	assert.Equal(t, calls, f.calls, "a freed lazy buffer's fill is forgotten")
	require.NoError(t, validateHostState(h.State()))
}

// TestHostLazyBufferLimit: lazy buffers count towards MaxHostBuffers as
// plain ones do.
func TestHostLazyBufferLimit(t *testing.T) {
	s := HostState{Next: HostMemoryBase + (MaxHostBuffers-1)*HostGranule}
	for i := range uint64(MaxHostBuffers - 1) {
		s.Blocks = append(s.Blocks, HostExtent{HostMemoryBase + i*HostGranule, HostGranule})
	}
	h := NewHostMemory()
	require.NoError(t, h.Restore(s))
	f := &patternFill{}
	last, err := h.AllocLazy(64, 64, f.fill)
	require.NoError(t, err, "the last buffer the limit allows")
	for _, alloc := range []func() error{
		func() error { _, err := h.AllocLazy(64, 64, f.fill); return err },
		func() error { _, err := h.Alloc(64, 64); return err },
	} {
		err := alloc()
		require.ErrorIs(t, err, ErrHostNoMemory)
		assert.Contains(t, err.Error(), "live buffers, the limit")
	}
	require.NoError(t, h.Free(last))
	_, err = h.Alloc(64, 64)
	require.NoError(t, err, "freeing the lazy buffer makes room")
}

// TestHostLazyState: State keeps a lazy buffer live without bytes; the
// state validates and restores, into the same or another host memory, as a
// plain buffer of zeros (its fill is gone) that can be written.
func TestHostLazyState(t *testing.T) {
	h := NewHostMemory()
	plain, err := h.Alloc(128, 64)
	require.NoError(t, err)
	require.NoError(t, h.Write(plain, []byte("kept")))
	f := &patternFill{seed: 5}
	lazy, err := h.AllocLazy(2*PageSize, PageSize, f.fill)
	require.NoError(t, err)
	require.NoError(t, h.Read(lazy, make([]byte, 64)))
	s := h.State()
	require.NoError(t, validateHostState(s))
	assert.Equal(t, []HostExtent{{plain, 128}, {lazy, 2 * PageSize}}, s.Blocks)
	for pn := range s.Memory.Pages {
		assert.False(t, pn*PageSize+PageSize > lazy && pn*PageSize < lazy+2*PageSize, "page %#x of the lazy buffer stored", pn)
	}
	for _, tc := range []struct {
		name string
		into *HostMemory
	}{{"same", h}, {"fresh", NewHostMemory()}} {
		t.Run(tc.name, func(t *testing.T) {
			into := tc.into
			require.NoError(t, into.Restore(s))
			calls := f.calls
			got := make([]byte, 2*PageSize)
			require.NoError(t, into.Read(lazy, got))
			assert.Equal(t, make([]byte, 2*PageSize), got, "restored, the lazy buffer reads as zeros")
			assert.Equal(t, calls, f.calls, "restored, the fill is gone")
			require.NoError(t, into.Write(lazy, []byte{1}), "restored, it is a plain buffer")
			require.NoError(t, into.Read(plain, got[:4]))
			assert.Equal(t, "kept", string(got[:4]))
			require.NoError(t, into.Free(lazy))
			require.NoError(t, validateHostState(into.State()))
		})
	}
}

// TestHostAllocLazyDevice: a device allocates lazy buffers from its
// host-memory model and reads them through its host window; a device whose
// host port is another has no allocator.
func TestHostAllocLazyDevice(t *testing.T) {
	h := readyDev(t, hwarch.Cayman, hwarch.RevisionQEMU)
	f := &patternFill{seed: 9}
	pa, err := h.d.HostAllocLazy(4096, 4096, f.fill)
	require.NoError(t, err)
	got := make([]byte, 16)
	require.NoError(t, (*deviceBus)(h.d).ReadDMA(h.geo.HostAddress(pa+32), got))
	require.NoError(t, h.d.HostRead(pa+48, got[:1]))
	assert.Equal(t, patternByte(9, 48), got[0])
	assert.ErrorIs(t, h.d.HostWrite(pa, got), ErrHostLazy)
	assert.ErrorIs(t, (*deviceBus)(h.d).WriteDMA(h.geo.HostAddress(pa), got), ErrHostLazy)
	require.NoError(t, h.d.HostFree(pa))

	port := &flatPort{base: 0x4000_0000, mem: make([]byte, 0x1000)}
	d, err := NewWiredDevice(DeviceConfig{Generation: hwarch.Cayman, Ready: true}, Wiring{Host: port})
	require.NoError(t, err)
	_, err = d.HostAllocLazy(64, 64, f.fill)
	assert.ErrorIs(t, err, ErrNoHostModel)
}

// lazyRingRun is one run of TestHostLazyRings: what the device's DMA did.
type lazyRingRun struct {
	engines dma.State // the DMA engines' state
	now     Time      // the device's clock at the end
	moved   []byte    // the destination's bytes
	done    uint64    // descriptor pairs completed
	stat    uint32    // the queue's status
	calls   int       // ring fill calls
}

// runLazyRings copies n bytes from a host buffer to HBM in pairs
// descriptor pairs through the host-to-device queue, whose rings are plain
// host buffers written up front or, when lazy, lazy buffers whose fill
// produces the same bytes — until failAt, the M2S ring offset from which
// its fill fails (0: never).
func runLazyRings(t *testing.T, g hwarch.Generation, lazy bool, n, pairs int, failAt uint64) lazyRingRun {
	h := readyDev(t, g, hwarch.RevisionQEMU)
	d := h.d
	const ring = udma.MinRing
	src, err := d.HostAlloc(uint64(n), udma.RingAlign)
	require.NoError(t, err)
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i%253 + 1)
	}
	require.NoError(t, d.HostWrite(src, data))
	dst := h.geo.HBM[0].Base + 0x10000
	m2sImg, s2mImg := make([]byte, ring*udma.DescriptorSize), make([]byte, ring*udma.DescriptorSize)
	chunk := n / pairs
	for i := range pairs {
		lc, err := udma.LenCtrl(chunk, udma.FirstRingID, udma.FlagFirst|udma.FlagLast)
		require.NoError(t, err)
		udma.Descriptor{LenCtrl: lc, Meta: udma.DefaultMetaCtrl, Addr: h.geo.HostAddress(src + uint64(i*chunk))}.Put(m2sImg[i*udma.DescriptorSize:])
		lc, err = udma.LenCtrl(chunk, udma.FirstRingID, 0)
		require.NoError(t, err)
		udma.Descriptor{LenCtrl: lc, Addr: dst + uint64(i*chunk)}.Put(s2mImg[i*udma.DescriptorSize:])
	}
	var run lazyRingRun
	rings := make([]uint64, 2)
	for i, img := range [][]byte{m2sImg, s2mImg} {
		if !lazy {
			rings[i], err = d.HostAlloc(uint64(len(img)), udma.RingAlign)
			require.NoError(t, err)
			require.NoError(t, d.HostWrite(rings[i], img))
			continue
		}
		fail := uint64(0)
		if i == 0 {
			fail = failAt
		}
		rings[i], err = d.HostAllocLazy(uint64(len(img)), udma.RingAlign, func(off uint64, p []byte) error {
			run.calls++
			if fail != 0 && off+uint64(len(p)) > fail {
				return errors.New("descriptors let go")
			}
			copy(p, img[off:])
			return nil
		})
		require.NoError(t, err)
	}
	eng, q := startHostQueue(t, h, rings[0], rings[1], ring, uint32(pairs))
	h.sleep(time.Millisecond)
	qs, err := d.DMAQueue(eng, q)
	require.NoError(t, err)
	run.moved = make([]byte, n)
	require.NoError(t, (*deviceBus)(d).ReadDMA(dst, run.moved))
	run.done, run.stat, run.now = qs.Done, qs.Status, d.Now()
	d.mu.Lock()
	run.engines = d.dma.State()
	d.mu.Unlock()
	return run
}

// TestHostLazyRings: a DMA queue whose rings are lazy buffers moves the
// data, at the same times, as one whose rings were written up front; a ring
// fill that fails halts the queue with a ring-address error after the
// pairs it could read.
func TestHostLazyRings(t *testing.T) {
	const n, pairs = 16 << 10, 8
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		t.Run(g.String(), func(t *testing.T) {
			want := runLazyRings(t, g, false, n, pairs, 0)
			require.Equal(t, uint64(pairs), want.done)
			got := runLazyRings(t, g, true, n, pairs, 0)
			assert.Equal(t, want.engines, got.engines, "DMA engine state")
			assert.Equal(t, want.now, got.now)
			assert.Equal(t, want.moved, got.moved)
			assert.Positive(t, got.calls, "the engine read the rings through fill")
			assert.Zero(t, got.stat)

			const readable = 3
			failed := runLazyRings(t, g, true, n, pairs, readable*udma.DescriptorSize)
			assert.Equal(t, uint64(readable), failed.done, "the pairs before the fill failed completed")
			assert.NotZero(t, failed.stat&udma.ErrRingAddr, "status %#x has the ring-address error", failed.stat)
			assert.NotZero(t, failed.stat&udma.StatusHalted, "status %#x: halted", failed.stat)
			assert.Equal(t, want.moved[:readable*n/pairs], failed.moved[:readable*n/pairs])
			assert.Equal(t, make([]byte, n-readable*n/pairs), failed.moved[readable*n/pairs:], "nothing moved past the failed fill")
		})
	}
}

// FuzzHostLazySequence runs random sequences of allocations (plain and
// lazy), reads, writes, frees and state round trips: nothing panics, a lazy
// buffer always reads as its fill's bytes and refuses writes, a plain one
// reads back what was written, and the state stays valid.
func FuzzHostLazySequence(f *testing.F) {
	f.Add(uint64(1), []byte{0, 1, 2, 3, 4, 5})
	f.Add(uint64(7), []byte{1, 1, 1, 2, 2, 3, 3, 4, 5, 0, 2})
	f.Add(uint64(42), []byte{1, 5, 2, 4, 3, 1, 2, 6, 2})
	f.Fuzz(func(t *testing.T, seed uint64, ops []byte) {
		h := NewHostMemory()
		rng := rand.New(rand.NewPCG(seed, 2))
		type buf struct {
			size uint64
			seed byte   // lazy: fill's seed
			lazy bool   // else its bytes are data
			data []byte // a plain buffer's bytes
		}
		live := map[uint64]*buf{}
		var bases []uint64 // live's keys, in allocation order
		pick := func() (uint64, *buf, bool) {
			if len(bases) == 0 {
				return 0, nil, false
			}
			pa := bases[rng.IntN(len(bases))]
			return pa, live[pa], true
		}
		for _, op := range ops[:min(len(ops), 64)] {
			switch op % 7 {
			case 0, 1: // alloc, plain or lazy
				size, align := 1+rng.Uint64N(3*PageSize), uint64(1)<<rng.IntN(13)
				b := &buf{size: (size + HostGranule - 1) &^ (HostGranule - 1), seed: byte(rng.Uint32()), lazy: op%7 == 1}
				var pa uint64
				var err error
				if b.lazy {
					pf := &patternFill{seed: b.seed}
					pa, err = h.AllocLazy(size, align, pf.fill)
				} else {
					pa, err = h.Alloc(size, align)
					b.data = make([]byte, b.size)
				}
				if err != nil {
					t.Fatalf("alloc %d aligned %d: %v", size, align, err)
				}
				live[pa], bases = b, append(bases, pa)
			case 2: // read
				if pa, b, ok := pick(); ok {
					off := rng.Uint64N(b.size)
					got := make([]byte, rng.Uint64N(b.size-off+1))
					if err := h.Read(pa+off, got); err != nil {
						t.Fatalf("read [%#x+%d, +%d): %v", pa, off, len(got), err)
					}
					for i := range got {
						var want byte
						if b.lazy {
							want = patternByte(b.seed, off+uint64(i))
						} else {
							want = b.data[off+uint64(i)]
						}
						if got[i] != want {
							t.Fatalf("read [%#x+%d, +%d): byte %d is %#x, want %#x (lazy %v)", pa, off, len(got), i, got[i], want, b.lazy)
						}
					}
					if err := h.Read(pa+off, make([]byte, b.size-off+1)); !errors.Is(err, ErrHostRange) {
						t.Fatalf("read past the end of %#x: %v, want ErrHostRange", pa, err)
					}
				}
			case 3: // write
				if pa, b, ok := pick(); ok {
					off := rng.Uint64N(b.size)
					p := []byte{byte(rng.Uint32()), byte(rng.Uint32())}[:min(2, int(b.size-off))]
					err := h.Write(pa+off, p)
					switch {
					case b.lazy && !errors.Is(err, ErrHostLazy):
						t.Fatalf("write into lazy buffer %#x: %v, want ErrHostLazy", pa, err)
					case !b.lazy && err != nil:
						t.Fatalf("write into %#x: %v", pa, err)
					case !b.lazy:
						copy(b.data[off:], p)
					}
				}
			case 4: // free
				if pa, _, ok := pick(); ok {
					if err := h.Free(pa); err != nil {
						t.Fatalf("free %#x: %v", pa, err)
					}
					delete(live, pa)
					bases = slices.DeleteFunc(bases, func(b uint64) bool { return b == pa })
					if err := h.Check(pa, 1); err == nil {
						t.Fatalf("freed %#x still checks", pa)
					}
				}
			case 5: // state round trip: lazy buffers become plain zeros
				s := h.State()
				if err := validateHostState(s); err != nil {
					t.Fatal(err)
				}
				if err := h.Restore(s); err != nil {
					t.Fatalf("restore of its own state: %v", err)
				}
				for _, b := range live {
					if b.lazy {
						b.lazy, b.data = false, make([]byte, b.size)
					}
				}
			case 6: // a zero-length read and write anywhere
				pa := HostMemoryBase + rng.Uint64N(1<<20)
				_ = h.Read(pa, nil)
				_ = h.Write(pa, nil)
			}
		}
		if h.Live() != len(live) {
			t.Fatalf("%d live buffers, want %d", h.Live(), len(live))
		}
		if err := validateHostState(h.State()); err != nil {
			t.Fatal(err)
		}
	})
}
