package guesttest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// probeCase is one generation × revision the real driver is tried on.
type probeCase struct {
	arch, revision string
	device, rev    string // as the guest's sysfs shows them: 0x7364, 0xff
	devices        int    // devices of the guest's system; 0: one
}

var probeCases = []probeCase{
	{"trn2", "qemu", "0x7364", "0xff", 2},
	{"trn2", "emu", "0x7364", "0xf0", 1},
	{"trn2", "silicon", "0x7364", "0x00", 1},
	{"trn1", "qemu", "0x7164", "0xff", 1},
	{"trn1", "emu", "0x7164", "0xf0", 1},
	{"trn1", "silicon", "0x7164", "0x00", 1},
	{"inf2", "qemu", "0x7264", "0xff", 1},
	{"inf2", "emu", "0x7264", "0xf0", 1},
	{"inf2", "silicon", "0x7264", "0x00", 1},
}

// TestDriverProbe boots one guest per generation × revision with one device
// and checks, from its console: the device as PCI lists it, the driver
// loaded, /dev/neuron0, the reset completed, no kernel bug reported.
func TestDriverProbe(t *testing.T) {
	tl := needTools(t)
	for _, c := range probeCases {
		t.Run(c.arch+"-"+c.revision, func(t *testing.T) {
			n := max(c.devices, 1)
			g := boot(t, tl, guestSpec{Arch: c.arch, Revision: c.revision, Devices: n, Steps: runtimeSteps(c, n)})
			t.Logf("%s/%s: guest wall time %v (boot, probe, reset, our runtime's ls, csr and dma copy)", c.arch, c.revision, g.Wall.Round(100e6))
			checkProbe(t, g, c, n)
			checkRuntime(t, g, c, n)
		})
	}
}

// checkProbe holds the console of a guest with n devices of case c to the
// acceptance: PCI identity, insmod, nodes, resets, no kernel trouble.
func checkProbe(t *testing.T, g *guest, c probeCase, n int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format+"\nconsole (tail):\n%s\nserver:\n%s", append(args, tail(g.Console, 120), g.Server)...)
	}
	var ours int
	for _, p := range g.marks("pci") {
		f := strings.Fields(p)
		if len(f) == 5 && f[1] == "0x1d0f" {
			ours++
			if f[2] != c.device || f[3] != c.rev {
				fail("PCI function %s is %s rev %s, want %s rev %s", f[0], f[2], f[3], c.device, c.rev)
			}
		}
	}
	if ours != n {
		fail("%d Amazon PCI functions in the guest, want %d", ours, n)
	}
	if m := g.marks("insmod"); len(m) != 1 || m[0] != "ok" {
		fail("insmod: %v", m)
	}
	nodes := g.marks("node")
	for i := range n {
		want := fmt.Sprintf("/dev/neuron%d", i)
		found := false
		for _, nd := range nodes {
			found = found || nd == want
		}
		if !found {
			fail("no %s (nodes: %v)", want, nodes)
		}
	}
	done := regexp.MustCompile(`nd(\d+): reset request \d+ completed`).FindAllStringSubmatch(g.Console, -1)
	seen := map[string]bool{}
	for _, m := range done {
		seen[m[1]] = true
	}
	if len(seen) != n {
		fail("resets completed on %d devices (%v), want %d", len(seen), done, n)
	}
	if tr := g.trouble(); len(tr) > 0 {
		fail("the kernel reported trouble:\n%s", strings.Join(tr, "\n"))
	}
	// The driver's probe line names each device's index and routing id:
	// the system's device i has the routing id the driver maps to i.
	devID, err := strconv.ParseUint(strings.TrimPrefix(c.device, "0x"), 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	probed := map[int]int{}
	for _, m := range regexp.MustCompile(`=> nd\[(\d+)\] \(routing id: (\d+)\)`).FindAllStringSubmatch(g.Console, -1) {
		i, _ := strconv.Atoi(m[1])
		r, _ := strconv.Atoi(m[2])
		probed[i] = r
	}
	for i := range n {
		want, err := hwarch.RoutingIDOfDeviceIndex(uint16(devID), i)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := probed[i]; !ok || r != want {
			fail("probe lines %v: want nd[%d] with routing id %d", probed, i, want)
		}
	}
	if len(probed) != n {
		fail("%d devices probed (%v), want %d", len(probed), probed, n)
	}
	// The model counted the driver's accesses and its reset.
	for i := range n {
		cn := g.counters(i)
		if cn == "" {
			fail("no closing counters of neuron%d from the server", i)
			continue
		}
		var reads, writes, resets, tpb int
		for _, f := range []struct {
			re string
			p  *int
		}{{`BAR (\d+) reads`, &reads}, {`(\d+) writes; unmapped`, &writes}, {`(\d+) device resets`, &resets}, {`(\d+) TPB resets`, &tpb}} {
			if m := regexp.MustCompile(f.re).FindStringSubmatch(cn); m != nil {
				*f.p, _ = strconv.Atoi(m[1])
			}
		}
		if reads == 0 || writes == 0 || resets+tpb == 0 {
			fail("neuron%d's counters show no driver at work: %s", i, cn)
		}
		t.Logf("neuron%d: %s", i, cn)
	}
}

// gen is the generation of a case's device id.
func (c probeCase) gen(t *testing.T) (hwarch.Generation, uint16) {
	t.Helper()
	id, err := strconv.ParseUint(strings.TrimPrefix(c.device, "0x"), 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	g, err := hwarch.GenerationOfDevice(hwarch.VendorAmazon, uint16(id))
	if err != nil {
		t.Fatal(err)
	}
	return g, uint16(id)
}

// routingIDAddr is the BAR0 offset csr read takes for the MISC RAM
// routing-id word (+0x24) of generation g.
func routingIDAddr(g hwarch.Generation) uint64 {
	return hwarch.MustGeometry(g).BAR0.MiscRAM + 0x24
}

// runtimeSteps are our runtime's commands in the guest, through the real
// driver: list every device, read each device's routing id with csr, copy
// 1 MiB host → device → host with the driver's DMA and verify it.
func runtimeSteps(c probeCase, n int) []step {
	var steps []step
	steps = append(steps, step{"ls", "/bin/neuronsim ls --kernel auto --json"})
	gen, _ := hwarch.ParseGeneration(c.arch)
	for i := range n {
		steps = append(steps, step{fmt.Sprintf("csr%d", i), fmt.Sprintf("/bin/neuronsim csr read %#x --kernel /dev/neuron%d", routingIDAddr(gen), i)})
		steps = append(steps, step{fmt.Sprintf("dma%d", i), fmt.Sprintf("/bin/neuronsim dma copy --kernel /dev/neuron%d --size 1MiB", i)})
	}
	return steps
}

// lsRow is the part of `ls --json`'s row the test checks.
type lsRow struct {
	NeuronDevice int    `json:"neuron_device"`
	BDF          string `json:"bdf"`
	DeviceID     string `json:"neuronsim_device_id"`
	NCCount      int    `json:"nc_count"`
	MemorySize   uint64 `json:"memory_size"`
	Generation   string `json:"neuronsim_generation"`
	RoutingID    uint32 `json:"neuronsim_routing_id"`
	RegisterBAR  int    `json:"neuronsim_register_bar"`
}

// checkRuntime holds our runtime's output in the guest to what the driver
// reported: every device listed with its generation, cores and routing id;
// csr read of the routing-id register returning that id; dma copy
// verifying its 1 MiB round trip, and the model's DMA engines having moved
// at least those bytes both ways.
func checkRuntime(t *testing.T, g *guest, c probeCase, n int) {
	t.Helper()
	gen, devID := c.gen(t)
	geo := hwarch.MustGeometry(gen)
	out, code := g.output("ls")
	if code != 0 {
		t.Fatalf("ls --kernel auto: exit %d:\n%s", code, out)
	}
	var rows []lsRow
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &rows); err != nil {
		t.Fatalf("ls --kernel auto --json: %v:\n%s", err, out)
	}
	if len(rows) != n {
		t.Fatalf("ls lists %d devices, want %d:\n%s", len(rows), n, out)
	}
	for i, r := range rows {
		want, err := hwarch.RoutingIDOfDeviceIndex(devID, i)
		if err != nil {
			t.Fatal(err)
		}
		if r.NeuronDevice != i || r.NCCount != geo.NeuronCores || r.Generation != gen.String() || int(r.RoutingID) != want || r.DeviceID != c.device {
			t.Errorf("ls row %d: %+v; want device %d, %d cores, %s, device id %s, routing id %d", i, r, i, geo.NeuronCores, gen, c.device, want)
		}
		// the driver's PCI address is one of the guest's functions of ours
		found := false
		for _, p := range g.marks("pci") {
			f := strings.Fields(p)
			found = found || len(f) == 5 && f[0] == r.BDF && f[1] == "0x1d0f" && f[2] == c.device
		}
		if !found {
			t.Errorf("ls row %d: BDF %q is not a %s function of the guest (%v)", i, r.BDF, c.device, g.marks("pci"))
		}
		csr, code := g.output(fmt.Sprintf("csr%d", i))
		wantLine := fmt.Sprintf("%#08x: %#08x", routingIDAddr(gen), want)
		if code != 0 || !strings.Contains(csr, fmt.Sprintf("0x%08x: 0x%08x", routingIDAddr(gen), want)) {
			t.Errorf("csr read of the routing id on /dev/neuron%d: exit %d, %q; want %q", i, code, csr, wantLine)
		}
		dma, code := g.output(fmt.Sprintf("dma%d", i))
		if code != 0 || !strings.Contains(dma, "destination verified: 1048576 bytes match") {
			t.Errorf("dma copy --kernel /dev/neuron%d: exit %d:\n%s\nconsole (tail):\n%s", i, code, dma, tail(g.Console, 60))
		}
		m := regexp.MustCompile(`DMA (\d+) descriptor pairs, (\d+) bytes`).FindStringSubmatch(g.counters(i))
		if m == nil {
			t.Errorf("neuron%d: no DMA totals in the server's counters %q", i, g.counters(i))
		} else if b, _ := strconv.ParseUint(m[2], 10, 64); b < 2<<20 {
			t.Errorf("neuron%d: the model's DMA engines moved %d bytes; the copy alone is 2 MiB", i, b)
		}
	}
}

// TestQEMUKilled: QEMU killed with SIGKILL while the driver is resetting
// the device leaves the server serving: a second guest on the same
// sockets probes, resets and drives the same devices (the model kept its
// state; the first session's mappings were released).
func TestQEMUKilled(t *testing.T) {
	tl := needTools(t)
	c := probeCases[0]
	spec := guestSpec{Arch: c.arch, Revision: c.revision, Devices: 1, Steps: runtimeSteps(c, 1)}
	w := newWorkspace(t, tl, spec)
	srv := startServer(t, w, spec)
	first := runGuest(t, w, spec, "@@ insmod ok")
	require.True(t, first.Killed)
	second := runGuest(t, w, spec, "")
	srv.stop()
	second.Server = srv.log()
	t.Logf("second guest after a killed one: %v", second.Wall.Round(100*time.Millisecond))
	checkProbe(t, second, c, 1)
	checkRuntime(t, second, c, 1)
}
