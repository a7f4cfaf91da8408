package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

func newLsCommand() *cobra.Command {
	var asJSON bool
	var remoteAddr, kernelPath string
	cmd := &cobra.Command{
		Use:   "ls [system flags] [--json] | ls --remote ADDR [--json] | ls --kernel PATH|auto [--json]",
		Short: "List the devices of a simulated, remote or kernel-driven system, shaped like neuron-ls",
		Long: "ls brings every device up through the runtime (without resetting it) and lists it as\n" +
			"neuron-ls does: device index, NeuronCores, their ids, device memory, connected devices and\n" +
			"PCI BDF. The BDF of a simulated device is synthetic (bus = 0x10 + index); a kernel\n" +
			"device's is the driver's (NEURON_IOCTL_DEVICE_BDF), and its device id is read from sysfs.\n" +
			"With --kernel it lists devices through the Neuron kernel driver: one /dev/neuronN, or\n" +
			"with \"auto\" every /dev/neuron* there is; the connected devices are the driver's\n" +
			"(NEURON_IOCTL_DEVICE_INFO).",
		Example: "  neuronsim ls --arch trn2 --devices 16\n" +
			"  neuronsim ls --arch mariana --revision qemu --json\n" +
			"  neuronsim ls --remote unix:/tmp/neuronsim.sock\n" +
			"  neuronsim ls --kernel /dev/neuron0",
		Args: cobra.NoArgs,
	}
	sf := addSystemFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON with the neuron-ls field names")
	cmd.Flags().StringVar(&remoteAddr, "remote", "", "list the devices that neuronsim serve exports at `ADDR` (unix:PATH or tcp:HOST:PORT)")
	cmd.Flags().StringVar(&kernelPath, "kernel", "", "list devices through the kernel driver: a /dev/neuronN `PATH`, or \"auto\" for every /dev/neuron*")
	cmd.MarkFlagsMutuallyExclusive("remote", "kernel")
	refuseEmptyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		devs, header, done, err := lsDevices(sf, kernelPath, remoteAddr)
		if err != nil {
			return err
		}
		defer done()
		if asJSON {
			return writeLsJSON(cmd.OutOrStdout(), devs)
		}
		return writeLsTable(cmd.OutOrStdout(), header, devs)
	}
	return cmd
}

// lsDevices brings up, without resetting them, the devices ls lists: the
// kernel driver's (--kernel), a served system's (--remote) or a fresh
// simulated system's; with the listing's header and the function that
// lets the devices go.
func lsDevices(sf *systemFlags, kernelPath, remoteAddr string) ([]broughtUp, string, func(), error) {
	switch {
	case kernelPath != "":
		if err := sf.notWith("--kernel"); err != nil {
			return nil, "", nil, err
		}
		sys, err := openKernelSystem(kernelPath)
		if err != nil {
			return nil, "", nil, err
		}
		devs, err := sys.bringUp(sys.close)
		if err != nil {
			return nil, "", nil, err
		}
		return devs, "kernel driver, " + strings.Join(sys.paths, " "), sys.close, nil
	case remoteAddr != "":
		if err := sf.notWith("--remote"); err != nil {
			return nil, "", nil, err
		}
		sys, err := openRemoteSystem(remoteAddr)
		if err != nil {
			return nil, "", nil, err
		}
		devs, err := sys.bringUp(sys.close)
		if err != nil {
			return nil, "", nil, err
		}
		return devs, "remote " + remoteAddr, sys.close, nil
	}
	s, err := sf.spec()
	if err != nil {
		return nil, "", nil, err
	}
	sys, err := buildSystem(s)
	if err != nil {
		return nil, "", nil, err
	}
	nd := make([]ndl.Device, len(sys))
	conn := make([][]int, len(sys))
	idx := make([]int, len(sys))
	for i, d := range sys {
		nd[i], conn[i], idx[i] = d.Dev, d.Connected, d.Index
	}
	devs, err := bringUpAll(nd, conn, idx, s.Switch, true)
	if err != nil {
		return nil, "", nil, err
	}
	header := fmt.Sprintf("simulated %s, %s, switch %s, revision %#02x (%s)",
		s.product(), units.Plural(int64(s.Devices), "device", "devices"), s.Switch, s.Revision, hwarch.ModeOf(s.Revision))
	return devs, header, func() {}, nil
}

// kernelSystem is the devices of the kernel driver a command opened.
type kernelSystem struct {
	deviceSet
	paths []string
}

// deviceSet is the devices a command opened through a backend (the kernel
// driver's, a served system's), with their indices and connected devices.
type deviceSet struct {
	devs      []ndl.Device
	connected [][]int
	indices   []int
}

// bringUp brings every device of the set up without resetting it, for a
// listing; on failure it calls closeAll, so the caller owns nothing.
func (s deviceSet) bringUp(closeAll func()) ([]broughtUp, error) {
	devs, err := bringUpAll(s.devs, s.connected, s.indices, hwarch.SwitchNone, true)
	if err != nil {
		closeAll()
		return nil, err
	}
	return devs, nil
}

func (k *kernelSystem) close() {
	for _, d := range k.devs {
		_ = d.Close()
	}
}

// kernelNode matches a device node's name, neuronN.
var kernelNode = regexp.MustCompile(`^neuron(\d+)$`)

// openKernelSystem opens one /dev/neuronN, or with "auto" every
// /dev/neuron* node, in index order. The device index is the node's N;
// the connected devices are what the driver reports.
func openKernelSystem(path string) (*kernelSystem, error) {
	paths := []string{path}
	if units.Word(path) == "auto" {
		ents, err := os.ReadDir("/dev")
		if err != nil {
			return nil, fmt.Errorf("--kernel auto: %w", err)
		}
		paths = nil
		for _, e := range ents {
			if kernelNode.MatchString(e.Name()) {
				paths = append(paths, filepath.Join("/dev", e.Name()))
			}
		}
		if len(paths) == 0 {
			return nil, errors.New("--kernel auto: no /dev/neuron* nodes (is the neuron driver loaded?)")
		}
	}
	type node struct {
		path  string
		index int
	}
	nodes := make([]node, len(paths))
	for i, p := range paths {
		m := kernelNode.FindStringSubmatch(filepath.Base(p))
		if m == nil {
			return nil, fmt.Errorf("--kernel %s: not a /dev/neuronN node", p)
		}
		n, err := units.ParseInt("--kernel "+p+" device index", m[1], 0, hwarch.MaxNeuronDevices-1)
		if err != nil {
			return nil, err
		}
		nodes[i] = node{p, int(n)}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].index < nodes[j].index })
	k := &kernelSystem{}
	for _, n := range nodes {
		d, err := ndl.OpenKernel(n.path)
		if err != nil {
			k.close()
			return nil, err
		}
		info := d.Info()
		cnt := int(info.ConnectedDeviceCount)
		if cnt > len(info.ConnectedDevices) {
			k.close()
			_ = d.Close()
			return nil, fmt.Errorf("--kernel %s: the driver reports %d connected devices, more than the %d its ioctl holds", n.path, cnt, len(info.ConnectedDevices))
		}
		conn := make([]int, cnt)
		for i := range conn {
			conn[i] = int(info.ConnectedDevices[i])
		}
		k.devs, k.connected = append(k.devs, d), append(k.connected, conn)
		k.indices, k.paths = append(k.indices, n.index), append(k.paths, n.path)
	}
	return k, nil
}

// lsDevice is one device as neuron-ls --json prints it.
type lsDevice struct {
	NeuronDevice     int      `json:"neuron_device"`
	BDF              string   `json:"bdf"`
	CPUAffinity      string   `json:"cpu_affinity"`
	NUMANode         int      `json:"numa_node"`
	ConnectedTo      []int    `json:"connected_to"`
	NCCount          int      `json:"nc_count"`
	LogicalNCConfig  int      `json:"logical_neuroncore_config"`
	MemorySize       uint64   `json:"memory_size"`
	NeuronCoreIDs    []int    `json:"neuroncore_ids"`
	NeuronProcesses  []string `json:"neuron_processes"`
	Generation       string   `json:"neuronsim_generation"`
	DeviceID         string   `json:"neuronsim_device_id"`
	Product          string   `json:"neuronsim_product"`
	Revision         string   `json:"neuronsim_revision"`
	RoutingID        uint32   `json:"neuronsim_routing_id"`
	SerialNumber     string   `json:"neuronsim_serial_number"`
	RegisterBAR      int      `json:"neuronsim_register_bar"`
	HBMChannelsBytes []uint64 `json:"neuronsim_hbm_channel_bytes"`
}

func lsRows(devs []broughtUp) []lsDevice {
	out := make([]lsDevice, len(devs))
	for i, d := range devs {
		nc := d.Up.Geometry.NeuronCores
		ids := make([]int, nc)
		for j := range ids {
			ids[j] = d.Index*nc + j
		}
		conn := d.Connected
		if conn == nil {
			conn = []int{}
		}
		bdf := d.BDF
		if bdf == "" {
			bdf = fmt.Sprintf("0000:%02x:00.0", 0x10+d.Index)
		}
		out[i] = lsDevice{
			NeuronDevice: d.Index, BDF: bdf, CPUAffinity: "", NUMANode: 0,
			ConnectedTo: conn, NCCount: nc, LogicalNCConfig: 1, MemorySize: d.Up.HBMBytes(),
			NeuronCoreIDs: ids, NeuronProcesses: []string{},
			Generation: d.Up.Generation.String(), DeviceID: fmt.Sprintf("%#04x", d.Up.Identity.Device), Product: hwarch.ProductOfDevice(d.Up.Identity.Device), Revision: fmt.Sprintf("%#02x (%s)", d.Up.Identity.Revision, d.Up.Mode),
			RoutingID: d.Up.RoutingID, SerialNumber: fmt.Sprintf("%#016x", d.Up.Serial),
			RegisterBAR: d.Up.Policy.RegisterBAR, HBMChannelsBytes: d.Up.HBMChannelBytes,
		}
	}
	return out
}

func writeLsJSON(w io.Writer, devs []broughtUp) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(lsRows(devs))
}

// writeLsTable prints the neuron-ls table: two-line headers in a box.
func writeLsTable(w io.Writer, header string, devs []broughtUp) error {
	heads := [][2]string{{"NEURON", "DEVICE"}, {"NEURON", "CORES"}, {"NEURON", "CORE IDS"}, {"NEURON", "MEMORY"}, {"CONNECTED", "DEVICES"}, {"PCI", "BDF"}}
	var rows [][]string
	for _, r := range lsRows(devs) {
		conn := make([]string, len(r.ConnectedTo))
		for i, c := range r.ConnectedTo {
			conn[i] = fmt.Sprint(c)
		}
		rows = append(rows, []string{
			fmt.Sprint(r.NeuronDevice), fmt.Sprint(r.NCCount),
			fmt.Sprintf("%d-%d", r.NeuronCoreIDs[0], r.NeuronCoreIDs[len(r.NeuronCoreIDs)-1]),
			fmt.Sprintf("%d GB", r.MemorySize/hwarch.GiB), strings.Join(conn, ", "), r.BDF,
		})
	}
	width := make([]int, len(heads))
	for i, h := range heads {
		width[i] = max(len(h[0]), len(h[1]))
		for _, r := range rows {
			width[i] = max(width[i], len(r[i]))
		}
	}
	rule := "+"
	for _, wd := range width {
		rule += strings.Repeat("-", wd+2) + "+"
	}
	line := func(cells []string) string {
		s := "|"
		for i, c := range cells {
			s += " " + c + strings.Repeat(" ", width[i]-len(c)) + " |"
		}
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "instance-type: neuronsim (%s)\n", header)
	fmt.Fprintf(&b, "instance-id: neuronsim\n")
	if len(devs) > 0 && devs[0].Up.Generation != hwarch.Sunda {
		fmt.Fprintf(&b, "logical-neuroncore-config: 1\n")
	}
	top, bottom := make([]string, len(heads)), make([]string, len(heads))
	for i, h := range heads {
		top[i], bottom[i] = h[0], h[1]
	}
	b.WriteString(rule + "\n" + line(top) + "\n" + line(bottom) + "\n" + rule + "\n")
	for _, r := range rows {
		b.WriteString(line(r) + "\n")
	}
	b.WriteString(rule + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
