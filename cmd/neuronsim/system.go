package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/csr"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/sim"
)

// systemFlags are the flags every command that builds a simulated system
// takes: --arch, --devices, --switch, --revision.
type systemFlags struct {
	gen      hwarch.Generation
	device   uint16 // the PCI device id when --arch named a product (inf2: 0x7264); 0: the generation's first
	devices  devicesValue
	family   hwarch.SwitchFamily
	revision string
	cmd      *cobra.Command
	// switchName names the switch in errors when not --switch: "--system
	// switch", the key of serve's --system spec.
	switchName string
}

// addSystemFlags registers the shared flags on cmd.
func addSystemFlags(cmd *cobra.Command) *systemFlags {
	f := &systemFlags{gen: defaultArch, family: hwarch.SwitchNone, revision: "silicon", cmd: cmd}
	cmd.Flags().Var(archValue{&f.gen, &f.device, new(string)}, "arch", "generation: sunda|cayman|mariana, v2|v3|v4, trn1|inf2|trn2|trn3 or 2|3|4 (a product word also sets the PCI device id: inf2 is 0x7264)")
	cmd.Flags().Var(&f.devices, "devices", "number of devices of the system: 1..get_max_devs of the generation and switch (32 for mariana with switch v1, 16 otherwise) (default 1)")
	addSwitchFlag(cmd, &f.family)
	cmd.Flags().StringVar(&f.revision, "revision", "silicon", "PCI revision: silicon|emu|qemu|0xNN (0xF0 is EMU, 0xFF is QEMU)")
	return f
}

// archValue is an --arch flag: the generation, and the PCI device id when
// the word names a product (trn1, inf2, trn2, trn3: inf2 is 0x7264, a sunda
// device of its own); 0 for a generation word (the generation's first id).
// Every command that builds a system takes it (systemFlags, fabricFlags).
// Given, its String is the word as typed, so that an error quotes it.
type archValue struct {
	gen    *hwarch.Generation
	device *uint16
	text   *string // the word given; "" while unset
}

// Set implements pflag.Value.
func (a archValue) Set(s string) error {
	if err := a.gen.Set(s); err != nil {
		return err
	}
	*a.device, _ = hwarch.DeviceOfProduct(s)
	*a.text = s
	return nil
}

func (a archValue) String() string {
	switch {
	case a.gen == nil:
		return ""
	case *a.text != "":
		return *a.text
	}
	return a.gen.String()
}

// Type implements pflag.Value.
func (a archValue) Type() string { return "arch" }

// switchUsage is the help of every --switch flag. Its default is
// hwarch.DefaultSwitchFamily, which depends on --arch.
const switchUsage = "NeuronSwitch family: v1|none (default v1 for mariana, none otherwise)"

// addSwitchFlag registers --switch on cmd with p as its value, a
// switchValue, so that the help states the default once (switchUsage).
func addSwitchFlag(cmd *cobra.Command, p *hwarch.SwitchFamily) {
	cmd.Flags().Var(&switchValue{f: p}, "switch", switchUsage)
}

// switchFor is the switch family of a command's system: --switch when it
// was given, otherwise the generation's default (hwarch.DefaultSwitchFamily,
// the rule scenario files follow too). A family given that is not gen's
// default and changes nothing on it (no NeuronSwitch-v1 on sunda or
// cayman) is refused (rtarch.CheckSwitch, as a scenario's and a grid's
// switch are), naming the flag: name, or "--switch" when name is "".
func switchFor(cmd *cobra.Command, name string, family hwarch.SwitchFamily, gen hwarch.Generation) (hwarch.SwitchFamily, error) {
	if !cmd.Flags().Changed("switch") {
		return hwarch.DefaultSwitchFamily(gen), nil
	}
	if name == "" {
		name = "--switch"
	}
	if err := rtarch.CheckSwitch(gen, family); err != nil {
		return 0, fmt.Errorf("%s %s: %w", name, family, err)
	}
	return family, nil
}

// systemSpec is a validated system description.
type systemSpec struct {
	Gen      hwarch.Generation
	DeviceID uint16 // PCI device id of every device
	Devices  int
	Switch   hwarch.SwitchFamily
	Revision uint8
}

// product names the product the devices are, by their PCI device id (Trn1,
// Inf2, Trn2, Trn3), as ls --json's neuronsim_product does: sunda is Trn1
// or Inf2, never both.
func (s systemSpec) product() string { return hwarch.ProductOfDevice(s.DeviceID) }

// spec validates the flags. The device count is bounded by the runtime's
// get_max_devs for the generation and switch family.
func (f *systemFlags) spec() (systemSpec, error) {
	s := systemSpec{Gen: f.gen}
	var err error
	if s.Switch, err = switchFor(f.cmd, f.switchName, f.family, f.gen); err != nil {
		return s, err
	}
	rev, err := hwarch.ParseRevision(f.revision)
	if err != nil {
		return s, fmt.Errorf("--revision: %w", err)
	}
	s.Revision = rev
	if s.DeviceID = f.device; s.DeviceID == 0 {
		if s.DeviceID, err = hwarch.DefaultDeviceID(s.Gen); err != nil {
			return s, fmt.Errorf("--arch: %w", err)
		}
	}
	t, err := rtarch.For(s.Gen, rtarch.Options{Switch: s.Switch})
	if err != nil {
		return s, fmt.Errorf("--arch: %w", err)
	}
	counts, err := f.devices.resolve(1, t.Soc, false, false)
	if err != nil {
		return s, err
	}
	s.Devices = counts[0]
	return s, nil
}

// given names the system flags given on the command line, for a command
// that then works on a system it does not build (--remote, --kernel) and
// must not ignore them.
func (f *systemFlags) given() []string {
	var names []string
	for _, n := range []string{"arch", "devices", "switch", "revision"} {
		if f.cmd.Flags().Changed(n) {
			names = append(names, "--"+n)
		}
	}
	return names
}

// notWith refuses system flags given together with a target (--remote or
// --kernel) whose system is not built from them.
func (f *systemFlags) notWith(target string) error {
	if g := f.given(); len(g) > 0 {
		verb := "describe"
		if len(g) == 1 {
			verb = "describes"
		}
		return fmt.Errorf("%s %s a fresh simulated system; with %s the system is the one already there", strings.Join(g, ", "), verb, target)
	}
	return nil
}

// parseSystemSpec reads a compact spec "arch=mariana,devices=32,switch=v1,revision=emu"
// into the flags (the serve command's --system).
func (f *systemFlags) parseSystemSpec(spec string) error {
	seen := map[string]bool{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return fmt.Errorf("--system %q: %q is not key=value (keys: arch, devices, switch, revision)", spec, kv)
		}
		if seen[k] {
			return fmt.Errorf("--system %q: the key %s is given twice", spec, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "arch":
			err = archValue{&f.gen, &f.device, new(string)}.Set(v)
		case "devices":
			f.devices.counts, f.devices.texts, err = parseDeviceCounts("--system devices", v, false)
			f.devices.text, f.devices.field = v, "--system devices"
		case "switch":
			err = f.family.Set(v)
			f.cmd.Flags().Lookup("switch").Changed = true
			f.switchName = "--system switch"
		case "revision":
			f.revision = v
		default:
			err = fmt.Errorf("unknown key %q (keys: arch, devices, switch, revision)", k)
		}
		var ue *units.Error
		if errors.As(err, &ue) {
			return err // it names the key
		}
		if err != nil {
			return fmt.Errorf("--system %q: %w", spec, err)
		}
	}
	return nil
}

// simDevice is one device of a built system with its place in it.
type simDevice struct {
	Index     int // device index (/dev/neuronN)
	Dev       *sim.Device
	Connected []int
}

// buildSystem powers on the devices of a spec, each a device alone (its own
// clock, no fabric: the local ls and csr commands, which touch one device
// at a time), listed with the driver's connected devices
// (driverConnected). Device index i gets the routing id the driver maps to
// index i. serve builds one fabric.System instead (newServedSystem).
func buildSystem(s systemSpec) ([]simDevice, error) {
	devID := s.DeviceID
	out := make([]simDevice, s.Devices)
	conn, err := driverConnected(s.Devices)
	if err != nil {
		return nil, err
	}
	for i := range out {
		rid, err := hwarch.RoutingIDOfDeviceIndex(devID, i)
		if err != nil {
			return nil, err
		}
		d, err := sim.NewDevice(sim.DeviceConfig{
			Name: fmt.Sprintf("neuron%d", i), Generation: s.Gen, DeviceID: devID,
			Revision: s.Revision, RoutingID: uint32(rid),
		})
		if err != nil {
			return nil, err
		}
		out[i] = simDevice{Index: i, Dev: d, Connected: conn[i]}
	}
	return out, nil
}

// broughtUp is a device the runtime has brought up, with its listing facts.
type broughtUp struct {
	Index     int
	Up        *bringup.Device
	Connected []int
	BDF       string // the device's PCI address when its backend knows it (the kernel driver's), else ""
}

// bringUpAll brings every device up with one arch selection. Each device
// gets its own region table: a runtime process's table holds 672 regions,
// which is 16 devices of 42 windows (V3/V4), and a listing is not one
// runtime process.
func bringUpAll(devs []ndl.Device, connected [][]int, indices []int, s hwarch.SwitchFamily, noReset bool) ([]broughtUp, error) {
	var dispatch rtarch.Dispatch
	out := make([]broughtUp, len(devs))
	for i, dev := range devs {
		d, err := openRegisters(dev, bringup.Options{Switch: s, Dispatch: &dispatch, Table: csr.NewTable(0), NoReset: noReset})
		if err != nil {
			return nil, fmt.Errorf("device %d: %w", indices[i], err)
		}
		out[i] = broughtUp{Index: indices[i], Up: d, Connected: connected[i]}
		if b, ok := dev.(interface{ BDF() string }); ok {
			out[i].BDF = b.BDF()
		}
	}
	return out, nil
}
