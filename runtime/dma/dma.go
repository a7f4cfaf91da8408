// Package dma is the runtime's side of the UDMA engines (driver-facts §4):
// engine and queue bring-up through csr_write, rings ("prings") in host
// memory, virtual rings ("vrings") of transfers split into 64 KiB
// descriptor pairs with an optional event-accel completion, queue allocation
// by name, host↔device copies through an NC's H2T engine with the
// driver's marker completion, and fed queues (OpenFedQueue) whose rings
// are lazy host buffers produced from a planner as the device reads them
// (on backends with ndl.LazyHostMemory). It reaches the device only
// through the csr layer, BAR4 and the backend's host memory.
package dma

import (
	"errors"
	"fmt"
	"sync"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Errors of the runtime's DMA layer.
var (
	ErrNoHostMemory = errors.New("the device backend has no host memory for DMA buffers")
	ErrNoQueue      = errors.New("no free DMA queue")
	ErrRingFull     = errors.New("not enough free descriptors in the ring")
	ErrTimeout      = errors.New("DMA did not complete in time")
	ErrQueueError   = errors.New("DMA queue halted on an error")
	ErrNotDevice    = errors.New("address is not in device memory reachable through BAR4")
	// ErrNoLazyHostMemory: a fed queue needs a backend whose host memory
	// holds lazy buffers (ndl.LazyHostMemory).
	ErrNoLazyHostMemory = errors.New("the device backend has no lazy host memory for fed DMA rings")
	// ErrFed marks what a fed queue refuses: a dump, a declaration past its
	// ring's end, a ring slot read after it was let go, a feed that ran dry
	// or failed.
	ErrFed = errors.New("fed DMA queue")
)

// Reserved queues (driver-facts §4.1): 15 is every engine's collectives
// queue; 14 is reserved for NX cores on some engines. Allocation by name
// never hands them out.
const (
	CollectivesQueue = 15
	NXQueue          = 14
)

// DefaultRingSize is the descriptors of a ring OpenQueue allocates: the
// driver's H2T rings hold 8192.
const DefaultRingSize = 8192

// PollInterval is how often completion is polled (the driver: every 1 µs).
const PollInterval = time.Microsecond

// DMA is the DMA layer of one brought-up device.
type DMA struct {
	dev  *bringup.Device
	host ndl.HostMemory
	lazy ndl.LazyHostMemory // the same backend, when it holds lazy buffers; else nil
	geo  *hwarch.Geometry

	wordsMu sync.Mutex // holds words, the scratch of BAR4 accesses (deviceWords)
	words   []uint32

	mu      sync.Mutex
	engines map[int]bool      // engines initialised
	queues  map[string]*Queue // by name
	used    map[[2]int]string // (engine, queue) → name
	marker  uint64            // host word holding udma.Marker
}

// New returns the DMA layer of a brought-up device. The backend must
// provide host memory (ndl.HostMemory) for rings and completion words.
func New(dev *bringup.Device) (*DMA, error) {
	host, ok := dev.Dev.(ndl.HostMemory)
	if !ok {
		return nil, fmt.Errorf("dma: %s: %w", dev.Identity, ErrNoHostMemory)
	}
	lazy, _ := dev.Dev.(ndl.LazyHostMemory)
	m := &DMA{dev: dev, host: host, lazy: lazy, geo: dev.Geometry, engines: map[int]bool{}, queues: map[string]*Queue{}, used: map[[2]int]string{}}
	pa, err := host.HostAlloc(64, 64)
	if err != nil {
		return nil, fmt.Errorf("dma: marker word: %w", err)
	}
	if err := host.HostWrite(pa, le32(udma.Marker)); err != nil {
		return nil, errors.Join(fmt.Errorf("dma: marker word: %w", err), host.HostFree(pa))
	}
	m.marker = pa
	return m, nil
}

// Close gives back the host word the layer holds for its whole life (the
// marker its copies complete with), once: a layer replaced by another on
// the same device (stack.Reopen, after a reset) would otherwise keep one
// host buffer per reopen for as long as the host memory lives. Queues the
// layer opened are their owners' to close; the layer is not used after.
func (m *DMA) Close() error {
	m.mu.Lock()
	pa := m.marker
	m.marker = 0
	m.mu.Unlock()
	if pa == 0 {
		return nil
	}
	if err := m.host.HostFree(pa); err != nil {
		return fmt.Errorf("dma: %s: freeing the marker word: %w", m.dev.Identity, err)
	}
	return nil
}

// Device returns the device the layer drives.
func (m *DMA) Device() *bringup.Device { return m.dev }

// Host returns the backend's host memory.
func (m *DMA) Host() ndl.HostMemory { return m.host }

// Lazy reports whether the backend's host memory holds lazy buffers
// (ndl.LazyHostMemory), so that the layer can open fed queues.
func (m *DMA) Lazy() bool { return m.lazy != nil }

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// engineReg returns the runtime virtual address of an engine register.
func (m *DMA) engineReg(eng int, off uint64) (uint64, error) {
	base, err := udma.EngineBAR0(m.geo, eng)
	if err != nil {
		return 0, err
	}
	return m.dev.VA(base + off), nil
}

func (m *DMA) write(eng int, off uint64, v uint32) error {
	va, err := m.engineReg(eng, off)
	if err != nil {
		return err
	}
	if err := m.dev.CSR.Write(va, v); err != nil {
		return fmt.Errorf("dma: engine %d register %#x: %w", eng, off, err)
	}
	return nil
}

func (m *DMA) read(eng int, off uint64) (uint32, error) {
	va, err := m.engineReg(eng, off)
	if err != nil {
		return 0, err
	}
	v, err := m.dev.CSR.Read(va)
	if err != nil {
		return 0, fmt.Errorf("dma: engine %d register %#x: %w", eng, off, err)
	}
	return v, nil
}

// InitEngine brings an engine to NORMAL (once per engine).
func (m *DMA) InitEngine(eng int) error {
	m.mu.Lock()
	done := m.engines[eng]
	m.mu.Unlock()
	if done {
		return nil
	}
	for _, half := range []uint64{udma.M2S, udma.S2M} {
		if err := m.write(eng, half+udma.ChangeState, udma.ChangeNormal); err != nil {
			return err
		}
	}
	m.mu.Lock()
	m.engines[eng] = true
	m.mu.Unlock()
	return nil
}

// BAR4Offset returns where device address addr sits in BAR4: channel n at
// its BAR4 offset (n·16 GiB on V2, n·64 GiB on V3/V4, n·BAR4/4 under QEMU).
func (m *DMA) BAR4Offset(addr uint64) (uint64, error) {
	qemu := m.dev.Mode == hwarch.ModeQEMU && m.geo.Generation != hwarch.Sunda
	for ch, c := range m.geo.HBM {
		size := m.dev.HBMChannelBytes[ch]
		if addr >= c.Base && addr-c.Base < size {
			off := c.BAR4Offset
			if qemu {
				off = uint64(ch) * size
			}
			return off + addr - c.Base, nil
		}
	}
	return 0, fmt.Errorf("dma: device address %#x: %w", addr, ErrNotDevice)
}

// WriteDevice writes bytes to device memory through BAR4 (dmem_buf_copyin).
func (m *DMA) WriteDevice(addr uint64, p []byte) error {
	return m.deviceWords(addr, p, true)
}

// ReadDevice reads device memory through BAR4.
func (m *DMA) ReadDevice(addr uint64, p []byte) error {
	return m.deviceWords(addr, p, false)
}

// WriteDeviceBytes writes p at the word-aligned device address addr
// through BAR4 when len(p) need not be a multiple of 4: its whole words,
// then its last len(p)%4 bytes by a read, change and write of the word
// that holds them (the rest of that word keeps what the device held).
func (m *DMA) WriteDeviceBytes(addr uint64, p []byte) error {
	whole := len(p) &^ 3
	if err := m.WriteDevice(addr, p[:whole]); err != nil || whole == len(p) {
		return err
	}
	var w [4]byte
	if err := m.ReadDevice(addr+uint64(whole), w[:]); err != nil {
		return err
	}
	copy(w[:], p[whole:])
	return m.WriteDevice(addr+uint64(whole), w[:])
}

// ReadDeviceBytes reads len(p) bytes at the word-aligned device address
// addr through BAR4 when len(p) need not be a multiple of 4: its whole
// words, then the word that holds its last len(p)%4 bytes, of which those
// bytes are kept.
func (m *DMA) ReadDeviceBytes(addr uint64, p []byte) error {
	whole := len(p) &^ 3
	if err := m.ReadDevice(addr, p[:whole]); err != nil || whole == len(p) {
		return err
	}
	var w [4]byte
	if err := m.ReadDevice(addr+uint64(whole), w[:]); err != nil {
		return err
	}
	copy(p[whole:], w[:])
	return nil
}

// deviceWords moves p through BAR4 as 32-bit words; addr and len(p) must be
// 4-byte aligned. It moves at most barWordsPiece words an access, in a
// scratch the DMA layer keeps (grown to barWordsPiece words at most), so
// that moving a large buffer piece by piece allocates nothing each time.
func (m *DMA) deviceWords(addr uint64, p []byte, write bool) error {
	if addr%4 != 0 || len(p)%4 != 0 {
		return fmt.Errorf("dma: BAR4 access [%#x, +%d) not word aligned", addr, len(p))
	}
	if len(p) == 0 {
		return nil
	}
	if _, err := m.BAR4Offset(addr + uint64(len(p)) - 1); err != nil {
		return err
	}
	off, err := m.BAR4Offset(addr)
	if err != nil {
		return err
	}
	m.wordsMu.Lock()
	defer m.wordsMu.Unlock()
	if n := min(len(p)/4, barWordsPiece); len(m.words) < n {
		m.words = make([]uint32, n)
	}
	for len(p) > 0 {
		words := m.words[:min(len(p)/4, barWordsPiece)]
		q := p[:4*len(words)]
		if write {
			for i := range words {
				words[i] = uint32(q[4*i]) | uint32(q[4*i+1])<<8 | uint32(q[4*i+2])<<16 | uint32(q[4*i+3])<<24
			}
			if err := m.dev.Dev.WriteBAR(hwarch.BAR4, off, words); err != nil {
				return err
			}
		} else {
			if err := m.dev.Dev.ReadBAR(hwarch.BAR4, off, words); err != nil {
				return err
			}
			for i, w := range words {
				q[4*i], q[4*i+1], q[4*i+2], q[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
			}
		}
		p = p[len(q):]
		off += uint64(len(q))
	}
	return nil
}

// barWordsPiece is the most words deviceWords moves in one BAR access:
// 1 MiB, the most one request of the remote protocol carries.
const barWordsPiece = 1 << 18

// sleep waits on the device's clock.
func sleep(m *DMA, d time.Duration) error { return ndl.Sleep(m.dev.Dev, d) }
