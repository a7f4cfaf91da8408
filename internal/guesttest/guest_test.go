package guesttest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// probeCase is one generation × revision the real driver is tried on.
type probeCase struct {
	arch, revision string
	device, rev    string // as the guest's sysfs shows them: 0x7364, 0xff
}

var probeCases = []probeCase{
	{"trn2", "qemu", "0x7364", "0xff"},
	{"trn2", "emu", "0x7364", "0xf0"},
	{"trn2", "silicon", "0x7364", "0x00"},
	{"trn1", "qemu", "0x7164", "0xff"},
	{"trn1", "emu", "0x7164", "0xf0"},
	{"trn1", "silicon", "0x7164", "0x00"},
	{"inf2", "qemu", "0x7264", "0xff"},
	{"inf2", "emu", "0x7264", "0xf0"},
	{"inf2", "silicon", "0x7264", "0x00"},
}

// TestDriverProbe boots one guest per generation × revision with one device
// and checks, from its console: the device as PCI lists it, the driver
// loaded, /dev/neuron0, the reset completed, no kernel bug reported.
func TestDriverProbe(t *testing.T) {
	tl := needTools(t)
	for _, c := range probeCases {
		t.Run(c.arch+"-"+c.revision, func(t *testing.T) {
			g := boot(t, tl, guestSpec{Arch: c.arch, Revision: c.revision, Devices: 1})
			t.Logf("%s/%s: guest wall time %v (boot, probe, reset)", c.arch, c.revision, g.Wall.Round(100e6))
			checkProbe(t, g, c, 1)
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
}
