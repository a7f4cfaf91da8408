package sim

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
)

// hostCopy programs the driver's host-to-device queue of NC 0 with rings in
// host memory and starts one copy of n bytes from a host buffer of
// pattern bytes to HBM address dst; it returns the engine and queue.
func hostCopy(t *testing.T, h dev, dst uint64, n int) (eng, q int) {
	t.Helper()
	d, geo := h.d, h.geo
	alloc := func(size uint64) uint64 {
		pa, err := d.HostAlloc(size, udma.RingAlign)
		require.NoError(t, err)
		return pa
	}
	const ring = udma.MinRing
	m2s, s2m, src := alloc(ring*udma.DescriptorSize), alloc(ring*udma.DescriptorSize), alloc(uint64(n))
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i%251 + 1)
	}
	require.NoError(t, d.HostWrite(src, data))
	var b [udma.DescriptorSize]byte
	lc, err := udma.LenCtrl(n, udma.FirstRingID, udma.FlagFirst|udma.FlagLast)
	require.NoError(t, err)
	udma.Descriptor{LenCtrl: lc, Meta: udma.DefaultMetaCtrl, Addr: geo.HostAddress(src)}.Put(b[:])
	require.NoError(t, d.HostWrite(m2s, b[:]))
	lc, err = udma.LenCtrl(n, udma.FirstRingID, 0)
	require.NoError(t, err)
	udma.Descriptor{LenCtrl: lc, Addr: dst}.Put(b[:])
	require.NoError(t, d.HostWrite(s2m, b[:]))
	return startHostQueue(t, h, m2s, s2m, ring, 1)
}

// startHostQueue programs the driver's host-to-device queue of NC 0 with
// its M2S and S2M rings of ring descriptors at host addresses m2s and s2m,
// and rings both doorbells for pairs descriptor pairs; it returns the
// engine and queue.
func startHostQueue(t *testing.T, h dev, m2s, s2m uint64, ring, pairs uint32) (eng, q int) {
	t.Helper()
	geo := h.geo
	eng, q, err := udma.H2TEngine(geo, 0)
	require.NoError(t, err)
	base, err := udma.EngineBAR0(geo, eng)
	require.NoError(t, err)
	h.write(base+udma.M2S+udma.ChangeState, udma.ChangeNormal)
	h.write(base+udma.S2M+udma.ChangeState, udma.ChangeNormal)
	for _, hf := range []struct{ half, sw, ring uint64 }{{udma.M2S, udma.QSwCtrlM2S, m2s}, {udma.S2M, udma.QSwCtrlS2M, s2m}} {
		dva := geo.HostAddress(hf.ring)
		h.write(base+udma.QueueReg(hf.half, q, hf.sw), udma.QSwReset)
		h.write(base+udma.QueueReg(hf.half, q, udma.QBaseLo), uint32(dva))
		h.write(base+udma.QueueReg(hf.half, q, udma.QBaseHi), uint32(dva>>32))
		h.write(base+udma.QueueReg(hf.half, q, udma.QLength), ring)
		h.write(base+udma.QueueReg(hf.half, q, udma.QCfg), udma.QCfgDriver)
	}
	h.write(base+udma.QueueReg(udma.S2M, q, udma.QTailInc), pairs)
	h.write(base+udma.QueueReg(udma.M2S, q, udma.QTailInc), pairs)
	return eng, q
}

// waitReady polls the routing-id register the driver's way — a read, then
// a one-second sleep, at most 20 times — and returns how many sleeps it
// took.
func waitReady(t *testing.T, h dev) int {
	t.Helper()
	for i := range 20 {
		if h.read(h.misc(hwarch.MiscRoutingID)) != notReady {
			return i
		}
		h.sleep(time.Second)
	}
	t.Fatal("the device did not come up in 20 polls")
	return 0
}

// TestFunctionResetMidDMA: a reset while a transfer is in flight cancels
// it — its completion, still queued, lands nothing and counts nothing —
// and leaves the engines as at power-on.
func TestFunctionResetMidDMA(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		t.Run(g.String(), func(t *testing.T) {
			h := readyDev(t, g, hwarch.RevisionQEMU)
			dst := h.geo.HBM[0].Base + 0x10000
			const n = 64 << 10
			eng, q := hostCopy(t, h, dst, n)
			qs, err := h.d.DMAQueue(eng, q)
			require.NoError(t, err)
			require.True(t, qs.InFlight, "the copy is in flight")
			pending := h.d.engine.Pending()
			require.NoError(t, h.d.FunctionReset())
			assert.GreaterOrEqual(t, h.d.engine.Pending(), pending, "the completion is still queued (and the boot too)")
			h.sleep(time.Millisecond) // the completion's time passes
			qs, err = h.d.DMAQueue(eng, q)
			require.NoError(t, err)
			assert.False(t, qs.InFlight)
			assert.Zero(t, qs.Done)
			assert.Zero(t, qs.Bytes)
			assert.Zero(t, qs.M2S.Avail)
			assert.Equal(t, udma.QCfgReset, qs.M2S.Cfg)
			got := make([]byte, n)
			require.NoError(t, (*deviceBus)(h.d).ReadDMA(dst, got))
			assert.Equal(t, make([]byte, n), got, "the cancelled copy landed in HBM")
			waitReady(t, h)
			base, err := udma.EngineBAR0(h.geo, eng)
			require.NoError(t, err)
			// Power-on state is NORMAL: driver 2.24.7.0 never writes change_state (docs/dma-model.md).
			assert.Equal(t, udma.EngineStateWord(udma.StateNormal), h.read(base+udma.EngineState))
		})
	}
}

// TestFunctionResetBoot: after a reset the firmware boots again — reads
// return 0xDEADBEEF until FirmwareTiming.Boot has passed, then the driver's
// ready poll succeeds — with the mailbox and config space at power-on
// values, HBM kept, and the reset counted.
func TestFunctionResetBoot(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		boot := FromDuration(h.fw().Boot)
		hbm := h.geo.HBM[0].Base + 0x2000
		require.NoError(t, (*deviceBus)(h.d).WriteDMA(hbm, []byte("kept in HBM")))
		h.write(h.misc(0x100), 0xa5a5_0001)
		require.NoError(t, h.d.WriteConfig(4, []byte{0x06, 0x00})) // memory space and bus master on
		start := h.d.Now()
		require.NoError(t, h.d.FunctionReset())
		assert.Equal(t, PhaseBooting, h.d.Phase())
		var cmd [2]byte
		require.NoError(t, h.d.ReadConfig(4, cmd[:]))
		assert.Equal(t, [2]byte{}, cmd, "the command register is at its power-on value")
		assert.Equal(t, notReady, h.read(h.misc(hwarch.MiscRoutingID)))
		sleeps := waitReady(t, h)
		assert.GreaterOrEqual(t, h.d.Now()-start, boot, "ready before the boot's time")
		assert.Equal(t, int((boot+FromDuration(time.Second)-1)/FromDuration(time.Second)), sleeps)
		assert.Equal(t, uint32(3), h.read(h.misc(hwarch.MiscRoutingID)))
		assert.Equal(t, uint32(DefaultFWAPIVersion), h.read(h.misc(hwarch.MiscFWAPIVersion)))
		assert.Zero(t, h.read(h.misc(0x100)), "MISC RAM is at its power-on value")
		got := make([]byte, 11)
		require.NoError(t, (*deviceBus)(h.d).ReadDMA(hbm, got))
		assert.Equal(t, "kept in HBM", string(got))
		assert.Equal(t, uint64(1), h.d.Stats().FunctionResets)
	})
}

// TestFunctionResetRestartsBoot: a reset during a boot (or another reset)
// restarts the boot: the earlier boot's event, and the events of a
// mailbox reset in progress, no longer count.
func TestFunctionResetRestartsBoot(t *testing.T) {
	h := newDev(t, DeviceConfig{Generation: hwarch.Cayman, RoutingID: 3})
	boot := FromDuration(h.fw().Boot)
	_, err := h.d.AdvanceTo(boot / 2)
	require.NoError(t, err)
	require.NoError(t, h.d.FunctionReset())
	_, err = h.d.AdvanceTo(boot) // the first boot's event
	require.NoError(t, err)
	assert.Equal(t, PhaseBooting, h.d.Phase(), "the first boot's event ended the second boot")
	_, err = h.d.AdvanceTo(boot/2 + boot)
	require.NoError(t, err)
	assert.Equal(t, PhaseReady, h.d.Phase())

	h.requestReset(hwarch.ResetTypeDevice, 0)
	h.sleep(h.fw().ResetAck + time.Millisecond) // acknowledged: the reset's work runs
	require.Equal(t, PhaseDeviceReset, h.d.Phase())
	require.NoError(t, h.d.FunctionReset())
	h.sleep(h.fw().DeviceReset + time.Millisecond) // the mailbox reset's completion passes
	assert.Equal(t, PhaseBooting, h.d.Phase())
	assert.Zero(t, h.d.Stats().DeviceResets)
	waitReady(t, h)
	assert.Zero(t, h.read(h.misc(hwarch.MiscFWStatus)), "no reset is active")
	assert.Equal(t, uint64(2), h.d.Stats().FunctionResets)
}

// TestFunctionResetSystem: resetting one device of a system leaves the
// other's state alone.
func TestFunctionResetSystem(t *testing.T) {
	e, mu := NewEngine(), new(sync.Mutex)
	var hs []dev
	for i := range 2 {
		hs = append(hs, newWiredDev(t, DeviceConfig{Generation: hwarch.Cayman, Name: []string{"a", "b"}[i], RoutingID: uint32(i), Ready: true}, Wiring{Engine: e, Lock: mu}))
	}
	for _, h := range hs {
		h.write(h.misc(0x100), 0x1234)
	}
	require.NoError(t, hs[0].d.FunctionReset())
	assert.Equal(t, PhaseBooting, hs[0].d.Phase())
	assert.Equal(t, PhaseReady, hs[1].d.Phase())
	assert.Equal(t, uint32(0x1234), hs[1].read(hs[1].misc(0x100)))
	assert.Zero(t, hs[1].d.Stats().FunctionResets)
	waitReady(t, hs[0])
	assert.Zero(t, hs[0].read(hs[0].misc(0x100)))
	assert.Equal(t, uint32(0x1234), hs[1].read(hs[1].misc(0x100)))
}

// TestFunctionResetRefused: a closed device, and a boot that would end
// past MaxTime, are refused with nothing changed.
func TestFunctionResetRefused(t *testing.T) {
	h := readyDev(t, hwarch.Cayman, 0)
	_, err := h.d.AdvanceTo(MaxTime - 1)
	require.NoError(t, err)
	assert.ErrorIs(t, h.d.FunctionReset(), ErrTimeOverflow)
	assert.Equal(t, PhaseReady, h.d.Phase())
	assert.Zero(t, h.d.Stats().FunctionResets)
	require.NoError(t, h.d.Close())
	assert.True(t, errors.Is(h.d.FunctionReset(), hwarch.ErrDeviceClosed))
}

// TestDMATotals: the totals sum what the queues did — one copy is one
// descriptor pair of its bytes — and a function-level reset clears them
// with the queues.
func TestDMATotals(t *testing.T) {
	h := readyDev(t, hwarch.Cayman, hwarch.RevisionQEMU)
	pairs, bytes := h.d.DMATotals()
	require.Zero(t, pairs)
	require.Zero(t, bytes)
	const n = 4096
	hostCopy(t, h, h.geo.HBM[0].Base+0x10000, n)
	h.sleep(time.Millisecond)
	pairs, bytes = h.d.DMATotals()
	assert.Equal(t, uint64(1), pairs)
	assert.Equal(t, uint64(n), bytes)
	require.NoError(t, h.d.FunctionReset())
	pairs, bytes = h.d.DMATotals()
	assert.Zero(t, pairs)
	assert.Zero(t, bytes)
}

// TestRunAhead: the events due within the horizon run at once and the
// clock stops at the last of them, not at the horizon; an event further out
// (the firmware's boot) keeps its time.
func TestRunAhead(t *testing.T) {
	h := readyDev(t, hwarch.Cayman, hwarch.RevisionQEMU)
	dst := h.geo.HBM[0].Base + 0x10000
	eng, q := hostCopy(t, h, dst, 4096)
	before := h.d.Now()
	now := h.d.RunAhead(FromDuration(time.Millisecond))
	qs, err := h.d.DMAQueue(eng, q)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), qs.Done, "the copy completed")
	assert.Greater(t, now, before)
	assert.Less(t, now, before+FromDuration(time.Millisecond), "the clock stopped at the copy's completion")

	boot, err := NewDevice(DeviceConfig{Generation: hwarch.Cayman})
	require.NoError(t, err)
	t0 := boot.Now()
	assert.Equal(t, t0, boot.RunAhead(FromDuration(time.Millisecond)), "nothing due within the horizon")
	assert.Equal(t, PhaseBooting, boot.Phase(), "the 500 ms boot keeps its time")
}
