package cluster

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
	"github.com/neuronsim/neuronsim/sim/fabric"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// sweepSet is a timing sweep of an all-reduce on cayman systems of the
// given device counts (a ring each).
func sweepSet(counts ...int) SweepSet {
	set := SweepSet{Config: Config{Generation: hwarch.Cayman, TimingOnly: true, RanksPerDevice: 1},
		Sweep: Sweep{Op: enc.AllReduce, Algo: enc.Auto, Dtype: enc.Float32, Options: enc.Options{Chunks: 1}}}
	for _, n := range counts {
		set.Systems = append(set.Systems, SweepSystem{Devices: n, Kind: fabric.KindRing, Sizes: []int64{4096, 65536}})
	}
	return set
}

// TestRunSweeps: a set sweeps each system in turn and reports what a
// cluster built and swept alone reports; the engines override reaches the
// executor (fewer engines, more time).
func TestRunSweeps(t *testing.T) {
	res, err := RunSweeps(sweepSet(2, 4))
	require.NoError(t, err)
	require.Len(t, res.Reports, 2)
	for i, n := range []int{2, 4} {
		set := sweepSet(n)
		sys := set.Systems[0]
		need, err := BufferNeed(enc.AllReduce, enc.Auto, n, enc.Float32, sys.Sizes, set.Sweep.Options)
		require.NoError(t, err)
		cfg := set.Config
		cfg.Devices, cfg.Kind, cfg.BufferBytes = n, sys.Kind, need
		c, err := New(cfg)
		require.NoError(t, err)
		sw := set.Sweep
		sw.Sizes = sys.Sizes
		alone, err := c.Sweep(sw)
		require.NoError(t, err)
		assert.Equal(t, alone, res.Reports[i], "%d devices", n)
		assert.Equal(t, n, res.Reports[i].Extra["devices"])
	}
	one := sweepSet(4)
	one.Engines = 1
	slow, err := RunSweeps(one)
	require.NoError(t, err)
	assert.Greater(t, slow.Reports[0].Rows[1].TimeUS, res.Reports[1].Rows[1].TimeUS, "one DMA engine per rank is slower")
	assert.Zero(t, res.Capture, "no capture asked")
}

// TestRunSweepsCaptureInTimeOrder: on a trn2.48xlarge torus a 4 MiB
// all-reduce posts, after the capture's first 4,096 packets, writes whose
// first hops are microseconds before the clock; they are still written in
// time order (the capture once flushed before adding the posting write's
// own packets, and stopped the sweep with "timestamp goes back in time").
func TestRunSweepsCaptureInTimeOrder(t *testing.T) {
	var buf bytes.Buffer
	set := SweepSet{Config: Config{Generation: hwarch.Cayman, TimingOnly: true, RanksPerDevice: 1},
		Sweep:   Sweep{Op: enc.AllReduce, Algo: enc.Auto, Dtype: enc.Float32},
		Systems: []SweepSystem{{Devices: 16, Kind: fabric.KindTorus2D, Sizes: []int64{4 << 20}}},
		Capture: &Capture{MaxBytes: 1 << 30, Open: func() (io.Writer, error) { return &buf, nil }}}
	res, err := RunSweeps(set)
	require.NoError(t, err)
	require.Greater(t, res.Capture.Packets, uint64(8192), "enough packets for the capture to flush (every 4,096) during the run")
	assert.Zero(t, res.Capture.NotRecorded)
	pk, err := capture.ReadAll(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Len(t, pk, int(res.Capture.Packets))
	for i := 1; i < len(pk); i++ {
		require.GreaterOrEqual(t, pk[i].AtPS, pk[i-1].AtPS, "packet %d", i)
	}
}

// TestRunSweepsCapture: the capture is opened once the system is built,
// records its packets (counted in the report) and stops cleanly at its
// bound; a capture of several systems is refused; the opener's error ends
// the sweep as it is, the writer's is a CaptureError.
func TestRunSweepsCapture(t *testing.T) {
	for _, tt := range []struct {
		name string
		max  uint64
		full bool
	}{{"whole", 1 << 30, false}, {"bounded", 1024, true}} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			set := sweepSet(2)
			set.Capture = &Capture{MaxBytes: tt.max, Open: func() (io.Writer, error) { return &buf, nil }}
			res, err := RunSweeps(set)
			require.NoError(t, err)
			c := res.Capture
			assert.Equal(t, tt.full, c.Full)
			assert.Equal(t, tt.max, c.MaxBytes)
			assert.NotZero(t, c.Packets)
			assert.Equal(t, c.Packets, res.Reports[0].Extra["pcap_packets"])
			pk, err := capture.ReadAll(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err, "the pcap stays valid")
			assert.Len(t, pk, int(c.Packets))
			if tt.full {
				assert.LessOrEqual(t, uint64(buf.Len()), tt.max)
				assert.NotZero(t, c.NotRecorded)
				assert.Equal(t, c.NotRecorded, res.Reports[0].Extra["pcap_packets_not_recorded"])
				assert.Equal(t, "--pcap-max 1024 bytes reached", res.Reports[0].Extra["pcap_stopped"])
			} else {
				assert.Zero(t, c.NotRecorded)
				assert.NotContains(t, res.Reports[0].Extra, "pcap_stopped")
			}
		})
	}
	set := sweepSet(2, 4)
	set.Capture = &Capture{MaxBytes: 1 << 20, Open: func() (io.Writer, error) { return io.Discard, nil }}
	_, err := RunSweeps(set)
	require.ErrorIs(t, err, ErrConfig)

	refused := errors.New("no room")
	set = sweepSet(2)
	set.Capture = &Capture{MaxBytes: 1 << 20, Open: func() (io.Writer, error) { return nil, refused }}
	_, err = RunSweeps(set)
	require.Equal(t, refused, err)

	set.Capture = &Capture{MaxBytes: 10, Open: func() (io.Writer, error) { return io.Discard, nil }} // below a pcap header
	_, err = RunSweeps(set)
	var ce *CaptureError
	require.ErrorAs(t, err, &ce)
}
