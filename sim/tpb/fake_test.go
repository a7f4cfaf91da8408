package tpb

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// This file holds the fakes the tests drive a core with: an Env that is a
// tiny event queue, instruction memory as a map of records, a doorbell
// recorder, and Mems of lazily allocated pages. The helpers build records
// and place tensors exactly as docs/isa.md lays them out, independently of
// the core's own addressing code.

type event struct{ at, seq, arg uint64 }

type doorbell struct {
	engine, queue int
	n             uint32
	at            uint64
}

var errFake = errors.New("fake failure")

type fakeEnv struct {
	now, seq    uint64
	q           []event
	core        *Core
	code        map[uint64][isa.RecordSize]byte
	doorbells   []doorbell
	doorbellErr error
	syncChanged int
	onSync      func() // runs inside SyncChanged (re-entrancy tests)
	onDoorbell  func() // runs inside Doorbell
	steps       int
}

func (f *fakeEnv) Now() simkernel.Time { return simkernel.Time(f.now) }

func (f *fakeEnv) Schedule(at simkernel.Time, arg uint64) {
	f.seq++
	f.q = append(f.q, event{uint64(at), f.seq, arg})
}

func (f *fakeEnv) Fetch(addr uint64, p []byte) error {
	rec, ok := f.code[addr]
	if !ok || len(p) != isa.RecordSize {
		return fmt.Errorf("fetch %#x: %w", addr, errFake)
	}
	copy(p, rec[:])
	return nil
}

func (f *fakeEnv) Doorbell(engine, queue int, n uint32) error {
	f.doorbells = append(f.doorbells, doorbell{engine, queue, n, f.now})
	if f.onDoorbell != nil {
		f.onDoorbell()
	}
	return f.doorbellErr
}

func (f *fakeEnv) SyncChanged() {
	f.syncChanged++
	if f.onSync != nil {
		f.onSync()
	}
}

// step runs the earliest event; false when the queue is empty.
func (f *fakeEnv) step() bool {
	if len(f.q) == 0 {
		return false
	}
	best := 0
	for i, e := range f.q {
		if e.at < f.q[best].at || (e.at == f.q[best].at && e.seq < f.q[best].seq) {
			best = i
		}
	}
	e := f.q[best]
	f.q = append(f.q[:best], f.q[best+1:]...)
	if e.at > f.now {
		f.now = e.at
	}
	f.steps++
	f.core.Fire(e.arg)
	return true
}

// runUntil runs events due at or before t, then sets the clock to t.
func (f *fakeEnv) runUntil(t uint64) {
	for {
		best := -1
		for i, e := range f.q {
			if e.at <= t && (best < 0 || e.at < f.q[best].at || (e.at == f.q[best].at && e.seq < f.q[best].seq)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		f.step()
	}
	f.now = max(f.now, t)
}

// run empties the queue within a budget of events.
func (f *fakeEnv) run(budget int) bool {
	for range budget {
		if !f.step() {
			return true
		}
	}
	return len(f.q) == 0
}

const pageSize = 4096

// fakeMem is a Mem of lazily allocated pages; failAt, when set, makes
// accesses touching that offset fail.
type fakeMem struct {
	size   uint64
	pages  []*[pageSize]byte
	failAt uint64
	fail   bool
}

func newFakeMem(size uint64) *fakeMem {
	return &fakeMem{size: size, pages: make([]*[pageSize]byte, (size+pageSize-1)/pageSize)}
}

func (m *fakeMem) access(off uint64, p []byte, write bool) error {
	end := off + uint64(len(p))
	if end < off || end > m.size {
		return fmt.Errorf("mem [%#x, +%d): %w", off, len(p), errFake)
	}
	if m.fail && m.failAt >= off && m.failAt < end {
		return fmt.Errorf("mem %#x: %w", m.failAt, errFake)
	}
	for done := 0; done < len(p); {
		a := off + uint64(done)
		pg, in := a/pageSize, a%pageSize
		n := min(len(p)-done, int(pageSize-in))
		page := m.pages[pg]
		switch {
		case write && page == nil:
			page = new([pageSize]byte)
			m.pages[pg] = page
			fallthrough
		case write:
			copy(page[in:], p[done:done+n])
		case page == nil:
			clear(p[done : done+n])
		default:
			copy(p[done:done+n], page[in:])
		}
		done += n
	}
	return nil
}

func (m *fakeMem) Read(off uint64, p []byte) error  { return m.access(off, p, false) }
func (m *fakeMem) Write(off uint64, p []byte) error { return m.access(off, p, true) }

// clone returns a deep copy.
func (m *fakeMem) clone() *fakeMem {
	c := *m
	c.pages = make([]*[pageSize]byte, len(m.pages))
	for i, p := range m.pages {
		if p != nil {
			cp := *p
			c.pages[i] = &cp
		}
	}
	return &c
}

// harness is a core with fakes around it.
type harness struct {
	t          testing.TB
	gen        hwarch.Generation
	geo        *hwarch.Geometry
	env        *fakeEnv
	sbuf, psum *fakeMem
	sync       *SyncState
	core       *Core
}

func newHarness(t testing.TB, gen hwarch.Generation) *harness {
	geo := hwarch.MustGeometry(gen)
	h := &harness{t: t, gen: gen, geo: geo, env: &fakeEnv{code: map[uint64][isa.RecordSize]byte{}},
		sbuf: newFakeMem(geo.SBUFWindowSize), psum: newFakeMem(geo.PSUMSize), sync: &SyncState{}}
	core, err := NewCore(Config{Generation: gen, NC: 0, SBUF: h.sbuf, PSUM: h.psum, Sync: h.sync, Env: h.env})
	require.NoError(t, err)
	h.core, h.env.core = core, core
	return h
}

// progBase is where engine e's program goes.
func progBase(e int) uint64 { return 0x4000_0000 + uint64(e)<<24 }

// place writes records at addr (LAST set on the final one when last).
func (h *harness) place(addr uint64, last bool, recs ...isa.Record) {
	for i, r := range recs {
		if last && i == len(recs)-1 {
			r.Flags |= isa.FlagLast
		}
		h.env.code[addr+uint64(i)*isa.RecordSize] = r.Bytes()
	}
}

// start points engine e at pc and starts it.
func (h *harness) start(e int, pc uint64) {
	h.core.WriteReg(e, RegPCLo, uint32(pc))
	h.core.WriteReg(e, RegPCHi, uint32(pc>>32))
	h.core.WriteReg(e, RegStartCtrl, StartRun)
}

// launch places a program (LAST on its final record) for engine e and starts it.
func (h *harness) launch(e int, recs ...isa.Record) {
	h.place(progBase(e), true, recs...)
	h.start(e, progBase(e))
}

// run drains the event queue.
func (h *harness) run() {
	require.True(h.t, h.env.run(1_000_000), "event budget exceeded")
}

// runOne runs one record (LAST added) on its engine and returns the status.
func (h *harness) runOne(r isa.Record) (status, errCode uint32) {
	e := int(r.Engine)
	h.launch(e, r)
	h.run()
	return h.core.ReadReg(e, RegStatus), h.core.ReadReg(e, RegError)
}

// mustRun runs records on an engine and requires DONE.
func (h *harness) mustRun(e int, recs ...isa.Record) {
	h.launch(e, recs...)
	h.run()
	require.Equal(h.t, uint32(StatusDone), h.core.ReadReg(e, RegStatus), "error %d at %#x",
		h.core.ReadReg(e, RegError), h.core.ReadReg(e, RegFaultOffset))
}

// tensor builds a descriptor: dims are (size, stride) pairs.
func tensor(psum bool, part int, off uint32, dt isa.Dtype, parts int, dims ...int) isa.Tensor {
	t := isa.Tensor{Addr: isa.Addr(psum, part, off), Dtype: dt, Partitions: uint8(parts)}
	for i := 0; i+1 < len(dims); i += 2 {
		t.Dims[i/2] = isa.Dim{Size: uint16(dims[i]), Stride: int16(dims[i+1])}
	}
	return t
}

// sb and ps build contiguous [parts × n] tensors in SBUF and PSUM.
func sb(off uint32, dt isa.Dtype, parts, n int) isa.Tensor {
	return tensor(false, 0, off, dt, parts, n, 1)
}

func ps(off uint32, dt isa.Dtype, parts, n int) isa.Tensor {
	return tensor(true, 0, off, dt, parts, n, 1)
}

// elemOffsets lists the window offsets of t's elements, partition-major,
// row-major over the free dimensions (straight from docs/isa.md).
func (h *harness) elemOffsets(t isa.Tensor) (*fakeMem, []uint64) {
	psum, p0, off := isa.Location(t.Addr)
	mem, pb := h.sbuf, h.geo.SBUFPartitionSize
	if psum {
		mem, pb = h.psum, PSUMPartitionBytes
	}
	sizes, strides := []int{}, []int{}
	for _, d := range t.Dims {
		if d.Size == 0 {
			break
		}
		sizes, strides = append(sizes, int(d.Size)), append(strides, int(d.Stride))
	}
	for len(sizes) < 3 {
		sizes, strides = append(sizes, 1), append(strides, 0)
	}
	var out []uint64
	sz := t.Dtype.Size()
	for p := range int(t.Partitions) {
		for i := range sizes[0] {
			for j := range sizes[1] {
				for k := range sizes[2] {
					e := int(off) + (i*strides[0]+j*strides[1]+k*strides[2])*sz
					out = append(out, uint64(p0+p)*pb+uint64(e))
				}
			}
		}
	}
	return mem, out
}

// put stores fp32 values into t, converted to its dtype.
func (h *harness) put(t isa.Tensor, vals []float32) {
	mem, offs := h.elemOffsets(t)
	require.Len(h.t, vals, len(offs))
	b := make([]byte, t.Dtype.Size())
	for i, o := range offs {
		storeF32(t.Dtype, vals[i], b)
		require.NoError(h.t, mem.Write(o, b))
	}
}

// putInt stores integer values into t (integer dtype, low bytes).
func (h *harness) putInt(t isa.Tensor, vals []int64) {
	mem, offs := h.elemOffsets(t)
	b := make([]byte, t.Dtype.Size())
	for i, o := range offs {
		putInt(t.Dtype, vals[i], b)
		require.NoError(h.t, mem.Write(o, b))
	}
}

// get reads t's elements as fp32.
func (h *harness) get(t isa.Tensor) []float32 {
	mem, offs := h.elemOffsets(t)
	out := make([]float32, len(offs))
	b := make([]byte, t.Dtype.Size())
	for i, o := range offs {
		require.NoError(h.t, mem.Read(o, b))
		out[i] = loadF32(t.Dtype, b)
	}
	return out
}

// raw reads t's elements as bytes.
func (h *harness) raw(t isa.Tensor) [][]byte {
	mem, offs := h.elemOffsets(t)
	out := make([][]byte, len(offs))
	for i, o := range offs {
		out[i] = make([]byte, t.Dtype.Size())
		require.NoError(h.t, mem.Read(o, out[i]))
	}
	return out
}

// getInt reads t's integer elements.
func (h *harness) getInt(t isa.Tensor) []int64 {
	mem, offs := h.elemOffsets(t)
	out := make([]int64, len(offs))
	b := make([]byte, t.Dtype.Size())
	for i, o := range offs {
		require.NoError(h.t, mem.Read(o, b))
		out[i] = loadInt(t.Dtype, b)
	}
	return out
}

// encoded converts reference fp32 values to dtype bytes with the same
// rounding the engines use.
func encoded(dt isa.Dtype, vals []float32) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = make([]byte, dt.Size())
		storeF32(dt, v, out[i])
	}
	return out
}

// randVals returns n values in [-r, r) with random low bits.
func randVals(rng *rand.Rand, n int, r float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = (rng.Float32()*2 - 1) * r
	}
	return out
}

// rounded returns vals as they read back from dtype dt.
func rounded(dt isa.Dtype, vals []float32) []float32 {
	out := make([]float32, len(vals))
	b := make([]byte, 8)
	for i, v := range vals {
		storeF32(dt, v, b)
		out[i] = loadF32(dt, b)
	}
	return out
}

func f32(v float32) uint32 { return math.Float32bits(v) }

// rec builds a record.
func rec(op isa.Opcode, e isa.Engine) isa.Record { return isa.Record{Opcode: op, Engine: e} }

// recordingTracer keeps every slice.
type slice struct {
	track, name string
	start, end  uint64
	args        map[string]string
}

type recordingTracer struct{ slices []slice }

func (r *recordingTracer) Slice(track, name string, start, end uint64, args map[string]string) {
	r.slices = append(r.slices, slice{track, name, start, end, args})
}
