package ndl

// SetCopyChunk lowers the most bytes one MEM_BUF_COPY64 carries, so the
// external tests can check how CopyToMem and CopyFromMem split a copy
// without gigabyte buffers.
func SetCopyChunk(k *KernelDevice, n int) { k.copyChunk = n }
