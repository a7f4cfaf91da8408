package vfiouser

import (
	"sync"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestUnreadSocketDoesNotFreezeSystem: a client of one device of a
// system stops reading its socket (commands whose replies it leaves
// unread fill it) while the device's DMA writes to its mapping without a
// file. The server's DMA_WRITE request, sent with the system's lock held,
// used to wait for ever behind the unread bytes, freezing the other
// device's client too until the first closed its connection. Now the
// send gives up after ReplyTimeout and ends that session: the other
// client's reads go on, and the queue halts with a DMA error.
func TestUnreadSocketDoesNotFreezeSystem(t *testing.T) {
	opt := Options{NoPacing: true, ReplyTimeout: 2 * time.Second}
	c, b, dev, reg, base, eng, q := remoteDMARig(t, opt)
	// the last doorbell, sent raw: the client reads nothing from now on
	_, err := c.c.Write(msgBytes(Header{ID: 999, Command: CmdRegionWrite}, rwPayload(base+udma.QueueReg(udma.M2S, q, udma.QTailInc), reg, 4, le32(pairs))))
	require.NoError(t, err)
	// and large reads whose replies it does not read: its socket fills
	for i := range 100 { // config space: no device time passes
		_, err = c.c.Write(msgBytes(Header{ID: uint16(1000 + i), Command: CmdRegionRead}, rwPayload(0, RegionConfig, 4096, nil)))
		require.NoError(t, err)
	}
	time.Sleep(300 * time.Millisecond)
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { // device b's client, as fast as it can
		for range 200000 { // each read passes MMIO time: the transfer comes due
			if _, err := b.regionRead(reg, 0, 4); err != nil {
				done <- err
				return
			}
			if qs, _ := dev.DMAQueue(eng, q); qs.Done == pairs || qs.Status&udma.StatusHalted != 0 {
				break
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
		qs, err := dev.DMAQueue(eng, q)
		require.NoError(t, err)
		require.NotZero(t, qs.Status&udma.StatusHalted, "the queue halts: its DMA_WRITE could not be sent")
		require.Less(t, time.Since(t0), 3*opt.ReplyTimeout, "the other client waited")
	case <-time.After(10 * time.Second):
		c.Close() // unblocks the server
		t.Fatalf("the other client's BAR reads did not go on in 10 s (ReplyTimeout %v)", opt.ReplyTimeout)
	}
}

// TestDMAReplyTimeoutEndsSession: a client that reads its socket but
// never answers the server's DMA_WRITE holds the system (the server waits
// with its lock held) for ReplyTimeout, and then its session ends, so
// that it cannot hold it again, request after request, on the same
// connection; the other device's client goes on and the queue halts with
// a DMA error.
func TestDMAReplyTimeoutEndsSession(t *testing.T) {
	opt := Options{NoPacing: true, ReplyTimeout: 500 * time.Millisecond}
	c, b, dev, reg, base, eng, q := remoteDMARig(t, opt)
	_, err := c.c.Write(msgBytes(Header{ID: 999, Command: CmdRegionWrite}, rwPayload(base+udma.QueueReg(udma.M2S, q, udma.QTailInc), reg, 4, le32(pairs))))
	require.NoError(t, err)
	ended := make(chan struct{})
	go func() { // reads everything, answers nothing
		defer close(ended)
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.c.Read(buf); err != nil {
				return
			}
		}
	}()
	for range 200000 { // each read passes MMIO time: the transfer comes due
		_, err := b.regionRead(reg, 0, 4)
		require.NoError(t, err)
		if qs, _ := dev.DMAQueue(eng, q); qs.Status&udma.StatusHalted != 0 {
			break
		}
	}
	qs, err := dev.DMAQueue(eng, q)
	require.NoError(t, err)
	require.NotZero(t, qs.Status&udma.StatusHalted, "the queue halts: its DMA_WRITE had no reply")
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the session of the client that let a DMA_WRITE go unanswered did not end")
	}
}

// pairs is how many descriptor pairs remoteDMARig's queue holds: each
// copies n bytes of HBM to the mapping without a file, by DMA_WRITE.
const pairs, n = 30, 0xF000

// remoteDMARig serves two devices of one system (one engine, one lock):
// client c of the first has its rings in a mapping with a file and a
// destination in one without (reached by DMA_WRITE), and a queue of pairs
// copies to it set up, its S2M doorbell rung; the M2S doorbell, which
// starts them, is the test's. b is the second device's client.
func remoteDMARig(t *testing.T, opt Options) (c, b *testClient, dev *sim.Device, reg uint32, base uint64, eng, q int) {
	r := newRemoteRig(t, opt)
	return r.c, r.b, r.dev, r.reg, r.base, r.eng, r.q
}

// remoteRig is what remoteDMARig sets up, with the servers and their
// socket paths (c's device first).
type remoteRig struct {
	c, b   *testClient
	dev    *sim.Device
	reg    uint32
	base   uint64
	eng, q int
	srv    []*Server
	paths  []string
}

// newRemoteRig sets up remoteDMARig's system, queue and clients.
func newRemoteRig(t *testing.T, opt Options) *remoteRig {
	var (
		c, b   *testClient
		dev    *sim.Device
		reg    uint32
		base   uint64
		eng, q int
		srvs   []*Server
	)
	e, mu := sim.NewEngine(), new(sync.Mutex)
	var devs []*sim.Device
	var paths []string
	for i := range 2 {
		mem, err := NewGuestMemory(opt)
		require.NoError(t, err)
		d, err := sim.NewWiredDevice(sim.DeviceConfig{Name: []string{"a", "b"}[i], Generation: hwarch.Cayman, Revision: hwarch.RevisionQEMU, Ready: true, RoutingID: uint32(i)}, sim.Wiring{Engine: e, Lock: mu, Host: mem})
		require.NoError(t, err)
		devs = append(devs, d)
	}
	for _, d := range devs { // the system is built before it is served
		s, p := startServer(t, d, opt)
		srvs = append(srvs, s)
		paths = append(paths, p)
	}
	c = dial(t, paths[0])
	c.handshake()
	b = dial(t, paths[1])
	b.handshake()
	dev = devs[0]
	fd := memfd(t, guestSize)
	_, _, err := c.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, guestBase, guestSize), fd)
	require.NoError(t, err)
	ram, err := unix.Mmap(fd, 0, guestSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(ram) })
	const remoteN = 2 << 20
	c.ServeMemory(remoteBase, make([]byte, remoteN))
	_, _, err = c.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, remoteBase, remoteN))
	require.NoError(t, err)
	geo := dev.Geometry()
	eng, q, err = udma.H2TEngine(geo, 0)
	require.NoError(t, err)
	base, err = udma.EngineBAR0(geo, eng)
	require.NoError(t, err)
	reg = uint32(dev.RegisterBAR())
	w := func(off uint64, v uint32) { require.NoError(t, c.regionWrite(reg, base+off, le32(v))) }
	w(udma.M2S+udma.ChangeState, udma.ChangeNormal)
	w(udma.S2M+udma.ChangeState, udma.ChangeNormal)
	for _, h := range []struct{ half, sw, ring uint64 }{{udma.M2S, udma.QSwCtrlM2S, m2sRing}, {udma.S2M, udma.QSwCtrlS2M, s2mRing}} {
		dva := geo.HostAddress(h.ring)
		w(udma.QueueReg(h.half, q, h.sw), udma.QSwReset)
		w(udma.QueueReg(h.half, q, udma.QBaseLo), uint32(dva))
		w(udma.QueueReg(h.half, q, udma.QBaseHi), uint32(dva>>32))
		w(udma.QueueReg(h.half, q, udma.QLength), ringLen)
		w(udma.QueueReg(h.half, q, udma.QCfg), udma.QCfgDriver)
	}
	hbm := geo.HBM[0].Base + 0x10000
	for i := range pairs {
		tlc, err := udma.LenCtrl(n, udma.FirstRingID, udma.FlagFirst|udma.FlagLast)
		require.NoError(t, err)
		rlc, err := udma.LenCtrl(n, udma.FirstRingID, 0)
		require.NoError(t, err)
		udma.Descriptor{LenCtrl: tlc, Meta: udma.DefaultMetaCtrl, Addr: hbm}.Put(ram[m2sRing-guestBase+uint64(i)*udma.DescriptorSize:])
		udma.Descriptor{LenCtrl: rlc, Addr: geo.HostAddress(remoteBase + uint64(i)*n)}.Put(ram[s2mRing-guestBase+uint64(i)*udma.DescriptorSize:])
	}
	require.NoError(t, c.regionWrite(reg, base+udma.QueueReg(udma.S2M, q, udma.QTailInc), le32(pairs)))
	return &remoteRig{c: c, b: b, dev: dev, reg: reg, base: base, eng: eng, q: q, srv: srvs, paths: paths}
}
