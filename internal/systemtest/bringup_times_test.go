package systemtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/sim"
)

// statusReadClock is a simulated device that notes the device time of
// every read of the MISC RAM FW status word (+0x808) and counts the reads
// answered 0xDEADBEEF.
type statusReadClock struct {
	*sim.Device
	status   uint64
	reads    []sim.Time
	notReady int
}

// Read32 reads a register, noting FW status reads and 0xDEADBEEF answers.
func (s *statusReadClock) Read32(bar int, off uint64) (uint32, error) {
	at := s.Now()
	v, err := s.Device.Read32(bar, off)
	if off == s.status && err == nil {
		s.reads = append(s.reads, at)
	}
	if v == hwarch.NotReady {
		s.notReady++
	}
	return v, err
}

// TestBringUpStatusReadsAndEMUWaits pins what docs/timing-model.md says of a
// bring-up with the default firmware timing: on silicon the FW status is
// read four times after the reset's acknowledgement is seen, at 0, 0, 100
// and 300 ms (the driver sleeps 100·i ms after read i; the reset ends
// 250 ms after the acknowledgement, which the first 100 ms poll sees), and
// the whole takes 1.4 s. On V4 EMU (PCI revision 0xF0 on mariana) the ready
// wait is the silicon one — the same budget, the same single 0xDEADBEEF
// answer — and there is no reset, so no status read: 1.0 s, shorter, not
// longer. Only the status-retry budget is scaled (×1000), and it goes
// unused.
func TestBringUpStatusReadsAndEMUWaits(t *testing.T) {
	ms := sim.Millisecond
	for _, tc := range []struct {
		g     hwarch.Generation
		rev   uint8
		reads []sim.Time // after the first status read
		total sim.Time   // to the millisecond
	}{
		{hwarch.Sunda, 0, []sim.Time{0, 0, 100 * ms, 300 * ms}, 1400 * ms},
		{hwarch.Cayman, 0, []sim.Time{0, 0, 100 * ms, 300 * ms}, 1400 * ms},
		{hwarch.Mariana, 0, []sim.Time{0, 0, 100 * ms, 300 * ms}, 1400 * ms},
		{hwarch.Cayman, hwarch.RevisionEMU, []sim.Time{0, 0, 100 * ms, 300 * ms}, 1400 * ms},
		{hwarch.Mariana, hwarch.RevisionEMU, nil, 1000 * ms},
	} {
		t.Run(fmt.Sprintf("%s/%#x", tc.g, tc.rev), func(t *testing.T) {
			d, err := sim.NewDevice(sim.DeviceConfig{Generation: tc.g, Revision: tc.rev})
			require.NoError(t, err)
			s := &statusReadClock{Device: d, status: hwarch.MustGeometry(tc.g).BAR0.MiscRAM + hwarch.MiscFWStatus}
			up, err := bringup.BringUp(s, bringup.Options{})
			require.NoError(t, err)
			require.Len(t, s.reads, len(tc.reads), "FW status reads")
			for i, at := range s.reads {
				assert.InDelta(t, float64(tc.reads[i]), float64(at-s.reads[0]), float64(5*sim.Microsecond), "status read %d", i)
			}
			assert.Equal(t, tc.total, d.Now()/ms*ms, "bring-up time %v", d.Now())
			assert.Equal(t, 1, s.notReady, "one 0xDEADBEEF answer, then a 1 s sleep")
			assert.Equal(t, 1, up.ReadyRetries)
			assert.Equal(t, len(tc.reads) > 0, up.Reset)

			p, silicon := up.Policy, bringup.DefaultPolicy(tc.g, hwarch.ModeSilicon)
			assert.Equal(t, silicon.ReadyRetries, p.ReadyRetries, "the ready wait is the silicon one")
			assert.Equal(t, silicon.ReadyInterval, p.ReadyInterval)
			assert.Equal(t, silicon.RoutingRetries, p.RoutingRetries)
			if tc.rev == hwarch.RevisionEMU {
				assert.Equal(t, 1000*silicon.StatusRetries, p.StatusRetries, "the reset-completion budget is the one scaled")
			}
			assert.Equal(t, time.Second, p.ReadyInterval)
		})
	}
}
