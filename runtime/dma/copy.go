package dma

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// h2tName names NC nc's host-to-device queue.
func h2tName(nc int) string { return fmt.Sprintf("h2t.nc%d", nc) }

// H2T returns NC nc's host-to-device queue: the NC's H2T engine and default
// queue (driver-facts §4.1), opened on first use.
func (m *DMA) H2T(nc int) (*Queue, error) {
	if q, ok := m.Queue(h2tName(nc)); ok {
		return q, nil
	}
	eng, q, err := udma.H2TEngine(m.geo, nc)
	if err != nil {
		return nil, err
	}
	return m.OpenQueue(h2tName(nc), eng, q, DefaultRingSize)
}

// copySyncThreshold is the driver's sync_threshold for its copies:
// DMA_H2T_DESC_COUNT/2 − UDMA_MAX_NUM_CDESC_PER_CACHE_LINE − 1 =
// 4096/2 − 16 − 1 = 2031 (driver 2.24.7.0 neuron_dma.c:311, neuron_ring.h:11,
// udma/udma.h:16): half the H2T ring, less a cache line of descriptors, so
// that two copies' batches fit the ring at once.
const copySyncThreshold = 4096/2 - 16 - 1

// MaxDataPairsPerBatch is the most data pairs one batch of a copy holds:
// the driver checks the pending count before it adds a pair, and the pair
// added when copySyncThreshold are pending ends the batch, so a batch has
// copySyncThreshold + 1 = 2032 data pairs at most (neuron_dma.c:329-343).
const MaxDataPairsPerBatch = copySyncThreshold + 1

// MaxPairsPerBatch is the most descriptor pairs one batch of a copy
// rings with one doorbell: its data pairs and the completion pair after
// them, 2033 (neuron_dma.c:349-359).
const MaxPairsPerBatch = MaxDataPairsPerBatch + 1

// CopyBatchBytes is the most bytes one batch of a Copy moves: its data
// pairs, of udma.MaxTransfer each (2032 × 64 KiB = 127 MiB).
const CopyBatchBytes = uint64(MaxDataPairsPerBatch) * udma.MaxTransfer

// CopyBatches is how many batches, each ending in its completion marker,
// a Copy of n bytes runs (one for n = 0).
func CopyBatches(n uint64) uint64 { return max(1, (n+CopyBatchBytes-1)/CopyBatchBytes) }

// Copy moves n bytes from src to dst (device addresses: device memory, or
// host memory with the host bit) through NC nc's H2T queue, as the driver's
// copies do: batches of at most MaxDataPairsPerBatch pairs of at most
// 64 KiB, each followed by a 4-byte copy of the marker into a host word that is
// polled (every PollInterval of device time) until it holds the marker. It
// returns the descriptor pairs used, markers included.
func (m *DMA) Copy(nc int, dst, src, n uint64) (int, error) {
	qu, err := m.H2T(nc)
	if err != nil {
		return 0, err
	}
	done, err := m.host.HostAlloc(64, 64)
	if err != nil {
		return 0, fmt.Errorf("dma: completion word: %w", err)
	}
	defer m.host.HostFree(done)
	if src+n < src || dst+n < dst {
		return 0, fmt.Errorf("dma: copy [%#x → %#x, +%d) wraps the address space", src, dst, n)
	}
	const batch = CopyBatchBytes
	pairs := 0
	for off := uint64(0); off < n || n == 0; off += batch {
		c := min(n-off, batch)
		v := NewVring(fmt.Sprintf("copy.nc%d", nc))
		if err := v.AddTransfer(src+off, dst+off, c); err != nil {
			return pairs, err
		}
		if err := v.AddTransfer(m.geo.HostAddress(m.marker), m.geo.HostAddress(done), 4); err != nil {
			return pairs, err
		}
		if err := m.runMarked(qu, v, done); err != nil {
			return pairs, fmt.Errorf("dma: copy of %d bytes on NC %d, batch at +%#x: %w", n, nc, off, err)
		}
		pairs += v.Descriptors()
	}
	return pairs, nil
}

// runMarked runs a vring that ends with the marker copy into the host word
// done, and polls done until it holds the marker, then clears it.
func (m *DMA) runMarked(qu *Queue, v *Vring, done uint64) error {
	if err := qu.Run(v); err != nil {
		return err
	}
	// Wait budget: the driver allows about 2–4 µs per descriptor, with large
	// multipliers on emulators; poll for 1000× that before giving up.
	maxPolls := 4000*v.Descriptors() + 1_000_000
	var w [4]byte
	for i := 0; ; i++ {
		if err := m.host.HostRead(done, w[:]); err != nil {
			return err
		}
		if uint32(w[0])|uint32(w[1])<<8|uint32(w[2])<<16|uint32(w[3])<<24 == udma.Marker {
			break
		}
		if i%64 == 63 { // a halted queue never writes the marker
			if err := qu.Sync(); err != nil {
				return err
			}
		}
		if i >= maxPolls {
			return fmt.Errorf("marker not seen after %d polls: %w", maxPolls, ErrTimeout)
		}
		if err := sleep(m, PollInterval); err != nil {
			return err
		}
	}
	if err := m.host.HostWrite(done, make([]byte, 4)); err != nil {
		return err
	}
	return qu.Sync()
}

// Transfer is one copy of a scatter/gather list.
type Transfer struct {
	Src, Dst, Len uint64
}

// CopyMany runs a list of transfers through NC nc's H2T queue as one job:
// the transfers in order, batched like Copy, each batch closed by the marker
// copy and waited for. It returns the descriptor pairs used.
func (m *DMA) CopyMany(nc int, ts []Transfer) (int, error) {
	qu, err := m.H2T(nc)
	if err != nil {
		return 0, err
	}
	done, err := m.host.HostAlloc(64, 64)
	if err != nil {
		return 0, fmt.Errorf("dma: completion word: %w", err)
	}
	defer m.host.HostFree(done)
	pairs := 0
	v := NewVring(fmt.Sprintf("copy.nc%d", nc))
	flush := func() error {
		if v.Descriptors() == 0 {
			return nil
		}
		if err := v.AddTransfer(m.geo.HostAddress(m.marker), m.geo.HostAddress(done), 4); err != nil {
			return err
		}
		if err := m.runMarked(qu, v, done); err != nil {
			return err
		}
		pairs += v.Descriptors()
		v = NewVring(v.Name)
		return nil
	}
	for i, t := range ts {
		need := int((t.Len + udma.MaxTransfer - 1) / udma.MaxTransfer)
		if v.Descriptors()+need > MaxDataPairsPerBatch {
			if err := flush(); err != nil {
				return pairs, fmt.Errorf("dma: copy list on NC %d at transfer %d: %w", nc, i, err)
			}
		}
		if need > MaxDataPairsPerBatch {
			n, err := m.Copy(nc, t.Dst, t.Src, t.Len)
			pairs += n
			if err != nil {
				return pairs, err
			}
			continue
		}
		if err := v.AddTransfer(t.Src, t.Dst, t.Len); err != nil {
			return pairs, fmt.Errorf("dma: copy list on NC %d, transfer %d: %w", nc, i, err)
		}
	}
	if err := flush(); err != nil {
		return pairs, fmt.Errorf("dma: copy list on NC %d: %w", nc, err)
	}
	return pairs, nil
}
