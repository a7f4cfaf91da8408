// Package capture writes the packets of the simulated fabric to a pcap file
// that tshark and Wireshark read, and reads such files back for tests and
// tools.
//
// The fabric (the links and NeuronSwitches between simulated devices) emits
// one packet per chunk of a DMA transfer that crosses a link: a transfer
// routed over two links gives two packets per chunk, one per hop. The frame
// format is the project's own; contrib/wireshark/neuronsim.lua is a Lua
// dissector that decodes it.
//
// # Frame format
//
// Each packet is an Ethernet II frame:
//
//	offset  size  field
//	0       6     destination MAC 02:4e:53:DD:DD:PP
//	6       6     source MAC      02:4e:53:SS:SS:PP
//	12      2     EtherType 0x88B5 (IEEE 802 local experimental EtherType 1)
//	14      40    neuronsim header (below)
//	54      n     payload bytes carried (n <= length)
//
// In the MACs, DDDD / SSSS is the destination / source device index
// (big-endian 16 bits) and PP the port (the link index on that device: the
// destination MAC carries the header's dst port, the source MAC its src port).
// The leading 0x02 makes them locally administered unicast addresses.
//
// The neuronsim header is 40 bytes, big-endian; offsets are from its start:
//
//	offset  size  field
//	0       2     magic 0x4E53 ("NS")
//	2       1     version, 1
//	3       1     op: 1 write, 2 reduce-write (the payload is combined into
//	              the destination), 3 semaphore write (a 4-byte write into a
//	              semaphore/event register), 4 read request, 5 read response
//	4       2     src device
//	6       2     dst device
//	8       1     src port (the output port on the hop's sender)
//	9       1     dst port (the input port on the hop's receiver)
//	10      1     hop (0 for the first link of the path)
//	11      1     hops (links on the whole path)
//	12      2     DMA engine of the source device that sent the chunk
//	14      1     queue
//	15      1     flags: bit0 first chunk of the transfer, bit1 last chunk,
//	              bit2 payload truncated in the capture, bit3 timing-only
//	              (no payload carried at all); bits 4-7 reserved, kept as is
//	16      4     sequence (per (src, dst) path, counting chunks)
//	20      4     length (bytes of the chunk the packet stands for)
//	24      8     address (destination device address of the chunk's first byte)
//	32      8     transfer id (the DMA transfer the chunk belongs to)
//
// The payload carried may be shorter than length: the [Writer] keeps at most
// [Options].PayloadLimit bytes (and what fits the snap length) and sets
// [FlagTruncated] when it keeps fewer than length; a timing-only packet
// ([FlagTimingOnly]) carries none. A read request carries none either: its
// length is the bytes asked for. The pcap record's original length is that
// of the frame as if the whole chunk were carried (54 + length; 54 for a
// read request), so the capture tools show "n bytes captured of m on the
// wire".
//
// # Time
//
// Timestamps are virtual time. A packet at t picoseconds since the
// simulation's time 0 is stamped time.Unix(0, t/1000): the pcap epoch
// (1970-01-01 00:00:00 UTC) stands for the simulation's start, and the file
// has nanosecond resolution, so picoseconds below a nanosecond are dropped.
// Wireshark's "seconds since beginning of capture" or "seconds since epoch"
// time formats show simulation time directly.
package capture
