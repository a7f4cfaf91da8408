package systemtest

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// stateOf reads what a system ends with: every device's HBM over the ranks'
// buffers (through BAR4, on both systems alike), the clock and the fabric's
// counters.
func stateOf(t *testing.T, s *fabric.System, bases []uint64, n int) ([][]uint32, sim.Time, fabric.Stats) {
	t.Helper()
	var mem [][]uint32
	for i, d := range s.Devices() {
		words := make([]uint32, n/4)
		off, ok := bar4Offset(d, bases[i])
		require.True(t, ok)
		require.NoError(t, d.ReadBAR(hwarch.BAR4, off, words))
		mem = append(mem, words)
	}
	return mem, s.Now(), s.Stats()
}

// TestSnapshotMidCollective: a system saved in the middle of an all-reduce
// — DMA descriptors in flight, writes on the links, engines waiting on
// semaphores — and restored continues exactly as the uninterrupted one:
// the same bytes in every device's memory, the same virtual time, the same
// fabric counters. A truncated, corrupted or wrong-version file is refused.
func TestSnapshotMidCollective(t *testing.T) {
	c := newCluster(t, hwarch.Mariana, 4, false, 16<<20)
	sched, err := enc.Build(enc.AllReduce, enc.Ring, 4, 4<<20, 4, enc.Options{})
	require.NoError(t, err)
	require.NoError(t, c.WriteInputs(sched, cluster.RandomInputs(sched, enc.Float32, 4)))
	c.Exec.Timeout = 10 * time.Microsecond // give up early: the collective is left running
	_, err = c.Run(sched, enc.Float32)
	require.ErrorIs(t, err, collective.ErrRun)

	var file bytes.Buffer
	require.NoError(t, c.System.Save(&file))
	atSave := c.System.Stats()
	snap := c.System.Snapshot()
	require.NotEmpty(t, snap.Engine.Queue, "events pending at the snapshot")
	restored, err := fabric.Load(bytes.NewReader(file.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, c.System.Now(), restored.Now())

	var bases []uint64
	for _, rk := range c.Exec.Ranks {
		bases = append(bases, collective.LayoutOf(sched, rk.Base).Output)
	}
	span := int(sched.OutputBytes)
	c.System.Advance(2 * sim.Millisecond)
	restored.Advance(2 * sim.Millisecond)
	memA, nowA, statsA := stateOf(t, c.System, bases, span)
	memB, nowB, statsB := stateOf(t, restored, bases, span)
	assert.Equal(t, nowA, nowB, "the same virtual time")
	assert.Equal(t, statsA, statsB, "the same fabric counters")
	require.Equal(t, len(memA), len(memB))
	for i := range memA {
		assert.True(t, slicesEqual(memA[i], memB[i]), "device %d memory", i)
	}
	assert.Greater(t, statsA.Landed, atSave.Landed, "writes landed after the snapshot")

	// Bad files are refused, with nothing built.
	good := file.Bytes()
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)/2] ^= 0x40
	wrongVersion := append([]byte(nil), good...)
	wrongVersion[8] = fabric.SnapshotVersion + 1 // a version this build does not read
	for name, b := range map[string][]byte{
		"truncated": good[:len(good)-100], "corrupted": corrupt, "wrong version": wrongVersion,
		"empty": nil, "not a snapshot": []byte("hello, this is not a snapshot at all................................."),
	} {
		s, err := fabric.Load(bytes.NewReader(b))
		assert.ErrorIs(t, err, fabric.ErrSnapshot, name)
		assert.Nil(t, s, name)
	}
}

// bar4Offset is where device address addr sits in BAR4.
func bar4Offset(d *sim.Device, addr uint64) (uint64, bool) {
	for _, w := range d.BAR4().Windows() {
		if addr >= w.DeviceAddr && addr-w.DeviceAddr < w.Size {
			return w.BAR4Offset + addr - w.DeviceAddr, true
		}
	}
	return 0, false
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// packetLog is a fabric.PacketWriter that keeps every packet.
type packetLog struct{ packets []loggedPacket }

type loggedPacket struct {
	At      uint64
	Header  capture.Header
	Payload []byte
}

func (l *packetLog) WritePacket(at uint64, h capture.Header, payload []byte) error {
	l.packets = append(l.packets, loggedPacket{at, h, append([]byte(nil), payload...)})
	return nil
}

// TestCaptureContinuesAcrossSnapshot: a capture set on a system restored
// from a mid-collective snapshot writes exactly the packets the original
// system's capture writes for the snapshot's time or later — those of the
// writes in flight at the save included, with the same sequence and
// transfer numbers.
func TestCaptureContinuesAcrossSnapshot(t *testing.T) {
	c := newCluster(t, hwarch.Mariana, 4, false, 16<<20)
	var original, continued packetLog
	c.System.SetCapture(&original, 0)
	sched, err := enc.Build(enc.AllReduce, enc.Ring, 4, 1<<20, 4, enc.Options{})
	require.NoError(t, err)
	require.NoError(t, c.WriteInputs(sched, cluster.RandomInputs(sched, enc.Float32, 6)))
	c.Exec.Timeout = 5 * time.Microsecond // leave the collective running
	_, err = c.Run(sched, enc.Float32)
	require.ErrorIs(t, err, collective.ErrRun)

	var file bytes.Buffer
	require.NoError(t, c.System.Save(&file))
	require.NotNil(t, c.System.Snapshot().Capture)
	require.NotEmpty(t, c.System.Snapshot().Capture.Pending, "packets of writes in flight at the save")
	from := uint64(c.System.Now())
	restored, err := fabric.Load(bytes.NewReader(file.Bytes()))
	require.NoError(t, err)
	restored.SetCapture(&continued, 0)

	c.System.Advance(2 * sim.Millisecond)
	restored.Advance(2 * sim.Millisecond)
	require.NoError(t, c.System.FlushCapture())
	require.NoError(t, restored.FlushCapture())
	require.Greater(t, len(continued.packets), 100)
	first := slices.IndexFunc(original.packets, func(p loggedPacket) bool { return p.At >= from })
	require.Positive(t, first, "packets before the save")
	after := original.packets[first:]
	for i := range min(len(after), len(continued.packets)) {
		if !reflect.DeepEqual(after[i], continued.packets[i]) {
			t.Fatalf("packet %d after the save differs:\noriginal at %d %+v\nrestored at %d %+v", i, after[i].At, after[i].Header, continued.packets[i].At, continued.packets[i].Header)
		}
	}
	assert.Equal(t, len(after), len(continued.packets), "packets after the save")

	// A system restored without a capture set records nothing.
	quiet, err := fabric.Load(bytes.NewReader(file.Bytes()))
	require.NoError(t, err)
	quiet.Advance(2 * sim.Millisecond)
	written, _ := quiet.CaptureStats()
	assert.Zero(t, written)
}
