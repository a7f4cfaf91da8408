package ndl

// The memory ioctls of the Neuron kernel driver 2.24.7.0 (neuron_ioctl.h;
// the handlers in neuron_cdev.c, the allocator in neuron_mempool.c): device
// or host memory allocation, free, the driver's own DMA copy between a user
// buffer and a memory handle, memset, and the extended info (physical
// address, size) of a handle. Layouts are LP64 little-endian, written field by
// field as in kernel_abi.go; line numbers are those of the 2.24.7.0 sources.

// The memory ioctl numbers the kernel backend issues.
//
// The cdev dispatch matches these families by _IOC_NR only and then compares
// the full command against each variant it knows (neuron_cdev.c:2725 →
// ncdev_mem_alloc_libnrt 473-520, 2741 → ncdev_mem_buf_copy 1054-1076, 2749
// → ncdev_memset 718-739), so the size field must be exactly one of the
// variants' (anything else is EINVAL). MEM_FREE and MEM_GET_EXTENDED_INFO are
// compared whole (2727, 2733).
const (
	// IoctlMemAllocV2MT64 is NEURON_IOCTL_MEM_ALLOC_V2MT64 =
	// _IOR('N', 102, struct neuron_ioctl_mem_alloc_v2_mem_type64) = 0x80384e66
	// (neuron_ioctl.h:613; a struct type, so the encoded size is the real 56
	// bytes). The newest of the three MEM_ALLOC_V2 variants: its pad field
	// tells the driver the caller handles allocations and copies of 4 GiB and
	// more (neuron_ioctl.h:46-51).
	IoctlMemAllocV2MT64 uint32 = uint32(IocRead)<<iocDirShift | MemAllocV2MT64Size<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 102

	// IoctlMemFree is NEURON_IOCTL_MEM_FREE =
	// _IOR('N', 22, struct neuron_ioctl_mem_free *) = 0x80084e16
	// (neuron_ioctl.h:616). The argument points to an 8-byte MemFree.
	IoctlMemFree uint32 = uint32(IocRead)<<iocDirShift | ioctlPointerSize<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 22

	// IoctlMemBufCopy64 is NEURON_IOCTL_MEM_BUF_COPY64 =
	// _IOWR('N', 24, struct neuron_ioctl_mem_buf_copy64) = 0xc0284e18
	// (neuron_ioctl.h:623; encoded size 40).
	IoctlMemBufCopy64 uint32 = uint32(IocReadWrite)<<iocDirShift | MemBufCopy64Size<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 24

	// IoctlMemset64 is NEURON_IOCTL_MEMSET64 =
	// _IOR('N', 28, struct neuron_ioctl_memset64) = 0x80204e1c
	// (neuron_ioctl.h:632; encoded size 32).
	IoctlMemset64 uint32 = uint32(IocRead)<<iocDirShift | Memset64Size<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 28

	// IoctlMemGetExtendedInfo is NEURON_IOCTL_MEM_GET_EXTENDED_INFO =
	// _IOR('N', 29, struct neuron_ioctl_mem_get_extended_info *) = 0x80084e1d
	// (neuron_ioctl.h:637). The argument points to a 48-byte
	// MemExtendedInfo, which the driver overwrites whole.
	IoctlMemGetExtendedInfo uint32 = uint32(IocRead)<<iocDirShift | ioctlPointerSize<<iocSizeShift | NeuronIoctlBase<<iocTypeShift | 29
)

// Sizes of the memory ioctl structs (sizeof on LP64).
const (
	MemAllocV2MT64Size  = 56 // sizeof(struct neuron_ioctl_mem_alloc_v2_mem_type64)
	MemFreeSize         = 8  // sizeof(struct neuron_ioctl_mem_free)
	MemBufCopy64Size    = 40 // sizeof(struct neuron_ioctl_mem_buf_copy64)
	Memset64Size        = 32 // sizeof(struct neuron_ioctl_memset64)
	MemExtendedInfoSize = 48 // sizeof(struct neuron_ioctl_mem_get_extended_info)
)

// MemType is the driver's mem_alloc_category_t
// (share/neuron_driver_shared.h:194-220): what an allocation is for. The
// driver only counts allocations by it (sysfs); a value at or above
// memTypeCount is logged and counted as "unknown" (neuron_mempool.c:775-778).
type MemType uint32

// The memory types the kernel backend uses (enum order in
// share/neuron_driver_shared.h:195-219).
const (
	MemTypeTensorsHost   MemType = 2  // NEURON_MEMALLOC_TYPE_TENSORS_HOST
	MemTypeTensorsDevice MemType = 9  // NEURON_MEMALLOC_TYPE_TENSORS_DEVICE
	memTypeCount         MemType = 20 // NEURON_MEMALLOC_TYPE_MAX
)

// MemAllocV2MT64 mirrors struct neuron_ioctl_mem_alloc_v2_mem_type64
// (neuron_ioctl.h:52-62, 56 bytes), the argument of MEM_ALLOC_V2MT64:
//
//	offset  0  __u64  size
//	offset  8  __u64  align         (0: the driver's default; host memory must be 0)
//	offset 16  __u32  host_memory   (non-zero: host memory)
//	offset 20  __u32  dram_channel
//	offset 24  __u32  dram_region
//	offset 28  __u32  nc_id
//	offset 32  __u32  mem_type      (4 bytes of padding after it)
//	offset 40  __u64 *mem_handle    (out: the driver writes the u64 handle there)
//	offset 48  __u32  pad           (4 bytes of tail padding after it)
type MemAllocV2MT64 struct {
	Size, Align uint64
	HostMemory  uint32
	DRAMChannel uint32
	DRAMRegion  uint32
	NC          uint32
	MemType     MemType
	HandleAddr  uint64 // user-space address of a u64 the driver fills
	Pad         uint32
}

// Encode returns the 56-byte wire form of s; padding is zero.
func (s MemAllocV2MT64) Encode() []byte {
	b := make([]byte, MemAllocV2MT64Size)
	s.encodeTo(b)
	return b
}

func (s MemAllocV2MT64) encodeTo(b []byte) {
	b = b[:MemAllocV2MT64Size]
	clear(b)
	le.PutUint64(b[0:], s.Size)
	le.PutUint64(b[8:], s.Align)
	le.PutUint32(b[16:], s.HostMemory)
	le.PutUint32(b[20:], s.DRAMChannel)
	le.PutUint32(b[24:], s.DRAMRegion)
	le.PutUint32(b[28:], s.NC)
	le.PutUint32(b[32:], uint32(s.MemType))
	le.PutUint64(b[40:], s.HandleAddr)
	le.PutUint32(b[48:], s.Pad)
}

// DecodeMemAllocV2MT64 reads the struct from the first 56 bytes of b; a
// shorter b is an error wrapping ErrABITruncated. Padding is ignored.
func DecodeMemAllocV2MT64(b []byte) (MemAllocV2MT64, error) {
	if err := checkLen("struct neuron_ioctl_mem_alloc_v2_mem_type64", b, MemAllocV2MT64Size); err != nil {
		return MemAllocV2MT64{}, err
	}
	return MemAllocV2MT64{
		Size: le.Uint64(b[0:]), Align: le.Uint64(b[8:]),
		HostMemory: le.Uint32(b[16:]), DRAMChannel: le.Uint32(b[20:]), DRAMRegion: le.Uint32(b[24:]), NC: le.Uint32(b[28:]),
		MemType: MemType(le.Uint32(b[32:])), HandleAddr: le.Uint64(b[40:]), Pad: le.Uint32(b[48:]),
	}, nil
}

// MemFree mirrors struct neuron_ioctl_mem_free (neuron_ioctl.h:110-112,
// 8 bytes): mem_handle u64 @0.
type MemFree struct{ Handle uint64 }

// Encode returns the 8-byte wire form of s.
func (s MemFree) Encode() []byte {
	b := make([]byte, MemFreeSize)
	le.PutUint64(b, s.Handle)
	return b
}

// DecodeMemFree reads the struct from the first 8 bytes of b.
func DecodeMemFree(b []byte) (MemFree, error) {
	if err := checkLen("struct neuron_ioctl_mem_free", b, MemFreeSize); err != nil {
		return MemFree{}, err
	}
	return MemFree{Handle: le.Uint64(b)}, nil
}

// MemBufCopy64 mirrors struct neuron_ioctl_mem_buf_copy64
// (neuron_ioctl.h:181-187, 40 bytes), the argument of MEM_BUF_COPY64:
//
//	offset  0  __u64  mem_handle
//	offset  8  void  *buffer              (user-space address of the bytes)
//	offset 16  __u64  size
//	offset 24  __u64  offset              (into the memory handle)
//	offset 32  __u32  copy_to_mem_handle  (non-zero: buffer → handle; 4 bytes of tail padding)
type MemBufCopy64 struct {
	Handle, Buffer, Size, Offset uint64
	ToMem                        uint32
}

// Encode returns the 40-byte wire form of s; padding is zero.
func (s MemBufCopy64) Encode() []byte {
	b := make([]byte, MemBufCopy64Size)
	s.encodeTo(b)
	return b
}

func (s MemBufCopy64) encodeTo(b []byte) {
	b = b[:MemBufCopy64Size]
	clear(b)
	le.PutUint64(b[0:], s.Handle)
	le.PutUint64(b[8:], s.Buffer)
	le.PutUint64(b[16:], s.Size)
	le.PutUint64(b[24:], s.Offset)
	le.PutUint32(b[32:], s.ToMem)
}

// DecodeMemBufCopy64 reads the struct from the first 40 bytes of b.
func DecodeMemBufCopy64(b []byte) (MemBufCopy64, error) {
	if err := checkLen("struct neuron_ioctl_mem_buf_copy64", b, MemBufCopy64Size); err != nil {
		return MemBufCopy64{}, err
	}
	return MemBufCopy64{Handle: le.Uint64(b[0:]), Buffer: le.Uint64(b[8:]), Size: le.Uint64(b[16:]), Offset: le.Uint64(b[24:]), ToMem: le.Uint32(b[32:])}, nil
}

// Memset64 mirrors struct neuron_ioctl_memset64 (neuron_ioctl.h:166-171,
// 32 bytes): mem_handle u64 @0, offset u64 @8, value u32 @16 (4 bytes of
// padding), size u64 @24. The driver fills with memset(), so only the low
// byte of value counts (neuron_dma.c:542).
type Memset64 struct {
	Handle, Offset uint64
	Value          uint32
	Size           uint64
}

// Encode returns the 32-byte wire form of s; padding is zero.
func (s Memset64) Encode() []byte {
	b := make([]byte, Memset64Size)
	le.PutUint64(b[0:], s.Handle)
	le.PutUint64(b[8:], s.Offset)
	le.PutUint32(b[16:], s.Value)
	le.PutUint64(b[24:], s.Size)
	return b
}

// DecodeMemset64 reads the struct from the first 32 bytes of b.
func DecodeMemset64(b []byte) (Memset64, error) {
	if err := checkLen("struct neuron_ioctl_memset64", b, Memset64Size); err != nil {
		return Memset64{}, err
	}
	return Memset64{Handle: le.Uint64(b[0:]), Offset: le.Uint64(b[8:]), Value: le.Uint32(b[16:]), Size: le.Uint64(b[24:])}, nil
}

// MemExtendedInfo mirrors struct neuron_ioctl_mem_get_extended_info
// (neuron_ioctl.h:100-108, 48 bytes):
//
//	offset  0  __u64 mem_handle   (in: the handle; out: the driver writes its kernel mem_chunk pointer here, neuron_cdev.c:614)
//	offset  8  __u32 version      (in: 1; out: uninitialised kernel stack, neuron_cdev.c:593,619)
//	offset 12  __u32 host_memory  (out: 1 host, 0 device)
//	offset 16  __u64 mmap_offset  (out: mc->pa, neuron_mmap.c:235-238)
//	offset 24  __u64 pa           (out: device address; host memory with the host bit, neuron_cdev.c:605-611)
//	offset 32  __u64 pid          (out: the allocating process)
//	offset 40  __u64 size         (out: the allocation, rounded up to pages, neuron_mempool.c:599)
type MemExtendedInfo struct {
	Handle     uint64
	Version    uint32
	HostMemory uint32
	MmapOffset uint64
	PA         uint64
	PID        uint64
	Size       uint64
}

// Encode returns the 48-byte wire form of s.
func (s MemExtendedInfo) Encode() []byte {
	b := make([]byte, MemExtendedInfoSize)
	s.encodeTo(b)
	return b
}

func (s MemExtendedInfo) encodeTo(b []byte) {
	b = b[:MemExtendedInfoSize]
	le.PutUint64(b[0:], s.Handle)
	le.PutUint32(b[8:], s.Version)
	le.PutUint32(b[12:], s.HostMemory)
	le.PutUint64(b[16:], s.MmapOffset)
	le.PutUint64(b[24:], s.PA)
	le.PutUint64(b[32:], s.PID)
	le.PutUint64(b[40:], s.Size)
}

// DecodeMemExtendedInfo reads the struct from the first 48 bytes of b.
func DecodeMemExtendedInfo(b []byte) (MemExtendedInfo, error) {
	if err := checkLen("struct neuron_ioctl_mem_get_extended_info", b, MemExtendedInfoSize); err != nil {
		return MemExtendedInfo{}, err
	}
	return MemExtendedInfo{
		Handle: le.Uint64(b[0:]), Version: le.Uint32(b[8:]), HostMemory: le.Uint32(b[12:]),
		MmapOffset: le.Uint64(b[16:]), PA: le.Uint64(b[24:]), PID: le.Uint64(b[32:]), Size: le.Uint64(b[40:]),
	}, nil
}
