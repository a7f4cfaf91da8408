package dve

import (
	"errors"
	"fmt"
	"sync"

	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// CompletionSemaphore is the semaphore of the NC the loader's event-accel
// descriptor increments when the tables have landed (chosen: the seed names
// tdrv_arch_get_evt_addr without decoding its value).
const CompletionSemaphore = 255

// MaxCompletionPolls bounds the wait for the completion semaphore, polled
// every dma.PollInterval of device time.
const MaxCompletionPolls = 10_000_000

// ErrLoad marks a DVE load that did not complete.
var ErrLoad = errors.New("DVE table load failed")

// Report says what one Load did.
type Report struct {
	State    State
	CacheHit bool // the tables were already on the core: nothing moved
	// Bytes is every byte the DMA moved: the tables' and the 4-byte
	// event-accel word's (EventAccelBytes).
	Bytes uint64
	// TableBytes is the tables' bytes alone: the sum of the Staged sizes,
	// what a table load's throughput is of.
	TableBytes  uint64
	Descriptors int    // descriptor pairs run
	Staged      []Dest // the destinations written, in load order
	// The parts of the load's device time (on the device's clock, or the
	// host's for a device without one; 0 on a cache hit):
	// StagePS allocates the staging buffers and writes the tables into
	// them through BAR4 (dmem_buf_copyin); StartPS writes the event-accel
	// source word (once per NC), reads the semaphore, allocates the
	// queue and starts the vring (descriptor writes and doorbell over
	// MMIO); WaitPS is from the start to the semaphore read that shows
	// the increment: the DMA of the tables and the event-accel word, plus
	// up to one dma.PollInterval of polling and the reads themselves.
	StagePS, StartPS, WaitPS uint64
}

// EventAccelBytes is the size of the event-accel descriptor's copy that
// closes a load (a device word holding 1 into the semaphore's INCR
// register): bytes the DMA moves besides the tables.
const EventAccelBytes = 4

// Loader is dve_dynamic_config_init for one device: it stages the tables in
// device memory, runs one vring on the "qDveTable" queue of the NC that
// copies them to their destinations and closes with an event-accel
// descriptor, and waits for the completion semaphore.
type Loader struct {
	DMA    *dma.DMA
	Mem    *dmem.Allocator
	Tables *arch.Tables
	Cache  *Cache

	mu     sync.Mutex
	staged map[int][]dmem.Handle // staging buffers of the set loaded on each NC
	one    map[int]uint64        // per NC: a device word holding 1, the event-accel source
}

// NewLoader returns a loader over a device's DMA layer and memory allocator.
func NewLoader(m *dma.DMA, mem *dmem.Allocator, t *arch.Tables) *Loader {
	return &Loader{DMA: m, Mem: mem, Tables: t, Cache: NewCache(), staged: map[int][]dmem.Handle{}, one: map[int]uint64{}}
}

// Load loads a table set on NC nc (nil: the default bins). A set identical
// to the one already loaded there (same fingerprint) is a cache hit that
// moves nothing.
func (l *Loader) Load(nc int, tables *Tables) (Report, error) {
	t, err := l.tablesOrDefault(tables)
	if err != nil {
		return Report{}, err
	}
	fp := Fingerprint(l.Tables.Generation, *t)
	if st, ok := l.Cache.Lookup(nc, fp); ok {
		return Report{State: st, CacheHit: true}, nil
	}
	transfers, err := Transfers(l.Tables, nc, *t)
	if err != nil {
		return Report{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := State{DVETblHash: fp, Queue: QueueName, Vring: VringName, NC: nc}
	v := dma.NewVring(VringName)
	rep := Report{State: st}
	since, err := ndl.ElapsedPS(l.DMA.Device().Dev)
	if err != nil {
		return Report{}, err
	}
	handles, staged, err := l.stage(nc, transfers, v, &rep.State)
	if err != nil {
		return Report{}, err
	}
	if rep.StagePS, err = since(); err != nil {
		l.free(handles)
		return Report{}, err
	}
	if err := l.runVring(nc, v, &rep); err != nil {
		l.free(handles)
		return Report{}, err
	}
	l.free(l.staged[nc]) // the set this one replaces
	l.staged[nc] = handles
	l.Cache.Forget(nc)
	l.Cache.Store(nc, rep.State)
	rep.Bytes, rep.Descriptors, rep.Staged = v.Bytes(), v.Descriptors(), staged
	for _, d := range staged {
		rep.TableBytes += d.Size
	}
	return rep, nil
}

// tablesOrDefault returns tables, or the generation's default bins when it
// is nil.
func (l *Loader) tablesOrDefault(tables *Tables) (*Tables, error) {
	if tables != nil {
		return tables, nil
	}
	def, err := DefaultBins(l.Tables.Generation)
	if err != nil {
		return nil, err
	}
	return &def, nil
}

// stage copies each transfer's data into a staging buffer of device memory
// on NC nc and adds its copy to its destination to v, recording the
// buffers in st. It returns the buffers and the destinations, in load
// order; on an error it frees the buffers it allocated. l.mu is held.
func (l *Loader) stage(nc int, transfers []Transfer, v *dma.Vring, st *State) ([]dmem.Handle, []Dest, error) {
	var handles []dmem.Handle
	var staged []Dest
	for _, tr := range transfers {
		h, err := l.Mem.Alloc(dmem.Request{Size: tr.Size, Channel: dmem.Any, NC: nc, Name: "dve." + tr.Name})
		if err != nil {
			l.free(handles)
			return nil, nil, fmt.Errorf("dve load NC %d: staging %s: %w", nc, tr.Name, err)
		}
		handles = append(handles, h)
		addr, err := l.copyIn(nc, h, tr)
		if err != nil {
			l.free(handles)
			return nil, nil, err
		}
		if err := v.AddTransfer(addr, tr.Addr, tr.Size); err != nil {
			l.free(handles)
			return nil, nil, err
		}
		*st.Slot(tr.Name) = Buffer{Addr: addr, Dest: tr.Addr, Size: tr.Size}
		staged = append(staged, tr.Dest)
	}
	return handles, staged, nil
}

// copyIn writes the transfer's data into its staging buffer h
// (dmem_buf_copyin) and returns the buffer's device address.
func (l *Loader) copyIn(nc int, h dmem.Handle, tr Transfer) (uint64, error) {
	b, err := l.Mem.Info(h)
	if err != nil {
		return 0, err
	}
	if err := l.DMA.WriteDevice(b.Addr, tr.Data); err != nil {
		return 0, fmt.Errorf("dve load NC %d: copy-in %s: %w", nc, tr.Name, err)
	}
	return b.Addr, nil
}

// runVring closes v with the event-accel descriptor that increments NC
// nc's completion semaphore, runs it on the NC's "qDveTable" queue and
// waits for the semaphore to move, timing the start (rep.StartPS) and the
// wait (rep.WaitPS). l.mu is held.
func (l *Loader) runVring(nc int, v *dma.Vring, rep *Report) error {
	since, err := ndl.ElapsedPS(l.DMA.Device().Dev)
	if err != nil {
		return err
	}
	one, err := l.oneWord(nc)
	if err != nil {
		return err
	}
	incr, readVA, err := l.semaphore(nc)
	if err != nil {
		return err
	}
	if err := v.AddEventAccel(one, incr); err != nil {
		return err
	}
	before, err := l.DMA.Device().CSR.Read(readVA)
	if err != nil {
		return err
	}
	q, err := l.DMA.AllocQueue(QueueName, nc, 64)
	if err != nil {
		return err
	}
	if err := q.Run(v); err != nil {
		return err
	}
	if rep.StartPS, err = since(); err != nil {
		return err
	}
	if err := l.wait(q, readVA, before+1); err != nil {
		return fmt.Errorf("dve load NC %d: %w", nc, err)
	}
	all, err := since()
	rep.WaitPS = all - rep.StartPS
	return err
}

// free frees staging buffers, ignoring errors: the buffers of a failed
// load, or of the set a new one replaces.
func (l *Loader) free(handles []dmem.Handle) {
	for _, h := range handles {
		_ = l.Mem.Free(h)
	}
}

// oneWord returns NC nc's event-accel source: a device word holding 1.
func (l *Loader) oneWord(nc int) (uint64, error) {
	if a, ok := l.one[nc]; ok {
		return a, nil
	}
	h, err := l.Mem.Alloc(dmem.Request{Size: 4, Channel: dmem.Any, NC: nc, Name: "dve.event-accel"})
	if err != nil {
		return 0, err
	}
	b, err := l.Mem.Info(h)
	if err != nil {
		return 0, err
	}
	if err := l.DMA.WriteDevice(b.Addr, []byte{1, 0, 0, 0}); err != nil {
		return 0, err
	}
	l.one[nc] = b.Addr
	return b.Addr, nil
}

// semaphore returns the device address of the completion semaphore's INCR
// register (what the event-accel descriptor writes) and the runtime virtual
// address of its READ register.
func (l *Loader) semaphore(nc int) (incr, readVA uint64, err error) {
	psum, err := l.Tables.Khal.PSUMBase(nc)
	if err != nil {
		return 0, 0, err
	}
	m := l.Tables.Geometry.BAR0
	sync := psum + m.EventsOffset - m.PSUMOffset
	incr = sync + m.SemIncrOffset - m.EventsOffset + 4*CompletionSemaphore
	readVA = l.DMA.Device().VA(m.TPBWindow(nc) + m.SemReadOffset + 4*CompletionSemaphore)
	return incr, readVA, nil
}

// wait polls the completion semaphore until it reaches want.
func (l *Loader) wait(q *dma.Queue, readVA uint64, want uint32) error {
	dev := l.DMA.Device()
	for i := 0; i < MaxCompletionPolls; i++ {
		v, err := dev.CSR.Read(readVA)
		if err != nil {
			return err
		}
		if v == want {
			return q.Sync()
		}
		if i%64 == 63 {
			if err := q.Sync(); err != nil {
				return fmt.Errorf("%w: %w", ErrLoad, err)
			}
		}
		if err := ndl.Sleep(dev.Dev, dma.PollInterval); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: completion semaphore %d not incremented after %d polls", ErrLoad, CompletionSemaphore, MaxCompletionPolls)
}
