package vfiouser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logLines collects a server's log lines (Options.Logf).
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// count is the number of lines holding sub.
func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// last is the latest line.
func (l *logLines) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return l.lines[len(l.lines)-1]
}

// waitLines waits for the log to have n lines, fails tb if it has more,
// and returns the last.
func (l *logLines) waitLines(tb testing.TB, n int) string {
	tb.Helper()
	l.waitFor(tb, "", n)
	if got := l.count(""); got != n {
		tb.Fatalf("%d log lines, want %d:\n%s", got, n, l)
	}
	return l.last()
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// waitFor waits until n lines hold sub.
func (l *logLines) waitFor(tb testing.TB, sub string, n int) {
	tb.Helper()
	waitUntil(tb, 10*time.Second, func() bool { return l.count(sub) >= n }, "%d log lines with %q; the log:\n%s", n, sub, l)
}

// waitUntil polls cond until it holds, failing tb past within.
func waitUntil(tb testing.TB, within time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("waited %v for "+format, append([]any{within}, args...)...)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitIdle waits until s has no live session.
func waitIdle(tb testing.TB, s *Server) {
	tb.Helper()
	waitUntil(tb, 10*time.Second, func() bool { return len(s.slot) == 0 }, "the last session to end")
}

// waitClosed reads c until the server closes it (end of stream, or a reset
// when the server closed with bytes of c's unread), failing tb if that
// takes longer than within; it returns the headers of the messages read
// before.
func waitClosed(tb testing.TB, c *Client, within time.Duration) []Header {
	tb.Helper()
	if err := c.c.SetReadDeadline(time.Now().Add(within)); err != nil {
		tb.Fatal(err)
	}
	var got []Header
	for {
		h, _, err := c.recv()
		switch {
		case err == nil:
			got = append(got, h)
		case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
			return got
		default:
			tb.Fatalf("the server did not close the connection within %v: %v", within, err)
		}
	}
}

// served checks that c, a new client, is served: VERSION, then config
// space reads the vendor id.
func served(tb testing.TB, s *Server, c *testClient) {
	tb.Helper()
	c.handshake()
	p, err := c.regionRead(RegionConfig, 0, 4)
	if err != nil {
		tb.Fatalf("config read: %v", err)
	}
	if v := binary.LittleEndian.Uint16(p); v != s.dev.Identity().Vendor {
		tb.Fatalf("config read: vendor %#x, want %#x", v, s.dev.Identity().Vendor)
	}
}

// TestHandshakeTimeout: a connection that has no VERSION accepted within
// the handshake timeout is closed, once it has passed and not before, with
// one log line saying why, and the next client is served; after VERSION a
// session may stay idle longer than that.
func TestHandshakeTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var logs logLines
	s, path := startServer(t, newTestDevice(t), Options{HandshakeTimeout: timeout, Logf: logs.logf})
	const why = "within the handshake timeout (200ms) of connecting; connection closed"
	cases := []struct {
		name    string
		send    func(t *testing.T, c *testClient)
		replies int    // error replies the client gets before the close
		log     string // its log line holds this and why
	}{
		{"silent", func(*testing.T, *testClient) {}, 0, "vfio-user: no message " + why},
		{"half a header", func(t *testing.T, c *testClient) { _, _ = c.c.Write([]byte{1, 0, 1, 0, 32}) }, 0, "session ended: vfio-user: no VERSION accepted"},
		{"a VERSION cut short", func(t *testing.T, c *testClient) {
			m := msgBytes(Header{ID: 1, Command: CmdVersion}, versionPayload(0, 1, clientCaps))
			_, _ = c.c.Write(m[:len(m)-5])
		}, 0, "session ended: vfio-user: no VERSION accepted"},
		{"commands but no VERSION", func(t *testing.T, c *testClient) {
			if _, _, err := c.call(CmdDeviceGetInfo, le32(16, 0, 0, 0)); !isErrno(err, syscall.EINVAL) {
				t.Fatalf("DEVICE_GET_INFO before VERSION: %v, want EINVAL", err)
			}
		}, 0, "session ended: vfio-user: no VERSION accepted"},
		{"refused VERSIONs only", func(t *testing.T, c *testClient) {
			for _, p := range [][]byte{{0, 0}, versionPayload(0, 1, `{"capabilities":{"pgsizes":8192}}`)} {
				if _, _, err := c.call(CmdVersion, p); err == nil {
					t.Fatal("a bad VERSION accepted")
				}
			}
		}, 0, "session ended: vfio-user: no VERSION accepted"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			c := dial(t, path)
			tc.send(t, c)
			if got := waitClosed(t, c.Client, timeout+10*time.Second); len(got) != tc.replies {
				t.Fatalf("%d messages before the close, want %d: %+v", len(got), tc.replies, got)
			}
			if el := time.Since(start); el < timeout {
				t.Fatalf("closed after %v, before the handshake timeout", el)
			}
			if line := logs.waitLines(t, i+1); !strings.Contains(line, tc.log) || !strings.Contains(line, why) {
				t.Fatalf("log line %q, want %q and %q", line, tc.log, why)
			}
			waitIdle(t, s)
			next := dial(t, path)
			served(t, s, next)
			next.Close()
			waitIdle(t, s)
		})
	}
	t.Run("idle after VERSION", func(t *testing.T) {
		c := dial(t, path)
		served(t, s, c)
		before := logs.count("")
		time.Sleep(3 * timeout) // idle past the handshake timeout: nothing may happen
		p, err := c.regionRead(RegionConfig, 0, 4)
		if err != nil || binary.LittleEndian.Uint16(p) != s.dev.Identity().Vendor {
			t.Fatalf("config read after idling %v: %x, %v", 3*timeout, p, err)
		}
		if n := logs.count(""); n != before {
			t.Fatalf("log lines while idle after VERSION:\n%s", &logs)
		}
	})
}

// TestSecondClientRefused: while a session is live, a second client is
// answered EBUSY (its first command, VERSION or not), closed without a
// reply (a no-reply command) or closed at the handshake timeout (silent),
// each with one log line; the live session is untouched and keeps working.
func TestSecondClientRefused(t *testing.T) {
	const timeout = 300 * time.Millisecond
	var logs logLines
	dev := newTestDevice(t)
	s, path := startServer(t, dev, Options{HandshakeTimeout: timeout, Logf: logs.logf})
	reg, misc := uint32(dev.RegisterBAR()), dev.Geometry().BAR0.MiscRAM
	first := dial(t, path)
	served(t, s, first)
	if _, _, err := first.call(CmdDMAMap, dmaMap(DMAFlagRead|DMAFlagWrite, 0, 0x1000_0000, 0x10000), memfd(t, 1<<16)); err != nil {
		t.Fatal(err)
	}
	if err := first.regionWrite(reg, misc+0x300, le32(0xfeedf00d)); err != nil {
		t.Fatal(err)
	}
	firstWorks := func(t *testing.T) {
		t.Helper()
		p, err := first.regionRead(RegionConfig, 0, 4)
		if err != nil || binary.LittleEndian.Uint16(p) != dev.Identity().Vendor {
			t.Fatalf("the live session's config read: %x, %v", p, err)
		}
		if p, err := first.regionRead(reg, misc+0x300, 4); err != nil || binary.LittleEndian.Uint32(p) != 0xfeedf00d {
			t.Fatalf("the live session's BAR read: %x, %v", p, err)
		}
		if m := s.Memory().Mappings(); len(m) != 1 || m[0].Addr != 0x1000_0000 {
			t.Fatalf("the live session's mappings: %+v", m)
		}
	}
	cases := []struct {
		name  string
		send  func(t *testing.T, c *testClient)
		after int    // EBUSY replies read after send (those send did not read)
		log   string // its log line holds this
	}{
		{"VERSION", func(t *testing.T, c *testClient) {
			if _, err := c.Version(clientCaps); !isErrno(err, syscall.EBUSY) {
				t.Fatalf("VERSION: %v, want EBUSY", err)
			}
		}, 0, "answered its VERSION with EBUSY"},
		{"VERSION with a descriptor", func(t *testing.T, c *testClient) {
			if _, _, err := c.call(CmdVersion, versionPayload(0, 1, ""), memfd(t, 4096)); !isErrno(err, syscall.EBUSY) {
				t.Fatalf("VERSION: %v, want EBUSY", err)
			}
		}, 0, "answered its VERSION with EBUSY"},
		{"another command first", func(t *testing.T, c *testClient) {
			if _, _, err := c.call(CmdRegionWrite, rwPayload(misc+0x300, reg, 4, le32(1))); !isErrno(err, syscall.EBUSY) {
				t.Fatalf("REGION_WRITE: %v, want EBUSY", err)
			}
		}, 0, "answered its REGION_WRITE with EBUSY"},
		{"a no-reply command", func(t *testing.T, c *testClient) {
			if err := c.send(Header{ID: 1, Command: CmdDeviceReset, Flags: FlagNoReply}, nil); err != nil {
				t.Fatal(err)
			}
		}, 0, "without a reply: its first message is not a command that wants one"},
		{"a huge first message", func(t *testing.T, c *testClient) {
			var h [HeaderSize]byte
			Header{ID: 1, Command: CmdVersion, Size: 1 << 30}.Marshal(h[:])
			_, _ = c.c.Write(h[:])
		}, 1, "answered its VERSION with EBUSY"},
		{"silent", func(*testing.T, *testClient) {}, 0, "vfio-user: no message within the handshake timeout"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, path)
			tc.send(t, c)
			got := waitClosed(t, c.Client, timeout+10*time.Second)
			if len(got) != tc.after {
				t.Fatalf("messages %+v, want %d EBUSY replies", got, tc.after)
			}
			for _, h := range got {
				if h.Type() != FlagReply || h.Flags&FlagError == 0 || syscall.Errno(h.Error) != syscall.EBUSY || h.ID != 1 {
					t.Fatalf("reply %+v, want an EBUSY error reply to message 1", h)
				}
			}
			if line := logs.waitLines(t, i+1); !strings.Contains(line, tc.log) {
				t.Fatalf("log line %q, want %q", line, tc.log)
			}
			firstWorks(t)
		})
	}
	first.Close()
	waitIdle(t, s)
	served(t, s, dial(t, path))
}

// TestConnectionFlood: a flood of connections, silent or each sending a
// VERSION, while a session is live holds a bounded number of goroutines:
// each connection is closed (at once past the bound, else refused or timed
// out) with one log line, the live session keeps working, and afterwards
// the server serves the next client with its goroutines back as they were.
func TestConnectionFlood(t *testing.T) {
	const timeout, n = 200 * time.Millisecond, 64
	for _, speak := range []bool{false, true} {
		t.Run(fmt.Sprintf("VERSION %v", speak), func(t *testing.T) {
			var logs logLines
			s, path := startServer(t, newTestDevice(t), Options{HandshakeTimeout: timeout, Logf: logs.logf})
			first := dial(t, path)
			served(t, s, first)
			base := runtime.NumGoroutine()
			peak := base
			var conns []*Client
			for range n {
				c, err := Dial(path)
				if err != nil {
					t.Fatalf("dial during the flood: %v", err)
				}
				t.Cleanup(func() { c.Close() })
				if speak {
					if err := c.send(Header{ID: 1, Command: CmdVersion}, versionPayload(0, 1, clientCaps)); err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
						t.Fatal(err)
					}
				}
				conns = append(conns, c)
				peak = max(peak, runtime.NumGoroutine())
			}
			busy := 0
			for _, c := range conns {
				peak = max(peak, runtime.NumGoroutine())
				got := waitClosed(t, c, 3*timeout+10*time.Second)
				for _, h := range got {
					if !speak || h.Flags&FlagError == 0 || syscall.Errno(h.Error) != syscall.EBUSY {
						t.Fatalf("a flood connection got %+v", h)
					}
					busy++
				}
			}
			// one goroutine per connection held (at most maxLobby), and a few of the runtime's
			if limit := base + maxLobby + 4; peak > limit {
				t.Fatalf("%d goroutines during the flood, %d before: more than %d", peak, base, limit)
			}
			t.Logf("goroutines: %d before the flood, at most %d during it; %d connections closed at once", base, peak, logs.count("closed at once"))
			logs.waitFor(t, "", n)
			if got := logs.count("closed at once") + logs.count("vfio-user: no message within") + logs.count("answered its VERSION with EBUSY"); got != n || logs.count("") != n {
				t.Fatalf("%d log lines of %d connections:\n%s", logs.count(""), n, &logs)
			}
			if busy != logs.count("answered its VERSION with EBUSY") {
				t.Fatalf("%d EBUSY replies, %d logged", busy, logs.count("EBUSY"))
			}
			if logs.count("closed at once") == 0 {
				t.Fatalf("no connection closed at once past the bound of %d:\n%s", maxLobby, &logs)
			}
			p, err := first.regionRead(RegionConfig, 0, 4)
			if err != nil || binary.LittleEndian.Uint16(p) != s.dev.Identity().Vendor {
				t.Fatalf("the live session after the flood: %x, %v", p, err)
			}
			first.Close()
			waitIdle(t, s)
			next := dial(t, path)
			served(t, s, next)
			waitUntil(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= base+2 },
				"the goroutines to return to %d (+2), now %d", base, runtime.NumGoroutine())
		})
	}
}
