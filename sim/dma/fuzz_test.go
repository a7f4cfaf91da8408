package dma

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// fuzzInput hands out the fuzzer's bytes; past the end it returns zeros.
type fuzzInput struct{ b []byte }

func (z *fuzzInput) u8() byte {
	if len(z.b) == 0 {
		return 0
	}
	v := z.b[0]
	z.b = z.b[1:]
	return v
}

func (z *fuzzInput) u16() uint16 { return uint16(z.u8()) | uint16(z.u8())<<8 }
func (z *fuzzInput) u32() uint32 { return uint32(z.u16()) | uint32(z.u16())<<16 }
func (z *fuzzInput) u64() uint64 { return uint64(z.u32()) | uint64(z.u32())<<32 }

func (z *fuzzInput) raw(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = z.u8()
	}
	return p
}

// Fuzz rig sizes: small, so that an execution is cheap.
const (
	fuzzHBM  = 128 << 10
	fuzzHost = 128 << 10
	fuzzChip = 64 << 10
)

// fuzzAddr picks a buffer address: in one of the memories (possibly running
// past its end), nowhere, in the neighbour window, or anything.
func fuzzAddr(r *rig, z *fuzzInput) uint64 {
	sel, off := z.u8()%8, uint64(z.u32())
	switch sel {
	case 0, 3:
		return r.host.base + off%uint64(len(r.host.mem))
	case 1, 4:
		return r.hbm.base + off%uint64(len(r.hbm.mem))
	case 2:
		return r.onchip.base + off%uint64(len(r.onchip.mem))
	case 5:
		return rigNowhere + off
	case 6:
		return rigNeighbour + off
	}
	return z.u64()
}

// fuzzRingLen picks a ring length, valid or not.
func fuzzRingLen(z *fuzzInput) uint32 {
	switch z.u8() % 10 {
	case 0, 1, 2:
		return 32
	case 3:
		return 48
	case 4:
		return 64
	case 5:
		return 31
	case 6:
		return 33
	case 7:
		return 0
	case 8:
		return 16
	}
	return z.u32()
}

// fuzzRingBase picks a ring base: 256-aligned in host or HBM memory, only
// 64-aligned, nowhere, in the neighbour window, or anything.
func fuzzRingBase(r *rig, z *fuzzInput) uint64 {
	sel, slot := z.u8()%8, uint64(z.u8())
	switch sel {
	case 0, 1, 2:
		return r.host.base + slot*udma.RingAlign
	case 3, 4:
		return r.hbm.base + uint64(len(r.hbm.mem))/2 + slot*udma.RingAlign
	case 5:
		return r.host.base + slot*udma.RingAlign + 0x40
	case 6:
		if slot%2 == 0 {
			return rigNowhere
		}
		return rigNeighbour
	}
	return z.u64() &^ 0x3F
}

// fuzzRing runs one script of the fuzzer's bytes: set a queue up, then push
// descriptors, ring doorbells and run the clock, checking the invariants
// around every completion and at the end.
func fuzzRing(t *testing.T, data []byte) { runFuzzRing(t, data) }

func runFuzzRing(t *testing.T, data []byte) (*rig, QueueState) {
	z := &fuzzInput{data}
	flags := z.u8()
	gen := generations[int(flags>>2&3)%3]
	r := newRig(t, rigOpts{gen: gen, opts: Options{TimingOnly: flags&1 != 0}, copier: flags&2 != 0,
		hbmSize: fuzzHBM, hostSize: fuzzHost, chipSz: fuzzChip})
	e, q := int(z.u8())%r.c.Engines(), int(z.u8()%udma.Queues)
	if flags&0x10 != 0 {
		r.disable(e) // engines come out of reset NORMAL; flag 0x10 disables this one
	}
	cfg := udma.QCfgDriver
	if flags&0x20 != 0 {
		cfg = z.u32()
	}
	m2sLen := fuzzRingLen(z)
	s2mLen := m2sLen
	if flags&0x40 != 0 {
		s2mLen = fuzzRingLen(z)
	}
	m2sBase, s2mBase := fuzzRingBase(r, z), fuzzRingBase(r, z)
	r.program(e, q, udma.M2S, m2sBase, m2sLen, cfg)
	r.program(e, q, udma.S2M, s2mBase, s2mLen, cfg)
	d := &drvQueue{r: r, e: e, q: q,
		m2s: swRing{base: m2sBase &^ 0x3F, size: max(m2sLen, 1), phase: udma.FirstRingID},
		s2m: swRing{base: s2mBase &^ 0x3F, size: max(s2mLen, 1), phase: udma.FirstRingID}}

	var offered [2]uint64 // tail_inc totals written: M2S, S2M
	var completed, bytesMoved uint64
	var before QueueState
	var srcBytes, srcBuf []byte
	// Every write is checked as it happens: it must belong to a completion.
	type write struct {
		addr uint64
		n    int
		same bool // the bytes equal the source's at the start of the completion
	}
	var writes []write
	inFire := false
	// A transfer that writes into a ring's own descriptors changes ring
	// memory the engine may already have fetched (it prefetches in bursts,
	// as UDMA engines do): from then on the transfer in flight is checked
	// against what was fetched, which the harness cannot see, not against
	// ring memory.
	clobbered := false
	ringBytes := func(rg swRing) uint64 { return uint64(rg.size) * udma.DescriptorSize }
	overlaps := func(addr uint64, n int, base, size uint64) bool { return addr < base+size && base < addr+uint64(n) }
	r.bus.onWrite = func(addr uint64, p []byte) {
		if !inFire {
			t.Fatalf("write to %#x+%d outside any completion", addr, len(p))
		}
		writes = append(writes, write{addr, len(p), srcBytes != nil && bytes.Equal(p, srcBytes)})
		if overlaps(addr, len(p), d.m2s.base, ringBytes(d.m2s)) || overlaps(addr, len(p), d.s2m.base, ringBytes(d.s2m)) {
			clobbered = true
		}
	}
	r.clk.beforeFire = func(ev event) {
		before = r.queue(e, q)
		writes, inFire = writes[:0], true
		srcBytes = nil
		if before.InFlight && uint32(ev.arg) == before.Epoch {
			cur := before.Current
			if cur.Len < 1 || cur.Len > udma.MaxTransfer {
				t.Fatalf("in-flight transfer of %d bytes", cur.Len)
			}
			// The transfer is the descriptor pair at the heads.
			tx, okT := fuzzPeekDesc(r, d.m2s.base, before.M2S.Head)
			rx, okR := fuzzPeekDesc(r, d.s2m.base, before.S2M.Head)
			if !okT || !okR {
				t.Fatalf("a transfer runs from unreachable ring memory")
			}
			if !clobbered && (tx.Addr != cur.Src || rx.Addr != cur.Dst || tx.Len() != cur.Len || rx.Len() < tx.Len() ||
				tx.RingID() != before.M2S.HeadRing || rx.RingID() != before.S2M.HeadRing) {
				t.Fatalf("in-flight %+v does not match the descriptors at the heads %+v / %+v", cur, tx, rx)
			}
			if reg, err := r.bus.find(cur.Src, cur.Len); err == nil && reg.regs == nil {
				srcBuf = append(srcBuf[:0], reg.mem[cur.Src-reg.base:cur.Src-reg.base+uint64(cur.Len)]...)
				srcBytes = srcBuf
			}
			if _, err := r.bus.find(cur.Dst, cur.Len); err != nil {
				t.Fatalf("in-flight transfer to %#x+%d: %v", cur.Dst, cur.Len, err)
			}
		}
	}
	r.clk.afterFire = func(ev event) {
		inFire = false
		after := r.queue(e, q)
		switch after.Done {
		case before.Done:
			if len(writes) != 0 {
				t.Fatalf("a completion that completed nothing wrote %d times", len(writes))
			}
		case before.Done + 1:
			cur := before.Current
			completed++
			bytesMoved += uint64(cur.Len)
			moves := r.c.Functional() || cur.Len <= ControlBytes || cur.SrcC == Host
			switch {
			case !moves && len(writes) != 0:
				t.Fatalf("timing-only wrote %d bytes", writes[0].n)
			case moves && len(writes) != 1:
				t.Fatalf("a completion wrote %d times", len(writes))
			case moves && (writes[0].addr != cur.Dst || writes[0].n != cur.Len):
				t.Fatalf("wrote %#x+%d for a transfer to %#x+%d", writes[0].addr, writes[0].n, cur.Dst, cur.Len)
			case moves && srcBytes != nil && !writes[0].same:
				t.Fatalf("wrote other bytes than the source held")
			}
		default:
			t.Fatalf("one event completed %d pairs", after.Done-before.Done)
		}
	}
	writeDesc := func(ring *swRing, length uint32, head, avail uint32, desc []byte) {
		// The driver never overwrites a slot the engine owns.
		if length != 0 && (ring.next+length-head)%length < avail {
			return
		}
		if reg, err := r.bus.find(ring.slot(), udma.DescriptorSize); err == nil && reg.regs == nil {
			copy(reg.mem[ring.slot()-reg.base:], desc)
		}
	}

	for ops := 0; ops < 256 && len(z.b) > 0; ops++ {
		switch z.u8() % 6 {
		case 0, 1: // the driver's pair, sometimes with a wrong phase or a short S2M buffer
			n := int(z.u16())
			if z.u8()%4 != 0 {
				n %= 4096
			}
			n = min(n+1, udma.MaxTransfer)
			txPhase, rxPhase := d.m2s.phase, d.s2m.phase
			if p := z.u8(); p%8 == 0 {
				txPhase = p >> 3 & 3
			}
			rxN := n
			if p := z.u8(); p%8 == 0 {
				rxN = max(1, n-int(p>>3))
			} else if p%8 == 1 {
				rxN = min(udma.MaxTransfer, n+int(p>>3))
			}
			src, dst := fuzzAddr(r, z), fuzzAddr(r, z)
			var tb, rb [udma.DescriptorSize]byte
			lc, _ := udma.LenCtrl(n, txPhase, udma.FlagFirst|udma.FlagLast)
			udma.Descriptor{LenCtrl: lc, Meta: udma.DefaultMetaCtrl, Addr: src}.Put(tb[:])
			lc, _ = udma.LenCtrl(rxN, rxPhase, 0)
			udma.Descriptor{LenCtrl: lc, Addr: dst}.Put(rb[:])
			qs := r.queue(e, q)
			writeDesc(&d.m2s, m2sLen, qs.M2S.Head, qs.M2S.Avail, tb[:])
			writeDesc(&d.s2m, s2mLen, qs.S2M.Head, qs.S2M.Avail, rb[:])
			d.m2s.advance()
			d.s2m.advance()
		case 2: // arbitrary 16-byte records
			qs := r.queue(e, q)
			writeDesc(&d.m2s, m2sLen, qs.M2S.Head, qs.M2S.Avail, z.raw(16))
			writeDesc(&d.s2m, s2mLen, qs.S2M.Head, qs.S2M.Avail, z.raw(16))
			d.m2s.advance()
			d.s2m.advance()
		case 3: // doorbells: S2M then M2S, usually the same count
			s2m := uint32(z.u8())
			m2s := s2m
			if p := z.u8(); p%4 == 0 {
				m2s = uint32(p >> 2)
			}
			offered[0] += uint64(m2s)
			offered[1] += uint64(s2m)
			d.ring(s2m, m2s)
		case 4: // run the clock part of the way
			r.clk.RunUntil(r.clk.Now() + uint64(z.u32())) // completions check their own writes
		case 5: // a queue reset and reprogramming, rarely
			if z.u8()%8 == 0 {
				r.program(e, q, udma.S2M, s2mBase, s2mLen, cfg)
				r.program(e, q, udma.M2S, m2sBase, m2sLen, cfg)
				// Done and Bytes go on counting, as do the totals here.
				d.m2s.next, d.m2s.phase = 0, udma.FirstRingID
				d.s2m.next, d.s2m.phase = 0, udma.FirstRingID
			}
		}
	}
	if !r.clk.Run(1 << 20) {
		t.Fatalf("events still pending after a million")
	}

	// Invariants at rest.
	qs := r.queue(e, q)
	if r.clk.Pending() != 0 || qs.InFlight {
		t.Fatalf("left pending: %d events, in flight %v", r.clk.Pending(), qs.InFlight)
	}
	if r.clk.past != 0 {
		t.Fatalf("%d events scheduled in the past", r.clk.past)
	}
	if qs.Done != completed || qs.Bytes != bytesMoved {
		t.Fatalf("counters %d/%d, completions seen %d/%d", qs.Done, qs.Bytes, completed, bytesMoved)
	}
	if qs.Done > offered[0] || qs.Done > offered[1] {
		t.Fatalf("%d done of %v made available", qs.Done, offered)
	}
	halted := qs.Status&udma.StatusHalted != 0
	if (qs.Status&udma.ErrorBits != 0) != halted {
		t.Fatalf("status %#x: error bits and halted disagree", qs.Status)
	}
	if qs.Status&^(udma.ErrorBits|udma.StatusHalted) != 0 {
		t.Fatalf("status %#x has stray bits", qs.Status)
	}
	m2sSt, s2mSt := r.status(e, q, udma.M2S), r.status(e, q, udma.S2M)
	if m2sSt&^udma.StatusBusy != qs.Status || s2mSt&^udma.StatusBusy != qs.Status {
		t.Fatalf("QStatus %#x / %#x, queue status %#x", m2sSt, s2mSt, qs.Status)
	}
	if halted && (m2sSt|s2mSt)&udma.StatusBusy != 0 {
		t.Fatalf("a halted queue shows busy")
	}
	if got := r.c.ReadReg(e, udma.M2S+udma.ErrorQueues); (got == 1<<q) != halted || got&^(1<<q) != 0 {
		t.Fatalf("ErrorQueues %#x, halted %v", got, halted)
	}
	if !halted && r.c.view(e).State == udma.StateNormal && qs.M2S.Avail > 0 && qs.S2M.Avail > 0 {
		t.Fatalf("a runnable queue stopped with %d/%d available", qs.M2S.Avail, qs.S2M.Avail)
	}
	for _, h := range []HalfState{qs.M2S, qs.S2M} {
		if h.HeadRing > 3 || h.TailRing > 3 || h.Avail > h.Length {
			t.Fatalf("half %+v out of range", h)
		}
		if udma.CheckRing(h.base(), h.Length) == nil {
			if h.Head >= h.Length || h.Tail >= h.Length || (h.Head+h.Avail)%h.Length != h.Tail {
				t.Fatalf("half %+v: head + avail != tail", h)
			}
		}
	}
	if err := r.c.Restore(r.c.State()); err != nil {
		t.Fatalf("the controller's own state does not restore: %v", err)
	}
	return r, qs
}

// fuzzPeekDesc reads a ring slot from plain memory.
func fuzzPeekDesc(r *rig, base uint64, slot uint32) (udma.Descriptor, bool) {
	a := base + uint64(slot)*udma.DescriptorSize
	reg, err := r.bus.find(a, udma.DescriptorSize)
	if err != nil || reg.regs != nil {
		return udma.Descriptor{}, false
	}
	dsc, err := udma.Decode(reg.mem[a-reg.base:])
	return dsc, err == nil
}

// fuzzSeed builds a script: the header, then ops.
func fuzzSeed(flags, e, q byte, ring []byte, ops ...[]byte) []byte {
	b := []byte{flags, e, q}
	b = append(b, ring...)
	for _, op := range ops {
		b = append(b, op...)
	}
	return b
}

// pairOp is a push of the driver's pair: n bytes host → HBM.
func pairOp(n uint16, srcOff, dstOff uint32) []byte {
	b := []byte{0}
	b = binary.LittleEndian.AppendUint16(b, n-1)
	b = append(b, 1, 1, 2) // small n, right phase, equal S2M
	b = append(b, 0)       // src: host
	b = binary.LittleEndian.AppendUint32(b, srcOff)
	b = append(b, 1) // dst: HBM
	b = binary.LittleEndian.AppendUint32(b, dstOff)
	return b
}

func doorbellOp(n byte) []byte { return []byte{3, n, 1} }

// fuzzSeeds are FuzzRing's seeds with what each must end in: the queue's
// completions and status.
func fuzzSeeds() []struct {
	name   string
	data   []byte
	done   uint64
	status uint32
} {
	// Length 32, the M2S ring at host + 0, the S2M ring at host + 1 KiB.
	okRing := []byte{0, 0, 0, 0, 4}
	run := []byte{4, 0xFF, 0xFF, 0xFF, 0x0F} // run the clock ~268 µs
	halted := udma.StatusHalted
	return []struct {
		name   string
		data   []byte
		done   uint64
		status uint32
	}{
		{"one-copy", fuzzSeed(0, 3, 5, okRing, pairOp(100, 0x8000, 0x100), doorbellOp(1)), 1, 0},
		{"two-copies-partial-run", fuzzSeed(0, 3, 5, okRing, pairOp(4096, 0x8000, 0x100), pairOp(7, 0x9000, 0x3000), doorbellOp(2), []byte{4, 0, 0, 1, 0}, doorbellOp(0)), 2, 0},
		{"overrun-copier", fuzzSeed(2, 0, 0, okRing, pairOp(64, 0x8000, 0), pairOp(64, 0x8000, 0x40), doorbellOp(40)), 0, halted | udma.ErrRingOverrun},
		{"length-31-timing-only", fuzzSeed(1, 7, 15, []byte{5, 0, 0, 0, 4}, pairOp(1, 0x8000, 0), doorbellOp(1)), 0, halted | udma.ErrRingConfig},
		{"engine-idle", fuzzSeed(0x10, 1, 1, okRing, pairOp(1, 0x8000, 0), doorbellOp(1)), 0, halted | udma.ErrDoorbellDisabled},
		{"s2m-misaligned", fuzzSeed(0, 2, 2, []byte{0, 0, 0, 5, 4}, pairOp(10, 0x8000, 0), doorbellOp(1)), 0, halted | udma.ErrRingConfig},
		{"s2m-ring-nowhere", fuzzSeed(0, 2, 2, []byte{0, 0, 0, 6, 0}, pairOp(10, 0x8000, 0), doorbellOp(1)), 0, halted | udma.ErrRingAddr},
		{"raw-records", fuzzSeed(0, 9, 9, okRing, []byte{2}, bytes.Repeat([]byte{0xA5}, 32), doorbellOp(1)), 0, halted | udma.ErrDescAddr},
		{"queue-reset-mid-flight", fuzzSeed(0, 5, 6, okRing, pairOp(64, 0x8000, 0), doorbellOp(1), []byte{5, 0}, pairOp(8, 0x8000, 0x80), doorbellOp(1)), 1, 0},
		{"rings-32-and-64", fuzzSeed(0x40, 4, 4, []byte{0, 4, 0, 0, 0, 4}, pairOp(9, 0x8000, 0), doorbellOp(1)), 1, 0},
		{"wraps-twice", fuzzSeed(0, 5, 6, okRing, bytes.Repeat(append(append(pairOp(16, 0x8000, 0x200), doorbellOp(1)...), run...), 70)), 70, 0},
	}
}

// TestFuzzSeeds: each seed ends as it says, so the seeds keep exercising
// what they were written for.
func TestFuzzSeeds(t *testing.T) {
	for _, s := range fuzzSeeds() {
		t.Run(s.name, func(t *testing.T) {
			_, qs := runFuzzRing(t, s.data)
			if qs.Done != s.done || qs.Status != s.status {
				t.Fatalf("done %d status %#x, want %d %#x", qs.Done, qs.Status, s.done, s.status)
			}
		})
	}
}

func FuzzRing(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.data)
	}
	f.Fuzz(fuzzRing)
}

// FuzzDescriptorDecode: Decode and Put round-trip any 16 bytes, and the
// fields decode into their ranges.
func FuzzDescriptorDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 16))
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 3, 0, 8, 1, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(bytes.Repeat([]byte{0xFF}, 20))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := udma.Decode(b)
		if len(b) < udma.DescriptorSize {
			if err == nil {
				t.Fatalf("decoded %d bytes", len(b))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var out [udma.DescriptorSize]byte
		d.Put(out[:])
		if !bytes.Equal(out[:], b[:udma.DescriptorSize]) {
			t.Fatalf("round trip % x → % x", b[:16], out)
		}
		if n := d.Len(); n < 1 || n > udma.MaxTransfer {
			t.Fatalf("length %d", n)
		}
		if d.RingID() > 3 {
			t.Fatalf("ring id %d", d.RingID())
		}
		lc, err := udma.LenCtrl(d.Len(), d.RingID(), d.LenCtrl)
		if err != nil || lc != d.LenCtrl {
			t.Fatalf("LenCtrl(%d, %d, %#x) = %#x, %v; want %#x", d.Len(), d.RingID(), d.LenCtrl, lc, err, d.LenCtrl)
		}
		if !d.Has(d.LenCtrl) || !d.Has(0) {
			t.Fatalf("Has")
		}
	})
}
