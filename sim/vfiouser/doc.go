// Package vfiouser serves a simulated device (sim.Device) as a PCI function
// over vfio-user, the protocol QEMU (10.1 and later) speaks with
// `-device vfio-user-pci`, so that a guest's kernel driver drives the model.
// It implements protocol version 0.1 of QEMU's docs/interop/vfio-user.rst
// from the specification, over a unix stream socket, one client at a time
// per Server. No client can block the server: Serve accepts every
// connection at once; a connection must have its VERSION accepted within
// Options.HandshakeTimeout (10 s) of its accept or is closed; a client
// whose first message arrives while another client's session is live waits
// up to 1 s (at most half the handshake timeout) for that session to end,
// then has that message answered with an EBUSY error reply and is closed,
// the live session untouched; at most 8 connections are held besides the
// live session, and one past them is closed at once. A client that lets a
// message of the server's wait past Options.ReplyTimeout (10 s) — a
// DMA_READ/DMA_WRITE unanswered, which the server waits for holding the
// device and every device of its system — has its session ended, and new
// clients are then answered EAGAIN and closed for Options.StallBackoff
// (60 s), so that it cannot stall the system again at once by
// reconnecting. ReplyTimeout bounds each wait; Options.WaitBudget (10 s)
// bounds them all together: over every stretch of a session's time, of
// length L, the server may have waited on the client — for its DMA
// replies, and for it to take the server's messages; waits that overlap
// count once; waits made while no other client of the system's Pacer is
// connected, which stall no one else, do not count — at most WaitBudget +
// L/10, and past that the session ends and the back-off starts just the
// same. So a client that answers every
// request just inside ReplyTimeout, one after another, is ended after
// about 11 s of waiting, and none holds the system more than a tenth of
// the time in the long run, while a client that keeps the server waiting
// a tenth of every stretch or less (a guest's replies take microseconds
// to milliseconds) is never ended by it. Each is logged in one line
// (Options.Logf). After VERSION a session may stay idle for ever.
//
// Implemented: the message header (reply, no-reply and error flags, errno
// replies); VERSION with its capabilities JSON (max_msg_fds,
// max_data_xfer_size, max_dma_maps, pgsizes, write_multiple; parsed
// strictly: NUL-terminated UTF-8, one JSON object, known capabilities
// type- and range-checked, unknown ones ignored); DEVICE_GET_INFO (PCI,
// reset; 9 regions, 5 IRQ indices); DEVICE_GET_REGION_INFO for BAR0–5 (the
// device's sizes, 0 for a BAR it lacks), ROM and VGA (size 0) and CONFIG;
// REGION_READ, REGION_WRITE and REGION_WRITE_MULTI on config space and on
// every BAR — BAR accesses are whole aligned 32-bit words and go through
// sim.Device.ReadBAR/WriteBAR, with the BAR decode and MMIO timing of the
// in-process backend; DEVICE_GET_IRQ_INFO and DEVICE_SET_IRQS (the
// eventfds of INTx, MSI, MSI-X, ERR and REQ are kept; a client trigger
// signals the kept eventfd); DEVICE_RESET (the device's function-level
// reset, sim.Device.FunctionReset: config space, DMA engines and queues,
// NeuronCores, registers, MISC RAM to power-on values and the firmware
// boots again, HBM kept); DMA_MAP and DMA_UNMAP, a mapping's file
// descriptor (SCM_RIGHTS) mmapped, a mapping without one reached by
// server-to-client DMA_READ/DMA_WRITE requests split at the transfer
// limit; and GuestMemory, the client's memory by guest-physical address,
// a sim.HostPort: a device built with it as its host (NewGuestMemory, then
// New with the same Options) DMAs to and from the client's memory, its
// host-window addresses (the driver's pci_host_base ORed in) less that bit
// being guest-physical; an access outside every mapping is a DMA error of
// the queue.
//
// Pacing: the guest's driver waits in wall time (msleep between polls),
// so before each BAR access a Pacer moves the device clock to at least its
// time when the Pacer was made plus the wall time passed since, running
// what falls due (never back, never past sim.MaxTime), and while a client
// is connected it does so every tick in the background too, since the
// driver polls a DMA's completion in guest memory. The devices of a
// system share one clock and one Pacer (Options.Pacer); a device alone gets
// one of its own unless Options.NoPacing. The clock keeps following wall
// time while no client is connected.
//
// Limits (Options): 16 file descriptors per message, 1 MiB per data
// transfer (the smaller of the client's and the server's), 1024 DMA
// mappings (or fewer if the client says so) of at most 1 TiB in all,
// 4 KiB pages only, 16 commands read ahead, 10 s for the client's reply to
// a DMA request, 10 s of waiting on the client per session (earned back at
// a tenth of the time), 10 s to complete the VERSION exchange. A payload's buffer
// grows as its bytes arrive (64 KiB, then doubling up to the size the
// header declares), so a header alone costs at most 64 KiB: the 16
// commands read ahead hold at most what the client sent; the descriptors
// of a message being read, and of one read past it, are held up to twice
// the per-message limit, and those past it are closed as they arrive (the
// message is refused, E2BIG). Every message is
// length-checked; one that breaks the
// protocol gets an error reply (EINVAL for a malformed message, E2BIG past
// a limit, EEXIST for an overlapping mapping, ENOTSUP for an unsupported
// command or feature, ENODEV for a closed device, EFAULT for a DMA fault,
// EIO otherwise) and the session goes on; a no-reply command's error is
// only logged. When the client goes away, even mid-message, its mappings
// and eventfds are released and the device keeps its state.
//
// Not implemented: DEVICE_GET_REGION_IO_FDS, mmappable regions, DEVICE_FEATURE
// and migration (MIG_DATA_READ/WRITE), dirty-page logging, twin-socket mode,
// and interrupts raised by the model (it has none to raise yet). The
// devices of a sim/fabric system are served with one GuestMemory each
// (fabric.Config.HostPorts: each server has its own client's mappings) and
// one shared Pacer, as `neuronsim serve --vfio-user` does.
//
// Config space is the device's own when it implements ConfigSpace
// (ReadConfig/WriteConfig; 4096 bytes unless it has ConfigSize), otherwise
// a 256-byte type-0 header of the server's own (identity, command
// register, 64-bit prefetchable BARs the guest can size; no capability
// list).
package vfiouser
