package capture

import (
	"errors"
	"fmt"
	"io"

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
// writes. It fails on a link type other than Ethernet, a timestamp before
// the epoch, or a frame [ParseFrame] refuses; the error says which packet,
// and the packets before it are returned with it.
func ReadAll(r io.Reader) ([]Packet, error) {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("capture: reading pcap file header: %w", err)
	}
	if lt := pr.LinkType(); lt != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("%w: pcap link type %v, want Ethernet", ErrBadFrame, lt)
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
		if ns < 0 {
			return out, fmt.Errorf("capture: packet %d: timestamp %v is before the simulation's start (the epoch)", i, ci.Timestamp)
		}
		h, payload, err := ParseFrame(data)
		if err != nil {
			return out, fmt.Errorf("capture: packet %d: %w", i, err)
		}
		out = append(out, Packet{AtPS: uint64(ns) * 1000, Header: h, Payload: payload, OrigLen: ci.Length})
	}
}
