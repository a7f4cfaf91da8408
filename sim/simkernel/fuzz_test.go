package simkernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// fuzzInput hands out bytes from a fuzz input, zeros once it is used up.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) more() bool { return len(in.b) > 0 }

func (in *fuzzInput) u8() byte {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

func (in *fuzzInput) u16() uint16 { return uint16(in.u8()) | uint16(in.u8())<<8 }

// fuzzRegions are the bases fuzzed addresses are drawn near: the bottom of
// memory, page boundaries, the host and mesh windows, and the top of the
// address space (where accesses start to fail).
var fuzzRegions = []uint64{
	0,
	PageSize,
	16 * PageSize,
	0x4000_0000_0000,
	0x8000_0000_0000,
	0x8040_0000_0000 + 36<<30,
	AddressLimit - 2*PageSize,
	AddressLimit,
}

// addr draws an address: a region base plus a signed offset within a few pages.
func (in *fuzzInput) addr() uint64 {
	base := fuzzRegions[int(in.u8())%len(fuzzRegions)]
	off := int64(int16(in.u16())) % (3 * PageSize)
	return base + uint64(off) // may wrap below 0: such accesses must fail
}

// length draws an access length of up to three pages.
func (in *fuzzInput) length() uint64 { return uint64(in.u16()) % (3*PageSize + 9) }

// inRange is the reference rule for a valid access.
func inRange(addr, n uint64) bool { return addr+n >= addr && addr+n <= AddressLimit }

func FuzzMemory(f *testing.F) {
	f.Add([]byte{0, 1, 0xFF, 0x0F, 0x10, 0x00, 1, 1, 0xFF, 0x0F, 0x10, 0x00})
	f.Add([]byte{0, 7, 0xF0, 0xFF, 0x20, 0x00, 2, 2, 0, 0, 5, 0x30, 0x00, 1, 2, 0x10, 0, 0x40, 0})
	f.Add([]byte{3, 0, 1, 0, 1, 0x10, 0x10, 4, 1, 0x05, 0, 0, 0, 0x20, 0x20, 6, 0, 1, 0, 7, 1, 0, 0, 0})
	f.Add([]byte{0, 6, 0, 0, 0xFF, 0x3F, 3, 6, 0x10, 0, 6, 0, 0, 0xFF, 0x3F, 5, 8, 6, 0, 0})
	f.Add([]byte{2, 7, 0xFE, 0xFF, 0x00, 0x00, 9, 1, 0, 0, 10, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 2, 0xF0, 0xFF, 0x00, 0x20, 7, 0, 0, 0, 0x10, 0, 0, 0x10, 0, 11, 0, 0, 0, 3, 0x20, 0x00, 0, 0, 1, 0, 0, 0, 0x40, 0})
	f.Add([]byte{0, 4, 0x00, 0x00, 0x30, 0x00, 5, 0, 11, 4, 0x00, 0x01, 1, 0x00, 0x00, 0x10, 0x00, 1, 4, 0x00, 0x00, 0x40, 0x00})
	f.Fuzz(fuzzMemory)
}

// fuzzMemory runs the operations data encodes on a Memory and on a reference
// model and fails on the first difference.
func fuzzMemory(t *testing.T, data []byte) {
	in := &fuzzInput{b: data}
	var m Memory
	var budget *PageBudget
	if len(data)%2 == 1 { // half the inputs run under a budget too large to refuse
		budget = &PageBudget{limit: 1 << 50}
		if err := m.SetBudget(budget); err != nil {
			t.Fatal(err)
		}
	}
	ref := refMemory{}           // the reference model
	written := map[uint64]bool{} // pages that any write, fill or copy reached
	wrote := func(addr, n uint64) {
		for pn := addr >> pageShift; n > 0 && pn <= (addr+n-1)>>pageShift; pn++ {
			written[pn] = true
		}
	}
	check := func(op string, addr, n uint64, err error) bool {
		t.Helper()
		if want := inRange(addr, n); want != (err == nil) {
			t.Fatalf("%s [%#x, +%#x): err = %v, in range = %v", op, addr, n, err, want)
		}
		if err != nil && !errors.Is(err, ErrAddressRange) {
			t.Fatalf("%s: error %v does not wrap ErrAddressRange", op, err)
		}
		return err == nil
	}
	for step := 0; in.more() && step < 64; step++ {
		switch op := in.u8() % 12; op {
		case 0: // Write
			addr, n := in.addr(), in.length()
			p := pattern(int(n), in.u8())
			if in.u8()%4 == 0 {
				clear(p) // zero writes, which must not allocate pages
			}
			if check("write", addr, n, m.Write(addr, p)) {
				ref.write(addr, p)
				wrote(addr, n)
			}
		case 1: // Read
			addr, n := in.addr(), in.length()
			got := make([]byte, n)
			if check("read", addr, n, m.Read(addr, got)) && !bytes.Equal(got, ref.read(addr, n)) {
				t.Fatalf("read [%#x, +%#x) differs from the reference", addr, n)
			}
		case 2: // Copy
			dst, src, n := in.addr(), in.addr(), in.length()
			err := m.Copy(dst, src, n)
			if want := inRange(dst, n) && inRange(src, n); want != (err == nil) {
				t.Fatalf("copy %#x <- %#x +%#x: err = %v", dst, src, n, err)
			}
			if err == nil {
				ref.copy(dst, src, n)
				wrote(dst, n)
			}
		case 3: // Fill
			addr, n, b := in.addr(), in.length(), in.u8()
			if in.u8()%2 == 0 {
				b = 0
			}
			if check("fill", addr, n, m.Fill(addr, n, b)) {
				ref.fill(addr, n, b)
				wrote(addr, n)
			}
		case 4: // WriteU32
			addr, v := in.addr(), uint32(in.u16())<<8|uint32(in.u8())
			if check("write u32", addr, 4, m.WriteU32(addr, v)) {
				ref.write(addr, binary.LittleEndian.AppendUint32(nil, v))
				wrote(addr, 4)
			}
		case 5: // ReadU32
			addr := in.addr()
			v, err := m.ReadU32(addr)
			if check("read u32", addr, 4, err) && v != binary.LittleEndian.Uint32(ref.read(addr, 4)) {
				t.Fatalf("read u32 %#x = %#x, reference %x", addr, v, ref.read(addr, 4))
			}
		case 6: // WriteU64
			addr, v := in.addr(), uint64(in.u16())<<40|uint64(in.u8())
			if check("write u64", addr, 8, m.WriteU64(addr, v)) {
				ref.write(addr, binary.LittleEndian.AppendUint64(nil, v))
				wrote(addr, 8)
			}
		case 7: // ReadU64
			addr := in.addr()
			v, err := m.ReadU64(addr)
			if check("read u64", addr, 8, err) && v != binary.LittleEndian.Uint64(ref.read(addr, 8)) {
				t.Fatalf("read u64 %#x = %#x, reference %x", addr, v, ref.read(addr, 8))
			}
		case 8: // State / Restore round trip (drops the page cache)
			if err := m.Restore(m.State()); err != nil {
				t.Fatalf("restore of own state: %v", err)
			}
		case 9: // Clear
			m.Clear()
			clear(ref)
			clear(written)
		case 10: // zero Fill of a huge range (the sparse path)
			addr := in.addr()
			n := AddressLimit - addr&(AddressLimit-1) - uint64(in.u16())
			if check("fill huge", addr, n, m.Fill(addr, n, 0)) {
				ref.fill(addr, n, 0)
			}
		case 11: // Copy of a huge range (the sparse path)
			dst, src := in.addr(), in.addr()
			n := AddressLimit - max(dst, src)&(AddressLimit-1) - uint64(in.u16())
			err := m.Copy(dst, src, n)
			if want := inRange(dst, n) && inRange(src, n); want != (err == nil) {
				t.Fatalf("copy %#x <- %#x +%#x: err = %v", dst, src, n, err)
			}
			if err == nil {
				ref.copy(dst, src, n)
				ref.nonZero(func(a uint64, _ byte) {
					if a-dst < n {
						written[a>>pageShift] = true
					}
				})
			}
		}
	}
	// Every non-zero byte of the reference is in memory, every resident
	// page holds as many non-zero bytes as the reference has there (so
	// the rest are zero), and only pages that were written are resident.
	nonZero := map[uint64]int{}
	ref.nonZero(func(a uint64, want byte) {
		var got [1]byte
		if err := m.Read(a, got[:]); err != nil || got[0] != want {
			t.Fatalf("byte %#x = %#x (err %v), reference %#x", a, got[0], err, want)
		}
		nonZero[a>>pageShift]++
	})
	for pn, pg := range m.State().Pages {
		if !written[pn] {
			t.Fatalf("page %#x is resident but nothing was written there", pn)
		}
		if n := PageSize - bytes.Count(pg[:], []byte{0}); n != nonZero[pn] {
			t.Fatalf("page %#x holds %d non-zero bytes, reference %d", pn, n, nonZero[pn])
		}
	}
	// The table counts its nodes right, and a budget is charged exactly
	// what the memory holds: its pages and nodes, no reservation left.
	if got, want := m.TableNodes(), m.pages.nodes(); got != want {
		t.Fatalf("the table counts %d nodes, holds %d", got, want)
	}
	if budget != nil && budget.Used() != m.held() {
		t.Fatalf("the budget is charged %d pages, the memory holds %d pages and %d nodes", budget.Used(), m.PagesTouched(), m.TableNodes())
	}
}

// modelEvent is an event in the engine's reference model.
type modelEvent struct {
	at  Time
	seq uint64
	h   HandlerID
	arg uint64
}

func FuzzEngine(f *testing.F) {
	f.Add([]byte{0, 5, 0, 1, 0, 5, 0, 2, 1, 10, 0})
	f.Add([]byte{0, 3, 1, 4, 0, 0, 1, 9, 2, 6, 0, 1, 3, 2, 4, 1, 200, 0})
	f.Add([]byte{0, 1, 2, 0, 5, 0, 0, 0, 3, 0, 6, 0, 7, 3})
	f.Add([]byte{1, 100, 1, 50, 0, 0, 1, 30, 0, 3, 20, 3, 5, 0, 2, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInput{b: data}
		type call struct {
			h   HandlerID
			at  Time
			arg uint64
		}
		var got, want []call
		e := NewEngine()
		var rec, spawn HandlerID
		rec, _ = e.Register("rec", HandlerFunc(func(e *Engine, arg uint64) {
			got = append(got, call{rec, e.Now(), arg})
		}))
		spawn, _ = e.Register("spawn", HandlerFunc(func(e *Engine, arg uint64) {
			got = append(got, call{spawn, e.Now(), arg})
			if arg > 0 { // a bounded chain of children, some at the current time
				if err := e.After(Time(arg%3), spawn, arg/2); err != nil {
					t.Fatalf("spawn: %v", err)
				}
			}
		}))

		// The reference: a slice searched linearly for the least (at, seq).
		var now Time
		var seq uint64
		var queue []modelEvent
		popModel := func() {
			i := 0
			for j := range queue {
				if queue[j].at < queue[i].at || queue[j].at == queue[i].at && queue[j].seq < queue[i].seq {
					i = j
				}
			}
			ev := queue[i]
			queue = slices.Delete(queue, i, i+1)
			now = ev.at
			want = append(want, call{ev.h, ev.at, ev.arg})
			if ev.h == spawn && ev.arg > 0 {
				queue = append(queue, modelEvent{now + Time(ev.arg%3), seq, spawn, ev.arg / 2})
				seq++
			}
		}
		handler := func(b byte) HandlerID { return HandlerID(b % 4) } // 0 and 3 are unknown

		for step := 0; in.more() && step < 200; step++ {
			switch op := in.u8() % 8; op {
			case 0, 1: // Schedule / After
				h, d, arg := handler(in.u8()), Time(in.u8()), uint64(in.u8())
				at := now + d
				if op == 0 && in.u8()%4 == 0 && now > 0 {
					at = now - 1 - d%now // in the past
				}
				var err error
				if op == 0 {
					err = e.Schedule(at, h, arg)
				} else {
					err = e.After(d, h, arg)
				}
				switch {
				case h != rec && h != spawn:
					if !errors.Is(err, ErrUnknownHandler) {
						t.Fatalf("handler %d: err = %v", h, err)
					}
				case at < now:
					if !errors.Is(err, ErrPastEvent) {
						t.Fatalf("past event at %v (now %v): err = %v", at, now, err)
					}
				case err != nil:
					t.Fatalf("schedule at %v: %v", at, err)
				default:
					queue = append(queue, modelEvent{at, seq, h, arg})
					seq++
				}
			case 2: // RunUntil, sometimes backwards
				until := now + Time(in.u8())
				if in.u8()%4 == 0 {
					until = now - min(now, Time(in.u8()))
				}
				ran := e.RunUntil(until)
				n := 0
				for until >= now && len(queue) > 0 && slices.ContainsFunc(queue, func(ev modelEvent) bool { return ev.at <= until }) {
					popModel()
					n++
				}
				now = max(now, until)
				if ran != n {
					t.Fatalf("RunUntil(%v) ran %d, reference %d", until, ran, n)
				}
			case 3: // Step
				if e.Step() != (len(queue) > 0) {
					t.Fatalf("Step with %d pending", len(queue))
				}
				if len(queue) > 0 {
					popModel()
				}
			case 4: // RunAll with a small limit
				limit := int(in.u8()%8) - 1
				ran, err := e.RunAll(limit)
				n := 0
				for n < limit && len(queue) > 0 {
					popModel()
					n++
				}
				if ran != n || (err != nil) != (len(queue) > 0) {
					t.Fatalf("RunAll(%d) = %d, %v; reference %d, %d pending", limit, ran, err, n, len(queue))
				}
			case 5: // State / Restore round trip into the same engine
				if err := e.Restore(e.State()); err != nil {
					t.Fatalf("restore of own state: %v", err)
				}
			case 6: // Reset
				e.Reset()
				now, seq, queue = 0, 0, nil
			case 7: // a corrupted State is refused and changes nothing
				s := e.State()
				if len(s.Queue) == 0 {
					continue
				}
				before := e.State()
				i := int(in.u8()) % len(s.Queue)
				switch in.u8() % 3 {
				case 0:
					s.Queue[i].Handler = 3
				case 1:
					s.Queue[i].Seq = s.NextSeq
				case 2:
					s.Queue[i].Seq = s.Queue[(i+1)%len(s.Queue)].Seq
					if len(s.Queue) == 1 {
						s.Queue[i].Seq = s.NextSeq
					}
				}
				if err := e.Restore(s); !errors.Is(err, ErrInvalidState) {
					t.Fatalf("corrupt state accepted: %v", err)
				}
				if !slices.Equal(before.Queue, e.State().Queue) {
					t.Fatal("a refused Restore changed the queue")
				}
			}
			// The engine agrees with the reference after every operation.
			if e.Now() != now || e.Pending() != len(queue) || !slices.Equal(got, want) {
				t.Fatalf("step %d: now %v/%v, pending %d/%d, calls %v / %v",
					step, e.Now(), now, e.Pending(), len(queue), got, want)
			}
			s := e.State()
			if s.NextSeq != seq {
				t.Fatalf("next seq %d, reference %d", s.NextSeq, seq)
			}
			for i := range s.Queue {
				if i > 0 && !s.Queue[i-1].before(&s.Queue[i]) {
					t.Fatalf("State queue out of order at %d: %v", i, s.Queue)
				}
			}
			if at, ok := e.NextAt(); ok != (len(s.Queue) > 0) || ok && at != s.Queue[0].At {
				t.Fatalf("NextAt = %v, %v; queue head %v", at, ok, s.Queue)
			}
		}
	})
}
