package cluster_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// systemConfig is the configuration of nodes copies of one of the systems
// AWS sells (fabric.Systems) joined by EFA (one: no EFA network), rpd
// ranks per device.
func systemConfig(t *testing.T, name string, nodes, rpd int) cluster.Config {
	t.Helper()
	spec, err := fabric.LookupSystem(name)
	require.NoError(t, err)
	return cluster.Config{Generation: spec.Generation, Devices: nodes * spec.Devices, Nodes: nodes, Switch: switchOf(spec.Generation),
		Kind: spec.Kind, RanksPerDevice: rpd}
}

// systemCluster builds a cluster of one of the systems AWS sells
// (fabric.Systems), one rank per device.
func systemCluster(t *testing.T, name string, timingOnly bool, buf uint64) *cluster.Cluster {
	t.Helper()
	cfg := systemConfig(t, name, 1, 1)
	cfg.TimingOnly, cfg.BufferBytes = timingOnly, buf
	c, err := cluster.New(cfg)
	require.NoError(t, err)
	return c
}

// TestSystemsCollectives: a ring all-reduce of random data on the Trn3
// Gen1 UltraServer (64 devices: a ring through its in-server and
// inter-server switches) and on the Trn2 UltraServer (its tori and Z
// rings) equals the CPU reference, with nothing dropped; timing-only
// all-gather and reduce-scatter run on the Gen1 UltraServer. (The Gen2
// UltraServer's 144 devices are more than the driver's 64 routing ids: they
// run as a what-if system, cluster.Config.WhatIf, in TestGen2Collectives.)
func TestSystemsCollectives(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 64-device systems")
	}
	for _, name := range []string{"trn3-gen1", "trn2-ultraserver"} {
		t.Run(name, func(t *testing.T) {
			c := systemCluster(t, name, false, 1<<20)
			sched, err := enc.Build(enc.AllReduce, enc.Ring, c.Ranks(), 64*1024, 4, enc.Options{})
			require.NoError(t, err)
			res, err := c.Check(sched, enc.Float32, 7, enc.Options{})
			require.NoError(t, err)
			assert.Positive(t, res.TimePS)
			st := c.System.Stats()
			assert.Zero(t, st.Dropped+st.LandErrors, st.LastError)
		})
	}
	c := systemCluster(t, "trn3-gen1", true, 4<<20)
	for _, op := range []enc.Op{enc.AllGather, enc.ReduceScatter} {
		t.Run(fmt.Sprintf("trn3-gen1/%s", op), func(t *testing.T) {
			assert.Positive(t, runTime(t, c, op, enc.Ring, 64*4096))
		})
	}
	st := c.System.Stats()
	assert.Zero(t, st.Dropped+st.LandErrors, st.LastError)
}
