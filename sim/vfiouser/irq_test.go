package vfiouser

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSetIRQsBlockingEventfd: a client gives a blocking eventfd at its
// maximum count as the INTx trigger and triggers it; then it leaves. The
// trigger is answered and the next client is served (the server's write
// to the eventfd used to block for ever, the session never ended and every
// later client was refused EBUSY). A descriptor that is not an eventfd (a
// pipe, whose write blocks once it is full) is refused.
func TestSetIRQsBlockingEventfd(t *testing.T) {
	dev := newTestDevice(t)
	_, path := startServer(t, dev, Options{})
	c := dial(t, path)
	c.handshake()
	var pfd [2]int
	if err := unix.Pipe2(pfd[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pfd[0])
	defer unix.Close(pfd[1])
	if _, _, err := c.call(CmdSetIRQs, le32(20, IRQSetDataEventfd|IRQSetActionTrig, IRQIntx, 0, 1), pfd[1]); !isErrno(err, unix.EINVAL) {
		t.Fatalf("SET_IRQS with a pipe: %v, want EINVAL", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC) // blocking
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], 0xfffffffffffffffe)
	if _, err := unix.Write(efd, v[:]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.call(CmdSetIRQs, le32(20, IRQSetDataEventfd|IRQSetActionTrig, IRQIntx, 0, 1), efd); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := c.call(CmdSetIRQs, le32(20, IRQSetDataNone|IRQSetActionTrig, IRQIntx, 0, 1))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("trigger: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Errorf("trigger not answered in 2 s")
	}
	c.Close()
	time.Sleep(100 * time.Millisecond)
	c2 := dial(t, path)
	ch := make(chan error, 1)
	go func() { _, err := c2.Version(clientCaps); ch <- err }()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatalf("next client: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("next client not served in 5 s")
	}
}
