package vfiouser

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"golang.org/x/sys/unix"
)

func TestVersion(t *testing.T) {
	_, path := startServer(t, newTestDevice(t), Options{})
	cases := []struct {
		name    string
		payload []byte
		errno   syscall.Errno // 0: accepted
		minor   uint16
	}{
		{"qemu capabilities", versionPayload(0, 1, clientCaps), 0, 1},
		{"no version data", versionPayload(0, 1, ""), 0, 1},
		{"minor above ours", versionPayload(0, 7, `{}`), 0, 1},
		{"minor zero", versionPayload(0, 0, `{"capabilities":{}}`), 0, 0},
		{"unknown capability ignored", versionPayload(0, 1, `{"capabilities":{"future":[1,2]}}`), 0, 1},
		{"major 1", versionPayload(1, 0, `{}`), syscall.ENOTSUP, 0},
		{"short payload", []byte{0, 0}, syscall.EINVAL, 0},
		{"not NUL-terminated", append(versionPayload(0, 1, ""), '{', '}'), syscall.EINVAL, 0},
		{"bad JSON", versionPayload(0, 1, `{"capabilities":`), syscall.EINVAL, 0},
		{"trailing JSON", versionPayload(0, 1, `{} {}`), syscall.EINVAL, 0},
		{"capabilities not an object", versionPayload(0, 1, `{"capabilities":3}`), syscall.EINVAL, 0},
		{"max_msg_fds a string", versionPayload(0, 1, `{"capabilities":{"max_msg_fds":"16"}}`), syscall.EINVAL, 0},
		{"max_msg_fds negative", versionPayload(0, 1, `{"capabilities":{"max_msg_fds":-1}}`), syscall.EINVAL, 0},
		{"max_msg_fds fraction", versionPayload(0, 1, `{"capabilities":{"max_msg_fds":1.5}}`), syscall.EINVAL, 0},
		{"max_data_xfer_size 0", versionPayload(0, 1, `{"capabilities":{"max_data_xfer_size":0}}`), syscall.E2BIG, 0},
		{"max_data_xfer_size huge", versionPayload(0, 1, `{"capabilities":{"max_data_xfer_size":99999999999999999999}}`), syscall.EINVAL, 0},
		{"pgsizes without 4 KiB", versionPayload(0, 1, `{"capabilities":{"pgsizes":8192}}`), syscall.ENOTSUP, 0},
		{"write_multiple not bool", versionPayload(0, 1, `{"capabilities":{"write_multiple":1}}`), syscall.EINVAL, 0},
		{"write_multiple null", versionPayload(0, 1, `{"capabilities":{"write_multiple":null}}`), syscall.EINVAL, 0},
		{"write_multiple false", versionPayload(0, 1, `{"capabilities":{"write_multiple":false}}`), 0, 1},
		{"version data null", versionPayload(0, 1, `null`), syscall.EINVAL, 0},
		{"capabilities null", versionPayload(0, 1, `{"capabilities":null}`), syscall.EINVAL, 0},
		{"max_msg_fds null", versionPayload(0, 1, `{"capabilities":{"max_msg_fds":null}}`), syscall.EINVAL, 0},
		{"not UTF-8", append(versionPayload(0, 1, ""), '"', 0xff, '"', 0), syscall.EINVAL, 0},
		{"too long", versionPayload(0, 1, `{"capabilities":{"x":"`+string(bytes.Repeat([]byte{'a'}, MaxVersionJSON))+`"}}`), syscall.E2BIG, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, path)
			_, p, err := c.call(CmdVersion, tc.payload)
			if tc.errno != 0 {
				if !isErrno(err, tc.errno) {
					t.Fatalf("VERSION: %v, want errno %v", err, tc.errno)
				}
				return
			}
			if err != nil {
				t.Fatalf("VERSION: %v", err)
			}
			if got := binary.LittleEndian.Uint16(p[2:]); binary.LittleEndian.Uint16(p) != 0 || got != tc.minor {
				t.Fatalf("reply version %d.%d, want 0.%d", binary.LittleEndian.Uint16(p), got, tc.minor)
			}
			if len(p) < 5 || p[len(p)-1] != 0 {
				t.Fatalf("reply data not NUL-terminated: %q", p)
			}
			var r struct {
				Capabilities map[string]any `json:"capabilities"`
			}
			if err := json.Unmarshal(p[4:len(p)-1], &r); err != nil {
				t.Fatalf("reply JSON %q: %v", p[4:], err)
			}
			if r.Capabilities["pgsizes"] != float64(4096) || r.Capabilities["max_msg_fds"] != float64(16) || r.Capabilities["max_data_xfer_size"] != float64(1<<20) {
				t.Fatalf("reply capabilities %v", r.Capabilities)
			}
			_, wm := r.Capabilities["write_multiple"]
			if wm != bytes.Contains(tc.payload, []byte(`"write_multiple":true`)) {
				t.Fatalf("write_multiple in reply %v for a client that offered %s", wm, tc.payload)
			}
			if _, _, err := c.call(CmdVersion, tc.payload); !isErrno(err, syscall.EINVAL) {
				t.Fatalf("second VERSION: %v, want EINVAL", err)
			}
		})
	}
	t.Run("command before VERSION", func(t *testing.T) {
		c := dial(t, path)
		if _, _, err := c.call(CmdDeviceGetInfo, le32(16, 0, 0, 0)); !isErrno(err, syscall.EINVAL) {
			t.Fatalf("DEVICE_GET_INFO before VERSION: %v, want EINVAL", err)
		}
		c.handshake()
	})
}

func TestDeviceAndRegionInfo(t *testing.T) {
	dev := newTestDevice(t)
	s, path := startServer(t, dev, Options{})
	c := dial(t, path)
	c.handshake()
	_, p, err := c.call(CmdDeviceGetInfo, le32(16, 0, 0, 0))
	if err != nil || !bytes.Equal(p, le32(16, DeviceFlagReset|DeviceFlagPCI, NumRegions, NumIRQIdx)) {
		t.Fatalf("DEVICE_GET_INFO: %x, %v", p, err)
	}
	for r := uint32(0); r < NumRegions; r++ {
		var want uint64
		switch {
		case r <= RegionBAR5:
			want = dev.BARSize(int(r))
		case r == RegionConfig:
			want = configSize(s.Config())
		}
		_, p, err := c.call(CmdGetRegionInfo, le64(le32(32, 0, r, 0), 0, 0))
		if err != nil {
			t.Fatalf("region %d: %v", r, err)
		}
		flags := uint32(0)
		if want > 0 {
			flags = RegionFlagRead | RegionFlagWrite
		}
		if got := binary.LittleEndian.Uint64(p[16:]); got != want || binary.LittleEndian.Uint32(p[4:]) != flags || binary.LittleEndian.Uint32(p[8:]) != r {
			t.Errorf("region %d: size %#x flags %#x, want %#x %#x", r, got, binary.LittleEndian.Uint32(p[4:]), want, flags)
		}
	}
	// The register BAR (BAR2 for a Trn2 at revision 0xFF, as driver 2.24.7.0
	// has it) is present and the slot above it, its upper half, is not.
	if rb := dev.RegisterBAR(); dev.BARSize(rb) == 0 || dev.BARSize(rb+1) != 0 {
		t.Fatalf("test device BAR%d %#x, BAR%d %#x: the test expects the register BAR present, the next absent", rb, dev.BARSize(rb), rb+1, dev.BARSize(rb+1))
	}
	if _, _, err := c.call(CmdGetRegionInfo, le64(le32(32, 0, NumRegions, 0), 0, 0)); !isErrno(err, syscall.EINVAL) {
		t.Fatalf("region %d: %v, want EINVAL", NumRegions, err)
	}
	for idx, want := range []uint32{1, 1, 32, 1, 1} {
		_, p, err := c.call(CmdGetIRQInfo, le32(16, 0, uint32(idx), 0))
		if err != nil || binary.LittleEndian.Uint32(p[12:]) != want {
			t.Errorf("IRQ index %d: %x %v, want count %d", idx, p, err, want)
		}
	}
}

func TestConfigSpace(t *testing.T) {
	dev := newTestDevice(t)
	s, path := startServer(t, dev, Options{})
	c := dial(t, path)
	c.handshake()
	id := dev.Identity()
	p, err := c.regionRead(RegionConfig, 0, 12)
	if err != nil {
		t.Fatal(err)
	}
	if v, d, rev := binary.LittleEndian.Uint16(p), binary.LittleEndian.Uint16(p[2:]), p[8]; v != id.Vendor || d != id.Device || rev != id.Revision {
		t.Fatalf("config ids %#x:%#x rev %#x, want %#x:%#x rev %#x", v, d, rev, id.Vendor, id.Device, id.Revision)
	}
	// size every present BAR as a guest does: all ones, read back
	for b := 0; b < 6; b++ {
		size := dev.BARSize(b)
		if size == 0 {
			continue
		}
		off := uint64(cfgBAR0 + 4*b)
		if err := c.regionWrite(RegionConfig, off, le32(^uint32(0), ^uint32(0))); err != nil {
			t.Fatal(err)
		}
		p, err := c.regionRead(RegionConfig, off, 8)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
		if lo&0xf != barMem64|barPrefetch {
			t.Errorf("BAR%d flags %#x, want 64-bit prefetchable", b, lo&0xf)
		}
		if got := ^(uint64(hi)<<32 | uint64(lo&^0xf)) + 1; got != size {
			t.Errorf("BAR%d sizes to %#x, want %#x", b, got, size)
		}
		// assign an address, byte by byte for the low half
		base := uint64(0x80_0000_0000)
		for i := 0; i < 4; i++ {
			if err := c.regionWrite(RegionConfig, off+uint64(i), []byte{byte(base >> (8 * i))}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.regionWrite(RegionConfig, off+4, le32(uint32(base>>32))); err != nil {
			t.Fatal(err)
		}
		p, _ = c.regionRead(RegionConfig, off, 8)
		if got := binary.LittleEndian.Uint64(p) &^ 0xf; got != base&^(size-1) {
			t.Errorf("BAR%d reads %#x after assigning %#x", b, got, base)
		}
	}
	// identity is read-only; the command register keeps only its defined bits
	if err := c.regionWrite(RegionConfig, 0, le32(0x12345678)); err != nil {
		t.Fatal(err)
	}
	if err := c.regionWrite(RegionConfig, cfgCommand, []byte{0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	p, _ = c.regionRead(RegionConfig, 0, 8)
	direct := make([]byte, 8)
	if err := s.Config().ReadConfig(0, direct); err != nil {
		t.Fatal(err)
	}
	if cmd := binary.LittleEndian.Uint16(p[4:]); binary.LittleEndian.Uint16(p) != id.Vendor || cmd&0x6 != 0x6 || cmd == 0xffff || !bytes.Equal(p, direct) {
		t.Fatalf("after writes: vendor %#x command %#x over vfio-user, % x in the config space", binary.LittleEndian.Uint16(p), cmd, direct)
	}
	if _, _, err := c.call(CmdDeviceReset, nil); err != nil {
		t.Fatal(err)
	}
	p, _ = c.regionRead(RegionConfig, cfgCommand, 2)
	if binary.LittleEndian.Uint16(p) != 0 {
		t.Fatalf("command %#x after DEVICE_RESET, want 0", binary.LittleEndian.Uint16(p))
	}
}

// TestBARMatchesInProcess: the same accesses through vfio-user and in
// process give the same values and the same device clock (pacing off:
// the clocks count MMIO time only).
func TestBARMatchesInProcess(t *testing.T) {
	served, local := newTestDevice(t), newTestDevice(t)
	_, path := startServer(t, served, Options{NoPacing: true})
	c := dial(t, path)
	c.handshake()
	misc := local.Geometry().BAR0.MiscRAM
	reg := local.RegisterBAR()
	type op struct {
		bar   int
		off   uint64
		write []uint32 // nil: read n words
		n     int
	}
	ops := []op{
		{reg, misc + hwarch.MiscRoutingID, nil, 1},
		{reg, misc + 0x100, []uint32{0xa5a5_0001, 0x0bad_f00d}, 0},
		{reg, misc + 0x100, nil, 2},
		{hwarch.BAR4, 0x1000, []uint32{1, 2, 3, 4}, 0},
		{hwarch.BAR4, 0x1000, nil, 4},
		{reg, misc, nil, 16},
	}
	for i, o := range ops {
		if o.write != nil {
			var b []byte
			for _, w := range o.write {
				b = binary.LittleEndian.AppendUint32(b, w)
			}
			if err := c.regionWrite(uint32(o.bar), o.off, b); err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
			if err := local.WriteBAR(o.bar, o.off, o.write); err != nil {
				t.Fatalf("op %d local: %v", i, err)
			}
			continue
		}
		got, err := c.regionRead(uint32(o.bar), o.off, uint32(4*o.n))
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
		want := make([]uint32, o.n)
		if err := local.ReadBAR(o.bar, o.off, want); err != nil {
			t.Fatalf("op %d local: %v", i, err)
		}
		for j, w := range want {
			if g := binary.LittleEndian.Uint32(got[4*j:]); g != w {
				t.Errorf("op %d word %d: %#x over vfio-user, %#x in process", i, j, g, w)
			}
		}
	}
	if served.Now() != local.Now() || served.Stats() != local.Stats() {
		t.Fatalf("served device at %v %+v, in-process at %v %+v", served.Now(), served.Stats(), local.Now(), local.Stats())
	}
	// REGION_WRITE_MULTI: two writes, then the values are there
	multi := le64(nil, 2)
	for i, v := range []uint32{0x11, 0x22} {
		multi = append(multi, rwPayload(misc+0x200+4*uint64(i), uint32(reg), 4, le64(le32(v), 0)[:8])...)
	}
	if _, p, err := c.call(CmdRegionWriteMulti, multi); err != nil || binary.LittleEndian.Uint64(p) != 2 {
		t.Fatalf("REGION_WRITE_MULTI: %x %v", p, err)
	}
	w := make([]uint32, 2)
	if err := served.ReadBAR(reg, misc+0x200, w); err != nil || w[0] != 0x11 || w[1] != 0x22 {
		t.Fatalf("after REGION_WRITE_MULTI: %#x %v", w, err)
	}
}

func memfd(t *testing.T, size int) int {
	t.Helper()
	fd, err := unix.MemfdCreate("guest-ram", 0)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func dmaMap(flags uint32, off, addr, size uint64) []byte {
	return le64(le32(32, flags), off, addr, size)
}

func TestDMAMapMemfd(t *testing.T) {
	s, path := startServer(t, newTestDevice(t), Options{MaxDMAMaps: 2})
	c := dial(t, path)
	c.handshake()
	fd := memfd(t, 1<<20)
	const base = 0x1_0000_0000
	if _, _, err := c.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0x1000, base, 0x10000), fd); err != nil {
		t.Fatalf("DMA_MAP: %v", err)
	}
	// the device writes through the view; the client sees it in its file
	mem := s.Memory()
	if err := mem.Write(base+0x10, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := unix.Pread(fd, got, 0x1010); err != nil || string(got) != "hello" {
		t.Fatalf("client file holds %q (%v)", got, err)
	}
	if _, err := unix.Pwrite(fd, []byte("world"), 0x1000+0xfffb); err != nil {
		t.Fatal(err)
	}
	if err := mem.Read(base+0xfffb, got); err != nil || string(got) != "world" {
		t.Fatalf("device reads %q (%v)", got, err)
	}
	cases := []struct {
		name    string
		payload []byte
		fds     []int
		errno   syscall.Errno
	}{
		{"overlap", dmaMap(DMAFlagRead, 0, base+0x8000, 0x1000), []int{fd}, syscall.EEXIST},
		{"past the file's end", dmaMap(DMAFlagRead, 0xff000, base+0x40000, 0x2000), []int{fd}, syscall.EINVAL},
		{"unaligned", dmaMap(DMAFlagRead, 0, base+0x20001, 0x1000), []int{fd}, syscall.EINVAL},
		{"wraps", dmaMap(DMAFlagRead, 0, ^uint64(0)-0xfff, 0x2000), []int{fd}, syscall.EINVAL},
		{"bad flags", dmaMap(0x4, 0, base+0x20000, 0x1000), []int{fd}, syscall.EINVAL},
		{"two fds", dmaMap(DMAFlagRead, 0, base+0x20000, 0x1000), []int{fd, fd}, syscall.EINVAL},
		{"short", le32(32, 0), nil, syscall.EINVAL},
		{"read-only", dmaMap(DMAFlagRead, 0, base+0x20000, 0x1000), []int{fd}, 0},
		{"over the map limit", dmaMap(DMAFlagRead, 0, base+0x30000, 0x1000), nil, syscall.E2BIG},
	}
	for _, tc := range cases {
		if _, _, err := c.call(CmdDMAMap, tc.payload, tc.fds...); tc.errno == 0 && err != nil || tc.errno != 0 && !isErrno(err, tc.errno) {
			t.Errorf("%s: %v, want errno %v", tc.name, err, tc.errno)
		}
	}
	if err := mem.Write(base+0x20000, []byte{1}); !errors.Is(err, ErrProtection) {
		t.Errorf("write to a read-only mapping: %v", err)
	}
	for _, pa := range []uint64{base - 1, base + 0x10000, base + 0x1fff0} {
		if err := mem.Read(pa, got); !errors.Is(err, ErrUnmapped) {
			t.Errorf("read at %#x: %v, want ErrUnmapped", pa, err)
		}
	}
	// unmap: a cut is refused, the exact range works, then the view is gone
	if _, _, err := c.call(CmdDMAUnmap, le64(le32(24, 0), base, 0x1000)); !isErrno(err, syscall.EINVAL) {
		t.Errorf("DMA_UNMAP cutting a mapping: %v", err)
	}
	// the client shrinks its file under the mapping: the device's access
	// past the new end is an error, not a fault that ends the process
	if err := unix.Ftruncate(fd, 0x2000); err != nil {
		t.Fatal(err)
	}
	if err := mem.Read(base+0x4000, got); !errors.Is(err, ErrUnmapped) {
		t.Errorf("read past the shrunk file: %v, want ErrUnmapped", err)
	}
	if err := mem.Read(base, got); err != nil {
		t.Errorf("read inside the shrunk file: %v", err)
	}
	req := le64(le32(24, 0), base, 0x10000)
	if _, p, err := c.call(CmdDMAUnmap, req); err != nil || !bytes.Equal(p, req) {
		t.Fatalf("DMA_UNMAP: %x %v, want the request echoed", p, err)
	}
	if err := mem.Read(base+0x10, got); !errors.Is(err, ErrUnmapped) {
		t.Errorf("read after unmap: %v", err)
	}
	if _, _, err := c.call(CmdDMAUnmap, le64(le32(24, DMAUnmapAll), 0, 0)); err != nil || len(mem.Mappings()) != 0 {
		t.Fatalf("DMA_UNMAP all: %v, %d left", err, len(mem.Mappings()))
	}
}

// TestDMARemote: a mapping without a file is reached by DMA_READ and
// DMA_WRITE requests to the client, split at the transfer limit.
func TestDMARemote(t *testing.T) {
	s, path := startServer(t, newTestDevice(t), Options{})
	c := dial(t, path)
	c.ServeMemory(0x4000_0000, make([]byte, 3<<20))
	if _, _, err := c.call(CmdVersion, versionPayload(0, 1, `{"capabilities":{"max_data_xfer_size":65536}}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, c.ramBase, uint64(len(c.ram)))); err != nil {
		t.Fatal(err)
	}
	stop := make(chan error, 1)
	requests := 0
	go func() {
		for {
			h, p, err := c.recv()
			if err != nil {
				stop <- err
				return
			}
			requests++
			c.serveDMA(h, p)
		}
	}()
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	mem := s.Memory()
	if err := mem.Write(c.ramBase+123, data); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, len(data))
	if err := mem.Read(c.ramBase+123, back); err != nil {
		t.Fatal(err)
	}
	c.c.Close()
	<-stop // the client's goroutine is done with its memory
	if !bytes.Equal(back, data) || !bytes.Equal(c.ram[123:123+len(data)], data) {
		t.Fatal("data did not round-trip through DMA_WRITE/DMA_READ")
	}
	if want := 2 * 4; requests != want { // 200000 bytes in 65536-byte pieces, each way
		t.Errorf("%d DMA requests, want %d", requests, want)
	}
}

// TestMalformed: each malformed message gets an error reply and the
// session goes on.
func TestMalformed(t *testing.T) {
	dev := newTestDevice(t)
	_, path := startServer(t, dev, Options{MaxDataXferSize: 4096})
	c := dial(t, path)
	c.handshake()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	reg := uint32(dev.RegisterBAR())
	cases := []struct {
		name    string
		cmd     uint16
		payload []byte
		fds     []int
		errno   syscall.Errno
	}{
		{"unknown command", 99, nil, nil, syscall.ENOTSUP},
		{"region io fds", CmdGetRegionIOFDs, le32(16, 0, 0, 0), nil, syscall.ENOTSUP},
		{"device info short", CmdDeviceGetInfo, le32(16), nil, syscall.EINVAL},
		{"device info argsz small", CmdDeviceGetInfo, le32(8, 0, 0, 0), nil, syscall.EINVAL},
		{"region info short", CmdGetRegionInfo, le32(32, 0, 0), nil, syscall.EINVAL},
		{"read short", CmdRegionRead, le32(0, 0), nil, syscall.EINVAL},
		{"read zero", CmdRegionRead, rwPayload(0, RegionConfig, 0, nil), nil, syscall.EINVAL},
		{"read past config", CmdRegionRead, rwPayload(PCIeConfigSize-4, RegionConfig, 8, nil), nil, syscall.EINVAL},
		{"read ROM", CmdRegionRead, rwPayload(0, RegionROM, 4, nil), nil, syscall.EINVAL},
		{"read region 9", CmdRegionRead, rwPayload(0, 9, 4, nil), nil, syscall.EINVAL},
		{"read BAR1 absent", CmdRegionRead, rwPayload(0, 1, 4, nil), nil, syscall.EINVAL},
		{"read BAR unaligned", CmdRegionRead, rwPayload(2, reg, 4, nil), nil, syscall.EINVAL},
		{"read BAR odd size", CmdRegionRead, rwPayload(0, reg, 2, nil), nil, syscall.EINVAL},
		{"read past the transfer limit", CmdRegionRead, rwPayload(0, reg, 8192, nil), nil, syscall.E2BIG},
		{"read offset wraps", CmdRegionRead, rwPayload(^uint64(0)-3, reg, 8, nil), nil, syscall.EINVAL},
		{"write count mismatch", CmdRegionWrite, rwPayload(0, RegionConfig, 4, []byte{1}), nil, syscall.EINVAL},
		{"write with an fd", CmdRegionWrite, rwPayload(0x3c, RegionConfig, 1, []byte{1}), []int{efd}, syscall.EINVAL},
		{"multi zero", CmdRegionWriteMulti, le64(nil, 0), nil, syscall.EINVAL},
		{"multi count lies", CmdRegionWriteMulti, le64(nil, 3), nil, syscall.EINVAL},
		{"multi entry too long", CmdRegionWriteMulti, append(le64(nil, 1), rwPayload(0, RegionConfig, 9, make([]byte, 8))...), nil, syscall.EINVAL},
		{"irq set two actions", CmdSetIRQs, le32(20, IRQSetDataNone|IRQSetActionMask|IRQSetActionTrig, 0, 0, 1), nil, syscall.EINVAL},
		{"irq set past count", CmdSetIRQs, le32(20, IRQSetDataEventfd|IRQSetActionTrig, IRQIntx, 0, 2), []int{efd, efd}, syscall.EINVAL},
		{"irq set fd count", CmdSetIRQs, le32(20, IRQSetDataEventfd|IRQSetActionTrig, IRQMSIX, 0, 2), []int{efd}, syscall.EINVAL},
		{"irq set argsz", CmdSetIRQs, le32(24, IRQSetDataNone|IRQSetActionTrig, 0, 0, 1), nil, syscall.EINVAL},
		{"irq index", CmdSetIRQs, le32(20, IRQSetDataNone|IRQSetActionTrig, 7, 0, 1), nil, syscall.EINVAL},
		{"reset with payload", CmdDeviceReset, []byte{1}, nil, syscall.EINVAL},
		{"unmap dirty", CmdDMAUnmap, le64(le32(24, DMAUnmapGetDirty), 0, 0x1000), nil, syscall.ENOTSUP},
		{"unmap nothing there", CmdDMAUnmap, le64(le32(24, 0), 0, 0x1000), nil, syscall.EINVAL},
		{"oversized message", CmdRegionWrite, make([]byte, 4096+4096+1), nil, syscall.E2BIG},
		{"too many fds", CmdSetIRQs, le32(20, IRQSetDataEventfd|IRQSetActionTrig, IRQMSIX, 0, 17), repeatFD(efd, 17), syscall.E2BIG},
		{"intx eventfd kept", CmdSetIRQs, le32(20, IRQSetDataEventfd|IRQSetActionTrig, IRQIntx, 0, 1), []int{efd}, 0},
		{"intx trigger", CmdSetIRQs, le32(20, IRQSetDataNone|IRQSetActionTrig, IRQIntx, 0, 1), nil, 0},
		{"msi-x disable all", CmdSetIRQs, le32(20, IRQSetDataNone|IRQSetActionTrig, IRQMSIX, 0, 0), nil, 0},
	}
	for _, tc := range cases {
		_, _, err := c.call(tc.cmd, tc.payload, tc.fds...)
		if tc.errno == 0 && err != nil || tc.errno != 0 && !isErrno(err, tc.errno) {
			t.Errorf("%s: %v, want errno %v", tc.name, err, tc.errno)
		}
		if _, err := c.regionRead(RegionConfig, 0, 4); err != nil {
			t.Fatalf("after %s: the session does not answer: %v", tc.name, err)
		}
	}
	// the client's INTx trigger signalled the kept eventfd
	var cnt [8]byte
	if _, err := unix.Read(efd, cnt[:]); err != nil || binary.LittleEndian.Uint64(cnt[:]) != 1 {
		t.Fatalf("INTx eventfd count %d (%v), want 1", binary.LittleEndian.Uint64(cnt[:]), err)
	}
	// descriptors spread over two sendmsg calls of one message count together
	msg := msgBytes(Header{ID: 77, Command: CmdSetIRQs}, le32(20, IRQSetDataEventfd|IRQSetActionTrig, IRQMSIX, 0, 20))
	if _, _, err := c.c.WriteMsgUnix(msg[:HeaderSize], syscall.UnixRights(repeatFD(efd, 10)...), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.c.WriteMsgUnix(msg[HeaderSize:], syscall.UnixRights(repeatFD(efd, 10)...), nil); err != nil {
		t.Fatal(err)
	}
	if h, _, err := c.recv(); err != nil || h.ID != 77 || h.Flags&FlagError == 0 || syscall.Errno(h.Error) != syscall.E2BIG {
		t.Fatalf("20 descriptors in two pieces: reply %+v %v, want E2BIG", h, err)
	}
	// a no-reply command that fails sends nothing: the next reply is the next command's
	c.id++
	if err := c.send(Header{ID: c.id, Command: 99, Flags: FlagNoReply}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.regionRead(RegionConfig, 0, 4); err != nil {
		t.Fatalf("after a no-reply error: %v", err)
	}
}

func repeatFD(fd, n int) []int {
	f := make([]int, n)
	for i := range f {
		f[i] = fd
	}
	return f
}

// TestDisconnect: a client that goes away mid-message leaves the server
// ready for the next, with the device's state kept and the session's
// mappings released; a second client whose first message comes while the
// first's session is live waits for it to end within Serve's grace (a
// second client the session outlasts is refused: TestSecondClientRefused).
func TestDisconnect(t *testing.T) {
	dev := newTestDevice(t)
	s, path := startServer(t, dev, Options{})
	misc := dev.Geometry().BAR0.MiscRAM
	reg := uint32(dev.RegisterBAR())
	fd := memfd(t, 1<<16)
	cuts := []struct {
		name string
		send func(c *testClient)
	}{
		{"half a header", func(c *testClient) { c.c.Write([]byte{1, 0, 9, 0, 32}) }},
		{"header without its payload", func(c *testClient) {
			var h [HeaderSize]byte
			Header{ID: 9, Command: CmdRegionWrite, Size: 36}.Marshal(h[:])
			c.c.Write(append(h[:], 1, 2, 3))
		}},
		{"after a valid write", func(c *testClient) {}},
		{"size below the header", func(c *testClient) {
			var h [HeaderSize]byte
			Header{ID: 9, Command: CmdRegionWrite, Size: 3}.Marshal(h[:])
			c.c.Write(h[:])
		}},
	}
	for i, cut := range cuts {
		c := dial(t, path)
		c.handshake()
		if _, _, err := c.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, 0x1000_0000, 0x10000), fd); err != nil {
			t.Fatal(err)
		}
		if err := c.regionWrite(reg, misc+0x300, le32(uint32(0xc0de0000+i))); err != nil {
			t.Fatal(err)
		}
		cut.send(c)
		c.c.Close()
		next := dial(t, path)
		next.handshake()
		p, err := next.regionRead(reg, misc+0x300, 4)
		if err != nil || binary.LittleEndian.Uint32(p) != uint32(0xc0de0000+i) {
			t.Fatalf("%s: the next client reads %x (%v), want the value written before", cut.name, p, err)
		}
		if n := len(s.Memory().Mappings()); n != 0 {
			t.Fatalf("%s: %d mappings of the old client left", cut.name, n)
		}
		next.c.Close()
	}
	// one client at a time: the second is answered only after the first
	// goes, within the grace (1 s of the default 10 s handshake timeout)
	first := dial(t, path)
	first.handshake()
	second := dial(t, path)
	answered := make(chan error, 1)
	go func() {
		_, _, err := second.call(CmdVersion, versionPayload(0, 1, ""))
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("second client answered while the first is connected (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	first.c.Close()
	if err := <-answered; err != nil {
		t.Fatalf("second client after the first went: %v", err)
	}
}

func TestOptionsAndHeaderBounds(t *testing.T) {
	dev := newTestDevice(t)
	for _, o := range []Options{
		{MaxMsgFDs: -1}, {MaxMsgFDs: MaxOptionFDs + 1}, {MaxDataXferSize: 4}, {MaxDataXferSize: MaxOptionXfer + 1},
		{MaxDMAMaps: MaxOptionMaps + 1}, {MSIXVectors: -2}, {ReplyTimeout: -time.Second}, {Class: 1 << 24},
		{HandshakeTimeout: -1}, {HandshakeTimeout: -time.Second}, {StallBackoff: -1},
	} {
		if _, err := New(dev, o); !errors.Is(err, ErrLimit) {
			t.Errorf("New(%+v): %v, want ErrLimit", o, err)
		}
		if _, err := NewGuestMemory(o); !errors.Is(err, ErrLimit) {
			t.Errorf("NewGuestMemory(%+v): %v, want ErrLimit", o, err)
		}
	}
	// a zero handshake timeout is the default one, never "no limit"
	for _, tc := range []struct{ given, want time.Duration }{{0, DefaultHandshakeTimeout}, {time.Millisecond, time.Millisecond}} {
		s, err := New(newTestDevice(t), Options{HandshakeTimeout: tc.given})
		if err != nil || s.opt.HandshakeTimeout != tc.want {
			t.Errorf("New with HandshakeTimeout %v: %v, %v; want %v", tc.given, s.opt.HandshakeTimeout, err, tc.want)
		}
	}
	if s, err := New(newTestDevice(t), Options{}); err != nil {
		t.Errorf("New with no StallBackoff: %v", err)
	} else if s.opt.StallBackoff != DefaultStallBackoff {
		t.Errorf("New with no StallBackoff: %v, want %v", s.opt.StallBackoff, DefaultStallBackoff)
	}
	if _, err := New(nil, Options{}); !errors.Is(err, ErrMessage) {
		t.Errorf("New(nil): %v", err)
	}
	for _, bars := range [][6]uint64{{3 << 20}, {8}, {1 << 33, 4096}} {
		if _, err := NewConfigHeader(HeaderIdentity{BARs: bars}); err == nil {
			t.Errorf("NewConfigHeader with BARs %#x: no error", bars)
		}
	}
}
