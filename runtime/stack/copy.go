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
	Done  bool
	Pairs int // descriptor pairs, the completion marker's included
	// TimePS is the device time the copy took: QueuePS opening the NC's H2T
	// queue when the copy is its first use, then for each batch the
	// doorbells (MMIO writes), the DMA of its pairs and its marker, the
	// marker's polls (every dma.PollInterval, so up to one interval more
	// than the DMA) and the queue's status and head reads (MMIO) after it.
	TimePS uint64
	// QueuePS is the part of TimePS spent opening the NC's H2T queue (the
	// engine's and queue's registers over MMIO) on its first use; 0 when
	// it was open.
	QueuePS uint64
	// Checked says the destination was read back and holds the source's
	// bytes (with Payload only): every one of the Size bytes copied, the
	// Verified bytes. Device memory is written and read in 32-bit words
	// through BAR4; a device side's last bytes past a whole word are
	// written by reading that word, changing them and writing it back,
	// and read back as a whole word of which they are compared alone.
	Checked bool
	// Verified is how many bytes of the destination were read back and
	// compared with the source's (Size once Checked; 0 without Payload).
	Verified uint64
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
	if req.Payload {
		if err := s.eachPiece(req.From, src, srcPA, n, newPattern(n), writePiece); err != nil {
			return res, err
		}
	}
	since, err := s.Clock()
	if err != nil {
		return res, err
	}
	if _, err := s.DMA.H2T(req.NC); err != nil {
		return res, err
	}
	if res.QueuePS, err = since(); err != nil {
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
	if err := s.eachPiece(req.To, dst, dstPA, n, newPattern(n), checkPiece); err != nil {
		return res, err
	}
	res.Checked, res.Verified = true, n
	return res, nil
}

// copyPiece is the most of a copy's pattern written, or of its destination
// read back and checked, at once: the most one request of the remote
// protocol carries, so that a copy holds two pieces of host memory, not
// two buffers of its size (a functional 1 GiB copy once held 2 GiB of them
// beside the simulated device's pages).
const copyPiece = 1 << 20

// pattern produces a copy's source bytes in order, seeded by its size, so
// that they can be made again to check the destination.
type pattern struct{ r *rand.Rand }

// newPattern returns the pattern of a copy of n bytes.
func newPattern(n uint64) pattern { return pattern{r: rand.New(rand.NewPCG(n, 1))} }

// next fills p with the pattern's next len(p) bytes.
func (g pattern) next(p []byte) {
	for i := range p {
		p[i] = byte(g.r.Uint32())
	}
}

// pieceOp writes the pattern's piece p at offset off of a side, or reads
// that piece back into got and checks it against p.
type pieceOp int

const (
	writePiece pieceOp = iota
	checkPiece
)

// eachPiece writes the pattern over the first n bytes of one side of a
// copy (its device address addr, or for a host buffer its physical address
// pa), or reads them back and checks them against it (ErrCopyMismatch
// naming the first byte that differs), copyPiece bytes at a time. A
// device's side is written and read in whole words through BAR4; its last
// bytes past a whole word (n not a multiple of 4) are written by reading
// the word that holds them, changing them and writing it back, and read
// back as that word of which they alone are compared. The word lies in
// the allocation, which is whole pages.
func (s *Stack) eachPiece(side Side, addr, pa, n uint64, g pattern, op pieceOp) error {
	host := s.DMA.Host()
	want := make([]byte, min(n, copyPiece))
	var got []byte
	if op == checkPiece {
		got = make([]byte, len(want))
	}
	for off := uint64(0); off < n; off += copyPiece {
		k := min(n-off, copyPiece)
		w := want[:k]
		g.next(w)
		var err error
		switch {
		case op == writePiece && side == Host:
			err = host.HostWrite(pa+off, w)
		case op == writePiece:
			err = s.DMA.WriteDeviceBytes(addr+off, w)
		case side == Host:
			err = host.HostRead(pa+off, got[:k])
		default:
			err = s.DMA.ReadDeviceBytes(addr+off, got[:k])
		}
		if err != nil {
			return err
		}
		if op == checkPiece && !bytes.Equal(got[:k], w) {
			i := 0
			for got[i] == w[i] {
				i++
			}
			return fmt.Errorf("%s destination byte %d of %d: read %#02x, wrote %#02x: %w", side, off+uint64(i), n, got[i], w[i], ErrCopyMismatch)
		}
	}
	return nil
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
