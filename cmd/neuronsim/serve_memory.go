package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/runtime/ndl/remote"
	"github.com/neuronsim/neuronsim/sim"
)

// The parts of serve's memory bound that are not a flag's
// (docs/remote-protocol.md, "Memory of the server"), each above what was
// measured (Go 1.26, linux/amd64), with room to spare.
const (
	// servePerClient is what a connection may hold beyond its host
	// memory: the pool's frame and word array for a large request (2 MiB),
	// its own request, reply and word buffers (64 KiB each at most), its
	// goroutine and socket.
	servePerClient = remote.MaxFrameSize + 4*remote.MaxWords + 4*64<<10
	// servePerHostBuffer is the bookkeeping of one host buffer: the
	// connection's record of it, the host memory's extent trees and
	// buffer cache (measured: 125 bytes with 65,536 buffers).
	servePerHostBuffer = 160
	// serveRuntimeShare is the Go runtime's metadata for the pages, as a
	// fraction of them (1/serveRuntimeShare): a span record for every two
	// 4 KiB pages and the collector's bitmaps (measured: 2.8 %).
	serveRuntimeShare = 32
	// serveSlack is the room the collector works in, and the pool's kept
	// buffers (8 MiB).
	serveSlack = 64 << 20
)

// serveMemory is the bound of what `serve --listen` holds resident, and
// its parts, in bytes.
type serveMemory struct {
	start       uint64 // the process once the system is built: code, the simulated devices, the Go runtime
	pages       uint64 // --max-memory, with the Go runtime's share for its pages
	clients     uint64 // --max-clients connections' buffers
	hostBuffers uint64 // the host buffers' bookkeeping: --host-buffers-per-client × --max-clients, at most sim.MaxHostBuffers an allocator
	slack       uint64 // serveSlack
	goStart     uint64 // of start, what the Go runtime holds (the rest is code and other mappings)
}

// total returns the bound.
func (m serveMemory) total() uint64 {
	return m.start + m.pages + m.clients + m.hostBuffers + m.slack
}

// goLimit returns the Go memory limit that keeps the process within the
// bound: the bound less what the Go runtime does not manage.
func (m serveMemory) goLimit() int64 {
	return int64(min(m.total()-(m.start-m.goStart), math.MaxInt64))
}

// String is the account serve prints.
func (m serveMemory) String() string {
	h := memlimit.Human
	return fmt.Sprintf("memory bound %s resident: %s for pages (--max-memory, with the Go runtime's share), %s for connections (--max-clients), "+
		"%s for host-buffer records (--host-buffers-per-client), %s for the system as started, %s of slack",
		h(m.total()), h(m.pages), h(m.clients), h(m.hostBuffers), h(m.start), h(m.slack))
}

// measureServeMemory works out the bound for a built system whose devices
// take their host buffers from allocators host-memory allocators (serve's
// system has one, which all its devices share) with the options given:
// the process as it stands (after a collection), and the parts the limits
// allow.
func measureServeMemory(o serveOptions, allocators int) serveMemory {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := serveMemory{goStart: ms.Sys - ms.HeapReleased, slack: serveSlack}
	m.start = m.goStart
	if rss, ok := selfRSS(); ok && rss > m.start {
		m.start = rss
	}
	pages := uint64(o.pageLimit) * sim.PageSize
	m.pages = pages + pages/serveRuntimeShare
	clients := uint64(o.server.MaxClients)
	m.clients = clients * servePerClient
	buffers := min(clients*uint64(o.server.HostBuffersPerClient), uint64(allocators)*sim.MaxHostBuffers)
	m.hostBuffers = buffers * servePerHostBuffer
	return m
}

// selfRSS reads the process's resident set (VmRSS) from /proc, where there
// is one.
func selfRSS() (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	rss, err := memlimit.KiBField(data, "/proc/self/status", "VmRSS")
	return rss, err == nil
}

// limitServeMemory sets the Go memory limit to keep the process within m,
// unless GOMEMLIMIT set one, and returns the function that puts the limit
// back as it was (serve returns, in a test's process say) and a note of
// what it did.
func limitServeMemory(m serveMemory) (restore func(), note string) {
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		return func() {}, fmt.Sprintf("%s; GOMEMLIMIT=%s given, kept as the Go memory limit", m, env)
	}
	old := debug.SetMemoryLimit(m.goLimit())
	return func() { debug.SetMemoryLimit(old) }, fmt.Sprintf("%s; the Go memory limit is %s of it", m, memlimit.Human(uint64(m.goLimit())))
}
