package systemtest

import (
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
)

// TestFaultDuringCollective: a link taken down, or a device reset, in the
// middle of an all-reduce ends it with an error naming the link or the
// device within the executor's timeout of device time — nothing hangs —
// and after Recover the next all-reduce on the same system is correct.
func TestFaultDuringCollective(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(c *fabric.System, at sim.Time) fabric.Fault
		want  []string
	}{
		{"link down", func(s *fabric.System, at sim.Time) fabric.Fault {
			id, ok := s.LinkBetween(5, s.Topology().Devices+0) // device 5 to its in-server switch
			require.True(t, ok)
			return fabric.Fault{At: at, Kind: fabric.LinkDown, Link: id}
		}, []string{"rank 5 (device 5)", "halted", "links down: [neuron5:0→l1-sw0:5 (in-server)]"}},
		{"device reset", func(s *fabric.System, at sim.Time) fabric.Fault {
			return fabric.Fault{At: at, Kind: fabric.DeviceReset, Device: 3}
		}, []string{"device 3 does not answer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, hwarch.Mariana, 8, false, 8<<20)
			const timeout = 2 * time.Millisecond
			c.Exec.Timeout = timeout
			sched, err := enc.Build(enc.AllReduce, enc.Ring, 8, 1<<20, 4, enc.Options{})
			require.NoError(t, err)
			// A clean run first, to know when the middle of a run is.
			inputs := cluster.RandomInputs(sched, enc.Float32, 1)
			require.NoError(t, c.WriteInputs(sched, inputs))
			start := c.System.Now()
			clean, err := c.Run(sched, enc.Float32)
			require.NoError(t, err)
			staging := c.System.Now() - start - sim.Time(clean.TimePS)

			require.NoError(t, c.WriteInputs(sched, inputs))
			f := tc.fault(c.System, c.System.Now()+staging/2+sim.Time(clean.TimePS/2))
			require.NoError(t, c.System.ScheduleFault(f))
			before := c.System.Now()
			_, err = c.Run(sched, enc.Float32)
			require.Error(t, err)
			require.ErrorIs(t, err, collective.ErrRun)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Less(t, c.System.Now()-before, 2*staging+sim.FromDuration(timeout)+sim.Time(clean.TimePS),
				"ends within the timeout of device time")

			if f.Kind == fabric.LinkDown {
				require.NoError(t, c.System.SetLinkDown(f.Link, false))
			}
			ups := make([]any, len(c.Devices))
			for i := range c.Devices {
				ups[i] = c.Devices[i].Up
			}
			require.NoError(t, c.Recover())
			// Recover learnt through BAR reads which device lost its state:
			// after a device reset only device 3 is brought up again; after
			// a link down none is.
			for i := range c.Devices {
				again := ups[i] != any(c.Devices[i].Up)
				assert.Equal(t, f.Kind == fabric.DeviceReset && i == 3, again, "device %d brought up again", i)
			}
			_, err = c.Check(sched, enc.Float32, 3, enc.Options{})
			require.NoError(t, err, "the next collective runs")
		})
	}
}
