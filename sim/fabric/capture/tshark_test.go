package capture

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dissectorPath is the Lua dissector, from this package's directory.
var dissectorPath = filepath.Join("..", "..", "..", "contrib", "wireshark", "neuronsim.lua")

// tsharkOrSkip returns the tshark binary and the dissector's absolute path.
// Without tshark the test fails under CI (which installs it) and is skipped
// elsewhere.
func tsharkOrSkip(t *testing.T) (bin, script string) {
	t.Helper()
	bin, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tshark not installed but CI is set: .ci/run must install it so the dissector is checked (%v)", err)
		}
		t.Skip("tshark not installed: the dissector is not checked (CI installs it)")
	}
	script, err = filepath.Abs(dissectorPath)
	require.NoError(t, err)
	require.FileExists(t, script)
	return bin, script
}

// runTshark runs tshark with the dissector on file and returns its stdout.
// It fails the test on a non-zero exit and on a Lua error or any other
// error on stderr; the warning tshark prints when run as root is fine.
func runTshark(t *testing.T, bin, script, file string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]string{"-n", "-X", "lua_script:" + script, "-r", file}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "tshark timed out")
	require.NoError(t, err, "tshark %s\nstderr:\n%s", strings.Join(all, " "), stderr.String())
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, `Running as user "root"`) {
			continue // tshark's warning when run as root
		}
		low := strings.ToLower(line)
		assert.False(t, strings.Contains(low, "lua") || strings.Contains(low, "error"),
			"tshark stderr: %s\nall of stderr:\n%s", line, stderr.String())
	}
	return stdout.String()
}

// tsharkPacket is one packet of the tshark test capture.
type tsharkPacket struct {
	atPS    uint64
	h       Header
	payload []byte
}

func tsharkCapture() []tsharkPacket {
	big := pattern(65536, 1)
	return []tsharkPacket{
		{1_000_000, Header{Op: OpWrite, Src: 3, Dst: 5, SrcPort: 1, DstPort: 2, Hop: 0, Hops: 2, Engine: 4, Queue: 1, Flags: FlagFirst, Seq: 41, Length: 65536, Addr: 0x1000, Transfer: 7}, big},
		{1_500_000, Header{Op: OpWrite, Src: 3, Dst: 7, SrcPort: 3, DstPort: 0, Hop: 1, Hops: 2, Engine: 4, Queue: 1, Flags: FlagFirst, Seq: 42, Length: 65536, Addr: 0x1000, Transfer: 7}, big},
		{2_000_001, Header{Op: OpWrite, Src: 3, Dst: 7, SrcPort: 1, DstPort: 2, Hops: 1, Engine: 4, Queue: 1, Flags: FlagLast | FlagTimingOnly, Seq: 43, Length: 4096, Addr: 0x11000, Transfer: 7}, nil},
		{2_000_001, Header{Op: OpReduceWrite, Src: 0, Dst: 1, Hops: 1, Engine: 15, Flags: FlagFirst | FlagLast, Seq: 0, Length: 64, Addr: 0x8000_0000_0000, Transfer: 1 << 40}, pattern(64, 2)},
		{3_250_000, Header{Op: OpReduceWrite, Src: 1, Dst: 0, Hops: 1, Engine: 15, Flags: FlagFirst, Seq: 9, Length: 1024, Addr: 0x4000_0000, Transfer: 12}, pattern(1024, 3)},
		{4_000_000, Header{Op: OpSemaphore, Src: 0, Dst: 1, Hops: 1, Flags: FlagFirst | FlagLast, Seq: 1, Length: 4, Addr: 0x2000_0040, Transfer: 1<<40 + 1}, []byte{0, 0, 0, 1}},
		{4_000_000, Header{Op: OpSemaphore, Src: 1, Dst: 0, Hops: 1, Flags: FlagFirst | FlagLast | FlagTimingOnly, Seq: 10, Length: 4, Addr: 0x2000_0044, Transfer: 13}, nil},
		{5_000_000, Header{Op: OpReadReq, Src: 2, Dst: 6, Hops: 1, Seq: 0, Length: 4096, Addr: 0x3000, Transfer: 20}, nil},
		{6_000_000, Header{Op: OpReadResp, Src: 6, Dst: 2, Hops: 1, Seq: 0, Length: 4096, Addr: 0x3000, Transfer: 20}, pattern(4096, 4)},
		{math.MaxUint64, Header{Op: OpReadResp, Src: math.MaxUint16, Dst: math.MaxUint16, SrcPort: math.MaxUint8, DstPort: math.MaxUint8,
			Hop: math.MaxUint8 - 1, Hops: math.MaxUint8, Engine: math.MaxUint16, Queue: math.MaxUint8, Flags: math.MaxUint8 &^ FlagTruncated,
			Seq: math.MaxUint32, Length: math.MaxUint32, Addr: math.MaxUint64, Transfer: math.MaxUint64}, nil},
	}
}

// tsharkFields are the fields the test asks tshark for, in order.
var tsharkFields = []string{
	"neuronsim.src", "neuronsim.dst", "neuronsim.op", "neuronsim.seq", "neuronsim.length", "neuronsim.addr",
	"neuronsim.src_port", "neuronsim.dst_port", "neuronsim.hop", "neuronsim.hops", "neuronsim.engine",
	"neuronsim.queue", "neuronsim.flags", "neuronsim.transfer",
	"neuronsim.flags.first", "neuronsim.flags.last", "neuronsim.flags.truncated", "neuronsim.flags.timing_only",
	"frame.time_epoch", "frame.len", "frame.cap_len", "_ws.lua.error", "_ws.malformed",
}

// hexFields are the fields the dissector shows in base.HEX; tshark prints
// them 0x-prefixed and zero-padded to the field's width (tshark 4.0:
// neuronsim.addr 0x0000000000001000, neuronsim.flags 0x05). Every other
// uint field prints in decimal.
var hexFields = map[string]bool{"neuronsim.addr": true, "neuronsim.flags": true}

// parseUint reads uint field fl as tshark prints it.
func parseUint(fl, s string) (uint64, error) {
	if hexFields[fl] {
		h, ok := strings.CutPrefix(s, "0x")
		if !ok {
			return 0, fmt.Errorf("hex field without 0x: %q", s)
		}
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// parseBool reads a boolean field: tshark 4.0 prints 1/0 (newer versions
// may print True/False).
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean: %q", s)
}

// parseEpochPS reads frame.time_epoch ("seconds.nanoseconds") as picoseconds.
func parseEpochPS(s string) (uint64, error) {
	sec, frac, _ := strings.Cut(s, ".")
	if len(frac) > 9 {
		return 0, fmt.Errorf("more than nanosecond digits: %q", s)
	}
	frac += strings.Repeat("0", 9-len(frac))
	secs, err := strconv.ParseUint(sec, 10, 64)
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseUint(frac, 10, 64)
	if err != nil {
		return 0, err
	}
	return (secs*1_000_000_000 + ns) * 1000, nil
}

// TestTsharkDecodes writes a capture with every op and checks that tshark,
// with contrib/wireshark/neuronsim.lua, decodes each packet's fields as they
// were written, with no Lua error.
func TestTsharkDecodes(t *testing.T) {
	bin, script := tsharkOrSkip(t)
	pkts := tsharkCapture()
	file := filepath.Join(t.TempDir(), "fabric.pcap")
	f, err := os.Create(file)
	require.NoError(t, err)
	w, err := NewWriter(f, Options{})
	require.NoError(t, err)
	for _, p := range pkts {
		require.NoError(t, w.WritePacket(p.atPS, p.h, p.payload))
	}
	require.NoError(t, f.Close())
	written, err := os.Open(file)
	require.NoError(t, err)
	back, err := ReadAll(written)
	require.NoError(t, written.Close())
	require.NoError(t, err)
	require.Len(t, back, len(pkts))

	args := []string{"-T", "fields", "-E", "separator=/t"}
	for _, fl := range tsharkFields {
		args = append(args, "-e", fl)
	}
	out := runTshark(t, bin, script, file, args...)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, len(pkts), "tshark output:\n%s", out)

	for i, line := range lines {
		p := back[i] // as written: FlagTruncated set by the Writer
		cols := strings.Split(line, "\t")
		require.Len(t, cols, len(tsharkFields), "packet %d: %q", i, line)
		got := map[string]string{}
		for j, fl := range tsharkFields {
			got[fl] = cols[j]
		}
		h := p.Header
		wantUint := map[string]uint64{
			"neuronsim.src": uint64(h.Src), "neuronsim.dst": uint64(h.Dst), "neuronsim.op": uint64(h.Op),
			"neuronsim.seq": uint64(h.Seq), "neuronsim.length": uint64(h.Length), "neuronsim.addr": h.Addr,
			"neuronsim.src_port": uint64(h.SrcPort), "neuronsim.dst_port": uint64(h.DstPort),
			"neuronsim.hop": uint64(h.Hop), "neuronsim.hops": uint64(h.Hops), "neuronsim.engine": uint64(h.Engine),
			"neuronsim.queue": uint64(h.Queue), "neuronsim.flags": uint64(h.Flags), "neuronsim.transfer": h.Transfer,
			"frame.len": uint64(p.OrigLen), "frame.cap_len": uint64(FrameOverhead + len(p.Payload)),
		}
		for fl, want := range wantUint {
			v, err := parseUint(fl, got[fl])
			if assert.NoError(t, err, "packet %d field %s = %q", i, fl, got[fl]) {
				assert.Equal(t, want, v, "packet %d field %s = %q", i, fl, got[fl])
			}
		}
		for fl, bit := range map[string]uint8{
			"neuronsim.flags.first": FlagFirst, "neuronsim.flags.last": FlagLast,
			"neuronsim.flags.truncated": FlagTruncated, "neuronsim.flags.timing_only": FlagTimingOnly,
		} {
			v, err := parseBool(got[fl])
			if assert.NoError(t, err, "packet %d field %s", i, fl) {
				assert.Equal(t, h.Flags&bit != 0, v, "packet %d field %s", i, fl)
			}
		}
		at, err := parseEpochPS(got["frame.time_epoch"])
		if assert.NoError(t, err, "packet %d frame.time_epoch %q", i, got["frame.time_epoch"]) {
			assert.Equal(t, pkts[i].atPS/1000*1000, at, "packet %d: virtual time since the epoch", i)
		}
		assert.Empty(t, got["_ws.lua.error"], "packet %d: Lua error", i)
		assert.Empty(t, got["_ws.malformed"], "packet %d: malformed", i)
	}
	t.Logf("tshark fields of packet 0: %s", lines[0])

	// The summary's Info column.
	summary := strings.Split(strings.TrimRight(runTshark(t, bin, script, file), "\n"), "\n")
	require.Len(t, summary, len(pkts))
	for i, line := range summary {
		h := back[i].Header
		want := fmt.Sprintf("%s dev %d → %d hop %d/%d seq %d len %d @%#x", h.Op, h.Src, h.Dst, int(h.Hop)+1, h.Hops, h.Seq, h.Length, h.Addr)
		assert.Contains(t, line, want, "packet %d Info", i)
		assert.Contains(t, line, "neuronsim", "packet %d protocol", i)
	}
	t.Logf("tshark summary of packet 0: %s", strings.TrimSpace(summary[0]))
}

// TestTsharkMalformed checks that the dissector marks broken packets with
// an expert info, not a Lua error.
func TestTsharkMalformed(t *testing.T) {
	bin, script := tsharkOrSkip(t)
	good, err := Frame(&Header{Op: OpWrite, Src: 1, Dst: 2, Length: 4}, []byte{1, 2, 3, 4})
	require.NoError(t, err)
	with := func(i int, v byte) []byte {
		b := bytes.Clone(good)
		b[i] = v
		return b
	}
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"no header", good[:ethHeaderSize], "short header: 0 bytes, need 40"},
		{"short header", good[:30], "short header: 16 bytes, need 40"},
		{"header one byte short", good[:FrameOverhead-1], "short header: 39 bytes, need 40"},
		{"bad magic", with(14, 0), "bad magic 0x0053, want 0x4e53"},
		{"bad version", with(16, 9), "unknown version 9, want 1"},
		{"unknown op 0", with(17, 0), "unknown op 0"},
		{"unknown op 200", with(17, 200), "unknown op 200"},
		{"payload longer than chunk", append(bytes.Clone(good), 5, 6), "6 payload bytes exceed the chunk length 4"},
		{"timing-only with payload", with(14+15, FlagTimingOnly), "timing-only packet carries 4 payload bytes"},
		{"read request with payload", with(17, byte(OpReadReq)), "read request carries 4 payload bytes"},
	}
	file := filepath.Join(t.TempDir(), "malformed.pcap")
	var buf bytes.Buffer
	pw := pcapgo.NewWriterNanos(&buf)
	require.NoError(t, pw.WriteFileHeader(DefaultSnapLen, layers.LinkTypeEthernet))
	for i, tt := range tests {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(i)), CaptureLength: len(tt.frame), Length: len(tt.frame)}
		require.NoError(t, pw.WritePacket(ci, tt.frame))
	}
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))

	out := runTshark(t, bin, script, file, "-T", "fields", "-E", "separator=/t",
		"-e", "_ws.expert.message", "-e", "_ws.lua.error", "-e", "_ws.malformed")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, len(tests), "tshark output:\n%s", out)
	for i, tt := range tests {
		cols := strings.Split(lines[i], "\t")
		require.Len(t, cols, 3, "%s: %q", tt.name, lines[i])
		assert.Contains(t, cols[0], tt.want, tt.name)
		assert.Empty(t, cols[1], "%s: Lua error", tt.name)
		assert.NotEmpty(t, cols[2], "%s: marked malformed", tt.name)
	}
}
