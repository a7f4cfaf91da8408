package main

import (
	"math"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/sim"
)

// TestServeMemoryBound: the bound serve prints and holds itself to is the
// sum of what its limits allow — the pages of --max-memory with the Go
// runtime's share, every connection's buffers, the host buffers' records
// (at most sim.MaxHostBuffers an allocator) — and the process as started, with
// slack for the collector.
func TestServeMemoryBound(t *testing.T) {
	tests := []struct {
		name                           string
		maxMemory                      int64 // bytes
		clients, buffersPerClient, dev int
		wantPages, wantClients, wantHB uint64
	}{
		{"defaults", 4 << 30, 64, 65536, 1, 4<<30 + 4<<30/32, 64 * servePerClient, sim.MaxHostBuffers * servePerHostBuffer},
		{"defaults, 16 allocators", 4 << 30, 64, 65536, 16, 4<<30 + 4<<30/32, 64 * servePerClient, 64 * 65536 * servePerHostBuffer},
		{"small", 64 << 20, 4, 1024, 1, 64<<20 + 2<<20, 4 * servePerClient, 4 * 1024 * servePerHostBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := serveOptions{pageLimit: tc.maxMemory / sim.PageSize,
				server: remote.ServerOptions{MaxClients: tc.clients, HostBuffersPerClient: tc.buffersPerClient}}
			m := measureServeMemory(o, tc.dev)
			assert.Equal(t, tc.wantPages, m.pages)
			assert.Equal(t, tc.wantClients, m.clients)
			assert.Equal(t, tc.wantHB, m.hostBuffers)
			assert.Equal(t, uint64(serveSlack), m.slack)
			assert.Positive(t, m.goStart)
			assert.GreaterOrEqual(t, m.start, m.goStart, "the process holds at least what Go does")
			assert.Equal(t, m.start+m.pages+m.clients+m.hostBuffers+m.slack, m.total())
			assert.Equal(t, int64(m.total()-(m.start-m.goStart)), m.goLimit(), "Go's limit leaves out what Go does not manage")
			assert.Contains(t, m.String(), "for pages (--max-memory")
		})
	}
}

// TestServeRemoteCopiesStayBounded drives a served device through several
// remote dma copies, as the report of issue "serve RSS past --max-memory"
// did (three 256 MiB and three 1 GiB copies took serve to 6.9 GB with the
// default 4 GiB), at a size that runs in seconds: while serve runs the Go
// memory limit holds the process to the bound it printed; each copy, client
// and server together in this process, allocates little beyond the
// simulated pages of its two buffers (before: the server's per-request
// buffers and the client's copies of the pattern, 6–8 times the copy); the
// heap left after a copy is what the page budget holds; a copy past the
// budget is refused naming it; and the memory limit is put back when serve
// returns.
func TestServeRemoteCopiesStayBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("measures allocations, which the race detector adds to")
	}
	const maxMemory = 160 << 20
	addr := "unix:" + filepath.Join(t.TempDir(), "ns.sock")
	before := debug.SetMemoryLimit(-1)
	_, errOut, stop := serveInProcess(t, "--listen", addr, "--arch", "trn2", "--max-memory", "160MiB", "--max-clients", "4", "--host-buffers-per-client", "256")
	waitRemote(t, addr)
	assert.Contains(t, errOut.String(), "memory bound")
	if !strings.Contains(errOut.String(), "GOMEMLIMIT=") {
		limit := debug.SetMemoryLimit(-1)
		assert.NotEqual(t, before, limit, "serve sets the Go memory limit")
		assert.Less(t, limit, int64(math.MaxInt64))
	}

	heap0 := heapAfterGC()
	for i, tc := range []struct {
		from, to, size string
		bytes          uint64
	}{
		{"host", "device", "32MiB", 32 << 20},
		{"host", "device", "32MiB", 32 << 20},
		{"device", "host", "32MiB", 32 << 20},
		{"host", "device", "64MiB", 64 << 20},
	} {
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		got, err := runCLI(t, "dma", "copy", "--remote", addr, "--from", tc.from, "--to", tc.to, "--size", tc.size)
		runtime.ReadMemStats(&ms1)
		require.NoError(t, err, "copy %d", i)
		require.Contains(t, got, "destination verified")
		alloc := ms1.TotalAlloc - ms0.TotalAlloc
		t.Logf("copy %d, %s %s → %s: %d MiB allocated (client and server), heap after %d MiB", i, tc.size, tc.from, tc.to, alloc>>20, (heapAfterGC()-heap0)>>20)
		assert.Less(t, alloc, 2*tc.bytes+24<<20, "copy %d allocated more than the pages of its two buffers and 24 MiB", i)
		assert.Less(t, heapAfterGC()-heap0, uint64(maxMemory)+maxMemory/serveRuntimeShare, "the heap left is what the page budget holds")
	}
	// 96 MiB more of host memory beside the 64 MiB of device memory the last
	// copy left: past the budget, refused naming it.
	_, err := runCLI(t, "dma", "copy", "--remote", addr, "--size", "96MiB")
	require.Error(t, err)
	assert.Regexp(t, `page budget exhausted|memory budget is used up \(serve --max-memory\)`, err.Error())

	stop()
	assert.Equal(t, before, debug.SetMemoryLimit(-1), "the memory limit is put back when serve returns")
}

// heapAfterGC returns the Go heap in use after a collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
