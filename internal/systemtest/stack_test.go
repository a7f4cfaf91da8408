package systemtest

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/dve"
	"github.com/neuronsim/neuronsim/runtime/stack"
	"github.com/neuronsim/neuronsim/sim"
)

// openStack opens the runtime's stack on a fresh simulated device.
func openStack(t testing.TB, cfg sim.DeviceConfig, opts stack.Options) (*sim.Device, *stack.Stack) {
	t.Helper()
	d, err := sim.NewDevice(cfg)
	require.NoError(t, err)
	st, err := stack.Open(d, opts)
	require.NoError(t, err)
	return d, st
}

// TestStackOpen: one Open brings the device up, opens its DMA layer and
// sizes its allocator from the HBM channels bring-up read (BAR4 / 4 per
// channel on V3/V4 under QEMU), on every generation and revision; with
// RegistersOnly a backend without host memory opens too.
func TestStackOpen(t *testing.T) {
	for _, g := range hwarch.Generations() {
		for _, r := range revisions {
			t.Run(fmt.Sprintf("%s/%s", g, r.name), func(t *testing.T) {
				_, st := openStack(t, sim.DeviceConfig{Generation: g, Revision: r.rev}, stack.Options{})
				require.NotNil(t, st.Up)
				require.NotNil(t, st.DMA)
				require.NotNil(t, st.Mem)
				assert.Same(t, st.Up, st.DMA.Device())
				assert.Equal(t, g, st.Tables().Generation)
				assert.Equal(t, len(st.Up.HBMChannelBytes), st.Mem.Channels())
				for ch, n := range st.Up.HBMChannelBytes {
					_, end := st.Mem.ChannelRange(ch)
					assert.Equal(t, st.Up.Geometry.HBM[ch].Base+n, end, "channel %d ends where bring-up sized it", ch)
				}
				assert.Equal(t, st.Up.Policy.SkipReset == false, st.Up.Reset, "a fresh device is reset unless the policy forbids it")
			})
		}
	}
	d, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Cayman, Ready: true})
	require.NoError(t, err)
	_, err = stack.Open(barOnly{d}, stack.Options{BringUp: bringup.Options{NoReset: true}})
	require.ErrorIs(t, err, dma.ErrNoHostMemory, "the full stack needs host memory")
	st, err := stack.Open(barOnly{d}, stack.Options{BringUp: bringup.Options{NoReset: true}, RegistersOnly: true})
	require.NoError(t, err)
	assert.Nil(t, st.DMA)
	assert.Nil(t, st.Mem)
	assert.False(t, st.Up.Reset)
}

// TestStackCopyHoldsPieces: a functional copy writes its pattern and
// checks its destination a piece at a time, so what it allocates is the
// simulated pages of its two buffers and little more — not, as it once
// did, two more buffers of its size in host memory (a 1 GiB dma copy
// peaked at 6.4 GB of RSS). A mismatch names the first byte that differs.
func TestStackCopyHoldsPieces(t *testing.T) {
	const n = 16<<20 + 3 // a tail that is not a whole word
	for _, tc := range []struct{ from, to stack.Side }{
		{stack.Host, stack.Device}, {stack.Device, stack.Host}, {stack.Host, stack.Host}, {stack.Device, stack.Device},
	} {
		t.Run(fmt.Sprintf("%s-%s", tc.from, tc.to), func(t *testing.T) {
			d, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman}, stack.Options{})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := st.Copy(stack.CopyRequest{From: tc.from, To: tc.to, Size: n, Payload: true})
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			require.True(t, res.Checked)
			pages := uint64(2 * n) // the source's and the destination's, while both live
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("a %d-byte copy allocated %d bytes: %.2f times its buffers' pages", n, alloc, float64(alloc)/float64(pages))
			assert.Less(t, alloc, pages+8<<20, "allocated beyond the simulated pages: more than two pieces, the BAR4 scratch and the rings")
			runtime.KeepAlive(d)
		})
	}
	t.Run("mismatch named", func(t *testing.T) {
		_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Sunda, TimingOnly: true}, stack.Options{})
		_, err := st.Copy(stack.CopyRequest{From: stack.Device, To: stack.Host, Size: 3 << 20, Payload: true})
		require.ErrorIs(t, err, stack.ErrCopyMismatch)
		assert.Regexp(t, `^host destination byte \d+ of 3145728: read 0x[0-9a-f]+, wrote 0x[0-9a-f]+: `, err.Error())
	})
}

// tailFlipper is a simulated device whose reads of a copy's destination,
// once armed, return its last byte flipped: host reads of more than a word
// whose length is not a multiple of 4 (the check's; the marker polls read a
// word), and single-word reads of BAR4 (the word that holds a device
// destination's last bytes) past the first skip of them (a device
// source's own last word, read to be changed).
type tailFlipper struct {
	*sim.Device
	armed bool
	skip  int
	last  uint // the byte of the word flipped: the copy's last, (n-1)%4
}

// HostRead reads host memory, the last byte flipped when armed.
func (f *tailFlipper) HostRead(pa uint64, p []byte) error {
	if err := f.Device.HostRead(pa, p); err != nil {
		return err
	}
	if f.armed && len(p) > 4 && len(p)%4 != 0 {
		p[len(p)-1] ^= 0xff
	}
	return nil
}

// ReadBAR reads BAR words, a single BAR4 word flipped when armed.
func (f *tailFlipper) ReadBAR(bar int, off uint64, dst []uint32) error {
	if err := f.Device.ReadBAR(bar, off, dst); err != nil {
		return err
	}
	if f.armed && bar == 4 && len(dst) == 1 {
		if f.skip > 0 {
			f.skip--
			return nil
		}
		dst[0] ^= 0xff << (8 * f.last) // little-endian: byte i is bits 8i..8i+7
	}
	return nil
}

// TestStackCopyVerifiesEveryByte: a copy's check reads back every byte it
// copied, a device side's last bytes past a whole word included — they
// were once neither written nor compared, so a copy to or from the device
// whose last bytes came out wrong passed its check. Verified is the size.
func TestStackCopyVerifiesEveryByte(t *testing.T) {
	for _, tc := range []struct {
		from, to stack.Side
		n        uint64
	}{
		{stack.Host, stack.Device, 1}, {stack.Host, stack.Device, 3}, {stack.Device, stack.Device, 2},
		{stack.Device, stack.Device, 4<<10 + 3}, {stack.Device, stack.Host, 4<<10 + 1}, {stack.Host, stack.Device, 4<<10 + 2},
		{stack.Host, stack.Host, 4<<10 + 1},
	} {
		t.Run(fmt.Sprintf("%s-%s-%d", tc.from, tc.to, tc.n), func(t *testing.T) {
			_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman}, stack.Options{})
			res, err := st.Copy(stack.CopyRequest{From: tc.from, To: tc.to, Size: tc.n, Payload: true})
			require.NoError(t, err)
			assert.True(t, res.Checked)
			assert.Equal(t, tc.n, res.Verified, "every byte copied is read back")

			if tc.to == stack.Host && tc.n <= 4 {
				return // the check's read is not told from a marker poll
			}
			d, err := sim.NewDevice(sim.DeviceConfig{Generation: hwarch.Cayman})
			require.NoError(t, err)
			f := &tailFlipper{Device: d, last: uint((tc.n - 1) % 4)}
			st, err = stack.Open(f, stack.Options{})
			require.NoError(t, err)
			f.armed = true
			if tc.from == stack.Device && tc.n%4 != 0 {
				f.skip = 1 // the source's last word, read to write its last bytes
			}
			res, err = st.Copy(stack.CopyRequest{From: tc.from, To: tc.to, Size: tc.n, Payload: true})
			require.ErrorIs(t, err, stack.ErrCopyMismatch, "the destination's last byte read back wrong")
			assert.Contains(t, err.Error(), fmt.Sprintf("byte %d of %d", tc.n-1, tc.n))
			assert.False(t, res.Checked)
			assert.Zero(t, res.Verified)
		})
	}
}

// TestStackCopy runs the dma copy flow over every pair of sides: the
// payload checked, the device time taken from the device's clock. A device
// that moves no payload (timing-only) fails the check when a payload is
// asked for — the check reads the destination — and passes without one.
func TestStackCopy(t *testing.T) {
	sides := []stack.Side{stack.Host, stack.Device}
	for _, from := range sides {
		for _, to := range sides {
			t.Run(fmt.Sprintf("%s-%s", from, to), func(t *testing.T) {
				d, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman}, stack.Options{})
				before := d.Now()
				const n = 100<<10 + 3 // 2 pairs and a tail that is not a whole word
				res, err := st.Copy(stack.CopyRequest{From: from, To: to, Size: n, NC: 5, Payload: true})
				require.NoError(t, err)
				assert.True(t, res.Done)
				assert.True(t, res.Checked)
				assert.Equal(t, 3, res.Pairs, "two data pairs and the completion marker")
				assert.NotZero(t, res.TimePS)
				assert.LessOrEqual(t, res.TimePS, uint64(d.Now()-before))
			})
		}
	}
	t.Run("timing-only", func(t *testing.T) {
		_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Sunda, TimingOnly: true}, stack.Options{})
		res, err := st.Copy(stack.CopyRequest{From: stack.Device, To: stack.Host, Size: 64 << 10, Payload: true})
		require.ErrorIs(t, err, stack.ErrCopyMismatch)
		assert.True(t, res.Done, "the copy ran; its check failed")
		assert.False(t, res.Checked)
		res, err = st.Copy(stack.CopyRequest{From: stack.Device, To: stack.Host, Size: 64 << 10})
		require.NoError(t, err)
		assert.True(t, res.Done)
		assert.False(t, res.Checked)
	})
	t.Run("buffers freed", func(t *testing.T) {
		// Each side takes 12 of a channel's 16 GiB: a copy whose buffers
		// were not given back leaves no room for the next.
		_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Sunda, TimingOnly: true}, stack.Options{})
		for i := range 3 {
			res, err := st.Copy(stack.CopyRequest{From: stack.Device, To: stack.Device, Size: 12 << 30})
			require.NoError(t, err, "copy %d", i)
			assert.True(t, res.Done)
		}
	})
	t.Run("bad core", func(t *testing.T) {
		_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Sunda}, stack.Options{})
		for _, nc := range []int{-1, 2} {
			res, err := st.Copy(stack.CopyRequest{Size: 4, NC: nc})
			require.ErrorIs(t, err, stack.ErrRequest)
			assert.ErrorContains(t, err, fmt.Sprintf("core %d: the sunda has cores 0..1", nc))
			assert.False(t, res.Done)
		}
	})
}

// TestStackExec runs the shipped matmul on every generation through the
// exec flow: inputs written, outputs handed over in order, the time taken
// from the device's clock; a tile past SBUF is a TileError naming it.
func TestStackExec(t *testing.T) {
	prog, err := asm.Assemble("matmul.s", []byte(matmulProgram))
	require.NoError(t, err)
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			d, st := openStack(t, sim.DeviceConfig{Generation: g}, stack.Options{})
			w, x := pattern(128*256, 1), pattern(128*1024, 2)
			for i := 1; i < len(w); i += 2 {
				w[i] &= 0x3F // small bf16 values: no infinities
			}
			for i := 1; i < len(x); i += 2 {
				x[i] &= 0x3F
			}
			var got []int
			outs := map[int][]byte{}
			req := stack.ExecRequest{NC: 1, Program: prog,
				Inputs: []stack.Input{
					{Tile: stack.Tile{Start: 0, Count: 128, Offset: 0, Bytes: 256}, Data: w},
					{Tile: stack.Tile{Start: 0, Count: 128, Offset: 0x100, Bytes: 1024}, Data: x}},
				Outputs: []stack.Tile{{Count: 128, Offset: 0x900, Bytes: 2048}, {PSUM: true, Count: 128, Bytes: 2048}},
				Output: func(i int, b []byte) error {
					got = append(got, i)
					outs[i] = b
					return nil
				}}
			before := d.Now()
			res, err := st.Exec(req)
			require.NoError(t, err)
			assert.True(t, res.Ran)
			require.Len(t, res.Result.Engines, 2)
			assert.NotZero(t, res.TimePS)
			assert.LessOrEqual(t, res.TimePS, uint64(d.Now()-before))
			assert.Equal(t, int32(1), res.Semaphores[1], "the pe engine's signal")
			assert.Equal(t, []int{0, 1}, got)
			assert.Len(t, outs[0], 128*2048)
			// The outputs are what a runner reads back.
			back := make([]byte, 128*2048)
			require.NoError(t, st.Runner(1).ReadTile(false, 0, 128, 0x900, back))
			assert.Equal(t, back, outs[0])

			// Run again on the same device, as a served device's next
			// client would: the semaphores the program uses start from 0
			// (Runner.ClearSync); left at 1, the act engine's wait was true
			// at once and read the PSUM part-way through the pe engine's
			// work.
			first := outs
			outs, got = map[int][]byte{}, nil
			res, err = st.Exec(req)
			require.NoError(t, err)
			assert.Equal(t, int32(1), res.Semaphores[1], "the pe engine's signal, once")
			assert.Equal(t, first, outs, "the same outputs as the first run")

			stop := errors.New("sink full")
			req.Output = func(int, []byte) error { return stop }
			_, err = st.Exec(req)
			require.ErrorIs(t, err, stop, "the sink's error ends the run as it is")

			req.Inputs = append(req.Inputs, stack.Input{Tile: stack.Tile{Count: 1, Offset: 1 << 30, Bytes: 4}, Data: make([]byte, 4)})
			_, err = st.Exec(req)
			var te *stack.TileError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, stack.TileError{Index: 2, Err: te.Err}, *te)
		})
	}
}

// TestStackReopen: after a reset under it, Reopen brings the device up
// again with a new DMA layer and keeps the allocator and its allocations;
// the old layer's host word is given back, so reopening again and again
// holds no more host buffers than one open.
func TestStackReopen(t *testing.T) {
	d, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Mariana}, stack.Options{WaitReset: true})
	live := d.HostMemory().Live()
	for range 5 {
		require.NoError(t, st.Up.ResetDevice())
		require.NoError(t, st.Reopen(bringup.Options{NoReset: true}))
	}
	assert.Equal(t, live, d.HostMemory().Live(), "host buffers held after five reopens")
	mem, oldDMA, oldUp := st.Mem, st.DMA, st.Up
	res, err := st.Copy(stack.CopyRequest{From: stack.Host, To: stack.Device, Size: 4096, Payload: true})
	require.NoError(t, err)
	require.True(t, res.Checked)
	require.NoError(t, st.Up.ResetDevice())
	require.NoError(t, st.Reopen(bringup.Options{NoReset: true}))
	assert.Same(t, mem, st.Mem)
	assert.NotSame(t, oldDMA, st.DMA)
	assert.NotSame(t, oldUp, st.Up)
	assert.Same(t, st.Up, st.DMA.Device())
	res, err = st.Copy(stack.CopyRequest{From: stack.Device, To: stack.Host, Size: 4096, Payload: true})
	require.NoError(t, err)
	assert.True(t, res.Checked, "the new DMA layer copies")
}

// TestStackDVEBytesAndTimeParts: a load's TableBytes are its tables' bytes
// alone (the staged sizes; the DMA also moves the 4-byte event-accel word,
// which Bytes counts and TableBytes does not), and its device time is the
// sum of its three parts, each of them some time, on every generation and
// revision. A second load is a cache hit: no bytes, no parts.
func TestStackDVEBytesAndTimeParts(t *testing.T) {
	for _, g := range hwarch.Generations() {
		for _, r := range revisions {
			t.Run(fmt.Sprintf("%s/%s", g, r.name), func(t *testing.T) {
				_, st := openStack(t, sim.DeviceConfig{Generation: g, Revision: r.rev}, stack.Options{})
				tables, err := dve.DefaultBins(g)
				require.NoError(t, err)
				l := st.DVELoader()
				load, err := st.LoadDVE(l, 1, &tables)
				require.NoError(t, err)
				rep := load.Report
				var sizes uint64
				for _, d := range rep.Staged {
					sizes += d.Size
					assert.Equal(t, uint64(len(tables.Get(d.Name))), d.Size, d.Name)
				}
				assert.Equal(t, sizes, rep.TableBytes, "the tables' bytes alone")
				assert.Equal(t, rep.TableBytes+dve.EventAccelBytes, rep.Bytes, "the DMA moves the event-accel word too")
				assert.NotZero(t, rep.StagePS)
				assert.NotZero(t, rep.StartPS)
				assert.NotZero(t, rep.WaitPS)
				assert.Equal(t, load.TimePS, rep.StagePS+rep.StartPS+rep.WaitPS, "the parts make the whole")

				again, err := st.LoadDVE(l, 1, &tables)
				require.NoError(t, err)
				assert.True(t, again.Report.CacheHit)
				assert.Zero(t, again.Report.TableBytes+again.Report.StagePS+again.Report.StartPS+again.Report.WaitPS)
			})
		}
	}
}

// TestStackDVE loads the default tables through the stack and reads them
// back; a table changed after the load is seen as a mismatch.
func TestStackDVE(t *testing.T) {
	_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman}, stack.Options{})
	tables, err := dve.DefaultBins(hwarch.Cayman)
	require.NoError(t, err)
	l := st.DVELoader()
	load, err := st.LoadDVE(l, 3, &tables)
	require.NoError(t, err)
	assert.NotZero(t, load.TimePS)
	assert.NotEmpty(t, load.Report.Staged)
	ok, err := st.VerifyDVE(3, load.Report, &tables)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = st.VerifyDVE(4, load.Report, &tables)
	require.NoError(t, err)
	assert.False(t, ok, "another core holds no tables")
	_, err = st.LoadDVE(l, 8, &tables)
	require.ErrorIs(t, err, stack.ErrRequest)
}

// TestCopyBatchesAsTheDriver: a copy's batches are the driver's: the pair
// added when sync_threshold = 4096/2 − 16 − 1 = 2031 data pairs are pending
// ends the batch, so a batch holds up to 2032 data pairs of 64 KiB and its
// completion pair (driver 2.24.7.0 neuron_dma.c:311,329-359). They once
// held 2030 data pairs, so a copy of 2031 or 2032 × 64 KiB took two
// batches and two markers where the driver rings one. CopyMany batches
// its transfers the same way.
func TestCopyBatchesAsTheDriver(t *testing.T) {
	const chunk = 64 << 10
	for _, tc := range []struct {
		name    string
		n       uint64
		pairs   int
		batches uint64
	}{
		{"one pair", 4096, 2, 1},
		{"2030 chunks", 2030 * chunk, 2031, 1},
		{"2031 chunks", 2031 * chunk, 2032, 1},
		{"2032 chunks: a full batch", 2032 * chunk, 2033, 1},
		{"2032 chunks and a byte", 2032*chunk + 1, 2035, 2},
		{"4064 chunks: two full batches", 4064 * chunk, 4066, 2},
		{"4 GiB", 4 << 30, 65536 + 33, 33},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman, TimingOnly: true}, stack.Options{})
			assert.Equal(t, tc.batches, dma.CopyBatches(tc.n))
			res, err := st.Copy(stack.CopyRequest{From: stack.Device, To: stack.Device, Size: tc.n})
			require.NoError(t, err)
			assert.Equal(t, tc.pairs, res.Pairs, "data pairs and one completion pair a batch")
		})
	}
	t.Run("CopyMany", func(t *testing.T) {
		for _, tc := range []struct {
			transfers, pairs int
		}{{2031, 2032}, {2032, 2033}, {2033, 2035}, {4064, 4066}} {
			_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman, TimingOnly: true}, stack.Options{})
			var addr [2]uint64
			for i := range addr {
				h, err := st.Mem.Alloc(dmem.Request{Size: uint64(tc.transfers) * chunk, Channel: dmem.Any, Name: "copy many"})
				require.NoError(t, err)
				b, err := st.Mem.Info(h)
				require.NoError(t, err)
				addr[i] = b.Addr
			}
			ts := make([]dma.Transfer, tc.transfers)
			for i := range ts {
				ts[i] = dma.Transfer{Src: addr[0] + uint64(i)*chunk, Dst: addr[1] + uint64(i)*chunk, Len: chunk}
			}
			pairs, err := st.DMA.CopyMany(0, ts)
			require.NoError(t, err)
			assert.Equal(t, tc.pairs, pairs, "%d transfers of 64 KiB", tc.transfers)
		}
	})
}

// TestStackCopyTimeParts: a copy's device time holds the opening of the
// core's H2T queue on its first use (QueuePS: its register writes over
// MMIO, 12 of them) and nothing of it after; the rest is the same for the
// same copy.
func TestStackCopyTimeParts(t *testing.T) {
	for _, tc := range []struct {
		g     hwarch.Generation
		write sim.Time // the MMIO write latency
	}{{hwarch.Sunda, 120 * sim.Nanosecond}, {hwarch.Cayman, 100 * sim.Nanosecond}, {hwarch.Mariana, 100 * sim.Nanosecond}} {
		t.Run(tc.g.String(), func(t *testing.T) {
			_, st := openStack(t, sim.DeviceConfig{Generation: tc.g}, stack.Options{})
			req := stack.CopyRequest{From: stack.Host, To: stack.Device, Size: 1 << 20, NC: 1, Payload: true}
			first, err := st.Copy(req)
			require.NoError(t, err)
			assert.Equal(t, uint64(12*tc.write), first.QueuePS, "the engine's 2 and each half's 5 queue registers")
			again, err := st.Copy(req)
			require.NoError(t, err)
			assert.Zero(t, again.QueuePS, "the queue is open")
			assert.Equal(t, first.TimePS-first.QueuePS, again.TimePS)
		})
	}
}

// TestTimingOnlyMovesWhatItSays pins what a timing-only device moves, as
// dma copy's help and docs/timing-model.md say: a transfer from host memory
// carries its bytes (staging must arrive), one from device memory does not
// (longer than dma.ControlBytes), whatever the destination; the copy's time
// is the functional one's.
func TestTimingOnlyMovesWhatItSays(t *testing.T) {
	for _, tc := range []struct {
		from, to stack.Side
		moves    bool
	}{
		{stack.Host, stack.Device, true}, {stack.Host, stack.Host, true},
		{stack.Device, stack.Device, false}, {stack.Device, stack.Host, false},
	} {
		t.Run(fmt.Sprintf("%s-%s", tc.from, tc.to), func(t *testing.T) {
			req := stack.CopyRequest{From: tc.from, To: tc.to, Size: 64<<10 + 8, Payload: true}
			_, fn := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman}, stack.Options{})
			want, err := fn.Copy(req)
			require.NoError(t, err)
			_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman, TimingOnly: true}, stack.Options{})
			res, err := st.Copy(req)
			if tc.moves {
				require.NoError(t, err, "the bytes arrived")
				assert.True(t, res.Checked)
			} else {
				require.ErrorIs(t, err, stack.ErrCopyMismatch, "nothing arrived")
			}
			assert.Equal(t, want.TimePS, res.TimePS, "the same device time")
		})
	}
}

// TestRunnerClearSync: before it starts a program, the runner sets to 0
// the semaphores and events the program's records wait on or signal, and
// leaves the others as an earlier run left them.
func TestRunnerClearSync(t *testing.T) {
	const src = ".engine pe\nnop signal=sem_incr(1,1)\nnop wait=event(3) last\n.engine act\nnop wait=sem_ge(1,1) signal=event_set(3) last\n"
	prog, err := asm.Assemble("sync.s", []byte(src))
	require.NoError(t, err)
	_, st := openStack(t, sim.DeviceConfig{Generation: hwarch.Cayman}, stack.Options{})
	r := st.Runner(2)
	bar := st.Up.Geometry.BAR0
	win := bar.TPBWindow(2)
	word := func(bank uint64, i int) uint64 { return st.Up.VA(win + bank + 4*uint64(i)) }
	for _, w := range []struct {
		bank uint64
		i    int
		v    uint32
	}{{bar.SemSetOffset, 1, 7}, {bar.SemSetOffset, 200, 5}, {bar.EventsOffset, 3, 1}, {bar.EventsOffset, 4, 1}} {
		require.NoError(t, st.Up.CSR.Write(word(w.bank, w.i), w.v))
	}
	blocks, err := r.Load(prog)
	require.NoError(t, err)
	require.NoError(t, r.ClearSync(blocks))
	sems, err := r.Semaphores()
	require.NoError(t, err)
	assert.Equal(t, int32(0), sems[1], "used: cleared")
	assert.Equal(t, int32(5), sems[200], "not used: left")
	for _, e := range []struct {
		i    int
		want uint32
	}{{3, 0}, {4, 1}} {
		v, err := st.Up.CSR.Read(word(bar.EventsOffset, e.i))
		require.NoError(t, err)
		assert.Equal(t, e.want, v, "event %d", e.i)
	}
	require.NoError(t, r.Start(blocks))
	res, err := r.Wait(blocks)
	require.NoError(t, err)
	require.NoError(t, r.Unload(blocks))
	assert.Len(t, res.Engines, 2)
	sems, err = r.Semaphores()
	require.NoError(t, err)
	assert.Equal(t, int32(1), sems[1])
}
