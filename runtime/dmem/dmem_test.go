package dmem

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

const (
	KiB = hwarch.KiB
	MiB = hwarch.MiB
	GiB = hwarch.GiB
)

func TestNewDefaults(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			geo := hwarch.MustGeometry(g)
			a := newAlloc(t, g, Options{})
			require.Equal(t, len(geo.HBM), a.Channels())
			assert.Equal(t, uint64(4096), a.PageSize())
			for i, h := range geo.HBM {
				start, end := a.ChannelRange(i)
				assert.Equal(t, h.Base+16*MiB, start, "channel %d", i)
				assert.Equal(t, h.Base+h.ActiveSize, end, "channel %d", i)
				s, e := a.SmallPoolRange(i)
				assert.Equal(t, end-GiB, s, "the small pool is the last 1 GiB")
				assert.Equal(t, end, e)
			}
			for i, s := range a.Stats() {
				assert.Equal(t, ChannelStats{Total: geo.HBM[i].ActiveSize - 16*MiB, Free: geo.HBM[i].ActiveSize - 16*MiB,
					LargestFree: geo.HBM[i].ActiveSize - 16*MiB - GiB}, s)
			}
			s, e := a.ChannelRange(len(geo.HBM))
			assert.Zero(t, s+e, "out of range channel")
			s, e = a.SmallPoolRange(-1)
			assert.Zero(t, s+e)
			requireValid(t, a)
		})
	}
}

func TestSmallPoolCutOnSmallChannels(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := newAlloc(t, g, qemuChannels(g, GiB))
			start, end := a.ChannelRange(0)
			s, e := a.SmallPoolRange(0)
			assert.Equal(t, end, e)
			assert.Equal(t, (end-start)/2, e-s, "1 GiB channel: small pool is half of the 1008 MiB usable")
			a = newAlloc(t, g, qemuChannels(g, 16*MiB+4*KiB))
			s, e = a.SmallPoolRange(0)
			assert.Zero(t, e-s, "one usable page leaves no small pool")
			h, err := a.Alloc(Request{Size: 1, Channel: 0, NC: Any})
			require.NoError(t, err)
			b, err := a.Info(h)
			require.NoError(t, err)
			assert.False(t, b.Small, "falls back to the main pool")
			requireValid(t, a)
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	geo := hwarch.MustGeometry(hwarch.Cayman)
	four := func(n uint64) []uint64 { return []uint64{n, n, n, n} }
	tests := []struct {
		name  string
		opts  Options
		field string
	}{
		{"page not power of two", Options{PageSize: 3000}, "PageSize"},
		{"page below 1024", Options{PageSize: 512}, "PageSize"},
		{"carve-out unaligned", Options{CarveOut: MiB + 1}, "CarveOut"},
		{"carve-out fills channel", Options{CarveOut: 64 * MiB, ChannelBytes: four(64 * MiB)}, "CarveOut"},
		{"carve-out beyond channel", Options{CarveOut: 32 * GiB}, "CarveOut"},
		{"channel count", Options{ChannelBytes: []uint64{GiB, GiB}}, "ChannelBytes"},
		{"channel unaligned", Options{ChannelBytes: four(GiB + 1)}, "ChannelBytes"},
		{"channel beyond window", Options{ChannelBytes: four(128 * GiB)}, "ChannelBytes"},
		{"small pool unaligned", Options{SmallPoolBytes: MiB + 100}, "SmallPoolBytes"},
		{"small max unaligned", Options{SmallMax: 100}, "SmallMax"},
		{"small max above pool", Options{SmallPoolBytes: MiB, SmallMax: 2 * MiB}, "SmallMax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(geo, tt.opts)
			require.ErrorIs(t, err, ErrBadOptions)
			assert.Contains(t, err.Error(), "Options."+tt.field)
		})
	}
	t.Run("nil geometry", func(t *testing.T) {
		_, err := New(nil, Options{})
		require.ErrorIs(t, err, ErrBadOptions)
	})
	t.Run("caller's slice is copied", func(t *testing.T) {
		cb := four(GiB)
		a, err := New(geo, Options{ChannelBytes: cb})
		require.NoError(t, err)
		cb[0] = 0
		_, end := a.ChannelRange(0)
		assert.Equal(t, GiB, end)
	})
}

func TestCarveOut(t *testing.T) {
	for _, g := range hwarch.Generations() {
		geo := hwarch.MustGeometry(g)
		for c, h := range geo.HBM {
			t.Run(fmt.Sprintf("%s/ch%d", g, c), func(t *testing.T) {
				a := newAlloc(t, g, Options{})
				hd, err := a.Alloc(Request{Size: 2 * MiB, Channel: c, NC: Any})
				require.NoError(t, err)
				b, err := a.Info(hd)
				require.NoError(t, err)
				assert.Equal(t, h.Base+16*MiB, b.Addr, "first main-pool block sits right after the carve-out")
				assert.Equal(t, c, b.Channel)
				assert.Equal(t, Handle(1), hd, "handles start at 1")
				_, _, ok := a.Translate(h.Base, 1)
				assert.False(t, ok, "the carve-out is never handed out")
			})
		}
	}
	t.Run("cayman channel 2 carries bit 47", func(t *testing.T) {
		a := newAlloc(t, hwarch.Cayman, Options{})
		h, err := a.Alloc(Request{Size: 4 * MiB, Channel: 2, NC: Any})
		require.NoError(t, err)
		b, _ := a.Info(h)
		assert.Equal(t, uint64(0x8000_0000_0000+16*MiB), b.Addr)
	})
}

func TestRounding(t *testing.T) {
	tests := []struct {
		page, size, want uint64
	}{
		{0, 1, 4 * KiB}, {0, 4096, 4 * KiB}, {0, 4097, 8 * KiB}, {0, MiB + 1, MiB + 4*KiB},
		{1024, 1, 1024}, {1024, 1025, 2048}, {64 * KiB, 5, 64 * KiB},
	}
	for _, g := range hwarch.Generations() {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/page%#x/size%#x", g, tt.page, tt.size), func(t *testing.T) {
				a := newAlloc(t, g, Options{PageSize: tt.page})
				h, err := a.Alloc(Request{Size: tt.size, NC: Any, Name: "r"})
				require.NoError(t, err)
				b, err := a.Info(h)
				require.NoError(t, err)
				assert.Equal(t, tt.want, b.Size)
				assert.Equal(t, tt.size, b.Requested)
				assert.Equal(t, "r", b.Name)
				assert.Zero(t, b.Addr%a.PageSize())
				assert.Equal(t, tt.want, a.Stats()[0].Used)
			})
		}
	}
}

func TestSmallAndMainPools(t *testing.T) {
	tests := []struct {
		size  uint64
		small bool
	}{{1, true}, {4 * KiB, true}, {512 * KiB, true}, {512*KiB - 1, true}, {512*KiB + 1, false}, {MiB, false}, {GiB, false}}
	for _, g := range hwarch.Generations() {
		for _, tt := range tests {
			t.Run(g.String()+"/"+sizeString(tt.size), func(t *testing.T) {
				a := newAlloc(t, g, Options{})
				h, err := a.Alloc(Request{Size: tt.size, Channel: 1, NC: Any})
				require.NoError(t, err)
				b, _ := a.Info(h)
				assert.Equal(t, tt.small, b.Small)
				s, e := a.SmallPoolRange(1)
				start, _ := a.ChannelRange(1)
				if tt.small {
					assert.Equal(t, s, b.Addr, "first small block is at the start of the small pool")
					assert.LessOrEqual(t, b.End(), e)
					assert.Equal(t, b.Size, a.Stats()[1].SmallUsed)
				} else {
					assert.Equal(t, start, b.Addr)
					assert.Zero(t, a.Stats()[1].SmallUsed)
				}
			})
		}
	}
}

func TestSmallPoolExhaustionFallsBack(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			// 64 MiB channels: 48 MiB usable, 24 MiB small pool = 48 × 512 KiB.
			a := newAlloc(t, g, qemuChannels(g, 64*MiB))
			s, e := a.SmallPoolRange(0)
			require.Equal(t, 24*MiB, e-s)
			for i := range 48 {
				h, err := a.Alloc(Request{Size: 512 * KiB, Channel: 0, NC: Any})
				require.NoError(t, err)
				b, _ := a.Info(h)
				require.True(t, b.Small, "block %d", i)
			}
			h, err := a.Alloc(Request{Size: 512 * KiB, Channel: 0, NC: Any})
			require.NoError(t, err)
			b, _ := a.Info(h)
			assert.False(t, b.Small, "small pool full: main pool is the fallback")
			start, _ := a.ChannelRange(0)
			assert.Equal(t, start, b.Addr)
			st := a.Stats()[0]
			assert.Equal(t, 24*MiB, st.SmallUsed)
			assert.Equal(t, 24*MiB+512*KiB, st.Used)
			requireValid(t, a)
		})
	}
}

func TestAlignment(t *testing.T) {
	for _, g := range hwarch.Generations() {
		geo := hwarch.MustGeometry(g)
		for c := range geo.HBM {
			t.Run(fmt.Sprintf("%s/ch%d", g, c), func(t *testing.T) {
				a := newAlloc(t, g, Options{})
				base := geo.HBM[c].Base
				req := func(size, align uint64) Block {
					h, err := a.Alloc(Request{Size: size, Align: align, Channel: c, NC: Any})
					require.NoError(t, err)
					b, _ := a.Info(h)
					if align != 0 {
						require.Zero(t, b.Addr%align, "%#x aligned to %#x", b.Addr, align)
					}
					return b
				}
				assert.Equal(t, base+16*MiB, req(8*MiB+4*KiB, 0).Addr)
				assert.Equal(t, base+64*MiB, req(2*MiB, 64*MiB).Addr, "next 64 MiB boundary")
				assert.Equal(t, base+25*MiB, req(MiB, MiB).Addr, "first 1 MiB boundary in the gap")
				assert.Equal(t, base+24*MiB+4*KiB, req(MiB-4*KiB, 0).Addr, "the gap below an aligned block is reused")
				assert.Equal(t, base+26*MiB, req(4*MiB, 0).Addr)
				small := req(4*KiB, 256*KiB)
				smallStart, _ := a.SmallPoolRange(c)
				assert.True(t, small.Small, "alignment does not stop the small pool")
				assert.Equal(t, smallStart, small.Addr)
				assert.Equal(t, smallStart+4*KiB, req(16*KiB, 16).Addr, "an alignment below the page is the page")
				assert.Equal(t, smallStart+512*KiB, req(4*KiB, 512*KiB).Addr)
				requireValid(t, a)
			})
		}
	}
}

func TestExhaustion(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := newAlloc(t, g, qemuChannels(g, 64*MiB))
			_, err := a.Alloc(Request{Size: 64 * MiB, Channel: 0, NC: Any, Name: "weights"})
			require.ErrorIs(t, err, ErrNoMemory)
			msg := err.Error()
			for _, want := range []string{"dmem:", `"weights"`, "64 MiB", "aligned 4 KiB", "channel 0", "largest free block 24 MiB"} {
				assert.Contains(t, msg, want)
			}
			_, err = a.Alloc(Request{Size: 25 * MiB, Channel: Any, NC: Any})
			require.ErrorIs(t, err, ErrNoMemory)
			assert.Contains(t, err.Error(), "channels 0,1")
			_, err = a.Alloc(Request{Size: 24 * MiB, Align: 32 * MiB, Channel: 0, NC: Any})
			require.ErrorIs(t, err, ErrNoMemory, "24 MiB fits only at base+16 MiB, which is not 32 MiB aligned")
			h, err := a.Alloc(Request{Size: 24 * MiB, Channel: 0, NC: Any})
			require.NoError(t, err, "the whole main pool")
			_, err = a.Alloc(Request{Size: MiB, Channel: 0, NC: Any})
			require.ErrorIs(t, err, ErrNoMemory)
			assert.Contains(t, err.Error(), "no free block")
			_, err = a.Alloc(Request{Size: math.MaxUint64, Channel: 0, NC: Any})
			require.ErrorIs(t, err, ErrNoMemory)
			require.NoError(t, a.Free(h))
			requireValid(t, a)
		})
	}
	t.Run("alignment reported", func(t *testing.T) {
		a := newAlloc(t, hwarch.Sunda, qemuChannels(hwarch.Sunda, 64*MiB))
		_, err := a.Alloc(Request{Size: 20 * MiB, Align: 32 * MiB, Channel: 0, NC: Any})
		require.ErrorIs(t, err, ErrNoMemory)
		assert.Contains(t, err.Error(), "aligned 32 MiB on channel 0: largest free block 24 MiB on channel 0 (8 MiB at this alignment)")
	})
}

func TestFreeCoalesces(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := newAlloc(t, g, qemuChannels(g, 64*MiB))
			var hs []Handle
			for {
				h, err := a.Alloc(Request{Size: MiB, Channel: 0, NC: Any})
				if err != nil {
					require.ErrorIs(t, err, ErrNoMemory)
					break
				}
				hs = append(hs, h)
			}
			require.Len(t, hs, 24)
			assert.Zero(t, a.Stats()[0].LargestFree-24*MiB, "only the small pool is left")
			for _, start := range []int{1, 0} { // odd blocks first: no merges, then every one merges
				for i := start; i < len(hs); i += 2 {
					require.NoError(t, a.Free(hs[i]))
					requireValid(t, a)
				}
			}
			assert.Len(t, a.ch[0].main.spans(), 1, "one range after coalescing")
			h, err := a.Alloc(Request{Size: 24 * MiB, Channel: 0, NC: Any})
			require.NoError(t, err, "maximal allocation succeeds again")
			b, _ := a.Info(h)
			start, _ := a.ChannelRange(0)
			assert.Equal(t, start, b.Addr)
		})
	}
}

func TestDoubleFreeAndForeignHandles(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := newAlloc(t, g, Options{})
			h1, err := a.Alloc(Request{Size: MiB, NC: Any, Name: "one"})
			require.NoError(t, err)
			h2, err := a.Alloc(Request{Size: 8 * KiB, NC: Any, Name: "two"})
			require.NoError(t, err)
			require.NoError(t, a.Free(h1))
			stats, blocks := a.Stats(), a.Blocks()

			err = a.Free(h1)
			require.ErrorIs(t, err, ErrDoubleFree)
			assert.Contains(t, err.Error(), `handle 1 (was "one"`)
			for _, h := range []Handle{NoHandle, 3, 1000, math.MaxUint32} {
				require.ErrorIs(t, a.Free(h), ErrForeignHandle, "handle %d", h)
				_, err := a.Info(h)
				require.ErrorIs(t, err, ErrForeignHandle)
			}
			_, err = a.Info(h1)
			require.ErrorIs(t, err, ErrStaleHandle)
			assert.Equal(t, stats, a.Stats(), "rejected calls change nothing")
			assert.Equal(t, blocks, a.Blocks())
			requireValid(t, a)

			// The freed number is reissued; the stale holder's h1 now names the new block.
			h3, err := a.Alloc(Request{Size: 2 * MiB, NC: Any, Name: "three"})
			require.NoError(t, err)
			assert.Equal(t, h1, h3)
			b, err := a.Info(h1)
			require.NoError(t, err)
			assert.Equal(t, "three", b.Name)
			require.NoError(t, a.Free(h2))
			require.NoError(t, a.Free(h3))
			assert.Zero(t, a.Stats()[0].Used)
		})
	}
}

func TestHandleNumbersAreLIFO(t *testing.T) {
	a := newAlloc(t, hwarch.Sunda, Options{})
	var hs []Handle
	for range 4 {
		h, err := a.Alloc(Request{Size: 4 * KiB, NC: Any})
		require.NoError(t, err)
		hs = append(hs, h)
	}
	assert.Equal(t, []Handle{1, 2, 3, 4}, hs)
	require.NoError(t, a.Free(2))
	require.NoError(t, a.Free(4))
	var next []Handle
	for range 3 {
		h, err := a.Alloc(Request{Size: 4 * KiB, NC: Any})
		require.NoError(t, err)
		next = append(next, h)
	}
	assert.Equal(t, []Handle{4, 2, 5}, next, "last freed first, then new numbers")
}

func TestChannelSelection(t *testing.T) {
	tests := []struct {
		gen     hwarch.Generation
		nc, ch  int
		channel int
	}{
		{hwarch.Sunda, 0, Any, 0}, {hwarch.Sunda, 1, Any, 1}, {hwarch.Sunda, Any, Any, 0},
		{hwarch.Cayman, 5, Any, 2}, {hwarch.Cayman, 1, Any, 0}, {hwarch.Cayman, 7, Any, 3},
		{hwarch.Mariana, 4, Any, 2}, {hwarch.Mariana, 3, Any, 1},
		{hwarch.Cayman, 5, 0, 0}, {hwarch.Sunda, Any, 1, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/nc%d/ch%d", tt.gen, tt.nc, tt.ch), func(t *testing.T) {
			a := newAlloc(t, tt.gen, Options{})
			h, err := a.Alloc(Request{Size: MiB, NC: tt.nc, Channel: tt.ch})
			require.NoError(t, err)
			b, _ := a.Info(h)
			assert.Equal(t, tt.channel, b.Channel, "NC %d channel %d", tt.nc, tt.ch)
		})
	}
	for _, g := range hwarch.Generations() {
		t.Run(g.String()+"/every NC", func(t *testing.T) {
			geo := hwarch.MustGeometry(g)
			a := newAlloc(t, g, Options{})
			for nc := range geo.NeuronCores {
				h, err := a.Alloc(Request{Size: MiB, NC: nc, Channel: Any})
				require.NoError(t, err)
				b, _ := a.Info(h)
				assert.Equal(t, nc/geo.TPBPerHBM, b.Channel)
			}
		})
	}
	t.Run("wraps to the next channel when full", func(t *testing.T) {
		a := newAlloc(t, hwarch.Cayman, qemuChannels(hwarch.Cayman, 64*MiB))
		var chans []int
		for range 3 {
			h, err := a.Alloc(Request{Size: 24 * MiB, NC: 7, Channel: Any})
			require.NoError(t, err)
			b, _ := a.Info(h)
			chans = append(chans, b.Channel)
		}
		assert.Equal(t, []int{3, 0, 1}, chans)
	})
}

func TestBadRequests(t *testing.T) {
	for _, g := range hwarch.Generations() {
		geo := hwarch.MustGeometry(g)
		tests := []struct {
			name string
			req  Request
			want string
		}{
			{"size 0", Request{NC: Any}, "size 0"},
			{"alignment 3", Request{Size: 1, Align: 3, NC: Any}, "alignment 0x3"},
			{"alignment 48 KiB", Request{Size: 1, Align: 48 * KiB, NC: Any}, "not a power of two"},
			{"channel -2", Request{Size: 1, Channel: -2, NC: Any}, "channel -2"},
			{"channel past end", Request{Size: 1, Channel: len(geo.HBM), NC: Any}, "out of range"},
			{"NC -2", Request{Size: 1, Channel: Any, NC: -2}, "NeuronCore -2"},
			{"NC past end", Request{Size: 1, Channel: Any, NC: geo.NeuronCores}, "NeuronCore"},
			{"NC past end, channel forced", Request{Size: 1, Channel: 0, NC: geo.NeuronCores}, "NeuronCore"},
		}
		for _, tt := range tests {
			t.Run(g.String()+"/"+tt.name, func(t *testing.T) {
				a := newAlloc(t, g, Options{})
				h, err := a.Alloc(tt.req)
				require.ErrorIs(t, err, ErrBadRequest)
				assert.Equal(t, NoHandle, h)
				assert.Contains(t, err.Error(), tt.want)
				assert.Empty(t, a.Blocks())
			})
		}
	}
}

func TestTranslate(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := newAlloc(t, g, Options{})
			h1, err := a.Alloc(Request{Size: 5000, Channel: 2 % a.Channels(), NC: Any, Name: "a"})
			require.NoError(t, err)
			h2, err := a.Alloc(Request{Size: 4096, Channel: 2 % a.Channels(), NC: Any, Name: "b"})
			require.NoError(t, err)
			b1, _ := a.Info(h1)
			b2, _ := a.Info(h2)
			require.Equal(t, b1.End(), b2.Addr, "adjacent")
			tests := []struct {
				addr, size uint64
				ok         bool
				h          Handle
				off        uint64
			}{
				{b1.Addr, 1, true, h1, 0},
				{b1.Addr, 0, true, h1, 0},
				{b1.Addr + 100, 8092, true, h1, 100},
				{b1.Addr + 8191, 1, true, h1, 8191},
				{b1.Addr + 8000, 500, false, 0, 0},
				{b1.Addr - 1, 1, false, 0, 0},
				{b2.Addr, 4096, true, h2, 0},
				{b2.Addr + 4095, 2, false, 0, 0},
				{b2.End(), 1, false, 0, 0},
				{0, 1, false, 0, 0},
				{b1.Addr + 1, math.MaxUint64, false, 0, 0},
				{math.MaxUint64, 1, false, 0, 0},
			}
			for _, tt := range tests {
				b, off, ok := a.Translate(tt.addr, tt.size)
				require.Equal(t, tt.ok, ok, "%#x+%#x", tt.addr, tt.size)
				assert.Equal(t, tt.h, b.Handle)
				assert.Equal(t, tt.off, off)
			}
			require.NoError(t, a.Free(h1))
			_, _, ok := a.Translate(b1.Addr, 1)
			assert.False(t, ok, "freed memory is not translatable")
		})
	}
}

func TestDeterminism(t *testing.T) {
	run := func(g hwarch.Generation) []Block {
		a := newAlloc(t, g, Options{})
		var hs []Handle
		for i := range 200 {
			h, err := a.Alloc(Request{Size: uint64(i*7919%3000+1) * KiB, Align: 1 << (12 + i%9), Channel: Any, NC: i % 2})
			require.NoError(t, err)
			hs = append(hs, h)
			if i%3 == 0 {
				require.NoError(t, a.Free(hs[i/2]))
				hs[i/2] = NoHandle
			}
		}
		return a.Blocks()
	}
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			first := run(g)
			assert.Equal(t, first, run(g))
			assert.NotEmpty(t, first)
		})
	}
}

func TestDump(t *testing.T) {
	a := newAlloc(t, hwarch.Sunda, qemuChannels(hwarch.Sunda, 64*MiB))
	_, err := a.Alloc(Request{Size: 100, Channel: 1, NC: Any, Name: "tiny"})
	require.NoError(t, err)
	_, err = a.Alloc(Request{Size: 2 * MiB, Channel: 0, NC: Any, Name: "big"})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, a.Dump(&buf))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 5)
	assert.Contains(t, lines[1], "0x0000000001000000")
	assert.Contains(t, lines[1], "big")
	assert.Contains(t, lines[2], "small tiny")
	assert.Contains(t, lines[3], "channel 0: 1 blocks, used 2 MiB of 48 MiB")
}
