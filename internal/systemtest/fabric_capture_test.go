package systemtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// TestFabricCapture: a copy across the Trn3 switch (two hops) is captured
// as one packet per chunk per hop, in time order, each carrying its chunk's
// bytes; tshark decodes the file through the project's dissector.
func TestFabricCapture(t *testing.T) {
	s, ms := fabricSystem(t, fabric.Config{Generation: hwarch.Mariana, Devices: 32})
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf, capture.Options{PayloadLimit: -1})
	require.NoError(t, err)
	s.SetCapture(w, 0)

	geo := hwarch.MustGeometry(hwarch.Mariana)
	at := geo.HBM[0].Base + 32*hwarch.MiB
	const n = 3*4096 + 100 // 4 chunks
	data := pattern(n, 5)
	require.NoError(t, ms[0].WriteDevice(at, data))
	dst, err := hwarch.FabricAddress(17, at) // another server: through the inter-server switch
	require.NoError(t, err)
	_, err = ms[0].Copy(0, dst, at, n)
	require.NoError(t, err)
	s.Advance(50 * sim.Microsecond)
	require.NoError(t, s.FlushCapture())
	written, lost := s.CaptureStats()
	assert.Equal(t, uint64(8), written, "4 chunks × 2 hops")
	assert.Zero(t, lost)

	pkts, err := capture.ReadAll(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Len(t, pkts, 8)
	var got []byte
	for i, p := range pkts {
		if i > 0 {
			assert.GreaterOrEqual(t, p.AtPS, pkts[i-1].AtPS, "time order")
		}
		assert.Equal(t, uint16(0), p.Header.Src)
		assert.Equal(t, uint16(17), p.Header.Dst)
		assert.Equal(t, uint8(2), p.Header.Hops)
		if p.Header.Hop == 1 {
			got = append(got, p.Payload...)
		}
	}
	assert.Equal(t, data, got, "the second hop's packets carry the bytes in order")

	bin, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tshark not installed but CI is set: %v", err)
		}
		t.Skip("tshark not installed: the fabric capture is not decoded (CI installs it)")
	}
	file := filepath.Join(t.TempDir(), "fabric.pcap")
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
	script, err := filepath.Abs(filepath.Join("..", "..", "contrib", "wireshark", "neuronsim.lua"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-n", "-X", "lua_script:"+script, "-r", file,
		"-T", "fields", "-e", "neuronsim.src", "-e", "neuronsim.dst", "-e", "neuronsim.hop", "-e", "neuronsim.length").Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 8)
	assert.Equal(t, "0\t17\t0\t4096", lines[0])
}
