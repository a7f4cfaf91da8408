package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/bar"
	"github.com/neuronsim/neuronsim/sim/tpb"
)

const notReady = hwarch.NotReady

// fwStatusBusy reports +0x808 bit 3.
func (h dev) fwStatusBusy() bool {
	h.t.Helper()
	return h.read(h.misc(hwarch.MiscFWStatus))&hwarch.FWStatusResetActive != 0
}

// requestReset writes a reset request to the mailbox as the driver does: the
// TPB map (TPB resets only), the type, then the doorbell. It returns the
// time of the doorbell store, from which the firmware counts.
func (h dev) requestReset(typ uint32, tpbMap uint32) Time {
	h.t.Helper()
	if typ == hwarch.ResetTypeTPB {
		h.write(h.misc(hwarch.MiscResetTPBMap), tpbMap)
	}
	h.write(h.misc(hwarch.MiscResetRequest), typ)
	at := h.d.Now()
	h.write(h.misc(hwarch.MiscTrigger), 1)
	return at
}

// unitState is a marker stored in every unit of a device so a reset's reach
// can be seen: a semaphore, an event and a plain word per NC and per TOP_SP,
// plain APB registers and HBM words.
type unitState struct{ h dev }

func (u unitState) ncWords(nc int) []uint64 {
	h := u.h
	m := h.geo.BAR0
	return []uint64{m.TPBWindow(nc) + 0x40, m.TPBWindow(nc) + m.PSUMOffset + 0x80}
}

func (u unitState) topWords(ts int) []uint64 {
	return []uint64{u.h.geo.BAR0.TopSPWindow(ts) + tpb.SyncSize + 0x10}
}

func (u unitState) set() {
	h := u.h
	for nc := range h.geo.NeuronCores {
		h.write(h.ncSem(nc, h.geo.BAR0.SemSetOffset, 3), uint32(100+nc))
		h.write(h.ncEvent(nc, 5), 1)
		for _, off := range u.ncWords(nc) {
			h.write(off, uint32(0xA0+nc))
		}
	}
	for ts := range h.geo.TopSPs {
		h.write(h.topSem(ts, tpb.SemSetOffset, 7), uint32(200+ts))
		for _, off := range u.topWords(ts) {
			h.write(off, uint32(0xB0+ts))
		}
	}
	for i, off := range plainAPB(h.geo) {
		h.write(off, uint32(0xC0+i))
	}
	for _, w := range h.d.BAR4().Windows() {
		h.write4(w.BAR4Offset+0x100, uint32(0xD0+w.Channel))
	}
	h.write(h.misc(0x100), 0xFEED) // mailbox data: firmware RAM survives resets
}

// checkNC checks NC nc's state: "kept" the markers, "cleared" zero,
// "blocked" 0xDEADBEEF.
func (u unitState) checkNC(nc int, want string) {
	h := u.h
	h.t.Helper()
	sem, ev := uint32(100+nc), uint32(1)
	word := uint32(0xA0 + nc)
	switch want {
	case "cleared":
		sem, ev, word = 0, 0, 0
	case "blocked":
		sem, ev, word = notReady, notReady, notReady
	}
	for _, b := range []uint64{h.geo.BAR0.SemReadOffset, h.geo.BAR0.SemSetOffset, h.geo.BAR0.SemIncrOffset, h.geo.BAR0.SemDecrOffset} {
		require.Equal(h.t, sem, h.read(h.ncSem(nc, b, 3)), "NC %d semaphore (%s)", nc, want)
	}
	require.Equal(h.t, ev, h.read(h.ncEvent(nc, 5)), "NC %d event (%s)", nc, want)
	for _, off := range u.ncWords(nc) {
		require.Equal(h.t, word, h.read(off), "NC %d word %#x (%s)", nc, off, want)
	}
}

func (u unitState) checkTopSP(ts int, want string) {
	h := u.h
	h.t.Helper()
	sem, word := uint32(200+ts), uint32(0xB0+ts)
	switch want {
	case "cleared":
		sem, word = 0, 0
	case "blocked":
		sem, word = notReady, notReady
	}
	require.Equal(h.t, sem, h.read(h.topSem(ts, tpb.SemReadOffset, 7)), "TOP_SP %d semaphore (%s)", ts, want)
	for _, off := range u.topWords(ts) {
		require.Equal(h.t, word, h.read(off), "TOP_SP %d word (%s)", ts, want)
	}
}

func (u unitState) checkAPB(want string) {
	h := u.h
	h.t.Helper()
	for i, off := range plainAPB(h.geo) {
		v := uint32(0xC0 + i)
		switch want {
		case "cleared":
			v = 0
		case "blocked":
			v = notReady
		}
		require.Equal(h.t, v, h.read(off), "APB %#x (%s)", off, want)
	}
}

func (u unitState) checkHBM(want string) {
	h := u.h
	h.t.Helper()
	for _, w := range h.d.BAR4().Windows() {
		v := uint32(0xD0 + w.Channel)
		if want == "blocked" {
			v = notReady
		}
		require.Equal(h.t, v, h.read4(w.BAR4Offset+0x100), "HBM channel %d (%s)", w.Channel, want)
	}
}

func (u unitState) checkMisc() {
	h := u.h
	h.t.Helper()
	require.EqualValues(h.t, 3, h.read(h.misc(hwarch.MiscRoutingID)))
	require.EqualValues(h.t, 0xFEED, h.read(h.misc(0x100)))
}

func TestBoot(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := newDev(t, DeviceConfig{Generation: g, Revision: rev, RoutingID: 9, Serial: 0x0102_0304_0506_0708})
		require.Equal(t, PhaseBooting, h.d.Phase())
		sem := h.ncSem(0, h.geo.BAR0.SemReadOffset, 0)
		offs := []uint64{h.misc(hwarch.MiscRoutingID), h.misc(hwarch.MiscFWAPIVersion), h.misc(hwarch.MiscFWStatus), sem, plainAPB(h.geo)[1], unmappedReg(h.geo)[0]}
		reads := uint64(0)
		for _, off := range offs {
			require.Equal(t, notReady, h.read(off), "%#x before boot", off)
			reads++
		}
		require.Equal(t, notReady, h.read4(0))
		require.Equal(t, notReady, h.read4(h.d.BARSize(hwarch.BAR4)-4))
		reads += 2

		// Writes before boot are dropped and leave no trace.
		h.write(h.ncSem(0, h.geo.BAR0.SemSetOffset, 0), 77)
		h.write(plainAPB(h.geo)[1], 77)
		h.write(h.misc(0x100), 77)
		h.write4(0, 77)
		h.write(h.misc(hwarch.MiscResetRequest), hwarch.ResetTypeDevice)
		h.write(h.misc(hwarch.MiscTrigger), 1)
		st := h.d.Stats()
		assert.Equal(t, reads, st.NotReadyReads)
		assert.Equal(t, reads, st.Reads)
		assert.EqualValues(t, 6, st.DroppedWrites)
		assert.EqualValues(t, 6, st.Writes)
		assert.Zero(t, st.UnmappedReads, "reads before boot answer 0xDEADBEEF even where nothing is mapped")

		h.sleep(h.fw().Boot)
		require.Equal(t, PhaseReady, h.d.Phase())
		assert.EqualValues(t, 9, h.read(h.misc(hwarch.MiscRoutingID)))
		assert.EqualValues(t, 0x0506_0708, h.read(h.misc(hwarch.MiscSerialLo)))
		assert.EqualValues(t, 0x0102_0304, h.read(h.misc(hwarch.MiscSerialHi)))
		assert.EqualValues(t, DefaultFWAPIVersion, h.read(h.misc(hwarch.MiscFWAPIVersion)))
		assert.False(t, h.fwStatusBusy())
		assert.Zero(t, h.read(sem))
		assert.Zero(t, h.read(plainAPB(h.geo)[1]))
		assert.Zero(t, h.read(h.misc(0x100)))
		assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)))
		assert.Zero(t, h.read4(0))
		assert.Equal(t, PhaseReady, h.d.Phase(), "the dropped reset request did not start a reset")
		st = h.d.Stats()
		assert.Zero(t, st.ResetRequests)
		assert.Equal(t, reads, st.NotReadyReads)
	})
}

// TestBootEdge: the first read whose completion arrives at the boot time sees
// the firmware up.
func TestBootEdge(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			h := newDev(t, DeviceConfig{Generation: g, RoutingID: 4})
			boot := FromDuration(h.fw().Boot)
			h.sleepUntil(boot - h.readLatency() - Nanosecond)
			assert.Equal(t, notReady, h.read(h.misc(hwarch.MiscRoutingID)))
			assert.Equal(t, PhaseBooting, h.d.Phase())
			assert.EqualValues(t, 4, h.read(h.misc(hwarch.MiscRoutingID)))
			assert.Equal(t, PhaseReady, h.d.Phase())

			// A write issued just before boot is dropped.
			h2 := newDev(t, DeviceConfig{Generation: g, RoutingID: 4})
			h2.sleepUntil(boot - Nanosecond)
			h2.write(plainAPB(h2.geo)[0], 5)
			assert.Equal(t, PhaseReady, h2.d.Phase(), "the write's latency carried the clock past boot")
			assert.Zero(t, h2.read(plainAPB(h2.geo)[0]))
			assert.EqualValues(t, 1, h2.d.Stats().DroppedWrites)
		})
	}
}

// TestBootByPolling polls the routing id with plain reads and no sleep, as a
// tight readl loop would: each read costs the MMIO latency, so the device
// boots after Boot / latency reads.
func TestBootByPolling(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		fw := DefaultFirmwareTiming()
		fw.Boot = 200 * time.Microsecond
		h := newDev(t, DeviceConfig{Generation: g, Revision: rev, RoutingID: 11, Firmware: fw})
		lat := h.readLatency()
		var n uint64
		v := notReady
		for v == notReady {
			v = h.read(h.misc(hwarch.MiscRoutingID))
			n++
			require.Equal(t, Time(n)*lat, h.d.Now(), "read %d", n)
			require.Less(t, n, uint64(1_000_000))
		}
		assert.EqualValues(t, 11, v)
		boot := FromDuration(fw.Boot)
		want := uint64((boot + lat - 1) / lat) // the first read completing at or after Boot
		assert.Equal(t, want, n)
		st := h.d.Stats()
		assert.Equal(t, n-1, st.NotReadyReads)
		assert.Equal(t, n, st.Reads)
	})
}

func TestReadyConfig(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := newDev(t, DeviceConfig{Generation: g, Revision: rev, RoutingID: 2, Ready: true})
		assert.Equal(t, PhaseReady, h.d.Phase())
		assert.Zero(t, h.d.Now())
		assert.Zero(t, h.d.engine.Pending(), "no boot event is left behind")
		assert.EqualValues(t, 2, h.read(h.misc(hwarch.MiscRoutingID)))
		assert.EqualValues(t, DefaultFWAPIVersion, h.read(h.misc(hwarch.MiscFWAPIVersion)))
		assert.False(t, h.fwStatusBusy())
		assert.Zero(t, h.d.Stats().NotReadyReads)
	})
}

// TestDeviceReset runs the mailbox device reset of driver-facts §8.
func TestDeviceReset(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		u := unitState{h}
		u.set()
		fw := h.fw()
		lat := h.readLatency()

		t0 := h.requestReset(hwarch.ResetTypeDevice, 0)
		assert.True(t, h.fwStatusBusy(), "+0x808 bit 3 is set as soon as the request is taken")
		assert.Equal(t, PhaseReady, h.d.Phase(), "the work starts with the acknowledgement")
		u.checkNC(0, "kept")

		// The acknowledgement: +0x1EC (and the doorbell) read 0 from t0+ResetAck.
		ack := t0 + FromDuration(fw.ResetAck)
		h.sleepUntil(ack - lat - Nanosecond)
		assert.Equal(t, hwarch.ResetTypeDevice, h.read(h.misc(hwarch.MiscResetRequest)))
		assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)))
		assert.Zero(t, h.read(h.misc(hwarch.MiscTrigger)))
		assert.Equal(t, PhaseDeviceReset, h.d.Phase())

		// During the reset only the MISC RAM (and the QEMU register) answer.
		assert.True(t, h.fwStatusBusy())
		u.checkMisc()
		for nc := range h.geo.NeuronCores {
			u.checkNC(nc, "blocked")
		}
		for ts := range h.geo.TopSPs {
			u.checkTopSP(ts, "blocked")
		}
		u.checkAPB("blocked")
		u.checkHBM("blocked")
		dropped := h.d.Stats().DroppedWrites
		h.write(plainAPB(h.geo)[0], 0x99)
		h.write4(0, 0x99)
		h.write(h.ncSem(0, h.geo.BAR0.SemSetOffset, 3), 0x99)
		assert.Equal(t, dropped+3, h.d.Stats().DroppedWrites)

		// Completion: bit 3 clears at ack + DeviceReset.
		done := ack + FromDuration(fw.DeviceReset)
		h.sleepUntil(done - lat - Nanosecond)
		assert.True(t, h.fwStatusBusy())
		assert.False(t, h.fwStatusBusy())
		assert.Equal(t, PhaseReady, h.d.Phase())
		for nc := range h.geo.NeuronCores {
			u.checkNC(nc, "cleared")
		}
		for ts := range h.geo.TopSPs {
			u.checkTopSP(ts, "cleared")
		}
		for nc := range h.geo.NeuronCores {
			assert.Equal(t, tpb.SyncState{}, h.d.st.NCSync[nc])
		}
		u.checkAPB("cleared")
		u.checkHBM("kept")
		u.checkMisc()
		assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)))

		st := h.d.Stats()
		assert.EqualValues(t, 1, st.DeviceResets)
		assert.Zero(t, st.TPBResets)
		assert.EqualValues(t, 1, st.ResetRequests)
		assert.Zero(t, st.UnservedTriggers)
		assert.False(t, h.d.st.Reset.Active)

		// Nothing else is pending: a long wait changes nothing.
		h.sleep(time.Minute)
		assert.EqualValues(t, 1, h.d.Stats().DeviceResets)

		// The device works after the reset.
		h.write(h.ncSem(1, h.geo.BAR0.SemIncrOffset, 0), 4)
		assert.EqualValues(t, 4, h.read(h.ncSem(1, h.geo.BAR0.SemReadOffset, 0)))
	})
}

// coveredTopSPs returns the TOP_SPs NCs in mask own: 3 per NC on V2, 2 on V3/V4.
func coveredTopSPs(geo *hwarch.Geometry, mask uint32) uint32 {
	per := geo.TopSPs / geo.NeuronCores
	var m uint32
	for nc := range geo.NeuronCores {
		if mask&(1<<nc) != 0 {
			m |= (1<<per - 1) << (per * nc)
		}
	}
	return m
}

func TestTPBReset(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		geo := hwarch.MustGeometry(g)
		all := uint32(1)<<geo.NeuronCores - 1
		masks := []uint32{1, 1 << (geo.NeuronCores - 1), all &^ 1}
		if geo.NeuronCores > 2 {
			masks = append(masks, 0b0110, 0b1010_0101)
		}
		for _, mask := range masks {
			t.Run(fmt.Sprintf("ncs %#x", mask), func(t *testing.T) {
				h := readyDev(t, g, rev)
				u := unitState{h}
				u.set()
				tops := coveredTopSPs(geo, mask)
				fw := h.fw()
				lat := h.readLatency()

				t0 := h.requestReset(hwarch.ResetTypeTPB, geo.TPBResetMap(mask))
				assert.True(t, h.fwStatusBusy())
				for nc := range geo.NeuronCores {
					u.checkNC(nc, "kept") // not acknowledged yet: nothing blocked
				}
				ack := t0 + FromDuration(fw.ResetAck)
				h.sleepUntil(ack)
				assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)))
				assert.Zero(t, h.read(h.misc(hwarch.MiscTrigger)))
				assert.Equal(t, PhaseReady, h.d.Phase(), "a TPB reset leaves the device up")

				for nc := range geo.NeuronCores {
					u.checkNC(nc, map[bool]string{true: "blocked", false: "kept"}[mask&(1<<nc) != 0])
				}
				for ts := range geo.TopSPs {
					u.checkTopSP(ts, map[bool]string{true: "blocked", false: "kept"}[tops&(1<<ts) != 0])
				}
				u.checkAPB("kept")
				u.checkHBM("kept")
				u.checkMisc()
				assert.True(t, h.fwStatusBusy())

				// Writes to a unit being reset are dropped; others land.
				var in, out int
				for nc := range geo.NeuronCores {
					if mask&(1<<nc) != 0 {
						in = nc
					} else {
						out = nc
					}
				}
				dropped := h.d.Stats().DroppedWrites
				h.write(h.ncSem(in, geo.BAR0.SemIncrOffset, 3), 1)
				assert.Equal(t, dropped+1, h.d.Stats().DroppedWrites)
				h.write(h.ncSem(out, geo.BAR0.SemIncrOffset, 9), 1)
				assert.EqualValues(t, 1, h.read(h.ncSem(out, geo.BAR0.SemReadOffset, 9)))
				h.write(h.ncSem(out, geo.BAR0.SemSetOffset, 9), 0)

				done := ack + FromDuration(fw.TPBReset)
				h.sleepUntil(done - lat - Nanosecond)
				assert.True(t, h.fwStatusBusy())
				assert.False(t, h.fwStatusBusy())
				for nc := range geo.NeuronCores {
					u.checkNC(nc, map[bool]string{true: "cleared", false: "kept"}[mask&(1<<nc) != 0])
				}
				for ts := range geo.TopSPs {
					u.checkTopSP(ts, map[bool]string{true: "cleared", false: "kept"}[tops&(1<<ts) != 0])
				}
				u.checkAPB("kept")
				u.checkHBM("kept")
				u.checkMisc()
				st := h.d.Stats()
				assert.EqualValues(t, 1, st.TPBResets)
				assert.Zero(t, st.DeviceResets)
				assert.EqualValues(t, 1, st.ResetRequests)
			})
		}
	})
}

func TestResetCoalescing(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		geo := hwarch.MustGeometry(g)
		t.Run("device during device", func(t *testing.T) {
			h := readyDev(t, g, rev)
			fw := h.fw()
			t0 := h.requestReset(hwarch.ResetTypeDevice, 0)
			h.sleep(fw.ResetAck)
			require.Equal(t, PhaseDeviceReset, h.d.Phase())
			require.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)))

			h.sleep(fw.DeviceReset / 2)
			t1 := h.requestReset(hwarch.ResetTypeDevice, 0)
			assert.Equal(t, hwarch.ResetTypeDevice, h.read(h.misc(hwarch.MiscResetRequest)))
			h.sleep(fw.ResetAck)
			assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)), "the second request is acknowledged")
			assert.Zero(t, h.read(h.misc(hwarch.MiscTrigger)))
			assert.Equal(t, PhaseDeviceReset, h.d.Phase())
			assert.True(t, h.fwStatusBusy())

			// One reset covers both; its work ends DeviceReset after the last request.
			done := max(t0+FromDuration(fw.ResetAck+fw.DeviceReset), t1+FromDuration(fw.DeviceReset))
			h.sleepUntil(done - Nanosecond)
			assert.Equal(t, PhaseDeviceReset, h.d.Phase())
			h.sleep(time.Nanosecond)
			assert.Equal(t, PhaseReady, h.d.Phase())
			assert.False(t, h.fwStatusBusy())
			h.sleep(time.Minute)
			st := h.d.Stats()
			assert.EqualValues(t, 1, st.DeviceResets)
			assert.EqualValues(t, 2, st.ResetRequests)
			assert.Zero(t, st.TPBResets)
		})
		t.Run("tpb maps are or-ed before the ack", func(t *testing.T) {
			h := readyDev(t, g, rev)
			u := unitState{h}
			u.set()
			first, second := uint32(1), uint32(1)<<(geo.NeuronCores-1)
			h.requestReset(hwarch.ResetTypeTPB, geo.TPBResetMap(first))
			h.requestReset(hwarch.ResetTypeTPB, geo.TPBResetMap(second))
			h.sleep(h.fw().ResetAck)
			assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)))
			for nc := range geo.NeuronCores {
				u.checkNC(nc, map[bool]string{true: "blocked", false: "kept"}[(first|second)&(1<<nc) != 0])
			}
			h.sleep(h.fw().TPBReset)
			for nc := range geo.NeuronCores {
				u.checkNC(nc, map[bool]string{true: "cleared", false: "kept"}[(first|second)&(1<<nc) != 0])
			}
			tops := coveredTopSPs(geo, first|second)
			for ts := range geo.TopSPs {
				u.checkTopSP(ts, map[bool]string{true: "cleared", false: "kept"}[tops&(1<<ts) != 0])
			}
			assert.False(t, h.fwStatusBusy())
			st := h.d.Stats()
			assert.EqualValues(t, 1, st.TPBResets)
			assert.EqualValues(t, 2, st.ResetRequests)
		})
		t.Run("device request joins a running tpb reset", func(t *testing.T) {
			h := readyDev(t, g, rev)
			u := unitState{h}
			u.set()
			h.requestReset(hwarch.ResetTypeTPB, geo.TPBResetMap(1))
			h.sleep(h.fw().ResetAck)
			require.Equal(t, PhaseReady, h.d.Phase())
			u.checkNC(0, "blocked")
			h.requestReset(hwarch.ResetTypeDevice, 0)
			assert.Equal(t, PhaseDeviceReset, h.d.Phase(), "the running reset becomes a device reset")
			h.sleep(h.fw().ResetAck)
			assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)))
			h.sleep(h.fw().DeviceReset)
			assert.Equal(t, PhaseReady, h.d.Phase())
			u.checkAPB("cleared")
			u.checkNC(geo.NeuronCores-1, "cleared")
			st := h.d.Stats()
			assert.EqualValues(t, 1, st.DeviceResets)
			assert.Zero(t, st.TPBResets)
			assert.EqualValues(t, 2, st.ResetRequests)
		})
		t.Run("device request before the ack of a tpb request", func(t *testing.T) {
			h := readyDev(t, g, rev)
			h.requestReset(hwarch.ResetTypeTPB, geo.TPBResetMap(1))
			h.requestReset(hwarch.ResetTypeDevice, 0)
			h.sleep(h.fw().ResetAck)
			assert.Equal(t, PhaseDeviceReset, h.d.Phase())
			h.sleep(h.fw().DeviceReset)
			st := h.d.Stats()
			assert.EqualValues(t, 1, st.DeviceResets)
			assert.Zero(t, st.TPBResets)
		})
	})
}

// TestCoalescedRequestAckedWhenFirmwareAcksSlowly: with an acknowledgement
// slower than the reset's work, a request that joins a running reset must
// still be acknowledged (+0x1EC back to 0), or the driver would wait for it
// until its re-trigger timeout.
func TestCoalescedRequestAckedWhenFirmwareAcksSlowly(t *testing.T) {
	fw := FirmwareTiming{Boot: time.Millisecond, ResetAck: 100 * time.Millisecond, DeviceReset: 20 * time.Millisecond, TPBReset: 10 * time.Millisecond, QEMUReset: time.Second}
	for _, typ := range []uint32{hwarch.ResetTypeTPB, hwarch.ResetTypeDevice} {
		t.Run(fmt.Sprint("type ", typ), func(t *testing.T) {
			h := newDev(t, DeviceConfig{Generation: hwarch.Cayman, Ready: true, Firmware: fw})
			h.requestReset(typ, h.geo.TPBResetMap(1))
			h.sleep(fw.ResetAck + time.Millisecond)
			require.True(t, h.d.st.Reset.Acked)
			h.requestReset(typ, h.geo.TPBResetMap(2))
			h.sleep(time.Second)
			assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)), "the joining request is acknowledged")
			assert.Zero(t, h.read(h.misc(hwarch.MiscTrigger)))
			assert.False(t, h.fwStatusBusy())
			assert.Equal(t, PhaseReady, h.d.Phase())
			st := h.d.Stats()
			assert.EqualValues(t, 1, st.TPBResets+st.DeviceResets)
			assert.EqualValues(t, 2, st.ResetRequests)
		})
	}
}

func TestUnservedTrigger(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := readyDev(t, g, rev)
		for i, typ := range []uint32{0, 3, 0xFF, 0xDEAD_BEEF} {
			h.write(h.misc(hwarch.MiscResetRequest), typ)
			h.write(h.misc(hwarch.MiscTrigger), 1)
			assert.Zero(t, h.read(h.misc(hwarch.MiscTrigger)), "the doorbell is dropped at once")
			assert.Equal(t, typ, h.read(h.misc(hwarch.MiscResetRequest)), "the request word is left alone")
			assert.False(t, h.fwStatusBusy())
			assert.EqualValues(t, i+1, h.d.Stats().UnservedTriggers)
		}
		// Writing 0 to the doorbell rings nothing.
		h.write(h.misc(hwarch.MiscResetRequest), hwarch.ResetTypeDevice)
		h.write(h.misc(hwarch.MiscTrigger), 0)
		h.sleep(time.Second)
		st := h.d.Stats()
		assert.EqualValues(t, 4, st.UnservedTriggers)
		assert.Zero(t, st.ResetRequests)
		assert.Zero(t, st.DeviceResets+st.TPBResets)
		assert.Equal(t, PhaseReady, h.d.Phase())
	})
}

// TestQEMUResetSunda follows the V2 QEMU reset path (driver-facts §1): 1 to
// the QEMU register on BAR2, then the normal mailbox reset, then polling the
// QEMU register until it reads 0.
func TestQEMUResetSunda(t *testing.T) {
	t.Run("register alone", func(t *testing.T) {
		h := readyDev(t, hwarch.Sunda, hwarch.RevisionQEMU)
		require.Equal(t, hwarch.BAR2, h.reg)
		_, err := h.d.Read32(hwarch.BAR0, h.geo.BAR0.QEMUResetReg)
		assert.ErrorIs(t, err, hwarch.ErrBadBAR)
		assert.ErrorIs(t, h.d.Write32(hwarch.BAR0, h.geo.BAR0.QEMUResetReg, 1), hwarch.ErrBadBAR)

		u := unitState{h}
		u.set()
		reg := h.geo.BAR0.QEMUResetReg
		require.EqualValues(t, 0x3064_7010, reg)
		t0 := h.d.Now()
		h.write(reg, 1)
		assert.Equal(t, PhaseDeviceReset, h.d.Phase(), "the QEMU path has no acknowledgement delay")
		assert.True(t, h.fwStatusBusy())
		assert.EqualValues(t, 1, h.read(reg), "the register answers during the reset")
		u.checkMisc()
		u.checkAPB("blocked")
		u.checkNC(0, "blocked")

		done := t0 + FromDuration(h.fw().QEMUReset)
		h.sleepUntil(done - h.readLatency() - Nanosecond)
		assert.NotZero(t, h.read(reg))
		assert.Zero(t, h.read(reg))
		assert.Equal(t, PhaseReady, h.d.Phase())
		u.checkAPB("cleared")
		u.checkNC(1, "cleared")
		u.checkHBM("kept")
		assert.EqualValues(t, 1, h.d.Stats().DeviceResets)
	})
	t.Run("driver sequence", func(t *testing.T) {
		h := readyDev(t, hwarch.Sunda, hwarch.RevisionQEMU)
		u := unitState{h}
		u.set()
		reg := h.geo.BAR0.QEMUResetReg
		start := h.d.Now()
		h.write(reg, 1)
		h.requestReset(hwarch.ResetTypeDevice, 0)
		// The driver polls +0x1EC every 100 ms for the acknowledgement.
		for h.read(h.misc(hwarch.MiscResetRequest)) != 0 {
			h.sleep(100 * time.Millisecond)
			require.Less(t, h.d.Now()-start, 10*Second)
		}
		// Then the QEMU register every 2 s until it reads 0.
		polls := 0
		for h.read(reg) != 0 {
			h.sleep(2 * time.Second)
			polls++
			require.Less(t, polls, 5)
		}
		assert.Equal(t, 1, polls)
		assert.False(t, h.fwStatusBusy())
		u.checkNC(0, "cleared")
		u.checkAPB("cleared")
		st := h.d.Stats()
		assert.EqualValues(t, 1, st.DeviceResets, "one reset covers both requests")
		assert.EqualValues(t, 2, st.ResetRequests)
	})
}

func TestQEMUResetBigChips(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		geo := hwarch.MustGeometry(g)
		reg := geo.BAR0.QEMUResetReg
		require.EqualValues(t, 0x630_0010, reg)
		t.Run(g.String()+"/tpb map", func(t *testing.T) {
			h := readyDev(t, g, hwarch.RevisionQEMU)
			u := unitState{h}
			u.set()
			mask := uint32(0b0000_0110)
			tops := coveredTopSPs(geo, mask)
			m := geo.TPBResetMap(mask)
			t0 := h.d.Now()
			h.write(reg, m)
			assert.Equal(t, m, h.read(reg))
			assert.Equal(t, PhaseReady, h.d.Phase())
			for nc := range geo.NeuronCores {
				u.checkNC(nc, map[bool]string{true: "blocked", false: "kept"}[mask&(1<<nc) != 0])
			}
			for ts := range geo.TopSPs {
				u.checkTopSP(ts, map[bool]string{true: "blocked", false: "kept"}[tops&(1<<ts) != 0])
			}
			u.checkAPB("kept")

			done := t0 + FromDuration(h.fw().QEMUReset)
			h.sleepUntil(done - h.readLatency() - Nanosecond)
			assert.Equal(t, m, h.read(reg))
			assert.Zero(t, h.read(reg))
			for nc := range geo.NeuronCores {
				u.checkNC(nc, map[bool]string{true: "cleared", false: "kept"}[mask&(1<<nc) != 0])
			}
			for ts := range geo.TopSPs {
				u.checkTopSP(ts, map[bool]string{true: "cleared", false: "kept"}[tops&(1<<ts) != 0])
			}
			u.checkAPB("kept")
			st := h.d.Stats()
			assert.EqualValues(t, 1, st.TPBResets)
			assert.Zero(t, st.DeviceResets)
		})
		// 0 is what driver 2.24.7.0 stores for a device reset (the TPB map
		// it builds is empty then); the register reads the whole map back.
		for _, full := range []uint32{0, geo.TPBResetMap(0xFF), 0xFF, hwarch.TPBResetMapAll} {
			t.Run(fmt.Sprintf("%s/full map %#x", g, full), func(t *testing.T) {
				h := readyDev(t, g, hwarch.RevisionQEMU)
				u := unitState{h}
				u.set()
				h.write(reg, full)
				assert.Equal(t, PhaseDeviceReset, h.d.Phase())
				want := full
				if full == 0 {
					want = geo.TPBResetMap(0xFF)
				}
				assert.Equal(t, want, h.read(reg))
				u.checkAPB("blocked")
				u.checkMisc()
				h.sleep(h.fw().QEMUReset)
				assert.Zero(t, h.read(reg))
				assert.Equal(t, PhaseReady, h.d.Phase())
				u.checkAPB("cleared")
				u.checkHBM("kept")
				st := h.d.Stats()
				assert.EqualValues(t, 1, st.DeviceResets)
				assert.Zero(t, st.TPBResets)
			})
		}
	}
}

// TestQEMURegisterPlainOffQEMU: on silicon and EMU the QEMU reset register is
// an ordinary APB register.
func TestQEMURegisterPlainOffQEMU(t *testing.T) {
	for _, g := range hwarch.Generations() {
		for _, rev := range []uint8{0x00, 0x01, hwarch.RevisionEMU} {
			t.Run(fmt.Sprintf("%s/rev %#x", g, rev), func(t *testing.T) {
				h := readyDev(t, g, rev)
				reg := h.geo.BAR0.QEMUResetReg
				v := uint32(1)
				if g != hwarch.Sunda {
					v = h.geo.TPBResetMap(0xFF)
				}
				h.write(reg, v)
				assert.Equal(t, PhaseReady, h.d.Phase())
				h.sleep(5 * time.Second)
				assert.Equal(t, v, h.read(reg))
				assert.False(t, h.fwStatusBusy())
				st := h.d.Stats()
				assert.Zero(t, st.ResetRequests)
				assert.Zero(t, st.DeviceResets+st.TPBResets)
			})
		}
	}
}

// TestEMUBehavesAsSilicon runs the same access script on a silicon and an
// EMU device and compares everything they answer.
func TestEMUBehavesAsSilicon(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			script := func(h dev) []uint32 {
				var out []uint32
				rd := func(off uint64) { out = append(out, h.read(off)) }
				rd(h.misc(hwarch.MiscRoutingID))
				h.sleep(h.fw().Boot)
				u := unitState{h}
				u.set()
				rd(h.misc(hwarch.MiscRoutingID))
				h.requestReset(hwarch.ResetTypeTPB, h.geo.TPBResetMap(1))
				h.sleep(h.fw().ResetAck)
				rd(h.ncSem(0, h.geo.BAR0.SemReadOffset, 3))
				h.sleep(h.fw().TPBReset)
				rd(h.ncSem(0, h.geo.BAR0.SemReadOffset, 3))
				h.requestReset(hwarch.ResetTypeDevice, 0)
				h.sleep(h.fw().ResetAck)
				rd(plainAPB(h.geo)[0])
				h.sleep(h.fw().DeviceReset)
				rd(plainAPB(h.geo)[0])
				rd(h.geo.BAR0.QEMUResetReg)
				return out
			}
			si := newDev(t, DeviceConfig{Generation: g, RoutingID: 3})
			emu := newDev(t, DeviceConfig{Generation: g, RoutingID: 3, Revision: hwarch.RevisionEMU})
			assert.Equal(t, script(si), script(emu))
			assert.Equal(t, si.d.Stats(), emu.d.Stats())
			assert.Equal(t, si.d.Now(), emu.d.Now())
		})
	}
}

// TestInstantFirmware: with zero reset times a reset is acknowledged and done
// within the doorbell write itself, and a request joining at the same instant
// is still acknowledged.
func TestInstantFirmware(t *testing.T) {
	forEachDevice(t, func(t *testing.T, g hwarch.Generation, rev uint8) {
		h := newDev(t, DeviceConfig{Generation: g, Revision: rev, Ready: true, RoutingID: 3,
			Firmware: FirmwareTiming{Boot: time.Millisecond}})
		u := unitState{h}
		u.set()
		h.requestReset(hwarch.ResetTypeTPB, h.geo.TPBResetMap(1))
		assert.Zero(t, h.read(h.misc(hwarch.MiscResetRequest)))
		assert.False(t, h.fwStatusBusy())
		u.checkNC(0, "cleared")
		u.checkAPB("kept")
		h.requestReset(hwarch.ResetTypeDevice, 0)
		assert.Equal(t, PhaseReady, h.d.Phase())
		assert.Zero(t, h.read(h.misc(hwarch.MiscTrigger)))
		u.checkAPB("cleared")
		u.checkHBM("kept")
		st := h.d.Stats()
		assert.EqualValues(t, 1, st.TPBResets)
		assert.EqualValues(t, 1, st.DeviceResets)
		assert.Zero(t, st.DroppedWrites)
	})
}

// During a device reset even unmapped register offsets answer 0xDEADBEEF,
// like every other register outside the MISC RAM.
func TestDeviceResetHidesUnmappedOffsets(t *testing.T) {
	d, err := NewDevice(DeviceConfig{Generation: hwarch.Cayman, Ready: true})
	require.NoError(t, err)
	misc := d.Geometry().BAR0.MiscRAM
	require.NoError(t, d.Write32(0, misc+hwarch.MiscResetRequest, hwarch.ResetTypeDevice))
	require.NoError(t, d.Write32(0, misc+hwarch.MiscTrigger, 1))
	require.NoError(t, d.Sleep(20*time.Millisecond))
	require.Equal(t, PhaseDeviceReset, d.Phase())
	v, err := d.Read32(0, 0x2000_0000) // between apb_io_0 and apb_io_1
	require.NoError(t, err)
	assert.Equal(t, hwarch.NotReady, v)
	require.NoError(t, d.Write32(0, 0x2000_0000, 1))
	assert.Zero(t, d.Stats().UnmappedReads+d.Stats().UnmappedWrites)
	require.NoError(t, d.Sleep(time.Second))
	v, err = d.Read32(0, 0x2000_0000)
	require.NoError(t, err)
	assert.Equal(t, bar.UnmappedRead, v)
}

// A QEMU reset leaves the mailbox alone, and a store of 0 to the QEMU
// register cannot end the reset early: on V3/V4 it is the driver's device
// reset request (v3/neuron_dhal_v3.c 301–316, 339–351), which joins it.
func TestQEMUResetLeavesTheMailbox(t *testing.T) {
	d, err := NewDevice(DeviceConfig{Generation: hwarch.Mariana, Revision: hwarch.RevisionQEMU, Ready: true})
	require.NoError(t, err)
	geo := d.Geometry()
	misc := geo.BAR0.MiscRAM
	require.NoError(t, d.Write32(0, misc+hwarch.MiscResetRequest, hwarch.ResetTypeTPB)) // written, not triggered
	require.NoError(t, d.Write32(0, geo.BAR0.QEMUResetReg, geo.TPBResetMap(1)))
	require.NoError(t, d.Write32(0, geo.BAR0.QEMUResetReg, 0))
	require.NoError(t, d.Sleep(100*time.Millisecond))
	v, err := d.Read32(0, geo.BAR0.QEMUResetReg)
	require.NoError(t, err)
	assert.Equal(t, geo.TPBResetMap(1)|geo.TPBResetMap(0xFF), v, "still running, now as a device reset")
	v, err = d.Read32(0, misc+hwarch.MiscResetRequest)
	require.NoError(t, err)
	assert.Equal(t, hwarch.ResetTypeTPB, v, "the pending mailbox request is untouched")
	require.NoError(t, d.Sleep(2*time.Second))
	v, err = d.Read32(0, geo.BAR0.QEMUResetReg)
	require.NoError(t, err)
	assert.Zero(t, v)
	assert.Equal(t, uint64(1), d.Stats().DeviceResets, "the TPB reset joined the device reset")
	assert.Zero(t, d.Stats().TPBResets)
}
