package stack

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/neuronsim/neuronsim/runtime/dmem"
)

// Side is where a copy's source or destination lives.
type Side int

// The sides of a copy.
const (
	Host   Side = iota // a host buffer (ndl.HostMemory), 4 KiB aligned
	Device             // device memory of the copying NC (dmem, any channel from its own)
)

// String is "host" or "device".
func (s Side) String() string {
	if s == Device {
		return "device"
	}
	return "host"
}

// Errors of the flows.
var (
	// ErrRequest marks a request the flow cannot run (a core the device
	// does not have, an unknown side).
	ErrRequest = errors.New("bad request")
	// ErrCopyMismatch marks a copy whose destination does not hold the
	// source's bytes.
	ErrCopyMismatch = errors.New("the destination does not hold the source bytes")
	// ErrDVEMismatch marks a DVE load whose destinations, read back, do
	// not hold the tables loaded.
	ErrDVEMismatch = errors.New("the device does not hold the loaded tables")
)

// CopyRequest is one copy through an NC's H2T engine and default queue
// with the driver's marker completion (dma.DMA.Copy).
type CopyRequest struct {
	From, To Side
	Size     uint64
	NC       int
	// Payload fills the source with a deterministic pattern (seeded by
	// Size) before the copy and checks the destination after it. Without
	// it nothing is written or read: the copy of a device that moves no
	// payload (a timing-only simulation) is timed alone.
	Payload bool
}

// CopyResult is what a copy did. Done says the copy ran (Pairs and TimePS
// are valid) even when the check that follows it failed.
type CopyResult struct {
	Done   bool
	Pairs  int    // descriptor pairs, the completion marker's included
	TimePS uint64 // device time the copy took
	// Checked says the destination was read back and holds the source's
	// bytes (with Payload only). Device memory is written and read in
	// 32-bit words through BAR4, so when either side is the device's only
	// the whole words are written and compared.
	Checked bool
}

// CheckCore refuses an NC the device does not have.
func (s *Stack) CheckCore(nc int) error {
	if geo := s.Up.Geometry; nc < 0 || nc >= geo.NeuronCores {
		return fmt.Errorf("core %d: the %s has cores 0..%d: %w", nc, geo.Generation, geo.NeuronCores-1, ErrRequest)
	}
	return nil
}

// Copy allocates the source and the destination (the device's on the NC's
// channel first), writes the pattern, copies and times the copy on the
// device's clock, and with Payload checks the destination (ErrCopyMismatch
// when it differs). Both buffers are freed again when it returns; a
// failure to free one is joined to its error.
func (s *Stack) Copy(req CopyRequest) (res CopyResult, err error) {
	if err := s.CheckCore(req.NC); err != nil {
		return res, err
	}
	n := req.Size
	src, srcPA, freeSrc, err := s.copyBuffer(req.From, req)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, freeSrc()) }()
	dst, dstPA, freeDst, err := s.copyBuffer(req.To, req)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, freeDst()) }()
	host := s.DMA.Host()
	var data []byte
	if req.Payload {
		data = make([]byte, n)
		r := rand.New(rand.NewPCG(n, 1))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if req.From == Host {
			err = host.HostWrite(srcPA, data)
		} else {
			err = s.DMA.WriteDevice(src, data[:n&^3])
		}
		if err != nil {
			return res, err
		}
	}
	since, err := s.Clock()
	if err != nil {
		return res, err
	}
	if res.Pairs, err = s.DMA.Copy(req.NC, dst, src, n); err != nil {
		return res, err
	}
	if res.TimePS, err = since(); err != nil {
		return res, err
	}
	res.Done = true
	if !req.Payload {
		return res, nil
	}
	// Device memory is written and read in whole 32-bit words: a device
	// source's last bytes past them were never written, and a device
	// destination's cannot be read back, so only the whole words count.
	want := data
	if req.From == Device || req.To == Device {
		want = data[:n&^3]
	}
	got := make([]byte, len(want))
	if req.To == Host {
		err = host.HostRead(dstPA, got)
	} else {
		err = s.DMA.ReadDevice(dst, got)
	}
	if err != nil {
		return res, err
	}
	if !bytes.Equal(got, want) {
		return res, ErrCopyMismatch
	}
	res.Checked = true
	return res, nil
}

// copyBuffer allocates one side of a copy: its device address, for a host
// buffer its host physical address, and the function that frees it.
func (s *Stack) copyBuffer(side Side, req CopyRequest) (addr, pa uint64, free func() error, err error) {
	if side == Host {
		host := s.DMA.Host()
		pa, err := host.HostAlloc(req.Size, 4096)
		if err != nil {
			return 0, 0, nil, err
		}
		return s.Up.Geometry.HostAddress(pa), pa, func() error { return host.HostFree(pa) }, nil
	}
	h, err := s.Mem.Alloc(dmem.Request{Size: req.Size, Channel: dmem.Any, NC: req.NC, Name: "dma copy"})
	if err != nil {
		return 0, 0, nil, err
	}
	free = func() error { return s.Mem.Free(h) }
	b, err := s.Mem.Info(h)
	if err != nil {
		return 0, 0, nil, errors.Join(err, free())
	}
	return b.Addr, 0, free, nil
}
