package vfiouser

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
)

// fakeWall is a wall clock a test sets.
type fakeWall struct{ now atomic.Int64 }

func (w *fakeWall) clock() WallClock {
	return func() time.Duration { return time.Duration(w.now.Load()) }
}
func (w *fakeWall) set(d time.Duration) { w.now.Store(int64(d)) }

// bootingDevice is a device that powers on booting (FirmwareTiming.Boot of
// device time until its registers answer).
func bootingDevice(tb testing.TB, cfg sim.DeviceConfig) *sim.Device {
	tb.Helper()
	return bootingWiredDevice(tb, cfg, sim.Wiring{})
}

// bootingWiredDevice is bootingDevice attached as w says.
func bootingWiredDevice(tb testing.TB, cfg sim.DeviceConfig, w sim.Wiring) *sim.Device {
	tb.Helper()
	cfg.Generation, cfg.Revision = hwarch.Cayman, hwarch.RevisionQEMU
	d, err := sim.NewWiredDevice(cfg, w)
	require.NoError(tb, err)
	return d
}

// routingID reads the routing-id register over the client.
func routingID(tb testing.TB, c *testClient, d *sim.Device) (uint32, error) {
	tb.Helper()
	p, err := c.regionRead(uint32(d.RegisterBAR()), d.Geometry().BAR0.MiscRAM+hwarch.MiscRoutingID, 4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(p), nil
}

// TestPacingBoot: the firmware's boot passes in wall time — the driver's
// ready poll, reads one wall second apart, sees the device come up — and
// the clock never goes back, nor moves with pacing off.
func TestPacingBoot(t *testing.T) {
	boot := sim.DefaultFirmwareTiming().Boot
	for _, paced := range []bool{true, false} {
		t.Run(map[bool]string{true: "paced", false: "NoPacing"}[paced], func(t *testing.T) {
			d := bootingDevice(t, sim.DeviceConfig{RoutingID: 5})
			var w fakeWall
			opt := Options{NoPacing: true}
			if paced {
				p, err := NewPacer(d, PacerOptions{Wall: w.clock()})
				require.NoError(t, err)
				opt = Options{Pacer: p}
			}
			_, path := startServer(t, d, opt)
			c := dial(t, path)
			c.handshake()
			steps := []struct {
				wall  time.Duration
				ready bool // when paced
			}{
				{0, false}, {boot / 2, false}, {boot - time.Microsecond, false}, {boot, true}, {2 * time.Second, true},
				{time.Second, true}, // the wall clock going back moves nothing back
			}
			var last sim.Time
			var maxWall time.Duration
			for _, st := range steps {
				w.set(st.wall)
				v, err := routingID(t, c, d)
				require.NoError(t, err)
				want := hwarch.NotReady
				if paced && st.ready {
					want = 5
				}
				assert.Equal(t, want, v, "wall %v", st.wall)
				now := d.Now()
				assert.GreaterOrEqual(t, now, last, "the clock went back")
				if paced {
					maxWall = max(maxWall, st.wall)
					assert.GreaterOrEqual(t, now, sim.FromDuration(maxWall), "wall %v: the clock is behind the wall time passed", st.wall)
				} else {
					assert.Less(t, now, sim.FromDuration(time.Millisecond), "an unpaced clock moves by MMIO time only")
				}
				last = now
			}
		})
	}
}

// TestPacingAcrossSessions: while no client is connected the clock keeps
// following wall time; the next session's first access catches up.
func TestPacingAcrossSessions(t *testing.T) {
	d := bootingDevice(t, sim.DeviceConfig{RoutingID: 9})
	var w fakeWall
	p, err := NewPacer(d, PacerOptions{Wall: w.clock()})
	require.NoError(t, err)
	_, path := startServer(t, d, Options{Pacer: p})
	c := dial(t, path)
	c.handshake()
	v, err := routingID(t, c, d)
	require.NoError(t, err)
	assert.Equal(t, hwarch.NotReady, v)
	require.NoError(t, c.Close())
	w.set(time.Minute) // no client for a minute
	c2 := dial(t, path)
	c2.handshake()
	v, err = routingID(t, c2, d)
	require.NoError(t, err)
	assert.Equal(t, uint32(9), v)
	assert.GreaterOrEqual(t, d.Now(), sim.FromDuration(time.Minute))
}

// TestPacingLimit: wall time that would take the clock past sim.MaxTime
// is refused: the access gets an error reply, nothing panics, the clock
// stays put, and the session goes on.
func TestPacingLimit(t *testing.T) {
	d := bootingDevice(t, sim.DeviceConfig{Ready: true})
	var w fakeWall
	p, err := NewPacer(d, PacerOptions{Wall: w.clock()})
	require.NoError(t, err)
	_, path := startServer(t, d, Options{Pacer: p})
	c := dial(t, path)
	c.handshake()
	w.set(sim.MaxTime.Duration() + time.Second)
	before := d.Now()
	_, err = routingID(t, c, d)
	assert.Equal(t, syscall.EIO, err)
	assert.Equal(t, before, d.Now())
	_, err = p.Target()
	assert.ErrorIs(t, err, sim.ErrTimeOverflow)
	w.set(time.Second)
	_, err = routingID(t, c, d)
	assert.NoError(t, err, "the session goes on")
}

// TestPacingSystem: the devices of one system share one Pacer; a server
// of a system device without it, with another system's, or with both a
// Pacer and NoPacing is refused.
func TestPacingSystem(t *testing.T) {
	e, mu := sim.NewEngine(), new(sync.Mutex)
	var devs []*sim.Device
	for i := range 2 {
		devs = append(devs, bootingWiredDevice(t, sim.DeviceConfig{Name: []string{"a", "b"}[i], RoutingID: uint32(10 + i)}, sim.Wiring{Engine: e, Lock: mu}))
	}
	other := bootingDevice(t, sim.DeviceConfig{})
	var w fakeWall
	p, err := NewPacer(devs[0], PacerOptions{Wall: w.clock()})
	require.NoError(t, err)
	otherP, err := NewPacer(other, PacerOptions{Wall: w.clock()})
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		opt  Options
	}{
		{"no pacer", Options{}},
		{"another system's", Options{Pacer: otherP}},
		{"pacer and NoPacing", Options{Pacer: p, NoPacing: true}},
	} {
		_, err := New(devs[1], tt.opt)
		assert.True(t, errors.Is(err, ErrPacing), "%s: %v", tt.name, err)
	}
	var clients []*testClient
	for _, d := range devs {
		_, path := startServer(t, d, Options{Pacer: p})
		c := dial(t, path)
		c.handshake()
		clients = append(clients, c)
	}
	w.set(time.Second)
	v, err := routingID(t, clients[1], devs[1])
	require.NoError(t, err)
	assert.Equal(t, uint32(11), v)
	// one paced access moved the shared clock: the other device is up too
	assert.Equal(t, sim.PhaseReady, devs[0].Phase())
	v, err = routingID(t, clients[0], devs[0])
	require.NoError(t, err)
	assert.Equal(t, uint32(10), v)
	_, err = NewPacer(nil, PacerOptions{})
	assert.ErrorIs(t, err, ErrMessage)
}

// TestDeviceResetBoots: DEVICE_RESET is the device's function-level reset:
// the firmware boots again, the ready poll succeeds once the boot's wall
// time has passed, and MISC RAM is back at its power-on values.
func TestDeviceResetBoots(t *testing.T) {
	d := bootingDevice(t, sim.DeviceConfig{RoutingID: 7, Ready: true})
	var w fakeWall
	p, err := NewPacer(d, PacerOptions{Wall: w.clock()})
	require.NoError(t, err)
	_, path := startServer(t, d, Options{Pacer: p})
	c := dial(t, path)
	c.handshake()
	scratch := d.Geometry().BAR0.MiscRAM + 0x100
	require.NoError(t, c.regionWrite(uint32(d.RegisterBAR()), scratch, le32(0xa5a5)))
	_, _, err = c.call(CmdDeviceReset, nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), d.Stats().FunctionResets)
	v, err := routingID(t, c, d)
	require.NoError(t, err)
	assert.Equal(t, hwarch.NotReady, v)
	w.set(sim.DefaultFirmwareTiming().Boot + time.Millisecond)
	v, err = routingID(t, c, d)
	require.NoError(t, err)
	assert.Equal(t, uint32(7), v)
	got, err := c.regionRead(uint32(d.RegisterBAR()), scratch, 4)
	require.NoError(t, err)
	assert.Equal(t, le32(0), got)
	require.NoError(t, d.Close())
	_, _, err = c.call(CmdDeviceReset, nil)
	assert.Equal(t, syscall.ENODEV, err)
}
