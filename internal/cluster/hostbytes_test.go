package cluster_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// TestDeviceHostBytes: the host memory cluster.DeviceHostBytes estimates
// for a device of a timing-only cluster before any collective runs is more
// than one holds once built, and not more than 4× it, so that an estimate
// does not refuse what fits; and what a ring all-reduce leaves held after
// it has run (the DMA engines it made, the device pages of its programs,
// the fed rings kept for the next run) is within the run's whole estimate,
// cluster.TimingMemory — on small and larger what-if systems.
func TestDeviceHostBytes(t *testing.T) {
	if raceEnabled {
		t.Skip("SKIPPED under -race: it measures the heap")
	}
	grown := func(from uint64) uint64 { // the heap's growth since from, after a collection
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc - min(m.HeapAlloc, from)
	}
	for _, n := range []int{2, 16, 128} {
		t.Run(fmt.Sprintf("devices=%d", n), func(t *testing.T) {
			const size = 1 << 20
			cfg := cluster.Config{Generation: hwarch.Mariana, Devices: n, Switch: hwarch.SwitchV1, Kind: fabric.KindSwitch,
				TimingOnly: true, WhatIf: true}
			var err error
			cfg.BufferBytes, err = cluster.BufferNeed(enc.AllReduce, enc.Ring, n, enc.Float32, []int64{size}, enc.Options{})
			require.NoError(t, err)
			s, err := enc.Build(enc.AllReduce, enc.Ring, n, size, 4, enc.Options{})
			require.NoError(t, err)
			engines := collective.Calibrated(hwarch.Mariana).Engines
			est, err := cluster.TimingMemory(enc.AllReduce, enc.Ring, n, n, engines, enc.Float32, []int64{size}, enc.Options{})
			require.NoError(t, err)

			h0 := grown(0)
			c, err := cluster.New(cfg)
			require.NoError(t, err)
			built := grown(h0) / uint64(n)
			_, err = c.Run(s, enc.Float32)
			require.NoError(t, err)
			held := grown(h0)
			runtime.KeepAlive(c)
			t.Logf("%d devices: %d bytes a device built, %d held after the run, estimate %d", n, built, held/uint64(n), est/uint64(n))
			assert.Less(t, built, uint64(cluster.DeviceHostBytes), "a device holds more than DeviceHostBytes")
			assert.Greater(t, 4*built, uint64(cluster.DeviceHostBytes), "DeviceHostBytes is more than 4× what a device holds")
			assert.Less(t, held, est, "the run left more held than TimingMemory estimates")
		})
	}
}
