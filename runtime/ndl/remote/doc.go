// Package remote is the remote device backend of the runtime's device access
// layer and its server: `neuronsim serve` exports devices with Server, and
// the runtime reaches them with Dial, whose Device handles implement
// ndl.Device, ndl.Sleeper, ndl.HostMemory (the served device's host
// memory, which its DMA engines reach) and ndl.Clock. The server serves any ndl.Device (the CLI
// passes simulated devices, the tests a fake), so this package imports only
// runtime/ndl, hw/arch and internal/units, never sim/.
//
// # Addresses
//
// An address is "unix:PATH" (a unix socket) or "tcp:HOST:PORT". The
// protocol has no authentication, so Listen refuses a TCP host other than a
// loopback IP literal (127.0.0.0/8, ::1) or "localhost" unless told
// otherwise (the CLI's --allow-remote), with ErrNotLoopback.
//
// # Wire protocol, version 2
//
// Version 2 is version 1 plus the four host-memory requests and CLOCK; a
// version 2 server answers version 1 clients in version 1.
//
// A connection carries frames. The client sends requests and the server
// answers each with exactly one reply, in order; a v1 client keeps one
// request in flight. All integers are little-endian and fixed-width; there
// is no padding and no self-describing encoding. docs/remote-protocol.md
// holds the same description with examples.
//
// Every frame starts with a 12-byte header:
//
//	offset size field
//	0      4    length    payload bytes after the header, ≤ MaxPayloadSize (1 048 592)
//	4      1    op        one of the ops below
//	5      3    reserved  zero
//	8      4    tag       chosen by the client per request, echoed by the reply
//
// Ops and payloads (offsets from the payload's start):
//
//	HELLO 0x01 (client → server), 6 bytes
//	0  4  magic    0x4C44524E, the bytes "NRDL"
//	4  2  version  the client's protocol version (2, or 1)
//
//	HELLO reply 0x81, 8 bytes + N device records
//	0  4  magic    0x4C44524E
//	4  2  version  the connection's protocol version (the client's)
//	6  2  N        device count, 1..MaxDevices (256)
//	8  …  N records, each 56+L+2C bytes:
//	   0   2     PCI vendor id
//	   2   2     PCI device id
//	   4   1     PCI revision
//	   5   1     L, name length ≤ MaxNameLen (64)
//	   6   6×8   sizes of BAR0..BAR5 in bytes (0: absent)
//	   54  2     C, connected-device count ≤ MaxConnected (64)
//	   56  L     name, UTF-8
//	   56+L 2×C  connected device indices, each < N
//
//	READ 0x02, 16 bytes
//	0  2  device   index into the HELLO reply's table
//	2  1  bar      PCI BAR number
//	3  1  reserved zero
//	4  4  count    words to read, ≤ MaxWords (262 144)
//	8  8  offset   byte offset in the BAR
//
//	READ reply 0x82, 4+4×count bytes
//	0  4  count    the request's count
//	4  …  count 32-bit words
//
//	WRITE 0x03, 16+4×count bytes: READ's 16 bytes, then count 32-bit words
//	WRITE reply 0x83, empty
//
//	SLEEP 0x04, 16 bytes
//	0  2  device
//	2  6  reserved zero
//	8  8  duration in nanoseconds, ≤ 2^63−1 (above 2^62/1000 refused)
//
//	SLEEP reply 0x84, empty
//
//	HOST_ALLOC 0x05 (v2), 24 bytes
//	0  2  device
//	2  6  reserved zero
//	8  8  size in bytes
//	16 8  alignment in bytes
//
//	HOST_ALLOC reply 0x85, 8 bytes: the host physical address
//
//	HOST_FREE 0x06 (v2), 16 bytes: device, 6 reserved, the address (u64)
//	HOST_FREE reply 0x86, empty
//
//	HOST_READ 0x07 (v2), 16 bytes: READ's layout with the bar byte
//	reserved and count in bytes (≤ MaxHostBytes, 1 MiB) at a host address
//	HOST_READ reply 0x87, 4+count bytes: count, then the bytes
//	HOST_WRITE 0x08 (v2), 16+count bytes: HOST_READ's 16 bytes, then the bytes
//	HOST_WRITE reply 0x88, empty
//
//	CLOCK 0x09 (v2), 8 bytes: device, 6 reserved
//	CLOCK reply 0x89, 8 bytes: the device's clock in picoseconds
//
//	ERROR 0xFF (server → client, answers any request), 4+T bytes
//	0  2  code
//	2  2  T, text length ≤ MaxErrorText (1024)
//	4  T  message text (the server's error string, cut to T bytes)
//
// Error codes and the sentinel a client error wraps for each:
//
//	1 generic      none; the text says what failed
//	2 bad BAR      ndl.ErrBadBAR
//	3 BAR offset   ndl.ErrBAROffset
//	4 alignment    ndl.ErrAlignment
//	5 closed       ndl.ErrClosed
//	6 no device    ErrNoDevice (device index ≥ N)
//	7 unsupported  ErrUnsupported (SLEEP or CLOCK on a device without its
//	               own clock, HOST_* on a device without host memory)
//	8 protocol     ErrProtocol (the server then closes the connection)
//	9 version      ErrVersion (the server then closes the connection)
//	10 not owned   ErrNotOwned (HOST_FREE, HOST_READ or HOST_WRITE outside
//	               the connection's own host buffers)
//	11 limit       ErrLimit (a server limit; past MaxClients the server
//	               answers it to the HELLO and closes the connection)
//
// Code 0 is invalid; a client reads a code above 11 as generic (codes 10
// and 11 came within version 2: an older client reads them so). The server
// picks the code of the first sentinel its device's error wraps, in the
// order closed, bad BAR, alignment, BAR offset, and codes 6–11 for its own
// errors; errors other than 8 and 9 leave the connection open.
//
// # Version negotiation
//
// The client's first frame is HELLO. The server checks the magic, then the
// version, then the length, so a later version may append HELLO fields. A
// server that does not speak the client's version (MinVersion..Version)
// answers ERROR code 9 with a text naming both sides and closes the
// connection, and logs the same; otherwise it answers a HELLO reply in the
// client's version, the connection's. Dial offers Version and, refused,
// MinVersion (a version 1 connection refuses the host-memory and clock
// calls with ErrUnsupported without a request). A client refuses a reply of another
// version, naming both. The header, HELLO,
// the HELLO reply's first 6 bytes and ERROR are the same in every version.
//
// # Malformed frames
//
// A frame is malformed when its length exceeds MaxPayloadSize, its op is
// unknown or not a request (on the server), a reserved byte is not zero, the
// stream ends inside it, or its payload is not exactly what its op and
// counts require (a count above MaxWords, a WRITE whose count disagrees with
// its payload length, a SLEEP longer than 2^63−1 ns, anything before HELLO,
// a second HELLO, a HOST_* or CLOCK request on a version 1 connection, …).
// The header is checked before any payload byte is read
// or buffer allocated. The server answers a malformed frame, best effort,
// with ERROR code 8 naming the reason, reports it through ServerOptions.Logf
// and closes that connection only; the device is never called for it. A
// client that receives a malformed frame closes its connection.
//
// # Semantics
//
// READ and WRITE call the device's ReadBAR and WriteBAR with the count,
// bar and offset as given (count 0 included, so the device checks bar and
// offset); the client splits longer accesses into requests of MaxWords
// words, which are not atomic together. SLEEP calls ndl.Sleeper.Sleep when
// the device implements it (ndl.SliceSleeper.SleepUntil, in slices, when
// it implements that: see Locks) and never sleeps on the server's wall
// clock. A SLEEP in slices stops between two of them when its client has
// closed the connection (an end of stream: a client keeps its sending side
// open until its last reply) or lost it, and the connection ends without
// a reply; the device keeps what the slices run, its clock where the last
// one left it.
// A SLEEP above units.MaxTimePS, or one that would take the device's clock
// past ServerOptions.ClockLimitPS, is refused (code 1, code 11).
// The HOST_* requests call the device's ndl.HostMemory methods with the
// arguments as given once the server has checked them: a host buffer
// belongs to the connection that allocated it, only that connection may
// read, write or free it (others get ErrNotOwned), and it is freed when the
// connection ends; allocations count against the ServerOptions host
// limits, each as its size rounded up to its alignment when that is above
// the allocator's granule (ServerOptions.HostGranule). BAR registers, device memory, DMA and the clock are shared by
// every connection. The client splits host accesses at MaxHostBytes.
// CLOCK calls ndl.Clock.ClockPS. The devices of one simulated system
// (`neuronsim serve` serves one) share one clock: a SLEEP on any of them,
// and every access to any of them, moves it for all, and CLOCK on any of
// them reads it. It never goes back, so no client ever reads a CLOCK below
// one it read before, of any device of the system; a SLEEP of d returns
// with the clock at least at the clock it read when it began plus d, and
// possibly later (other clients' requests meanwhile, or a SLEEP of another
// client with a later deadline that ran first). docs/remote-protocol.md,
// "Server limits", lists every limit and what is refused past it.
//
// # Locks
//
// The server has one lock of its own (Server.mu: its connections,
// listeners and the host memory all connections hold), an export lock per
// exported device (export.mu, which serialises the calls on that device)
// or per system (Export.Lock: the exports given the same one — the devices
// of one simulated system, which share one engine and one clock — share
// one export lock, so the calls on all of them are serialised together),
// and the locks inside the devices (a simulated system's devices share
// one). The order is export lock, then the device's own: a call on a
// device is made with its export lock held, and the device takes its own
// inside the call. No request holds two export locks, so exports sharing
// one or not cannot deadlock; a request to one device of a system never
// runs between the steps of a request to another of it (a SLEEP's clock
// reading, clock-limit check and first slice are one step). The server lock is never held together with an export lock: it is
// taken and released before or after a device call (a HOST_ALLOC charges
// the host memory first, then calls the device; HOST_FREE calls the device,
// then releases the charge), so no request waits on a device while
// holding the server. Each export lock is held for one device call, except
// SLEEP: on a device that implements ndl.SliceSleeper it is held for one
// slice of at most SleepSliceEvents events at a time and released between
// slices, so other clients' requests to the device are served while a long
// SLEEP runs (the sleep's deadline is read and checked against the clock
// limit under the lock, with the first slice); on one that does not, it is
// held for the whole Sleep. Between the slices, with no lock held, the
// server checks whether anyone is left to answer: a Close of the server,
// or the client gone, which a watcher goroutine notices by reading the
// connection while the SLEEP runs (the connection's goroutine does not
// read it then); the watcher takes no lock, keeps what it reads (at most
// 4 KiB, what a client sends ahead) for the requests that follow, and is
// stopped, with a read deadline in the past, and waited for before the
// SLEEP returns, so a connection is read by one goroutine at a time. A
// stopped SLEEP leaves the device as its last slice did.
//
// A request of another connection that takes the export lock between two
// slices (to the same device, or to another of its system, whose export
// lock is the same) runs at the virtual time the last slice reached,
// inside the sleep; which time depends on the host's scheduling, so several clients
// of a device see each other's effects at times that are not
// deterministic. One client alone is: its requests are served in order
// and the SLEEP's reply follows its last slice (requests it pipelined are
// read ahead, not served, meanwhile), so its SLEEP in slices is one
// unsliced sleep.
// There is no CLOSE: closing a remote Device handle is local to the client,
// and the server never closes the devices it serves.
package remote
