package bar

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

var allModes = []hwarch.Mode{hwarch.ModeSilicon, hwarch.ModeEMU, hwarch.ModeQEMU}

func mustAtlas(t testing.TB, g hwarch.Generation) *Atlas {
	t.Helper()
	a, err := NewAtlas(hwarch.MustGeometry(g))
	require.NoError(t, err)
	require.Equal(t, g, a.Generation())
	return a
}

// special reports whether a kind is one of the small blocks that take
// precedence over the block around them.
func special(k Kind) bool {
	switch k {
	case NCSync, TopSPSync, Misc, QEMUReset, DMAEngine, EngineCtrl:
		return true
	}
	return false
}

// wantWindows is the atlas of a generation written out from the spec
// (driver-facts §2.2-§2.4 and the mariana atlas), independently of hw/arch.
func wantWindows(g hwarch.Generation) []Window {
	var ws []Window
	add := func(name string, k Kind, idx int, start, size uint64) {
		ws = append(ws, Window{Name: name, Kind: k, Index: idx, Start: start, Size: size})
	}
	// Engine control blocks at the host-visible sequencer bases of seed 001
	// (PE 0x2600000, ACT 0x2400000, POOL 0x3000000, DVE 0x2B00000, SP 0x2800000).
	addCtrl := func(nc int, base uint64) {
		for e, off := range []uint64{0x260_0000, 0x240_0000, 0x300_0000, 0x2B0_0000, 0x280_0000} {
			name := []string{"pe", "act", "pool", "dve", "sp"}[e]
			add(fmt.Sprintf("tpb%d_%s_ctrl", nc, name), EngineCtrl, nc*5+e, base+off, 0x1000)
		}
	}
	if g == hwarch.Sunda {
		for n := range 2 {
			base := uint64(n) * 0x400_0000
			add(fmt.Sprintf("tpb%d", n), SBUF, n, base, 32*hwarch.MiB)
			add(fmt.Sprintf("tpb%d_psum", n), PSUM, n, base+0x200_0000, 32*hwarch.MiB)
			add(fmt.Sprintf("tpb%d_sync", n), NCSync, n, base+0x270_0000, 0x2000)
			addCtrl(n, base)
		}
		for i := range 6 {
			base := 0x1000_0000 + uint64(i)*0x40_0000
			add(fmt.Sprintf("top_sp%d", i), TopSP, i, base, 4*hwarch.MiB)
			add(fmt.Sprintf("top_sp%d_sync", i), TopSPSync, i, base, 0x2000)
		}
		add("apb_se_0", APB, 0, 0x3000_0000, 0x70_0000)
		add("apb_se_1", APB, 1, 0x3070_0000, 0x70_0000)
		add("apb_io", APB, 0, 0x30E0_0000, 0x20_0000)
		add("misc_ram", Misc, 0, 0x30FA_0000, MiscRAMSize)
		add("qemu_reset", QEMUReset, 0, 0x3064_7010, 4)
		for e := range 16 { // driver-facts §2.2: SENG0 and SENG1 UDMA engines
			add(fmt.Sprintf("dma%d", e), DMAEngine, e, 0x3000_0000+uint64(e)*0x4_0000, 0x4_0000)
			add(fmt.Sprintf("dma%d", 16+e), DMAEngine, 16+e, 0x3070_0000+uint64(e)*0x4_0000, 0x4_0000)
		}
		add("dma32", DMAEngine, 32, 0x3060_0000, 0x4_0000) // D2H
		add("dma33", DMAEngine, 33, 0x30D0_0000, 0x4_0000) // H2D
		return ws
	}
	for n := range 8 {
		base := 0xD000_0000 + uint64(n)*0x400_0000
		add(fmt.Sprintf("tpb%d", n), SBUF, n, base, 32*hwarch.MiB)
		add(fmt.Sprintf("tpb%d_psum", n), PSUM, n, base+0x200_0000, 32*hwarch.MiB)
		add(fmt.Sprintf("tpb%d_sync", n), NCSync, n, base+0x270_0000, 0x2000)
		addCtrl(n, base)
	}
	for i := range 16 {
		base := 0xF000_0000 + uint64(i&7)<<22
		if i >= 8 {
			base = 0xF280_0000 + uint64(i-8)<<22
		}
		add(fmt.Sprintf("top_sp%d", i), TopSP, i, base, 4*hwarch.MiB)
		add(fmt.Sprintf("top_sp%d_sync", i), TopSPSync, i, base, 0x2000)
	}
	add("apb_io_0", APB, 0, 0, 0x2000_0000)
	add("apb_io_1", APB, 1, 0x4000_0000, 0x2000_0000)
	for s := range 4 {
		add(fmt.Sprintf("apb_se_%d", s), APB, s, 0x8000_0000+uint64(s)*0x1000_0000, 0xC80_0000)
	}
	for ch := range 4 {
		add(fmt.Sprintf("preproc%d", ch), APB, ch, 0xC000_0000+uint64(ch)*0x400_0000, 0x34C_0000)
	}
	add("misc_ram", Misc, 0, 0x6C8_4000, MiscRAMSize)
	add("qemu_reset", QEMUReset, 0, 0x630_0010, 4)
	// driver-facts §2.3: SENG s UDMA engine i at the SE's UDMA base + i·0x10_0000.
	for s, base := range []uint64{0x8200_0000, 0x9400_0000, 0xA200_0000, 0xB400_0000} {
		for i := range 32 {
			add(fmt.Sprintf("dma%d", 32*s+i), DMAEngine, 32*s+i, base+uint64(i)*0x10_0000, 0x4_0000)
		}
	}
	for i, base := range []uint64{0x680_0000, 0x690_0000, 0x4680_0000, 0x4690_0000} { // H2T engines
		add(fmt.Sprintf("dma%d", 128+i), DMAEngine, 128+i, base, 0x4_0000)
	}
	return ws
}

func TestAtlasWindowsMatchSpec(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := mustAtlas(t, g)
			got := map[string]Window{}
			for _, w := range a.Windows() {
				_, dup := got[w.Name]
				require.False(t, dup, "duplicate window name %s", w.Name)
				w.DeviceAddr = 0 // checked against the runtime's atlas in internal/systemtest
				got[w.Name] = w
			}
			want := wantWindows(g)
			require.Len(t, got, len(want))
			for _, w := range want {
				assert.Equal(t, w, got[w.Name], w.Name)
				// Every window decodes to itself at its start, in its middle
				// and at its last word, unless a special block sits there.
				for _, off := range []uint64{w.Start, w.Start + w.Size/2&^3, w.End() - 4} {
					lw, rel, ok := a.Lookup(off)
					require.True(t, ok, "%s at %#x", w.Name, off)
					if lw.Name != w.Name {
						require.True(t, special(lw.Kind) && !special(w.Kind), "%s at %#x decodes as %s", w.Name, off, lw.Name)
						continue
					}
					assert.Equal(t, off-w.Start, rel)
				}
			}
		})
	}
}

// TestAtlasWindowEdges looks every window up at its start, its last word and
// its end: the end belongs to something else (or nothing).
func TestAtlasWindowEdges(t *testing.T) {
	for _, g := range hwarch.Generations() {
		a := mustAtlas(t, g)
		for _, w := range a.Windows() {
			t.Run(g.String()+"/"+w.Name, func(t *testing.T) {
				lw, rel, ok := a.Lookup(w.Start)
				require.True(t, ok)
				switch {
				case w.Kind == TopSP: // its synchronisation block sits at its start
					assert.Equal(t, TopSPSync, lw.Kind)
					assert.Equal(t, w.Index, lw.Index)
				case w.Kind == APB && lw.Kind == DMAEngine: // V2: an SENG's first engine starts its block
					assert.Equal(t, w.Start, lw.Start)
				default:
					assert.Equal(t, w, *lw)
				}
				assert.Zero(t, rel)

				lw, rel, ok = a.Lookup(w.End() - 4)
				require.True(t, ok)
				assert.Equal(t, w, *lw)
				assert.Equal(t, w.Size-4, rel)

				lw, _, ok = a.Lookup(w.End())
				if ok {
					assert.NotEqual(t, w.Name, lw.Name, "end %#x still decodes as %s", w.End(), w.Name)
				}
			})
		}
	}
}

func TestAtlasNeighbours(t *testing.T) {
	type want struct {
		off  uint64
		name string // "" = unmapped
		rel  uint64
	}
	big := []want{
		{0xD000_0000, "tpb0", 0},
		{0xD1FF_FFFC, "tpb0", 0x1FF_FFFC},
		{0xD200_0000, "tpb0_psum", 0},
		{0xD26F_FFFC, "tpb0_psum", 0x6F_FFFC},
		{0xD270_0000, "tpb0_sync", 0}, // NC sync block takes precedence over PSUM
		{0xD270_0400, "tpb0_sync", 0x400},
		{0xD270_1FFC, "tpb0_sync", 0x1FFC},
		{0xD270_2000, "tpb0_psum", 0x70_2000},
		{0xD3FF_FFFC, "tpb0_psum", 0x1FF_FFFC},
		{0xD400_0000, "tpb1", 0},
		{0xEC00_0000 + 0x270_0000, "tpb7_sync", 0},
		{0xEFFF_FFFC, "tpb7_psum", 0x1FF_FFFC},
		{0xF000_0000, "top_sp0_sync", 0},
		{0xF000_1FFC, "top_sp0_sync", 0x1FFC},
		{0xF000_2000, "top_sp0", 0x2000},
		{0xF03F_FFFC, "top_sp0", 0x3F_FFFC},
		{0xF040_0000, "top_sp1_sync", 0},
		{0xF1C0_0000, "top_sp7_sync", 0},
		{0xF1FF_FFFC, "top_sp7", 0x3F_FFFC},
		{0xF200_0000, "", 0}, // between the halves
		{0xF27F_FFFC, "", 0},
		{0xF280_0000, "top_sp8_sync", 0},
		{0xF440_0000, "top_sp15_sync", 0},
		{0xF47F_FFFC, "top_sp15", 0x3F_FFFC},
		{0xF480_0000, "", 0},
		{0x0, "apb_io_0", 0},
		{0x630_000C, "apb_io_0", 0x630_000C},
		{0x630_0010, "qemu_reset", 0},
		{0x630_0014, "apb_io_0", 0x630_0014},
		{0x6C8_3FFC, "apb_io_0", 0x6C8_3FFC},
		{0x6C8_4000, "misc_ram", 0}, // MISC RAM takes precedence over apb_io_0
		{0x6C8_4024, "misc_ram", 0x24},
		{0x6C8_4808, "misc_ram", 0x808},
		{0x6C8_4FFC, "misc_ram", 0xFFC},
		{0x6C8_5000, "apb_io_0", 0x6C8_5000},
		{0x1FFF_FFFC, "apb_io_0", 0x1FFF_FFFC},
		{0x2000_0000, "", 0},
		{0x3FFF_FFFC, "", 0},
		{0x4000_0000, "apb_io_1", 0},
		{0x5FFF_FFFC, "apb_io_1", 0x1FFF_FFFC},
		{0x6000_0000, "", 0},
		{0x8000_0000, "apb_se_0", 0},
		{0x8200_0000, "dma0", 0},
		{0x8203_FFFC, "dma0", 0x3_FFFC},
		{0x8204_0000, "apb_se_0", 0x204_0000}, // the SDMA block after engine 0's UDMA registers
		{0x8210_0000, "dma1", 0},
		{0x9400_0000, "dma32", 0},
		{0xB5F0_0000, "dma127", 0},
		{0x680_0000, "dma128", 0},
		{0x4690_0000, "dma131", 0},
		{0x8C7F_FFFC, "apb_se_0", 0xC7F_FFFC},
		{0x8C80_0000, "", 0},
		{0x9000_0000, "apb_se_1", 0},
		{0xA000_0000, "apb_se_2", 0},
		{0xB000_0000, "apb_se_3", 0},
		{0xBC80_0000, "", 0},
		{0xC000_0000, "preproc0", 0},
		{0xC34B_FFFC, "preproc0", 0x34B_FFFC},
		{0xC34C_0000, "", 0},
		{0xC400_0000, "preproc1", 0},
		{0xC800_0000, "preproc2", 0},
		{0xCC00_0000, "preproc3", 0},
		{0xCF4C_0000, "", 0},
		{0xCFFF_FFFC, "", 0},
		{0xFFFF_FFFC, "", 0},
		{1 << 32, "", 0},
		{math.MaxUint64 &^ 3, "", 0},
	}
	v2 := []want{
		{0x0, "tpb0", 0},
		{0x270_0000, "tpb0_sync", 0},
		{0x270_1C00, "tpb0_sync", 0x1C00},
		{0x400_0000, "tpb1", 0},
		{0x670_0000, "tpb1_sync", 0},
		{0x7FF_FFFC, "tpb1_psum", 0x1FF_FFFC},
		{0x800_0000, "", 0},
		{0xABC_DEF0, "", 0},
		{0xFFF_FFFC, "", 0},
		{0x1000_0000, "top_sp0_sync", 0},
		{0x1000_2000, "top_sp0", 0x2000},
		{0x1140_0000, "top_sp5_sync", 0},
		{0x117F_FFFC, "top_sp5", 0x3F_FFFC},
		{0x1180_0000, "", 0},
		{0x2FFF_FFFC, "", 0},
		{0x3000_0000, "dma0", 0}, // the SENG0 UDMA engines take precedence over apb_se_0
		{0x3003_FFFC, "dma0", 0x3_FFFC},
		{0x3004_0000, "dma1", 0},
		{0x3040_0000, "apb_se_0", 0x40_0000},
		{0x3060_0000, "dma32", 0},
		{0x3064_700C, "apb_se_0", 0x64_700C},
		{0x3064_7010, "qemu_reset", 0}, // inside apb_se_0
		{0x3064_7014, "apb_se_0", 0x64_7014},
		{0x3070_0000, "dma16", 0},
		{0x30B0_0000, "apb_se_1", 0x40_0000},
		{0x30D0_0000, "dma33", 0},
		{0x30E0_0000, "apb_io", 0},
		{0x30F9_FFFC, "apb_io", 0x19_FFFC},
		{0x30FA_0000, "misc_ram", 0},
		{0x30FA_0024, "misc_ram", 0x24},
		{0x30FA_1000, "apb_io", 0x1A_1000},
		{0x30FF_FFFC, "apb_io", 0x1F_FFFC},
		{0x3100_0000, "", 0},
		{0x3FFF_FFFC, "", 0},
		{0xD000_0000, "", 0},
		{math.MaxUint64 &^ 3, "", 0},
	}
	for _, g := range hwarch.Generations() {
		a := mustAtlas(t, g)
		tests := big
		if g == hwarch.Sunda {
			tests = v2
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%#x", g, tt.off), func(t *testing.T) {
				w, rel, ok := a.Lookup(tt.off)
				if tt.name == "" {
					assert.False(t, ok, "decodes as %v", w)
					assert.Nil(t, w)
					assert.Zero(t, rel)
					return
				}
				require.True(t, ok)
				assert.Equal(t, tt.name, w.Name)
				assert.Equal(t, tt.rel, rel)
			})
		}
	}
}

// TestAtlasUnmappedV2Range walks the hole between NC 1's PSUM window and the
// first TOP_SP on V2 word by word at a 4 KiB stride, plus its edges.
func TestAtlasUnmappedV2Range(t *testing.T) {
	a := mustAtlas(t, hwarch.Sunda)
	for off := uint64(0x800_0000); off < 0x1000_0000; off += 0x1000 {
		for _, o := range []uint64{off, off + 0xFFC} {
			if _, _, ok := a.Lookup(o); ok {
				t.Fatalf("V2 offset %#x decodes", o)
			}
		}
	}
}

func TestAtlasWindowByKind(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			geo := hwarch.MustGeometry(g)
			a := mustAtlas(t, g)
			for nc := range geo.NeuronCores {
				w, ok := a.Window(NCSync, nc)
				require.True(t, ok)
				assert.Equal(t, geo.BAR0.TPBWindow(nc)+geo.BAR0.EventsOffset, w.Start)
				assert.EqualValues(t, tpb.SyncSize, w.Size)
				w, ok = a.Window(SBUF, nc)
				require.True(t, ok)
				assert.Equal(t, geo.BAR0.TPBWindow(nc), w.Start)
				w, ok = a.Window(PSUM, nc)
				require.True(t, ok)
				assert.Equal(t, geo.BAR0.TPBWindow(nc)+geo.BAR0.PSUMOffset, w.Start)
			}
			for ts := range geo.TopSPs {
				w, ok := a.Window(TopSPSync, ts)
				require.True(t, ok)
				assert.Equal(t, geo.BAR0.TopSPWindow(ts), w.Start)
				w, ok = a.Window(TopSP, ts)
				require.True(t, ok)
				assert.Equal(t, geo.BAR0.TopSPSize, w.Size)
			}
			w, ok := a.Window(Misc, 0)
			require.True(t, ok)
			assert.Equal(t, geo.BAR0.MiscRAM, w.Start)
			w, ok = a.Window(QEMUReset, 0)
			require.True(t, ok)
			assert.Equal(t, geo.BAR0.QEMUResetReg, w.Start)

			_, ok = a.Window(NCSync, geo.NeuronCores)
			assert.False(t, ok)
			_, ok = a.Window(TopSP, geo.TopSPs)
			assert.False(t, ok)
			_, ok = a.Window(Unmapped, 0)
			assert.False(t, ok)
		})
	}
}

func TestAtlasEnd(t *testing.T) {
	want := map[hwarch.Generation]uint64{hwarch.Sunda: 0x3100_0000, hwarch.Cayman: 0xF480_0000, hwarch.Mariana: 0xF480_0000}
	for _, g := range hwarch.Generations() {
		geo := hwarch.MustGeometry(g)
		a := mustAtlas(t, g)
		assert.Equal(t, want[g], a.End(), g.String())
		for _, m := range allModes {
			s := DefaultSizes(geo, m)
			assert.LessOrEqual(t, a.End(), s[geo.BAR0.RegisterBAR(m)], "%s %s", g, m)
		}
		_, _, ok := a.Lookup(a.End())
		assert.False(t, ok)
	}
}

func TestAtlasWindowsIsACopy(t *testing.T) {
	a := mustAtlas(t, hwarch.Cayman)
	ws := a.Windows()
	ws[0].Start, ws[0].Name = 0xDEAD_0000, "changed"
	assert.NotEqual(t, "changed", a.Windows()[0].Name)
	w, _, ok := a.Lookup(0xD000_0000)
	require.True(t, ok)
	assert.Equal(t, "tpb0", w.Name)
}

// bruteLookup is the reference decode: a linear scan over every window, the
// special blocks winning over the plain ones.
func bruteLookup(t testing.TB, ws []Window, off uint64) (Window, uint64, bool) {
	best := -1
	for i, w := range ws {
		if off < w.Start || off-w.Start >= w.Size {
			continue
		}
		switch {
		case best < 0, special(w.Kind) && !special(ws[best].Kind):
			best = i
		case special(w.Kind) == special(ws[best].Kind):
			t.Fatalf("windows %s and %s of the same precedence overlap at %#x", ws[best].Name, w.Name, off)
		}
	}
	if best < 0 {
		return Window{}, 0, false
	}
	return ws[best], off - ws[best].Start, true
}

func TestAtlasLookupMatchesLinearScan(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := mustAtlas(t, g)
			ws := a.Windows()
			rng := rand.New(rand.NewPCG(0x5EED, uint64(g)))
			var edges []uint64
			for _, w := range ws {
				edges = append(edges, w.Start, w.End())
			}
			check := func(off uint64) {
				w, rel, ok := a.Lookup(off)
				bw, brel, bok := bruteLookup(t, ws, off)
				if ok != bok || (ok && (*w != bw || rel != brel)) {
					t.Fatalf("Lookup(%#x) = %v %#x %v; linear scan %v %#x %v", off, w, rel, ok, bw, brel, bok)
				}
			}
			for _, e := range edges {
				for d := -8; d <= 8; d++ {
					check(e + uint64(d)) // wraps below 0 for e = 0: a huge offset
				}
			}
			end := a.End()
			for range 100_000 {
				switch rng.IntN(4) {
				case 0: // anywhere in the atlas and a little past it
					check(rng.Uint64N(end + end/8))
				case 1: // near a window edge
					check(edges[rng.IntN(len(edges))] + uint64(rng.IntN(0x4000)) - 0x2000)
				case 2: // inside a random window
					w := ws[rng.IntN(len(ws))]
					check(w.Start + rng.Uint64N(w.Size))
				default: // any 64-bit offset
					check(rng.Uint64())
				}
			}
		})
	}
}

func TestAtlasPriorities(t *testing.T) {
	for _, g := range hwarch.Generations() {
		a := mustAtlas(t, g)
		for i, w := range a.windows {
			want := priorityPlain
			if special(w.Kind) {
				want = prioritySpecial
			}
			assert.Equal(t, want, a.priority[i], "%s %s", g, w.Name)
		}
	}
}

// TestNewAtlasShared: every device of a generation's shared geometry gets
// the one atlas, built once, whoever asks first and however many ask at
// once; a clone of the geometry gets an atlas of its own, the same windows
// while it is unchanged, and changing it changes neither the shared atlas
// nor what NewAtlas returns for the shared geometry.
func TestNewAtlasShared(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			geo := hwarch.MustGeometry(g)
			clone := geo.Clone()
			own, err := NewAtlas(clone) // before the shared one: it has no part in it
			require.NoError(t, err)
			got := make([]*Atlas, 8)
			var wg sync.WaitGroup
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a, err := NewAtlas(geo)
					assert.NoError(t, err)
					got[i] = a
				}()
			}
			wg.Wait()
			shared := mustAtlas(t, g)
			for i, a := range got {
				assert.Same(t, shared, a, "call %d", i)
			}
			assert.NotSame(t, shared, own)
			assert.Equal(t, shared.Windows(), own.Windows())

			clone.NeuronCores = 1
			fewer, err := NewAtlas(clone)
			require.NoError(t, err)
			assert.Less(t, len(fewer.Windows()), len(shared.Windows()))
			assert.Equal(t, own.Windows(), shared.Windows(), "the shared atlas is unchanged")
			assert.Same(t, shared, mustAtlas(t, g))
		})
	}
}

func TestNewAtlasErrors(t *testing.T) {
	_, err := NewAtlas(nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, hwarch.ErrUnknownGeneration))

	geo := hwarch.MustGeometry(hwarch.Cayman).Clone()
	geo.Generation = hwarch.Invalid
	_, err = NewAtlas(geo)
	assert.ErrorIs(t, err, hwarch.ErrUnknownGeneration)

	// Two plain windows that overlap: NC windows closer than their SBUF size.
	geo = hwarch.MustGeometry(hwarch.Mariana).Clone()
	geo.BAR0.TPBStride = 0x100_0000
	_, err = NewAtlas(geo)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "overlap")

	// Two special windows that overlap: the QEMU register inside the MISC RAM.
	geo = hwarch.MustGeometry(hwarch.Sunda).Clone()
	geo.BAR0.QEMUResetReg = geo.BAR0.MiscRAM + 0x10
	_, err = NewAtlas(geo)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "overlap")
}

func TestKindString(t *testing.T) {
	want := map[Kind]string{
		Unmapped: "unmapped", SBUF: "sbuf", PSUM: "psum", NCSync: "nc-sync", TopSP: "top-sp",
		TopSPSync: "top-sp-sync", Misc: "misc-ram", QEMUReset: "qemu-reset", APB: "apb", Kind(99): "kind(99)",
	}
	for k, s := range want {
		assert.Equal(t, s, k.String())
	}
}

func TestWindowEnd(t *testing.T) {
	assert.Equal(t, uint64(0x3000), Window{Start: 0x1000, Size: 0x2000}.End())
}

func BenchmarkAtlasLookup(b *testing.B) {
	a := mustAtlas(b, hwarch.Mariana)
	offs := []uint64{0x6C8_4024, 0xD270_1800, 0xF280_0000, 0x8000_0010, 0x2000_0000}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _, _ = a.Lookup(offs[i%len(offs)])
		i++
	}
}

// BenchmarkAtlasLookupDevice decodes device addresses in no order a branch
// predictor learns: 4,096 drawn at random from every window of the Mariana
// atlas, as the DMA engines of many queues reach them.
func BenchmarkAtlasLookupDevice(b *testing.B) {
	a := mustAtlas(b, hwarch.Mariana)
	ws := a.Windows()
	rng := rand.New(rand.NewPCG(1, 2))
	addrs := make([]uint64, 4096)
	for i := range addrs {
		w := ws[rng.IntN(len(ws))]
		addrs[i] = w.DeviceAddr + rng.Uint64N(w.Size)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, ok := a.LookupDevice(addrs[i%len(addrs)]); !ok {
			b.Fatalf("LookupDevice(%#x): no window", addrs[i%len(addrs)])
		}
		i++
	}
}
