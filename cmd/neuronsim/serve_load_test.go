package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/lograte"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
)

// serveHelperEnv carries the serve arguments to TestServeHelper in a child
// process, separated by newlines.
const serveHelperEnv = "NEURONSIM_TEST_SERVE_ARGS"

// TestServeHelper is not a test: run by TestServeLoad in a child process
// (the test binary itself), it runs `neuronsim serve` with the arguments in
// serveHelperEnv until SIGTERM, so that the server's RSS is its own.
func TestServeHelper(t *testing.T) {
	args := os.Getenv(serveHelperEnv)
	if args == "" {
		t.Skip("run by TestServeLoad in a child process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	root := newRootCommand(os.Stdout, os.Stderr)
	root.SetArgs(strings.Split(args, "\n"))
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "serve helper:", err)
		os.Exit(1)
	}
}

// Load-test parameters: the served system's limits and the load.
const (
	loadMaxClients = 128
	loadMaxMemory  = 64 << 20 // --max-memory: the touched-page budget
	loadClients    = 32       // concurrent legitimate clients
	loadIdle       = 1000     // idle connections attempted
	loadHalfSent   = 100      // connections that send half a HELLO
	loadPageFlood  = 20000    // one-word BAR4 writes to distinct pages
	// loadRSSBound is the bound the server's peak RSS must stay under: the
	// page budget, four nodes of page table per page at worst, 128
	// connections' few KiB of buffers and goroutine stacks, the simulated
	// device (a few MiB) and the Go runtime, with room to spare.
	loadRSSBound = 5*loadMaxMemory + 96<<20
)

// TestServeLoad runs `serve` in a child process on loopback with every
// limit set and, within seconds, puts 32 legitimate clients, 1,000 idle
// connections, half-sent frames and the abuse cases of issue 13 (SLEEP
// overflow, host memory exhaustion, a flood of writes to distinct pages) on
// it. A legitimate client must keep working throughout, every connection
// past --max-clients must be refused with an ERROR naming the limit, and
// the server's peak RSS (VmHWM of the child, which is the server alone)
// must stay under loadRSSBound.
func TestServeLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the server's RSS from /proc")
	}
	if raceEnabled {
		t.Skip("bounds the server's RSS and time, which the race detector multiplies (the server's races are the remote package's race tests)")
	}
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if need := uint64(loadIdle + loadHalfSent + loadClients + 200); lim.Cur < need {
		if os.Getenv("CI") != "" {
			t.Fatalf("the open-file limit is %d, the load test needs %d descriptors (CI must provide them)", lim.Cur, need)
		}
		t.Skipf("SKIP LOUDLY: the open-file limit is %d, the load test needs %d descriptors", lim.Cur, need)
	}

	args := []string{"serve", "--listen", "tcp:127.0.0.1:0", "--arch", "trn2",
		"--max-clients", strconv.Itoa(loadMaxClients), "--handshake-timeout", "2s", "--idle-timeout", "20s",
		"--max-memory", strconv.Itoa(loadMaxMemory), "--host-memory-per-client", "16MiB", "--host-memory", "256MiB",
		"--host-buffers-per-client", "64"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelper$")
	cmd.Env = append(os.Environ(), serveHelperEnv+"="+strings.Join(args, "\n"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	started := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState != nil {
			return // stopped by the test
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()

	// The bound address, with the port the system chose.
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "serve printed nothing; stderr: %s", stderr.String())
	line := lines.Text()
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	i := strings.LastIndex(line, " on tcp:127.0.0.1:")
	require.GreaterOrEqual(t, i, 0, "the bound address in %q", line)
	addr := line[i+len(" on "):]
	port, err := strconv.Atoi(strings.TrimPrefix(addr, "tcp:127.0.0.1:"))
	require.NoError(t, err, "%q", line)
	require.NotZero(t, port, "the port the system chose, not 0")

	startRSS := procStatus(t, cmd.Process.Pid, "VmRSS")
	dial := func() *remote.Client {
		c, err := remote.Dial(addr, remote.ClientOptions{Timeout: 10 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}

	// The legitimate clients: each holds a host buffer it writes and reads
	// back, and reads BAR0 and the clock, until the load is over.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rounds atomic.Int64
	failures := make(chan error, loadClients+1+loadIdle+loadHalfSent) // never blocks a sender
	for k := range loadClients + 1 {
		c := dial()
		d, err := c.Device(0)
		require.NoError(t, err)
		pa, err := d.HostAlloc(64<<10, 4096)
		require.NoError(t, err)
		want := bytes.Repeat([]byte{byte(k + 1)}, 64<<10)
		require.NoError(t, d.HostWrite(pa, want), "touch its pages before the flood")
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := make([]byte, len(want))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				want[n%len(want)]++
				err := d.HostWrite(pa, want)
				if err == nil {
					err = d.HostRead(pa, got)
				}
				if err == nil && !bytes.Equal(want, got) {
					err = errors.New("read back other bytes than written")
				}
				if err == nil {
					_, err = d.Read32(hwarch.BAR0, 0)
				}
				if err == nil {
					_, err = d.ClockPS()
				}
				if err != nil {
					failures <- fmt.Errorf("legitimate client %d, round %d: %w", k, n, err)
					return
				}
				rounds.Add(1)
				time.Sleep(time.Millisecond) // a client at work, not a spin on 2 cores
			}
		}()
	}

	// Abuse 1: the SLEEP overflow of issue 13 item 7, refused.
	abuser := dial()
	ad, err := abuser.Device(0)
	require.NoError(t, err)
	require.NoError(t, ad.Sleep(time.Second), "past the firmware's boot: BAR4 writes land")
	for _, ns := range []uint64{1<<63 - 1, 18_000_000_000_000_000} {
		require.Contains(t, rawSleep(t, addr, ns), "SLEEP.ns", "the server refuses it (the client would not send it)")
	}
	// Abuse 2: host memory exhaustion, refused at the client's share.
	var allocs int
	for {
		if _, err := ad.HostAlloc(4<<20, 4096); err != nil {
			require.ErrorIs(t, err, remote.ErrLimit)
			break
		}
		allocs++
		require.Less(t, allocs, 100, "host memory without a bound")
	}
	assert.Equal(t, 4, allocs, "16 MiB per client in 4 MiB buffers")
	// Abuse 3: one-word BAR4 writes to distinct pages, refused at the page
	// budget; the connection stays usable.
	var refused int
	for n := range loadPageFlood {
		if err := ad.Write32(hwarch.BAR4, uint64(n)*8192, 1); err != nil {
			require.ErrorContains(t, err, "page budget exhausted")
			refused++
		}
	}
	assert.Greater(t, refused, loadPageFlood-loadMaxMemory/4096, "writes past the page budget are refused")
	// And 1 MiB writes over 256 MiB of fresh device memory: without the
	// budget the server would hold them all, past loadRSSBound.
	big := make([]uint32, 1<<18)
	for k := range big {
		big[k] = uint32(k) | 1
	}
	var bigRefused int
	for n := range 256 {
		if err := ad.WriteBAR(hwarch.BAR4, 1<<30+uint64(n)<<20, big); err != nil {
			require.ErrorContains(t, err, "page budget exhausted")
			bigRefused++
		}
	}
	assert.Equal(t, 256, bigRefused, "the budget was used up by the one-word flood already")
	_, err = ad.Read32(hwarch.BAR0, 0)
	require.NoError(t, err, "the abusing connection itself stays usable")

	// Abuse 4: half-sent HELLOs and 1,000 idle connections. Those past
	// --max-clients are refused with an ERROR naming the limit; the others
	// are closed by the handshake timeout.
	var held []net.Conn
	var heldMu sync.Mutex
	var refusedConns, accepted atomic.Int64
	var dwg sync.WaitGroup
	sem := make(chan struct{}, 48) // below the server's 64 refusals answered at once
	for n := range loadIdle + loadHalfSent {
		dwg.Add(1)
		sem <- struct{}{}
		go func() {
			defer dwg.Done()
			defer func() { <-sem }()
			c, err := net.Dial("tcp", strings.TrimPrefix(addr, "tcp:"))
			if err != nil {
				failures <- fmt.Errorf("idle connection %d: %w", n, err)
				return
			}
			if n < loadHalfSent {
				_, _ = c.Write([]byte{6, 0, 0, 0, 1, 0}) // half a HELLO header
			}
			_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			f, err := remote.ReadFrame(c, nil)
			switch {
			case err == nil && f.Op == remote.OpError && len(f.Payload) >= 2 && binary.LittleEndian.Uint16(f.Payload) == 11:
				refusedConns.Add(1)
				_ = c.Close()
			case errors.Is(err, os.ErrDeadlineExceeded):
				accepted.Add(1)
				heldMu.Lock()
				held = append(held, c)
				heldMu.Unlock()
			default:
				_ = c.Close()
				failures <- fmt.Errorf("idle connection %d: neither held nor refused with ERROR 11: %v %v", n, f.Op, err)
			}
		}()
	}
	dwg.Wait()
	assert.Positive(t, accepted.Load())
	assert.Greater(t, refusedConns.Load(), int64(loadIdle+loadHalfSent-3*loadMaxClients), "past --max-clients")
	assert.Equal(t, int64(loadIdle+loadHalfSent), accepted.Load()+refusedConns.Load(), "every connection held or refused gracefully")

	time.Sleep(2500 * time.Millisecond) // past the handshake timeout: the held ones are closed
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, err := c.Read(make([]byte, 64))
		assert.Error(t, err, "a silent connection outlived the handshake timeout")
		_ = c.Close()
	}
	late := dial() // the slots came back
	ld, err := late.Device(0)
	require.NoError(t, err)
	_, err = ld.Read32(hwarch.BAR0, 0)
	require.NoError(t, err)

	close(stop)
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	assert.Positive(t, rounds.Load(), "the legitimate clients got work done")

	if t.Failed() {
		t.Logf("server stderr:\n%s", stderr.String())
	}
	hwm := procStatus(t, cmd.Process.Pid, "VmHWM")
	t.Logf("server RSS %d MiB before the load, peak %d MiB (bound %d MiB); %d legitimate rounds; %d idle connections held, %d refused; %d of %d one-word page-flood writes refused",
		startRSS>>20, hwm>>20, loadRSSBound>>20, rounds.Load(), accepted.Load(), refusedConns.Load(), refused, loadPageFlood)
	assert.Less(t, hwm, uint64(loadRSSBound), "the server's peak RSS")

	// The server's log stays bounded however many connections it refused:
	// a burst, then a line a second, the rest counted as dropped.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	elapsed := time.Since(started).Seconds()
	logLines := strings.Count(stderr.String(), "\n")
	assert.LessOrEqual(t, float64(logLines), lograte.DefaultBurst+elapsed/lograte.DefaultInterval.Seconds()+16, "serve's log lines over %.1f s", elapsed)
	assert.Contains(t, stderr.String(), "log lines dropped", "the refusals past the log's rate are counted")
}

// procStatus returns a size field of a process's /proc status (VmRSS, its
// resident set; VmHWM, its peak) in bytes.
func procStatus(t *testing.T, pid int, field string) uint64 {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/status", pid)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	v, err := memlimit.KiBField(b, path, field)
	require.NoError(t, err)
	return v
}
