package vfiouser

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPipelinedDescriptors: messages sent back to back, before the server
// reads any, reach it in fewer reads than messages; each DMA_MAP still
// gets its own file descriptor and a message without one gets none.
func TestPipelinedDescriptors(t *testing.T) {
	s, path := startServer(t, newTestDevice(t), Options{})
	c := dial(t, path)
	c.handshake()
	fdA, fdB := memfd(t, 1<<16), memfd(t, 1<<16)
	if _, err := unix.Pwrite(fdA, []byte("AAAA"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Pwrite(fdB, []byte("BBBB"), 0); err != nil {
		t.Fatal(err)
	}
	const a, b = 0x1_0000_0000, 0x2_0000_0000
	msgs := []struct {
		cmd     uint16
		payload []byte
		fds     []int
	}{
		{CmdRegionRead, rwPayload(0, RegionConfig, 4, nil), nil},
		{CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, a, 1<<16), []int{fdA}},
		{CmdRegionRead, rwPayload(0, RegionConfig, 4, nil), nil},
		{CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, b, 1<<16), []int{fdB}},
		{CmdDMAMap, dmaMap(DMAFlagRead, 0, 0x3_0000_0000, 1<<12), nil}, // no file: reached by DMA_READ
	}
	for i, m := range msgs {
		var oob []byte
		if len(m.fds) > 0 {
			oob = syscall.UnixRights(m.fds...)
		}
		frame := Frame(&c.buf, Header{ID: uint16(100 + i), Command: m.cmd}, m.payload)
		if _, _, err := c.c.WriteMsgUnix(frame, oob, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range msgs {
		h, _, err := c.recv()
		if err != nil || h.ID != uint16(100+i) || h.Flags&FlagError != 0 {
			t.Fatalf("reply %d: %+v %v", i, h, err)
		}
	}
	got := make([]byte, 4)
	for _, w := range []struct {
		addr uint64
		want string
	}{{a, "AAAA"}, {b, "BBBB"}} {
		if err := s.Memory().Read(w.addr, got); err != nil || string(got) != w.want {
			t.Errorf("guest memory at %#x: %q %v, want %q", w.addr, got, err, w.want)
		}
	}
	maps := s.Memory().Mappings()
	if len(maps) != 3 || !maps[0].Mapped() || !maps[1].Mapped() || maps[2].Mapped() {
		t.Errorf("mappings %+v: want two with files and one without", maps)
	}
}
