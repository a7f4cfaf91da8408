package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/runtime/stack"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// serveSpec serves the system of a --system spec on a unix socket in a
// temporary directory and returns its address once it takes connections,
// with serve's standard output.
func serveSpec(t *testing.T, spec string) (string, *syncBuffer) {
	t.Helper()
	addr := "unix:" + filepath.Join(t.TempDir(), "ns.sock")
	out, _, _ := serveInProcess(t, "--listen", addr, "--system", spec)
	waitRemote(t, addr)
	return addr, out
}

// TestServedListingIsTheLocalOne: `ls --remote` of a served system lists
// exactly what the local `ls` lists for the same spec — connected devices
// included — for a ring, a chain and a NeuronSwitch-v1 system; and serve
// says it serves one system and its fabric.
func TestServedListingIsTheLocalOne(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		args   []string
		fabric string
	}{
		{"arch=trn2,devices=2", []string{"--arch", "trn2", "--devices", "2"}, "ring"},
		{"arch=inf2,devices=6", []string{"--arch", "inf2", "--devices", "6"}, "chain"},
		{"arch=mariana,devices=3,revision=emu", []string{"--arch", "mariana", "--devices", "3", "--revision", "emu"}, "switch"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			addr, out := serveSpec(t, tc.spec)
			local, err := runCLI(t, append([]string{"ls", "--json"}, tc.args...)...)
			require.NoError(t, err)
			served, err := runCLI(t, "ls", "--json", "--remote", addr)
			require.NoError(t, err)
			assert.JSONEq(t, local, served, "the served system's listing is the local one of the same spec")
			assert.Contains(t, served, `"connected_to"`)
			assert.Contains(t, out.String(), "as one system, fabric "+tc.fabric+",")
		})
	}
}

// TestServedConnectedListsAreTheFabrics: the connected devices a served
// system lists are the driver's table, and the fabric backs every one:
// on the ring and the chain they are exactly each device's links, on the
// NeuronSwitch-v1 fabric devices it reaches through the switches. A list
// that claims a link the fabric lacks, or leaves one out, is refused.
func TestServedConnectedListsAreTheFabrics(t *testing.T) {
	for _, spec := range []systemSpec{
		{Gen: hwarch.Cayman, DeviceID: hwarch.DeviceTrn2, Devices: 2},
		{Gen: hwarch.Cayman, DeviceID: hwarch.DeviceTrn2, Devices: 16},
		{Gen: hwarch.Sunda, DeviceID: hwarch.DeviceInf2, Devices: 6},
		{Gen: hwarch.Sunda, DeviceID: hwarch.DeviceTrn1, Devices: 1},
		{Gen: hwarch.Mariana, DeviceID: hwarch.DeviceTrn3, Devices: 32, Switch: hwarch.SwitchV1},
	} {
		sys, err := newServedSystem(spec, 1<<20, nil)
		require.NoError(t, err, "%+v", spec)
		want, err := driverConnected(spec.Devices)
		require.NoError(t, err)
		assert.Equal(t, want, sys.Connected, "%+v", spec)
	}
	ring, err := fabric.Build(fabric.KindRing, hwarch.Cayman, 4, fabric.DefaultParams(hwarch.Cayman))
	require.NoError(t, err)
	err = checkListedLinks(ring, [][]int{{1, 2}, {0, 2}, {1, 3}, {2, 0}})
	assert.ErrorContains(t, err, "device 0 is listed as connected to device 2, but the ring fabric has no link between them")
	err = checkListedLinks(ring, [][]int{{1}, {0, 2}, {1, 3}, {2, 0}})
	assert.ErrorContains(t, err, "the ring fabric links device 0 to device 3, which its connected list [1] leaves out")
}

// TestServeSwitchPicksTheFabric: serve's switch family is the fabric's: a
// family that contradicts the fabric served is refused, naming the flag,
// on both serve paths.
func TestServeSwitchPicksTheFabric(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "unix:/nonexistent/x", "--arch", "mariana", "--switch", "none", "--devices", "2"},
			"--switch none: a served mariana system of 2 devices is the switch fabric, whose devices meet on NeuronSwitch-v1"},
		{[]string{"--listen", "unix:/nonexistent/x", "--system", "arch=trn3,switch=none"},
			"--system switch none: a served mariana system of 1 devices is the switch fabric"},
		{[]string{"--vfio-user", filepath.Join(t.TempDir(), "v"), "--arch", "mariana", "--switch", "none"},
			"--switch none: a served mariana system"},
	} {
		_, err := runCLI(t, append([]string{"serve"}, tc.args...)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// openServedStacks dials a served system and opens the runtime's stack
// (bring-up without reset, DMA layer) of each of its devices, through one
// connection.
func openServedStacks(t *testing.T, addr string) []*stack.Stack {
	t.Helper()
	c, err := remote.Dial(addr, remote.ClientOptions{Timeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	var sts []*stack.Stack
	for _, info := range c.Devices() {
		d, err := c.Device(info.Index)
		require.NoError(t, err)
		st, err := stack.Open(d, stack.Options{BringUp: bringup.Options{NoReset: true, Table: csr.NewTable(0)}})
		require.NoError(t, err, "device %d", info.Index)
		sts = append(sts, st)
	}
	return sts
}

// TestServedSystemCopiesAcrossDevices: a client's DMA on device 0 of a
// served system into device 1's memory — through the fabric window
// (hwarch.FabricAddress), as the runtime's collectives reach a device
// that is not a neighbour — lands the bytes in device 1's HBM, on a ring
// and on a NeuronSwitch-v1 fabric, and the copy takes time on the
// system's one clock, which device 1 reads too.
func TestServedSystemCopiesAcrossDevices(t *testing.T) {
	for _, spec := range []string{"arch=trn2,devices=2", "arch=trn3,devices=2"} {
		t.Run(spec, func(t *testing.T) {
			addr, _ := serveSpec(t, spec)
			sts := openServedStacks(t, addr)
			require.Len(t, sts, 2)
			geo := sts[0].Up.Geometry
			const n = 64*1024 + 8
			src, at := geo.HBM[0].Base+16*hwarch.MiB, geo.HBM[0].Base+32*hwarch.MiB
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(i*7 + 3)
			}
			require.NoError(t, sts[0].DMA.WriteDevice(src, data))
			far, err := hwarch.FabricAddress(1, at)
			require.NoError(t, err)
			clock1 := sts[1].Up.Dev.(interface{ ClockPS() (uint64, error) })
			before, err := clock1.ClockPS()
			require.NoError(t, err)
			_, err = sts[0].DMA.Copy(0, far, src, n)
			require.NoError(t, err, "device 0 → device 1 over the fabric")
			sl := sts[1].Up.Dev.(interface{ Sleep(time.Duration) error })
			require.NoError(t, sl.Sleep(100*time.Microsecond), "time for the last chunk to land")
			got := make([]byte, n)
			require.NoError(t, sts[1].DMA.ReadDevice(at, got))
			require.True(t, bytes.Equal(data, got), "device 1 holds the bytes device 0's DMA sent")
			after, err := clock1.ClockPS()
			require.NoError(t, err)
			assert.Greater(t, after, before+100_000_000, "device 1's clock moved with device 0's copy and its own sleep: one clock")
			local := make([]byte, n)
			require.NoError(t, sts[0].DMA.ReadDevice(at, local))
			assert.False(t, bytes.Equal(data, local), "the bytes landed on device 1, not device 0")
		})
	}
}

// TestServedSystemConcurrentClients: two clients, each on its own device
// of one served system, bring their device up and copy through its DMA at
// once (run under -race, the serve tests' race build): each copy lands,
// and neither client ever reads the system's clock go back, on either
// device.
func TestServedSystemConcurrentClients(t *testing.T) {
	addr, _ := serveSpec(t, "arch=trn2,devices=2")
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for dev := range 2 {
		wg.Go(func() {
			errs <- servedClientWork(addr, dev)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

// servedClientWork is one client of TestServedSystemConcurrentClients:
// its own connection, its device brought up, local copies checked, and
// the clock of both devices read after each, never going back.
func servedClientWork(addr string, dev int) error {
	c, err := remote.Dial(addr, remote.ClientOptions{Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := c.Device(dev)
	if err != nil {
		return err
	}
	other, err := c.Device(1 - dev)
	if err != nil {
		return err
	}
	st, err := stack.Open(d, stack.Options{BringUp: bringup.Options{NoReset: true, Table: csr.NewTable(0)}})
	if err != nil {
		return fmt.Errorf("device %d: %w", dev, err)
	}
	geo := st.Up.Geometry
	var last uint64
	for i := range 6 {
		n := uint64(4096 * (i + 1))
		src, dst := geo.HBM[0].Base+16*hwarch.MiB, geo.HBM[0].Base+48*hwarch.MiB
		data := bytes.Repeat([]byte{byte(dev*16 + i + 1)}, int(n))
		if err := st.DMA.WriteDevice(src, data); err != nil {
			return err
		}
		if _, err := st.DMA.Copy(i%geo.NeuronCores, dst, src, n); err != nil {
			return fmt.Errorf("device %d copy %d: %w", dev, i, err)
		}
		got := make([]byte, n)
		if err := st.DMA.ReadDevice(dst, got); err != nil {
			return err
		}
		if !bytes.Equal(data, got) {
			return fmt.Errorf("device %d copy %d: the destination does not hold the source", dev, i)
		}
		for _, x := range []*remote.Device{d, other} {
			ps, err := x.ClockPS()
			if err != nil {
				return err
			}
			if ps < last {
				return fmt.Errorf("device %d: CLOCK %d ps after %d ps", dev, ps, last)
			}
			last = ps
		}
	}
	return nil
}

// TestServeHelpSaysOneSystem: serve's help says what --listen serves.
func TestServeHelpSaysOneSystem(t *testing.T) {
	out, err := runCLI(t, "serve", "--help")
	require.NoError(t, err)
	assert.True(t, strings.Contains(out, "The devices are one system, with --listen as with --vfio-user"), out)
}

// TestServedExportsShareOneLock: the remote exports of a served system
// share one export lock (remote.Export.Lock), since their devices share
// one engine, and list the system's connected devices.
func TestServedExportsShareOneLock(t *testing.T) {
	sys, err := newServedSystem(systemSpec{Gen: hwarch.Cayman, DeviceID: hwarch.DeviceTrn2, Devices: 4}, 1<<20, nil)
	require.NoError(t, err)
	exports := remoteExports(sys)
	require.Len(t, exports, 4)
	for i, e := range exports {
		require.NotNil(t, e.Lock, "export %d", i)
		assert.Same(t, exports[0].Lock, e.Lock, "export %d", i)
		assert.Equal(t, sys.Connected[i], e.Connected, "export %d", i)
		assert.Same(t, sys.Device(i), e.Device, "export %d", i)
	}
}
