package capture

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// Packet is one packet read back from a capture.
type Packet struct {
	// AtPS is the timestamp in picoseconds of virtual time, at the file's
	// nanosecond resolution: a multiple of 1000.
	AtPS uint64
	// Header is the packet's neuronsim header as written (with
	// FlagTruncated set when the payload was cut).
	Header Header
	// Payload is the payload bytes the capture carries.
	Payload []byte
	// OrigLen is the frame's original length in the pcap record: the
	// length as if the whole chunk were carried, FrameOverhead +
	// Header.Length (FrameOverhead for a read request), at most 2^31-1.
	OrigLen int
}

// ReadAll reads a pcap stream of neuronsim frames, such as a [Writer]
// writes. It fails on a link type other than Ethernet, a snap length above
// [MaxSnapLen] (checked before any packet is read, so that no record
// declaring gigabytes is allocated for), a timestamp before the epoch or
// past the latest a uint64 of picoseconds holds, an original length other
// than the frame's (FrameOverhead + Header.Length, FrameOverhead for a read
// request, at most 2^31-1), or a frame [ParseFrame] refuses; the error
// wraps [ErrBadFrame] and says which packet, and the packets before it are
// returned with it.
func ReadAll(r io.Reader) ([]Packet, error) {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("capture: reading pcap file header: %w", err)
	}
	if lt := pr.LinkType(); lt != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("%w: pcap link type %v, want Ethernet", ErrBadFrame, lt)
	}
	if sl := pr.Snaplen(); sl > MaxSnapLen {
		return nil, fmt.Errorf("%w: pcap snap length %d exceeds %d (a Writer's largest)", ErrBadFrame, sl, MaxSnapLen)
	}
	var out []Packet
	for i := 0; ; i++ {
		data, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("capture: reading packet %d: %w", i, err)
		}
		ns := ci.Timestamp.UnixNano()
		switch {
		case ns < 0:
			return out, fmt.Errorf("capture: packet %d: timestamp %v is before the simulation's start (the epoch): %w", i, ci.Timestamp, ErrBadFrame)
		case uint64(ns) > math.MaxUint64/1000:
			return out, fmt.Errorf("capture: packet %d: timestamp %d ns is past the latest time in picoseconds a uint64 holds (%d ns): %w", i, ns, uint64(math.MaxUint64/1000), ErrBadFrame)
		}
		h, payload, err := ParseFrame(data)
		if err != nil {
			return out, fmt.Errorf("capture: packet %d: %w", i, err)
		}
		if want := min(FrameOverhead+wireLength(&h), math.MaxInt32); uint64(ci.Length) != want {
			return out, fmt.Errorf("capture: packet %d: original length %d, want %d for its %s header of length %d: %w", i, ci.Length, want, h.Op, h.Length, ErrBadFrame)
		}
		out = append(out, Packet{AtPS: uint64(ns) * 1000, Header: h, Payload: payload, OrigLen: ci.Length})
	}
}
