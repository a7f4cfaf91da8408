package main

import (
	"fmt"
	"slices"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// servedSystem is the system `neuronsim serve` serves, over the remote
// protocol (--listen) or vfio-user (--vfio-user): one fabric.System — one
// event engine and virtual clock, one lock, the fabric between its
// devices — with the connected devices each device is listed with.
type servedSystem struct {
	*fabric.System
	// Connected holds, per device index, the devices the driver's table
	// reports it connected to (driverConnected: what the local `ls` lists
	// for the same spec), each checked against the fabric's links
	// (checkListedLinks).
	Connected [][]int
}

// servedSpec is spec for a system serve serves: the spec, and the switch
// family checked against the fabric serve builds. The fabric of a system
// is the one a real system of that shape has (fabric.AutoKind, as for
// fabric.New); a switch family that contradicts it — --switch none on
// mariana, whose devices have no direct links and meet only on
// NeuronSwitch-v1 — is refused naming the flag, rather than served as a
// system it does not describe.
func (f *systemFlags) servedSpec() (systemSpec, error) {
	s, err := f.spec()
	if err != nil {
		return s, err
	}
	name := f.switchName
	if name == "" {
		name = "--switch"
	}
	kind := fabric.AutoKind(s.Gen, s.Devices)
	switch {
	case kind.HasSwitches() && s.Switch != hwarch.SwitchV1:
		return s, fmt.Errorf("%s %s: a served %s system of %d devices is the %s fabric, whose devices meet on NeuronSwitch-v1 (a %s device has no direct links, and no other fabric of it is modelled); leave the switch out, or give v1",
			name, s.Switch, s.Gen, s.Devices, kind, s.Gen)
	case !kind.HasSwitches() && s.Switch == hwarch.SwitchV1:
		return s, fmt.Errorf("%s %s: a served %s system of %d devices is the %s fabric, which has no NeuronSwitch; leave the switch out, or give none",
			name, s.Switch, s.Gen, s.Devices, kind)
	}
	return s, nil
}

// newServedSystem builds the system serve serves, whatever it serves it
// over: fabric.New of the spec's devices on the fabric a real system of
// that shape has (fabric.AutoKind), with the parameters the fabric
// commands give it (cluster.DefaultParamsOf: the device's links, and the
// runtime's fabric constants of the spec's switch family), every device
// under the one page budget of --max-memory (pageLimit pages). ports,
// when not nil, gives each device its own host port (vfio-user: its
// guest's memory); nil, the devices share the system's host memory (one
// host-memory allocator). The connected devices listed for each device
// are the driver's table (driverConnected, as the local `ls` lists them),
// refused if the fabric built does not back them (checkListedLinks).
func newServedSystem(s systemSpec, pageLimit int64, ports []sim.HostPort) (*servedSystem, error) {
	tables, err := rtarch.For(s.Gen, rtarch.Options{Switch: s.Switch})
	if err != nil {
		return nil, fmt.Errorf("served system: %w", err)
	}
	p := cluster.DefaultParamsOf(s.Gen, s.DeviceID, tables)
	sys, err := fabric.New(fabric.Config{
		Generation: s.Gen, DeviceID: s.DeviceID, Devices: s.Devices, Revision: s.Revision,
		Kind: fabric.AutoKind(s.Gen, s.Devices), Params: &p, HostPorts: ports,
	})
	if err != nil {
		return nil, fmt.Errorf("served system: %w", err)
	}
	budget, err := sim.NewPageBudget(pageLimit)
	if err != nil {
		return nil, err
	}
	for _, d := range sys.Devices() {
		if err := d.SetPageBudget(budget); err != nil {
			return nil, err
		}
	}
	conn, err := driverConnected(s.Devices)
	if err != nil {
		return nil, err
	}
	if err := checkListedLinks(sys.Topology(), conn); err != nil {
		return nil, err
	}
	return &servedSystem{System: sys, Connected: conn}, nil
}

// driverConnected returns, for each device index of a system of n
// devices, the devices the driver's table reports it connected to
// (hwarch.ConnectedDevices: DEVICE_INFO's connected_devices, a chain for
// 6 devices). The local `ls` lists these, and serve serves them.
func driverConnected(n int) ([][]int, error) {
	out := make([][]int, n)
	for i := range out {
		c, err := hwarch.ConnectedDevices(n, i, hwarch.ChainTable(n))
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// checkListedLinks checks that the connected devices listed (conn, by
// device index) are what the fabric topo has: on a fabric without
// switches, exactly the devices each device has a link of its own to; on
// a switched one (NeuronSwitch-v1), devices it reaches over the fabric
// (through the switches: its devices have no direct links). A listing
// that claimed a link the fabric lacks, or left out one it has, is
// refused, naming the device and the peer.
func checkListedLinks(topo *fabric.Topology, conn [][]int) error {
	if len(conn) != topo.Devices {
		return fmt.Errorf("served system: %d connected lists for the %d devices of the %s fabric", len(conn), topo.Devices, topo.Kind)
	}
	for d, listed := range conn {
		if topo.Kind.HasSwitches() {
			for _, peer := range listed {
				if _, err := topo.Path(d, peer); err != nil {
					return fmt.Errorf("served system: device %d is listed as connected to device %d, which the %s fabric does not reach from it: %w", d, peer, topo.Kind, err)
				}
			}
			continue
		}
		var linked []int
		for _, id := range topo.Nodes[d].Ports {
			if to := topo.Links[id].To; to < topo.Devices && !slices.Contains(linked, to) {
				linked = append(linked, to)
			}
		}
		for _, peer := range listed {
			if !slices.Contains(linked, peer) {
				return fmt.Errorf("served system: device %d is listed as connected to device %d, but the %s fabric has no link between them (its links go to %v)", d, peer, topo.Kind, linked)
			}
		}
		for _, peer := range linked {
			if !slices.Contains(listed, peer) {
				return fmt.Errorf("served system: the %s fabric links device %d to device %d, which its connected list %v leaves out", topo.Kind, d, peer, listed)
			}
		}
	}
	return nil
}
