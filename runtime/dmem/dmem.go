package dmem

import (
	"errors"
	"fmt"
	"sync"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/extent"
)

// Defaults of Options (driver-facts §7).
const (
	DefaultPageSize       uint64 = 4096             // PAGE_SIZE on x86-64
	MinPageSize           uint64 = 1024             // the driver's granule is max(PAGE_SIZE, 1024)
	DefaultCarveOut       uint64 = 16 * hwarch.MiB  // firmware carve-out at the start of every channel
	DefaultSmallPoolBytes uint64 = 1 * hwarch.GiB   // small pool at the end of every channel
	DefaultSmallMax       uint64 = 512 * hwarch.KiB // largest allocation the small pool serves
)

// Any is the value of Request.Channel that lets the allocator pick a channel
// and the value of Request.NC that names no NeuronCore.
const Any = -1

// NoHandle is the zero Handle; no allocation ever has it.
const NoHandle Handle = 0

// Errors of the allocator. Every error returned is one of these wrapped with
// context ("dmem: ...: %w"); test with errors.Is.
var (
	// ErrNoMemory: no pool that may serve the request has a free range of the
	// rounded size at the requested alignment.
	ErrNoMemory = errors.New("out of device memory")
	// ErrDoubleFree: Free of a handle that is currently free.
	ErrDoubleFree = errors.New("double free")
	// ErrForeignHandle: a handle this allocator never issued (0 included).
	ErrForeignHandle = errors.New("foreign handle")
	// ErrStaleHandle: Info of a handle that was issued but is currently free.
	ErrStaleHandle = errors.New("handle is not allocated")
	// ErrBadRequest: size 0, an alignment that is not a power of two, or a
	// channel or NeuronCore out of range.
	ErrBadRequest = errors.New("bad request")
	// ErrBadOptions: New was given a geometry or Options it cannot use; the
	// message names the field.
	ErrBadOptions = errors.New("bad options")
)

// Options configure an Allocator. Zero fields take the defaults.
type Options struct {
	// ChannelBytes overrides the bytes present in each HBM channel (one entry
	// per geo.HBM; under QEMU each channel is BAR4 size / 4). nil means
	// geo.HBM[i].ActiveSize. Each must be page aligned, larger than the
	// carve-out and at most the channel's WindowSize.
	ChannelBytes []uint64
	// PageSize is the allocation granule: a power of two ≥ 1024 (default 4096).
	PageSize uint64
	// CarveOut is the firmware reservation at the start of every channel
	// (default 16 MiB); page aligned and smaller than every channel.
	CarveOut uint64
	// SmallPoolBytes is the size of the small pool at the end of every channel
	// (default 1 GiB); page aligned. It is cut to half the channel's usable
	// bytes (rounded down to a page) when the channel is smaller.
	SmallPoolBytes uint64
	// SmallMax is the largest (rounded) allocation the small pool serves
	// (default 512 KiB); page aligned and at most SmallPoolBytes.
	SmallMax uint64
}

// Request asks for one block of device memory.
type Request struct {
	Size    uint64 // bytes wanted; rounded up to the page; 0 is ErrBadRequest
	Align   uint64 // device-address alignment: 0 means the page; otherwise a power of two
	Channel int    // HBM channel to use; Any (-1) tries every channel starting from NC's
	NC      int    // NeuronCore whose channel is preferred when Channel is Any; Any (-1) means channel 0
	Name    string // label for Dump and Info
}

// Handle names one allocation, like the driver's mem handle. Valid handles
// start at 1; numbers of freed blocks are reused (see the package doc).
type Handle uint32

// Block describes one live allocation.
type Block struct {
	Handle    Handle
	Channel   int    // HBM channel
	Addr      uint64 // device address of the first byte
	Size      uint64 // bytes reserved: Requested rounded up to the page
	Requested uint64 // bytes asked for
	Name      string
	Small     bool // served from the channel's small pool
}

// End returns the first device address past the block.
func (b Block) End() uint64 { return b.Addr + b.Size }

// ChannelStats is the usage of one HBM channel. Total, Used and Free count
// both pools; Used + Free == Total.
type ChannelStats struct {
	Total       uint64 // usable bytes: channel bytes minus the carve-out
	Used        uint64 // bytes in live blocks (rounded sizes)
	Free        uint64 // bytes on the free lists
	LargestFree uint64 // largest free range in either pool
	Blocks      int    // live blocks
	SmallUsed   uint64 // bytes of Used that lie in the small pool
}

// channel is one HBM channel's two pools.
type channel struct {
	base, start, end uint64 // channel base and usable range
	main, small      pool
	blocks           int
}

// entry is one slot of the handle table; a free slot keeps live == false so
// that a second Free is recognised.
type entry struct {
	b    Block
	live bool
}

// Allocator is the device-memory allocator of one device. Create it with New.
type Allocator struct {
	mu       sync.Mutex
	page     uint64
	smallMax uint64
	ncs      int
	ncPerCh  int
	ch       []channel
	table    []entry           // table[h-1] is handle h
	freeNums []Handle          // LIFO of freed handle numbers
	live     *extent.Tree      // the live blocks' ranges, by address
	byAddr   map[uint64]Handle // the handle of the live block at each address
}

// New builds the allocator of one device of geometry geo.
func New(geo *hwarch.Geometry, opts Options) (*Allocator, error) {
	if geo == nil || len(geo.HBM) == 0 {
		return nil, fmt.Errorf("dmem: geometry has no HBM channels: %w", ErrBadOptions)
	}
	if geo.TPBPerHBM < 1 || geo.NeuronCores < 0 {
		return nil, fmt.Errorf("dmem: geometry TPBPerHBM %d / NeuronCores %d: %w", geo.TPBPerHBM, geo.NeuronCores, ErrBadOptions)
	}
	o, err := resolve(geo, opts)
	if err != nil {
		return nil, err
	}
	a := &Allocator{page: o.PageSize, smallMax: o.SmallMax, ncs: geo.NeuronCores, ncPerCh: geo.TPBPerHBM,
		live: extent.New(0, 0), byAddr: map[uint64]Handle{}}
	a.ch = make([]channel, len(geo.HBM))
	for i, h := range geo.HBM {
		start, end := h.Base+o.CarveOut, h.Base+o.ChannelBytes[i]
		small := min(o.SmallPoolBytes, alignDown((end-start)/2, o.PageSize))
		a.ch[i] = channel{base: h.Base, start: start, end: end,
			main: newPool(start, end-small, o.PageSize), small: newPool(end-small, end, o.PageSize)}
	}
	return a, nil
}

func resolve(geo *hwarch.Geometry, o Options) (Options, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("dmem: Options.%s %s: %w", field, fmt.Sprintf(format, args...), ErrBadOptions)
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if !isPow2(o.PageSize) || o.PageSize < MinPageSize {
		return o, bad("PageSize", "%#x: want a power of two ≥ %d", o.PageSize, MinPageSize)
	}
	if o.CarveOut == 0 {
		o.CarveOut = DefaultCarveOut
	}
	if o.CarveOut%o.PageSize != 0 {
		return o, bad("CarveOut", "%#x is not a multiple of the page size %#x", o.CarveOut, o.PageSize)
	}
	if o.SmallPoolBytes == 0 {
		o.SmallPoolBytes = DefaultSmallPoolBytes
	}
	if o.SmallPoolBytes%o.PageSize != 0 {
		return o, bad("SmallPoolBytes", "%#x is not a multiple of the page size %#x", o.SmallPoolBytes, o.PageSize)
	}
	if o.SmallMax == 0 {
		o.SmallMax = DefaultSmallMax
	}
	if o.SmallMax%o.PageSize != 0 || o.SmallMax > o.SmallPoolBytes {
		return o, bad("SmallMax", "%#x: want a multiple of the page size %#x and at most SmallPoolBytes %#x",
			o.SmallMax, o.PageSize, o.SmallPoolBytes)
	}
	if o.ChannelBytes == nil {
		o.ChannelBytes = make([]uint64, len(geo.HBM))
		for i, h := range geo.HBM {
			o.ChannelBytes[i] = h.ActiveSize
		}
	} else {
		if len(o.ChannelBytes) != len(geo.HBM) {
			return o, bad("ChannelBytes", "has %d entries: the geometry has %d channels", len(o.ChannelBytes), len(geo.HBM))
		}
		o.ChannelBytes = append([]uint64(nil), o.ChannelBytes...)
	}
	for i, n := range o.ChannelBytes {
		h := geo.HBM[i]
		if h.Base%o.PageSize != 0 {
			return o, fmt.Errorf("dmem: channel %d base %#x is not page aligned: %w", i, h.Base, ErrBadOptions)
		}
		switch {
		case n%o.PageSize != 0:
			return o, bad("ChannelBytes", "[%d] = %#x is not a multiple of the page size %#x", i, n, o.PageSize)
		case n > h.WindowSize && h.WindowSize != 0:
			return o, bad("ChannelBytes", "[%d] = %#x exceeds the channel window %#x", i, n, h.WindowSize)
		case n > ^uint64(0)-h.Base:
			return o, bad("ChannelBytes", "[%d] = %#x overflows the address space from base %#x", i, n, h.Base)
		case o.CarveOut >= n:
			return o, bad("CarveOut", "%#x leaves nothing of channel %d (%#x bytes)", o.CarveOut, i, n)
		}
	}
	return o, nil
}

// Channels returns the number of HBM channels.
func (a *Allocator) Channels() int { return len(a.ch) }

// PageSize returns the allocation granule.
func (a *Allocator) PageSize() uint64 { return a.page }

// ChannelRange returns the usable device-address range [start, end) of
// channel ch, after the carve-out; (0, 0) when ch is out of range.
func (a *Allocator) ChannelRange(ch int) (start, end uint64) {
	if ch < 0 || ch >= len(a.ch) {
		return 0, 0
	}
	return a.ch[ch].start, a.ch[ch].end
}

// SmallPoolRange returns the range [start, end) of channel ch's small pool
// (empty when the channel is too small for one); (0, 0) when ch is out of
// range.
func (a *Allocator) SmallPoolRange(ch int) (start, end uint64) {
	if ch < 0 || ch >= len(a.ch) {
		return 0, 0
	}
	return a.ch[ch].small.start, a.ch[ch].small.end
}

func isPow2(x uint64) bool { return x != 0 && x&(x-1) == 0 }

// alignUp rounds x up to a power of two; ok is false when that overflows.
func alignUp(x, align uint64) (uint64, bool) {
	r := (x + align - 1) &^ (align - 1)
	return r, r >= x
}

func alignDown(x, align uint64) uint64 { return x &^ (align - 1) }

// sizeString formats a byte count exactly: "24 MiB" or "12 KiB" when the
// unit divides it, else hex bytes with an approximate MiB figure.
func sizeString(n uint64) string {
	switch {
	case n == 0:
		return "0 B"
	case n%hwarch.GiB == 0:
		return fmt.Sprintf("%d GiB", n/hwarch.GiB)
	case n%hwarch.MiB == 0:
		return fmt.Sprintf("%d MiB", n/hwarch.MiB)
	case n < hwarch.MiB && n%hwarch.KiB == 0:
		return fmt.Sprintf("%d KiB", n/hwarch.KiB)
	case n < hwarch.MiB:
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%#x B (~%.3f MiB)", n, float64(n)/float64(hwarch.MiB))
}
