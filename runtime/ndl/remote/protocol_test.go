package remote

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// rawDial connects to a test server without the client.
func rawDial(t *testing.T, ts *testServer) *net.UnixConn {
	t.Helper()
	_, path, err := ParseAddress(ts.addr)
	require.NoError(t, err)
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// helloFrame is a HELLO frame of version v.
func helloFrame(v uint16) []byte {
	return appendHello(nil, 0, hello{magic: Magic, version: v})
}

// frame builds a frame from raw header fields and payload.
func frame(length uint32, op byte, tag uint32, payload ...byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, length)
	b = append(b, op, 0, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, tag)
	return append(b, payload...)
}

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// readUntilClosed reads frames from c until the server closes it, and
// returns the ERROR frames' messages. It fails if c stays open for 3 s.
func readUntilClosed(t *testing.T, c net.Conn) []errorMsg {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(3*time.Second)))
	var msgs []errorMsg
	for {
		f, err := ReadFrame(c, nil)
		if err != nil {
			require.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET), "connection not closed by the server: %v", err)
			return msgs
		}
		if f.Op == OpError {
			e, err := decodeError(f.Payload)
			require.NoError(t, err)
			msgs = append(msgs, e)
		}
	}
}

func TestMalformedFrames(t *testing.T) {
	ts := startServer(t, 0x1000, ServerOptions{})
	healthy := dialTest(t, ts)
	hd, err := healthy.Device(0)
	require.NoError(t, err)

	read := appendRW(nil, OpRead, 1, rwRequest{bar: 0, count: 1, offset: 0})
	tests := []struct {
		name      string
		bytes     []byte
		halfClose bool    // close our write side after the bytes
		code      errCode // of the ERROR reply (0: none expected)
		reason    string  // in the ERROR text and the log
	}{
		{"oversized length", frame(MaxPayloadSize+1, byte(OpHello), 0), false, codeProtocol, "more than the maximum"},
		{"huge length", frame(math32, byte(OpRead), 0), false, codeProtocol, "more than the maximum"},
		{"truncated header", helloFrame(Version)[:7], true, codeProtocol, "truncated frame header"},
		{"truncated body", helloFrame(Version)[:15], true, codeProtocol, "truncated HELLO frame"},
		{"unknown op", frame(0, 0x42, 0), false, codeProtocol, "unknown op 0x42"},
		{"reserved header byte", func() []byte { b := helloFrame(Version); b[6] = 1; return b }(), false, codeProtocol, "reserved header bytes"},
		{"bad magic", frame(6, byte(OpHello), 0, 'N', 'O', 'P', 'E', 1, 0), false, codeProtocol, "HELLO magic"},
		{"wrong version", helloFrame(7), false, codeVersion, "server speaks protocol versions 1 to 2, client sent version 7"},
		{"host request in version 1", cat(helloFrame(1), appendHostAlloc(nil, 1, hostRequest{size: 64, align: 64})), false, codeProtocol,
			"HOST_ALLOC is a version 2 request; this connection speaks version 1"},
		{"CLOCK in version 1", cat(helloFrame(1), appendClock(nil, 1, 0)), false, codeProtocol, "CLOCK is a version 2 request"},
		{"HOST_READ bar byte", cat(helloFrame(Version), appendRW(nil, OpHostRead, 1, rwRequest{bar: 1, count: 1})), false, codeProtocol, "HOST_READ reserved byte"},
		{"HOST_WRITE count/payload mismatch", cat(helloFrame(Version), appendRW(nil, OpHostWrite, 1, rwRequest{count: 5, data: make([]byte, 4)})), false, codeProtocol,
			"HOST_WRITE of 5 bytes: payload is 20 bytes, want 21"},
		{"short HELLO", frame(4, byte(OpHello), 0, 'N', 'R', 'D', 'L'), false, codeProtocol, "HELLO payload is 4 bytes"},
		{"long HELLO", frame(8, byte(OpHello), 0, 'N', 'R', 'D', 'L', 1, 0, 0, 0), false, codeProtocol, "HELLO payload is 8 bytes"},
		{"request before HELLO", read, false, codeProtocol, "READ before HELLO"},
		{"second HELLO", cat(helloFrame(Version), helloFrame(Version)), false, codeProtocol, "HELLO is not a request"},
		{"reply op from client", cat(helloFrame(Version), frame(0, byte(OpWriteReply), 1)), false, codeProtocol, "WRITE reply is not a request"},
		{"count/payload mismatch", cat(helloFrame(Version), appendRW(nil, OpWrite, 1, rwRequest{count: 2, data: make([]byte, 4)})), false, codeProtocol, "WRITE of 2 words: payload is 20 bytes, want 24"},
		{"READ with data", cat(helloFrame(Version), frame(20, byte(OpRead), 1, make([]byte, 20)...)), false, codeProtocol, "READ of 0 words: payload is 20 bytes, want 16"},
		{"count above MaxWords", cat(helloFrame(Version), appendRW(nil, OpRead, 1, rwRequest{count: MaxWords + 1})), false, codeProtocol, "exceeds 262144 words"},
		{"reserved READ byte", cat(helloFrame(Version), func() []byte { b := appendRW(nil, OpRead, 1, rwRequest{count: 1}); b[HeaderSize+3] = 9; return b }()), false, codeProtocol, "reserved byte"},
		{"short SLEEP", cat(helloFrame(Version), frame(8, byte(OpSleep), 1, make([]byte, 8)...)), false, codeProtocol, "SLEEP payload is 8 bytes"},
		{"SLEEP past MaxInt64", cat(helloFrame(Version), appendSleep(nil, 1, sleepRequest{ns: 1 << 63})), false, codeProtocol, "SLEEP duration"},
		{"truncated WRITE", cat(helloFrame(Version), appendRW(nil, OpWrite, 1, rwRequest{count: 4, data: make([]byte, 16)})[:30]), true, codeProtocol, "truncated WRITE frame"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for len(ts.logs) > 0 {
				<-ts.logs
			}
			writes := ts.fakes[0].writes()
			c := rawDial(t, ts)
			_, err := c.Write(tt.bytes)
			require.NoError(t, err)
			if tt.halfClose {
				require.NoError(t, c.CloseWrite())
			}
			msgs := readUntilClosed(t, c)
			if tt.code != 0 {
				require.NotEmpty(t, msgs, "no ERROR reply")
				last := msgs[len(msgs)-1]
				assert.Equal(t, tt.code, last.code)
				assert.Contains(t, last.text, tt.reason)
			}
			select {
			case l := <-ts.logs:
				assert.Contains(t, l, "closing connection")
				assert.Contains(t, l, tt.reason)
			case <-time.After(3 * time.Second):
				t.Error("nothing logged")
			}
			assert.Equal(t, writes, ts.fakes[0].writes(), "the device was written")

			// The other connection is unaffected.
			require.NoError(t, hd.Write32(0, 0x10, 0xBEEF))
			v, err := hd.Read32(0, 0x10)
			require.NoError(t, err)
			assert.Equal(t, uint32(0xBEEF), v)
		})
	}
}

// math32 is the largest u32.
const math32 = 1<<32 - 1

// writes returns how many words the fake holds in all its BARs.
func (d *fakeDevice) writes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, m := range d.words {
		n += len(m)
	}
	return n
}

func TestVersionMismatch(t *testing.T) {
	t.Run("client newer", func(t *testing.T) {
		ts := startServer(t, 0x1000, ServerOptions{})
		_, err := dial(ts.addr, ClientOptions{Timeout: 3 * time.Second}, 3)
		require.ErrorIs(t, err, ErrVersion)
		assert.Contains(t, err.Error(), "client speaks protocol version 3")
		assert.Contains(t, err.Error(), "server speaks protocol versions 1 to 2")
		log := <-ts.logs
		assert.Contains(t, log, "server speaks protocol versions 1 to 2, client sent version 3")
	})
	t.Run("server newer", func(t *testing.T) {
		ts := startServer(t, 0x1000, ServerOptions{})
		ts.srv.minVersion, ts.srv.version = 3, 3
		_, err := Dial(ts.addr, ClientOptions{Timeout: 3 * time.Second})
		require.ErrorIs(t, err, ErrVersion)
		assert.Contains(t, err.Error(), "client speaks protocol version 2, server refused")
		assert.Contains(t, err.Error(), "client speaks protocol version 1, server refused")
		assert.Contains(t, err.Error(), "server speaks protocol version 3")
	})
	t.Run("version 1 server", func(t *testing.T) {
		// Dial falls back to version 1: BAR requests work, host memory is
		// refused without a request.
		ts := startServer(t, 0x1000, ServerOptions{})
		ts.srv.version = 1
		c := dialTest(t, ts)
		assert.Equal(t, uint16(1), c.Version())
		d, err := c.Device(0)
		require.NoError(t, err)
		require.NoError(t, d.Write32(0, 8, 0xABCD))
		v, err := d.Read32(0, 8)
		require.NoError(t, err)
		assert.Equal(t, uint32(0xABCD), v)
		_, err = d.HostAlloc(64, 64)
		require.ErrorIs(t, err, ErrUnsupported)
		assert.Contains(t, err.Error(), "HOST_ALLOC needs protocol version 2; the connection speaks version 1")
		_, err = d.ClockPS()
		require.ErrorIs(t, err, ErrUnsupported)
		require.NoError(t, d.Write32(0, 8, 1), "the connection stays usable")
	})
	t.Run("version 1 client", func(t *testing.T) {
		ts := startServer(t, 0x1000, ServerOptions{})
		c, err := dial(ts.addr, ClientOptions{Timeout: 3 * time.Second}, 1)
		require.NoError(t, err)
		defer c.Close()
		assert.Equal(t, uint16(1), c.Version(), "the server answers in the client's version")
		d, err := c.Device(0)
		require.NoError(t, err)
		require.NoError(t, d.Sleep(time.Microsecond))
	})
	t.Run("server replies another version", func(t *testing.T) {
		// A server that accepts anything and replies version 3.
		addr := "unix:" + filepath.Join(shortTempDir(t), "v")
		l, err := Listen(addr, false)
		require.NoError(t, err)
		defer l.Close()
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			if _, err := ReadFrame(c, nil); err != nil {
				return
			}
			p := appendHelloReplyPayload(nil, helloReply{version: 3, devices: []DeviceInfo{{}}})
			b, _ := AppendFrame(nil, OpHelloReply, 0, p)
			_, _ = c.Write(b)
			_, _ = io.Copy(io.Discard, c)
		}()
		_, err = Dial(addr, ClientOptions{Timeout: 3 * time.Second})
		require.ErrorIs(t, err, ErrVersion)
		assert.Contains(t, err.Error(), "client speaks protocol version 2, server replied with version 3")
	})
}

// stallServer accepts one connection on a unix socket, answers its HELLO if
// answer, and then reads without replying until the test ends.
func stallServer(t *testing.T, answer bool) string {
	t.Helper()
	addr := "unix:" + filepath.Join(shortTempDir(t), "stall")
	l, err := Listen(addr, false)
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { _ = l.Close(); <-done })
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if answer {
			if _, err := ReadFrame(c, nil); err != nil {
				return
			}
			p := appendHelloReplyPayload(nil, helloReply{version: Version, devices: []DeviceInfo{{}}})
			b, _ := AppendFrame(nil, OpHelloReply, 0, p)
			if _, err := c.Write(b); err != nil {
				return
			}
		}
		_, _ = io.Copy(io.Discard, c)
	}()
	return addr
}

func TestTimeouts(t *testing.T) {
	t.Run("handshake", func(t *testing.T) {
		addr := stallServer(t, false)
		start := time.Now()
		_, err := Dial(addr, ClientOptions{Timeout: 100 * time.Millisecond})
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		assert.Less(t, time.Since(start), 2*time.Second)
	})
	t.Run("request", func(t *testing.T) {
		addr := stallServer(t, true)
		c, err := Dial(addr, ClientOptions{Timeout: 100 * time.Millisecond})
		require.NoError(t, err)
		defer c.Close()
		d, err := c.Device(0)
		require.NoError(t, err)
		_, err = d.Read32(0, 0)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		_, err = d.Read32(0, 0)
		require.ErrorIs(t, err, ndl.ErrClosed)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "the later error names the cause")
	})
	t.Run("Close interrupts a request", func(t *testing.T) {
		addr := stallServer(t, true)
		c, err := Dial(addr, ClientOptions{Timeout: 10 * time.Second})
		require.NoError(t, err)
		d, err := c.Device(0)
		require.NoError(t, err)
		errc := make(chan error, 1)
		go func() { _, err := d.Read32(0, 0); errc <- err }()
		time.Sleep(20 * time.Millisecond) // let the request go out
		start := time.Now()
		require.NoError(t, c.Close())
		select {
		case err := <-errc:
			assert.ErrorIs(t, err, ndl.ErrClosed)
		case <-time.After(3 * time.Second):
			t.Fatal("Close did not interrupt the request")
		}
		assert.Less(t, time.Since(start), 3*time.Second)
	})
	t.Run("server idle", func(t *testing.T) {
		ts := startServer(t, 0x1000, ServerOptions{IdleTimeout: 50 * time.Millisecond})
		c := rawDial(t, ts)
		readUntilClosed(t, c)
		assert.Contains(t, <-ts.logs, "no complete request within the idle timeout 50ms")
	})
}

func TestNewServerValidation(t *testing.T) {
	dev := newFake(0x1000)
	tests := []struct {
		name    string
		exports []Export
		want    string
	}{
		{"none", nil, "0 devices"},
		{"too many", make([]Export, MaxDevices+1), "257 devices"},
		{"nil device", []Export{{Device: dev}, {}}, "device 1 is nil"},
		{"long name", []Export{{Device: dev, Name: strings.Repeat("n", MaxNameLen+1)}}, "name"},
		{"bad UTF-8 name", []Export{{Device: dev, Name: "\xff"}}, "UTF-8"},
		{"connected out of range", []Export{{Device: dev, Connected: []int{1}}}, "connected device 1 out of range"},
		{"connected negative", []Export{{Device: dev, Connected: []int{-1}}}, "connected device -1"},
		{"too many connected", []Export{{Device: dev, Connected: make([]int, MaxConnected+1)}}, "65 connected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewServer(tt.exports, ServerOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := NewServer([]Export{{Device: dev, Name: strings.Repeat("é", MaxNameLen/2), Connected: make([]int, MaxConnected)}}, ServerOptions{})
	assert.NoError(t, err, "limits are inclusive")
}

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in, network, address string
		bad                  bool
	}{
		{in: "unix:/tmp/n.sock", network: "unix", address: "/tmp/n.sock"},
		{in: "unix:rel/n.sock", network: "unix", address: "rel/n.sock"},
		{in: "unix:@abstract", network: "unix", address: "@abstract"},
		{in: "tcp:127.0.0.1:7000", network: "tcp", address: "127.0.0.1:7000"},
		{in: "tcp:localhost:0", network: "tcp", address: "localhost:0"},
		{in: "tcp:[::1]:65535", network: "tcp", address: "[::1]:65535"},
		{in: "tcp:example.com:80", network: "tcp", address: "example.com:80"},
		{in: "", bad: true},
		{in: "/tmp/n.sock", bad: true},
		{in: "unix:", bad: true},
		{in: "unix:a\x00b", bad: true},
		{in: "unix:/" + strings.Repeat("s", MaxSocketPath-1), network: "unix", address: "/" + strings.Repeat("s", MaxSocketPath-1)},
		{in: "unix:/" + strings.Repeat("s", MaxSocketPath), bad: true}, // past sun_path: the kernel's "invalid argument"
		{in: "udp:127.0.0.1:1", bad: true},
		{in: "UNIX:/x", bad: true},
		{in: "tcp:127.0.0.1", bad: true},
		{in: "tcp::7000", bad: true},
		{in: "tcp:127.0.0.1:http", bad: true},
		{in: "tcp:127.0.0.1:65536", bad: true},
		{in: "tcp:127.0.0.1:-1", bad: true},
		{in: "tcp:::1:80", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			network, address, err := ParseAddress(tt.in)
			if tt.bad {
				require.ErrorIs(t, err, ErrBadAddress)
				assert.Contains(t, err.Error(), "remote: address ")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.network, network)
			assert.Equal(t, tt.address, address)
		})
	}
}

func TestListen(t *testing.T) {
	tests := []struct {
		addr  string
		allow bool
		err   error // nil: listens
	}{
		{addr: "tcp:127.0.0.1:0"},
		{addr: "tcp:127.1.2.3:0"},
		{addr: "tcp:localhost:0"},
		{addr: "tcp:10.0.0.1:0", err: ErrNotLoopback},
		{addr: "tcp:0.0.0.0:0", err: ErrNotLoopback},
		{addr: "tcp:[::]:0", err: ErrNotLoopback},
		{addr: "tcp:example.com:0", err: ErrNotLoopback},
		{addr: "tcp:0.0.0.0:0", allow: true},
		{addr: "tcp:nowhere", err: ErrBadAddress},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			l, err := Listen(tt.addr, tt.allow)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				if tt.err == ErrNotLoopback {
					assert.Contains(t, err.Error(), "--allow-remote")
				}
				return
			}
			require.NoError(t, err)
			require.NoError(t, l.Close())
		})
	}
}

func TestListenUnixPath(t *testing.T) {
	dir := shortTempDir(t)

	t.Run("stale socket is replaced", func(t *testing.T) {
		path := filepath.Join(dir, "stale")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		require.NoError(t, err)
		l.SetUnlinkOnClose(false)
		require.NoError(t, l.Close())
		l2, err := Listen("unix:"+path, false)
		require.NoError(t, err)
		require.NoError(t, l2.Close())
	})
	t.Run("live socket is kept", func(t *testing.T) {
		path := filepath.Join(dir, "live")
		l, err := Listen("unix:"+path, false)
		require.NoError(t, err)
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				_ = c.Close()
			}
		}()
		_, err = Listen("unix:"+path, false)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "in use")
	})
	t.Run("regular file is kept", func(t *testing.T) {
		path := filepath.Join(dir, "file")
		require.NoError(t, os.WriteFile(path, []byte("keep me"), 0o600))
		_, err := Listen("unix:"+path, false)
		require.Error(t, err)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "keep me", string(b))
	})
}

// closedListener is a listener that is already closed.
type closedListener struct{}

func newClosedListener() net.Listener            { return closedListener{} }
func (closedListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (closedListener) Close() error              { return nil }
func (closedListener) Addr() net.Addr            { return &net.UnixAddr{Name: "closed", Net: "unix"} }
