// Package dmem is the runtime's device-memory allocator for one Neuron device:
// a model of the kernel driver's mempool (neuron_mempool.c) and of the
// runtime's dmem_alloc on top of it. It hands out HBM ranges as small integer
// handles, validates device addresses for DMA (Translate), and reports usage.
// It is pure Go, performs no I/O and depends only on hw/arch.
//
// The layout follows driver-facts §7 (Memory):
//
//   - Channel i's memory starts at geo.HBM[i].Base (V3/V4 channels 2 and 3
//     carry bit 47). Its usable range is [Base+CarveOut, Base+ChannelBytes):
//     the first 16 MiB of every channel are the firmware carve-out taken at
//     start-up.
//   - A "small" pool of SmallPoolBytes (1 GiB) sits at the END of each channel,
//     [end−SmallPoolBytes, end), and serves allocations of at most SmallMax
//     (512 KiB); when it has no room the main pool is the fallback. On small
//     channels (QEMU's 1 GiB channels) the small pool is cut to at most half the
//     channel's usable bytes. The main pool is [Base+CarveOut, end−SmallPoolBytes).
//   - Sizes are rounded up to the page granule (PAGE_SIZE, at least 1024).
//     Each pool is first-fit over its free ranges in address order; an
//     alignment above the page is first-fit-aligned; freeing coalesces
//     adjacent free ranges. The same sequence of calls always yields the same
//     addresses. The free ranges and the live blocks are kept in balanced
//     trees (internal/extent), so Alloc, Free and Translate take O(log n)
//     time however fragmented a pool is.
//
// Handles are small integers starting at 1, as the driver's mem handles are;
// 0 is never valid. Freed handle numbers are kept on a LIFO list and the most
// recently freed number is the next one issued. A handle that is currently
// free is remembered, so freeing it again is ErrDoubleFree, and a number that
// was never issued is ErrForeignHandle. Once a freed number has been reissued,
// a stale copy of it names the new block — exactly as in the driver, the
// allocator cannot tell the two holders apart.
//
// Not modelled: the CONTIGUOUS_SCRATCHPAD that grows down from the end of the
// main pool, per-channel regions other than the shared one, host memory, and
// lifespans (driver-facts §7).
//
// An Allocator is safe for concurrent use; one mutex serialises every call.
package dmem
