package remote_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
)

// regs is a minimal ndl.Device: a 4 KiB BAR0 of words.
type regs struct {
	mu sync.Mutex
	w  [1024]uint32
}

func (r *regs) Identity() hwarch.PCIIdentity {
	return hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: hwarch.DeviceTrn2}
}

func (r *regs) BARSize(bar int) uint64 {
	if bar == 0 {
		return 4096
	}
	return 0
}

func (r *regs) ReadBAR(bar int, off uint64, dst []uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if bar != 0 {
		return fmt.Errorf("regs: bar %d: %w", bar, ndl.ErrBadBAR)
	}
	if off%4 != 0 || off/4+uint64(len(dst)) > uint64(len(r.w)) {
		return fmt.Errorf("regs: offset %#x count %d: %w", off, len(dst), ndl.ErrBAROffset)
	}
	copy(dst, r.w[off/4:])
	return nil
}

func (r *regs) WriteBAR(bar int, off uint64, src []uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if bar != 0 {
		return fmt.Errorf("regs: bar %d: %w", bar, ndl.ErrBadBAR)
	}
	if off%4 != 0 || off/4+uint64(len(src)) > uint64(len(r.w)) {
		return fmt.Errorf("regs: offset %#x count %d: %w", off, len(src), ndl.ErrBAROffset)
	}
	copy(r.w[off/4:], src)
	return nil
}

func (r *regs) Read32(bar int, off uint64) (uint32, error) {
	var w [1]uint32
	err := r.ReadBAR(bar, off, w[:])
	return w[0], err
}

func (r *regs) Write32(bar int, off uint64, v uint32) error {
	return r.WriteBAR(bar, off, []uint32{v})
}

func (r *regs) Close() error { return nil }

// Serve a device on a unix socket, dial it and read a register.
func Example() {
	dir, err := os.MkdirTemp("", "neuronsim")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	addr := "unix:" + filepath.Join(dir, "serve.sock")

	// The server side, as `neuronsim serve --listen unix:PATH` runs it.
	dev := &regs{}
	dev.w[0x10/4] = 0xCAFE0001
	srv, err := remote.NewServer([]remote.Export{{Device: dev, Name: "nd0"}}, remote.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	l, err := remote.Listen(addr, false)
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	// The runtime side.
	c, err := remote.Dial(addr, remote.ClientOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range c.Devices() {
		fmt.Printf("device %d %q: %v, BAR0 %d bytes\n", info.Index, info.Name, info.Identity, info.BARSizes[0])
	}
	var d ndl.Device
	if d, err = c.Device(0); err != nil {
		log.Fatal(err)
	}
	v, err := d.Read32(0, 0x10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("BAR0+0x10 = %#08x\n", v)

	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("Serve returned:", <-served)
	// Output:
	// device 0 "nd0": 1d0f:7364 rev 0x00, BAR0 4096 bytes
	// BAR0+0x10 = 0xcafe0001
	// Serve returned: <nil>
}
