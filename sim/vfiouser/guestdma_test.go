package vfiouser

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
)

// guestRig is a device served with a guest memory as its host port and a
// client whose "RAM" is a memfd mapped at guestBase (and, without a file,
// a second region at remoteBase answered by DMA_READ/DMA_WRITE).
type guestRig struct {
	t        *testing.T
	dev      *sim.Device
	srv      *Server
	c        *testClient
	ram      []byte // the client's view of [guestBase, +len)
	remote   []byte // the client's memory behind remoteBase
	geo      *hwarch.Geometry
	eng, q   int
	engBase  uint64
	m2s, s2m uint32 // next ring slot
	phase    uint8
}

const (
	guestBase  = 0x8000_0000   // guest-physical address of the memfd region
	guestSize  = 0x10000       //
	remoteBase = 0x2_0000_0000 // a region without a file
	remoteSize = 0x4000
	ringLen    = udma.MinRing
	m2sRing    = guestBase
	s2mRing    = guestBase + 0x1000
)

// newGuestRig builds the rig; wall nil: no pacing, else paced by wall.
// newGuestRig serves a device with guest memory; with a wall clock it is
// paced by it, running ahead after writes when ahead is set.
func newGuestRig(t *testing.T, g hwarch.Generation, wall *fakeWall, ahead bool) *guestRig {
	t.Helper()
	opt := Options{NoPacing: true}
	mem, err := NewGuestMemory(opt)
	require.NoError(t, err)
	dev, err := sim.NewWiredDevice(sim.DeviceConfig{Generation: g, Revision: hwarch.RevisionQEMU, RoutingID: 1, Ready: true}, sim.Wiring{Host: mem})
	require.NoError(t, err)
	if wall != nil {
		p, err := NewPacer(dev, PacerOptions{Wall: wall.clock(), Tick: MinTick, NoRunAhead: !ahead})
		require.NoError(t, err)
		opt = Options{Pacer: p}
	}
	srv, path := startServer(t, dev, opt)
	require.Same(t, mem, srv.Memory(), "the server serves the device's guest memory")
	c := dial(t, path)
	c.handshake()
	fd := memfd(t, guestSize)
	_, _, err = c.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, guestBase, guestSize), fd)
	require.NoError(t, err)
	ram, err := unix.Mmap(fd, 0, guestSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Munmap(ram) })
	remote := make([]byte, remoteSize)
	c.ServeMemory(remoteBase, remote)
	_, _, err = c.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, remoteBase, remoteSize))
	require.NoError(t, err)
	geo := dev.Geometry()
	eng, q, err := udma.H2TEngine(geo, 0)
	require.NoError(t, err)
	base, err := udma.EngineBAR0(geo, eng)
	require.NoError(t, err)
	r := &guestRig{t: t, dev: dev, srv: srv, c: c, ram: ram, remote: remote, geo: geo, eng: eng, q: q, engBase: base, phase: udma.FirstRingID}
	r.initQueue()
	return r
}

// initQueue is the driver's queue init, through BAR writes: engine to
// normal, then per half q_sw_ctrl reset, ring base (a host address: the
// guest physical address with pci_host_base), length, cfg.
func (r *guestRig) initQueue() {
	r.t.Helper()
	r.w(udma.M2S+udma.ChangeState, udma.ChangeNormal)
	r.w(udma.S2M+udma.ChangeState, udma.ChangeNormal)
	for _, h := range []struct {
		half, sw uint64
		ring     uint64
	}{{udma.M2S, udma.QSwCtrlM2S, m2sRing}, {udma.S2M, udma.QSwCtrlS2M, s2mRing}} {
		dva := r.geo.HostAddress(h.ring)
		r.w(udma.QueueReg(h.half, r.q, h.sw), udma.QSwReset)
		r.w(udma.QueueReg(h.half, r.q, udma.QBaseLo), uint32(dva))
		r.w(udma.QueueReg(h.half, r.q, udma.QBaseHi), uint32(dva>>32))
		r.w(udma.QueueReg(h.half, r.q, udma.QLength), ringLen)
		r.w(udma.QueueReg(h.half, r.q, udma.QCfg), udma.QCfgDriver)
	}
}

// w writes one engine register over vfio-user.
func (r *guestRig) w(off uint64, v uint32) {
	r.t.Helper()
	require.NoError(r.t, r.c.regionWrite(uint32(r.dev.RegisterBAR()), r.engBase+off, le32(v)))
}

// rd reads one engine register over vfio-user.
func (r *guestRig) rd(off uint64) uint32 {
	r.t.Helper()
	p, err := r.c.regionRead(uint32(r.dev.RegisterBAR()), r.engBase+off, 4)
	require.NoError(r.t, err)
	return binary.LittleEndian.Uint32(p)
}

// start writes one descriptor pair src → dst (device addresses) into the
// rings in guest memory and rings the doorbell.
func (r *guestRig) start(src, dst uint64, n int) {
	r.t.Helper()
	tlc, err := udma.LenCtrl(n, r.phase, udma.FlagFirst|udma.FlagLast)
	require.NoError(r.t, err)
	rlc, err := udma.LenCtrl(n, r.phase, 0)
	require.NoError(r.t, err)
	udma.Descriptor{LenCtrl: tlc, Meta: udma.DefaultMetaCtrl, Addr: src}.Put(r.ram[m2sRing-guestBase+uint64(r.m2s)*udma.DescriptorSize:])
	udma.Descriptor{LenCtrl: rlc, Addr: dst}.Put(r.ram[s2mRing-guestBase+uint64(r.s2m)*udma.DescriptorSize:])
	r.m2s++
	r.s2m++
	r.w(udma.QueueReg(udma.S2M, r.q, udma.QTailInc), 1)
	r.w(udma.QueueReg(udma.M2S, r.q, udma.QTailInc), 1)
}

// copy starts one copy and polls the queue's status until the pair is done
// or the queue halts; it returns the status.
func (r *guestRig) copy(src, dst uint64, n int) uint32 {
	r.t.Helper()
	before, err := r.dev.DMAQueue(r.eng, r.q)
	require.NoError(r.t, err)
	r.start(src, dst, n)
	for range 100000 {
		st := r.rd(udma.QueueReg(udma.M2S, r.q, udma.QStatus))
		qs, err := r.dev.DMAQueue(r.eng, r.q)
		require.NoError(r.t, err)
		if st&udma.StatusHalted != 0 || qs.Done > before.Done {
			return st
		}
	}
	r.t.Fatalf("the copy %#x → %#x did not finish", src, dst)
	return 0
}

// TestGuestDMA: a device served over vfio-user with the server's guest
// memory as its host moves bytes between the client's memory and HBM,
// programmed the driver's way (rings in guest memory, addresses with
// pci_host_base); a descriptor naming an unmapped guest address halts the
// queue with a descriptor address error (no panic, nothing dropped
// silently), and the device's host allocator is refused.
func TestGuestDMA(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		t.Run(g.String(), func(t *testing.T) {
			r := newGuestRig(t, g, nil, false)
			hbm := r.geo.HBM[0].Base + 0x10000
			src, back := uint64(guestBase+0x4000), uint64(guestBase+0x8000)
			data := make([]byte, 0x1000)
			for i := range data {
				data[i] = byte(i*7 + 3)
			}
			copy(r.ram[src-guestBase:], data)
			// guest → HBM → guest
			require.Zero(t, r.copy(r.geo.HostAddress(src), hbm, len(data))&udma.ErrorBits)
			require.Zero(t, r.copy(hbm, r.geo.HostAddress(back), len(data))&udma.ErrorBits)
			assert.True(t, bytes.Equal(data, r.ram[back-guestBase:][:len(data)]), "the bytes came back from HBM")
			// HBM → a region reached by DMA_WRITE requests, and back by DMA_READ
			require.Zero(t, r.copy(hbm, r.geo.HostAddress(remoteBase), len(data))&udma.ErrorBits)
			assert.True(t, bytes.Equal(data, r.remote[:len(data)]), "DMA_WRITE to the client")
			r.remote[0] ^= 0xff
			require.Zero(t, r.copy(r.geo.HostAddress(remoteBase), r.geo.HostAddress(back), 16)&udma.ErrorBits)
			assert.Equal(t, data[0]^0xff, r.ram[back-guestBase])
			// an address outside every DMA_MAP region: a queue DMA error
			st := r.copy(r.geo.HostAddress(0x10_0000_0000), hbm, 64)
			assert.Equal(t, udma.StatusHalted|udma.ErrDescAddr, st&(udma.StatusHalted|udma.ErrorBits), "status %#x", st)
			_, err := r.dev.HostAlloc(4096, 64)
			assert.ErrorIs(t, err, sim.ErrNoHostModel)
		})
	}
}

// TestGuestMemoryWiring: a guest memory serves one server, built with the
// server's DMA limits.
func TestGuestMemoryWiring(t *testing.T) {
	mem, err := NewGuestMemory(Options{MaxDMAMaps: 4})
	require.NoError(t, err)
	dev, err := sim.NewWiredDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Ready: true}, sim.Wiring{Host: mem})
	require.NoError(t, err)
	_, err = New(dev, Options{NoPacing: true})
	assert.ErrorIs(t, err, ErrWiring, "other limits")
	_, err = New(dev, Options{NoPacing: true, MaxDMAMaps: 4})
	require.NoError(t, err)
	_, err = New(dev, Options{NoPacing: true, MaxDMAMaps: 4})
	assert.ErrorIs(t, err, ErrWiring, "a second server")
	_, err = NewGuestMemory(Options{MaxDMAMaps: -1})
	assert.ErrorIs(t, err, ErrLimit)
}

// TestGuestDMAClientRefuses: a ring in a mapping without a file whose
// client answers the descriptor fetch (DMA_READ) with an error halts the
// queue with a ring address error.
func TestGuestDMAClientRefuses(t *testing.T) {
	opt := Options{NoPacing: true}
	mem, err := NewGuestMemory(opt)
	require.NoError(t, err)
	dev, err := sim.NewWiredDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Revision: hwarch.RevisionQEMU, Ready: true}, sim.Wiring{Host: mem})
	require.NoError(t, err)
	_, path := startServer(t, dev, opt)
	c := dial(t, path)
	c.handshake()
	// the seed's stream: DMA_MAP without a file, then the queue's setup
	// and doorbells; the client serves no memory, so it answers EFAULT
	seed := guestDMASeed(t)
	for len(seed) > 0 {
		h, err := ParseHeader(seed)
		require.NoError(t, err)
		_, _, err = c.call(h.Command, seed[HeaderSize:h.Size])
		require.NoError(t, err)
		seed = seed[h.Size:]
	}
	eng, q, err := udma.H2TEngine(dev.Geometry(), 0)
	require.NoError(t, err)
	qs, err := dev.DMAQueue(eng, q)
	require.NoError(t, err)
	assert.Equal(t, udma.StatusHalted|udma.ErrRingAddr, qs.Status)
}

// TestPacingBackgroundDMA: with a client connected, the clock follows wall
// time without any BAR access, so a copy completes while the driver polls
// its completion in guest memory (neuron_dma.c:224–270) — here guest →
// guest, watched in the client's memfd. Running ahead is off, so only the
// background pacing can complete it.
func TestPacingBackgroundDMA(t *testing.T) {
	var w fakeWall
	r := newGuestRig(t, hwarch.Cayman, &w, false)
	const n = 0x4000 // long enough not to finish within the doorbell's MMIO time
	src, dst := uint64(guestBase+0x4000), uint64(guestBase+0x8000)
	want := bytes.Repeat([]byte("completion mark!"), n/16)
	copy(r.ram[src-guestBase:], want)
	r.start(r.geo.HostAddress(src), r.geo.HostAddress(dst), n)
	time.Sleep(10 * MinTick) // background ticks at wall time 0 move nothing
	require.False(t, bytes.Equal(want, r.ram[dst-guestBase:][:n]), "landed before wall time passed (clock %v)", r.dev.Now())
	w.set(time.Second) // a second of wall time passes; no access is made
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Equal(want, r.ram[dst-guestBase:][:n]) {
		if time.Now().After(deadline) {
			t.Fatalf("the copy did not land with the clock at %v", r.dev.Now())
		}
		time.Sleep(time.Millisecond)
	}
	assert.GreaterOrEqual(t, r.dev.Now(), sim.FromDuration(time.Second))
}

// TestRunAheadCompletesDMA: with running ahead (the default), a copy the
// doorbell write started has landed when the write's reply comes back,
// with no wall time passed at all (the host's load cannot make a driver's
// tight completion poll time out); the clock moved only by the copy's own
// time.
func TestRunAheadCompletesDMA(t *testing.T) {
	var w fakeWall
	r := newGuestRig(t, hwarch.Cayman, &w, true)
	const n = 0x4000
	src, dst := uint64(guestBase+0x4000), uint64(guestBase+0x8000)
	want := bytes.Repeat([]byte("completion mark!"), n/16)
	copy(r.ram[src-guestBase:], want)
	r.start(r.geo.HostAddress(src), r.geo.HostAddress(dst), n)
	require.True(t, bytes.Equal(want, r.ram[dst-guestBase:][:n]), "not landed after the doorbell (clock %v)", r.dev.Now())
	assert.Less(t, r.dev.Now(), sim.FromDuration(DefaultRunAhead), "the clock ran past the copy")
}
