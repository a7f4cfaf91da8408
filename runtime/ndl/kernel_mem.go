package ndl

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"syscall"

	"github.com/neuronsim/neuronsim/internal/units"
)

// What a client must do before the memory ioctls, per driver 2.24.7.0: only
// the attaching open OpenKernel already does. NEURON_IOCTL_DEVICE_INIT is a
// no-op (neuron_cdev.c:2690-2691), none of MEM_ALLOC_V2*, MEM_BUF_COPY*,
// MEMSET* or MEM_GET_EXTENDED_INFO is on the attach-only list
// (neuron_cdev.c:2650-2666; MEM_FREE is, and the open attaches), and the open
// itself waits while the device is in reset and fails once it is invalid
// (neuron_cdev.c:2831-2849), so a device the open returned has its memory
// pools and its H2T rings set up (neuron_reset.c:133 ndmar_init_ncs after
// every reset).

// Errors of the memory methods, matchable with errors.Is.
var (
	// ErrMemRequest marks a request the backend refuses before any ioctl
	// because the driver would refuse or mishandle it (the error says which
	// rule and where the driver has it).
	ErrMemRequest = errors.New("memory request the driver refuses")
	// ErrMemRange marks an access past the end of a memory allocation.
	ErrMemRange = errors.New("access outside the memory allocation")
	// ErrDriverAnswer marks a value the driver returned outside the range it
	// can take.
	ErrDriverAnswer = errors.New("driver answer out of range")
)

// DriverReturnError is a positive return value of a Neuron ioctl. Most
// handlers return copy_from_user/copy_to_user's count of bytes not copied
// unchanged, so it matches syscall.EFAULT; MEM_GET_EXTENDED_INFO returns
// +EINVAL (22) for an unknown handle (neuron_cdev.c:603), which MemInfo
// reports as such.
type DriverReturnError struct{ Value uint64 }

func (e *DriverReturnError) Error() string {
	return fmt.Sprintf("ioctl returned %d (positive: bytes the driver could not copy to or from user memory)", e.Value)
}

// Unwrap makes a DriverReturnError match syscall.EFAULT.
func (e *DriverReturnError) Unwrap() error { return syscall.EFAULT }

// MemHandle is a memory handle of the driver: an index into its per-device
// handle table, 1 .. MaxMemHandle (neuron_mc_handle.c:41-47,70; 0 is the
// invalid handle).
type MemHandle uint64

// MaxMemHandle is the largest handle the driver's two-level table holds:
// 512 × 8192 − 1 (neuron_mc_handle.c:41-43,70).
const MaxMemHandle MemHandle = 512*8192 - 1

// Bounds of the memory requests.
const (
	// MaxMemAlign bounds MemRequest.Align: the driver refuses an alignment
	// above INT_MAX (neuron_mempool.c:690); the largest power of two below it.
	MaxMemAlign = 1 << 30
	// MaxBufCopyChunk is the most bytes one MEM_BUF_COPY64 carries. The
	// driver's device-memory loop keeps the remaining count in a u32
	// (neuron_cdev.c:1103), so a copy of 4 GiB or more would silently move
	// size mod 2^32 bytes; CopyToMem and CopyFromMem split longer copies.
	MaxBufCopyChunk = 1 << 30
	// maxPID bounds MemInfo.PID: Linux's PID_MAX_LIMIT (2^22).
	maxPID = 1 << 22
)

// MemRequest is one allocation for MemAlloc.
type MemRequest struct {
	// Size in bytes, 1 .. MaxMemAllocBytes(host) for the location; the driver
	// rounds it up to whole pages (neuron_mempool.c:598).
	Size uint64
	// Align is 0 (the driver's page alignment) or a power of two up to
	// MaxMemAlign, for device memory only: the driver refuses any alignment
	// of host memory (neuron_mempool.c:624-629).
	Align uint64
	// Host allocates host memory (dma_alloc_coherent, neuron_mempool.c:630)
	// instead of device memory.
	Host bool
	// Channel is the HBM channel of device memory, 0 .. channels−1 (the
	// driver: dram_channel < dram_channels, neuron_mempool.c:599). The driver
	// takes the channel of host memory too, and checks it the same way.
	Channel int
	// NC is the NeuronCore the memory belongs to, 0 .. the device's cores−1
	// (the driver only requires < 8, neuron_mempool.c:605, but it then picks
	// that core's H2T engine for every copy, neuron_dma.c:432).
	NC int
}

// MemInfo is what MEM_GET_EXTENDED_INFO reports of a handle, range-checked.
type MemInfo struct {
	Handle     MemHandle
	Host       bool   // host memory (dma_alloc_coherent) rather than device memory
	PA         uint64 // device address: HBM for device memory, host physical address | the host bit for host memory
	MmapOffset uint64 // the mmap(2) offset of the allocation (= PA, neuron_mmap.c:235-238)
	PID        uint64 // the process that allocated it
	Size       uint64 // bytes, the request rounded up to whole pages
}

// MaxMemAllocBytes is the largest Size MemAlloc asks the driver for: the
// device's largest HBM channel for device memory (an allocation lies in one
// channel's pool), 1 TiB for host memory (the driver's own bound is INT64_MAX,
// neuron_mempool.c:595; the bound here only keeps a typo from asking the
// kernel for exabytes).
func (k *KernelDevice) MaxMemAllocBytes(host bool) uint64 {
	if host {
		return 1 << 40
	}
	var m uint64
	for _, c := range k.geo.HBM {
		m = max(m, c.ActiveSize)
	}
	return m
}

// checkRequest refuses what the driver would refuse, naming its rule.
func (k *KernelDevice) checkRequest(r MemRequest) error {
	loc := "device"
	if r.Host {
		loc = "host"
	}
	switch limit := k.MaxMemAllocBytes(r.Host); {
	case r.Size == 0 || r.Size > limit:
		return fmt.Errorf("size %d: %w: %s memory allocations are 1 B .. %s", r.Size, ErrMemRequest, loc, formatBytes(limit))
	case r.Host && r.Align != 0:
		return fmt.Errorf("align %d: %w: the driver allocates no aligned host memory (neuron_mempool.c:624-629); pass 0", r.Align, ErrMemRequest)
	case r.Align != 0 && (r.Align > MaxMemAlign || bits.OnesCount64(r.Align) != 1):
		return fmt.Errorf("align %d: %w: want 0 or a power of two up to %d", r.Align, ErrMemRequest, MaxMemAlign)
	case r.Channel < 0 || r.Channel >= len(k.geo.HBM):
		return fmt.Errorf("channel %d: %w: the %s has HBM channels 0..%d", r.Channel, ErrMemRequest, k.geo.Generation, len(k.geo.HBM)-1)
	case r.NC < 0 || r.NC >= k.geo.NeuronCores:
		return fmt.Errorf("NC %d: %w: the %s has NeuronCores 0..%d", r.NC, ErrMemRequest, k.geo.Generation, k.geo.NeuronCores-1)
	}
	return nil
}

// MemAlloc allocates memory with NEURON_IOCTL_MEM_ALLOC_V2MT64
// (ncdev_mem_alloc_libnrt, neuron_cdev.c:453-546; mc_alloc_internal,
// neuron_mempool.c:579-792), tagged as tensors of its location, region 0 (the
// only region: the 2.24.7.0 driver runs its pools in shared mode,
// v2/neuron_dhal_v2.c:453, v3/neuron_dhal_v3.c:632), then reads the
// allocation back with MEM_GET_EXTENDED_INFO, which CopyToMem, CopyFromMem and
// Memset check their ranges against. A request the driver would refuse is
// ErrMemRequest without an ioctl; the driver's own refusals come back
// wrapped, naming the ioctl (ENOMEM: no room in the pool; EINVAL: a channel,
// core or alignment it does not take).
func (k *KernelDevice) MemAlloc(r MemRequest) (MemHandle, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	what := fmt.Sprintf("MEM_ALLOC_V2MT64 (%s of %s memory, channel %d, NC %d)", formatBytes(r.Size), location(r.Host), r.Channel, r.NC)
	if k.closed {
		return 0, fmt.Errorf("ndl kernel: %s: %s: %w", k.path, what, ErrClosed)
	}
	if err := k.checkRequest(r); err != nil {
		return 0, fmt.Errorf("ndl kernel: %s: %s: %w", k.path, what, err)
	}
	req := MemAllocV2MT64{Size: r.Size, Align: r.Align, DRAMChannel: uint32(r.Channel), NC: uint32(r.NC), MemType: MemTypeTensorsDevice}
	if r.Host {
		req.HostMemory, req.MemType = 1, MemTypeTensorsHost
	}
	var handle uint64
	var arg [MemAllocV2MT64Size]byte
	k.pinner.Pin(&handle)
	req.HandleAddr = userAddress(&handle)
	req.encodeTo(arg[:])
	err := k.sys.Ioctl(k.fd, IoctlMemAllocV2MT64, arg[:])
	runtime.KeepAlive(&handle)
	k.pinner.Unpin()
	if err != nil {
		return 0, fmt.Errorf("ndl kernel: %s: %s: %w", k.path, what, err)
	}
	h := MemHandle(handle)
	if h == 0 || h > MaxMemHandle {
		return 0, fmt.Errorf("ndl kernel: %s: %s: handle %d: %w (1..%d)", k.path, what, handle, ErrDriverAnswer, MaxMemHandle)
	}
	if _, live := k.mem[h]; live {
		// Not freed: a free of h would free the allocation that holds it
		// already; taking it would replace that allocation's size and place.
		return 0, fmt.Errorf("ndl kernel: %s: %s: handle %d, which an earlier allocation holds and has not freed: %w", k.path, what, handle, ErrDriverAnswer)
	}
	info, err := k.memInfo(h)
	if err == nil && (info.Host != r.Host || info.Size < r.Size) {
		err = fmt.Errorf("ndl kernel: %s: MEM_GET_EXTENDED_INFO of the new handle %d: %s memory of %d bytes, asked for %s memory of %d: %w",
			k.path, h, location(info.Host), info.Size, location(r.Host), r.Size, ErrDriverAnswer)
	}
	if err != nil {
		if ferr := k.memFree(h); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return 0, err
	}
	k.mem[h] = info
	return h, nil
}

// formatBytes is units.FormatBytes for any uint64 (one above the int64
// range prints as a plain byte count).
func formatBytes(n uint64) string {
	if n > 1<<63-1 {
		return fmt.Sprintf("%d B", n)
	}
	return units.FormatBytes(int64(n))
}

func location(host bool) string {
	if host {
		return "host"
	}
	return "device"
}

// MemFree frees a handle with NEURON_IOCTL_MEM_FREE (ncdev_mem_free,
// neuron_cdev.c:688-704; EINVAL for a handle the driver does not know).
func (k *KernelDevice) MemFree(h MemHandle) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return fmt.Errorf("ndl kernel: %s: MEM_FREE handle %d: %w", k.path, h, ErrClosed)
	}
	return k.memFree(h)
}

func (k *KernelDevice) memFree(h MemHandle) error {
	arg := MemFree{Handle: uint64(h)}.Encode()
	if err := k.sys.Ioctl(k.fd, IoctlMemFree, arg); err != nil {
		return fmt.Errorf("ndl kernel: %s: MEM_FREE handle %d: %w", k.path, h, err)
	}
	delete(k.mem, h)
	return nil
}

// MemInfo reads a handle's allocation with NEURON_IOCTL_MEM_GET_EXTENDED_INFO
// (ncdev_mem_get_extended_info, neuron_cdev.c:591-620) and checks every field
// the driver returns: host_memory 0 or 1; a size of at least one byte whose
// end does not overflow; host memory's address carrying the generation's host
// bit and device memory's inside one HBM channel; mmap_offset = pa; a pid in
// 1..2^22. The driver's mem_handle field (its kernel pointer) and version
// (uninitialised) are not used.
func (k *KernelDevice) MemInfo(h MemHandle) (MemInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return MemInfo{}, fmt.Errorf("ndl kernel: %s: MEM_GET_EXTENDED_INFO handle %d: %w", k.path, h, ErrClosed)
	}
	return k.memInfo(h)
}

func (k *KernelDevice) memInfo(h MemHandle) (MemInfo, error) {
	var arg [MemExtendedInfoSize]byte
	MemExtendedInfo{Handle: uint64(h), Version: 1}.encodeTo(arg[:])
	fail := func(format string, a ...any) (MemInfo, error) {
		return MemInfo{}, fmt.Errorf("ndl kernel: %s: MEM_GET_EXTENDED_INFO handle %d: "+format, append([]any{k.path, h}, a...)...)
	}
	if err := k.sys.Ioctl(k.fd, IoctlMemGetExtendedInfo, arg[:]); err != nil {
		var pos *DriverReturnError
		if errors.As(err, &pos) && pos.Value == uint64(syscall.EINVAL) {
			return fail("the driver knows no such handle (it returns +EINVAL, neuron_cdev.c:603): %w", syscall.EINVAL)
		}
		return fail("%w", err)
	}
	s, err := DecodeMemExtendedInfo(arg[:])
	if err != nil {
		return MemInfo{}, err
	}
	info := MemInfo{Handle: h, Host: s.HostMemory == 1, PA: s.PA, MmapOffset: s.MmapOffset, PID: s.PID, Size: s.Size}
	hostBit := k.geo.HostAddressBit
	switch {
	case s.HostMemory > 1:
		return fail("host_memory %d: %w (0 or 1)", s.HostMemory, ErrDriverAnswer)
	case s.Size == 0 || s.PA+s.Size < s.PA:
		return fail("pa %#x size %d: %w (a size of at least 1 whose end fits 64 bits)", s.PA, s.Size, ErrDriverAnswer)
	case s.MmapOffset != s.PA:
		return fail("mmap_offset %#x, pa %#x: %w (the driver's mmap offset is the pa)", s.MmapOffset, s.PA, ErrDriverAnswer)
	case s.PID == 0 || s.PID > maxPID:
		return fail("pid %d: %w (1..%d)", s.PID, ErrDriverAnswer, maxPID)
	case info.Host && (s.PA&hostBit == 0 || s.PA&^hostBit+s.Size > hostBit):
		return fail("host memory at pa %#x size %d: %w (a host address carries bit %d and stays below it)", s.PA, s.Size, ErrDriverAnswer, bits.TrailingZeros64(hostBit))
	case !info.Host:
		c, ok := k.geo.HBMChannelOf(s.PA)
		if !ok || s.PA+s.Size > k.geo.HBM[c].Base+k.geo.HBM[c].WindowSize {
			return fail("device memory at pa %#x size %d: %w (not inside one HBM channel of the %s)", s.PA, s.Size, ErrDriverAnswer, k.geo.Generation)
		}
	}
	return info, nil
}

// knownSize returns a handle's allocation size: cached from MemAlloc, or
// read with MEM_GET_EXTENDED_INFO for a handle allocated elsewhere.
func (k *KernelDevice) knownSize(h MemHandle) (uint64, error) {
	if info, ok := k.mem[h]; ok {
		return info.Size, nil
	}
	info, err := k.memInfo(h)
	return info.Size, err
}

// checkRange checks [off, off+n) against a handle's allocation: the driver
// checks offset+size ≤ size without guarding the sum against overflow
// (mc_access_is_within_bounds, neuron_mempool.h:225-231), so a wrapping sum
// is refused here.
func (k *KernelDevice) checkRange(op string, h MemHandle, off, n uint64) error {
	size, err := k.knownSize(h)
	if err != nil {
		return err
	}
	if off+n < off || off+n > size {
		return fmt.Errorf("ndl kernel: %s: %s handle %d offset %d count %d: %w of %d bytes", k.path, op, h, off, n, ErrMemRange, size)
	}
	return nil
}

// CopyToMem copies src into the allocation h at byte offset off with
// NEURON_IOCTL_MEM_BUF_COPY64 (ncdev_mem_buf_copy, neuron_cdev.c:1042-1144).
// For device memory the driver moves it with its own DMA: 64 KiB at a time
// through a host bounce buffer and the H2T queue of the memory's NeuronCore
// (ndma_memcpy_buf_to_mc, neuron_dma.c:664-683); a DMA that does not complete
// comes back as EPERM (the driver returns -1, neuron_dma.c:269-272). Host
// memory is a plain copy. The range is checked first (ErrMemRange); copies
// longer than MaxBufCopyChunk go out as several ioctls. A zero-length copy is
// a no-op.
func (k *KernelDevice) CopyToMem(h MemHandle, off uint64, src []byte) error {
	return k.bufCopy(h, off, src, true)
}

// CopyFromMem copies len(dst) bytes of the allocation h at offset off into
// dst with NEURON_IOCTL_MEM_BUF_COPY64, as CopyToMem does the other way
// (ndma_memcpy_buf_from_mc, neuron_dma.c:685-704).
func (k *KernelDevice) CopyFromMem(h MemHandle, off uint64, dst []byte) error {
	return k.bufCopy(h, off, dst, false)
}

func (k *KernelDevice) bufCopy(h MemHandle, off uint64, buf []byte, toMem bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	op := "MEM_BUF_COPY64 from"
	if toMem {
		op = "MEM_BUF_COPY64 to"
	}
	if k.closed {
		return fmt.Errorf("ndl kernel: %s: %s handle %d: %w", k.path, op, h, ErrClosed)
	}
	if len(buf) == 0 {
		return nil
	}
	if err := k.checkRange(op, h, off, uint64(len(buf))); err != nil {
		return err
	}
	var arg [MemBufCopy64Size]byte
	for start := 0; start < len(buf); start += k.copyChunk {
		chunk := buf[start:min(start+k.copyChunk, len(buf))]
		o := off + uint64(start)
		k.pinner.Pin(&chunk[0])
		s := MemBufCopy64{Handle: uint64(h), Buffer: userAddress(&chunk[0]), Size: uint64(len(chunk)), Offset: o}
		if toMem {
			s.ToMem = 1
		}
		s.encodeTo(arg[:])
		err := k.sys.Ioctl(k.fd, IoctlMemBufCopy64, arg[:])
		runtime.KeepAlive(chunk)
		k.pinner.Unpin()
		if err != nil {
			return fmt.Errorf("ndl kernel: %s: %s handle %d offset %d count %d: %w", k.path, op, h, o, len(chunk), err)
		}
	}
	return nil
}

// Memset fills n bytes of the allocation h at offset off with the byte value
// using NEURON_IOCTL_MEMSET64 (ncdev_memset, neuron_cdev.c:706-756; the
// driver's ndma_memset DMAs a host buffer memset() with the value, so only a
// byte value exists, neuron_dma.c:532-565). The range is checked first; a
// zero-length fill is a no-op.
func (k *KernelDevice) Memset(h MemHandle, off, n uint64, value byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return fmt.Errorf("ndl kernel: %s: MEMSET64 handle %d: %w", k.path, h, ErrClosed)
	}
	if n == 0 {
		return nil
	}
	if err := k.checkRange("MEMSET64", h, off, n); err != nil {
		return err
	}
	arg := Memset64{Handle: uint64(h), Offset: off, Value: uint32(value), Size: n}.Encode()
	if err := k.sys.Ioctl(k.fd, IoctlMemset64, arg); err != nil {
		return fmt.Errorf("ndl kernel: %s: MEMSET64 handle %d offset %d count %d: %w", k.path, h, off, n, err)
	}
	return nil
}
