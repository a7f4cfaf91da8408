package tpb

import (
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
)

// FuzzEngine runs random records and random control actions through a core
// with fakes. The stream is a generation byte, then actions:
//
//	0..4  a record for that engine: a sanitize byte, then 64 record bytes
//	5     control: engine and command (start at its program, halt, stall, run)
//	6     a raw register write: engine, offset byte, 4 value bytes
//	7     time: n events run; 0xFD a semaphore/event poke, 0xFE a
//	      State/Restore round trip, 0xFF a TPB reset
//
// It requires: no panic, the event queue drains within a step budget, and
// every engine ends DONE, ERROR, blocked (waiting or stalled) or stopped,
// with nothing in flight and a state that Restore accepts.
func FuzzEngine(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(fuzzOne)
}

// fuzzOne is one FuzzEngine run.
func fuzzOne(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	gens := hwarch.Generations()
	h := newHarness(t, gens[int(data[0])%len(gens)])
	data = data[1:]
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	var counts [NumEngines]int
	var started [NumEngines]bool
	const budget = 200_000
	for len(data) > 0 {
		switch k := next() % 8; k {
		case 0, 1, 2, 3, 4:
			e := int(k)
			s := next()
			var raw [isa.RecordSize]byte
			n := copy(raw[:], data)
			data = data[n:]
			sanitize(&raw, e, s, h.gen)
			h.env.code[progBase(e)+uint64(counts[e])*isa.RecordSize] = raw
			counts[e]++
		case 5:
			c := next()
			e := int(c % NumEngines)
			switch c / NumEngines % 4 {
			case 0:
				h.start(e, progBase(e))
				started[e] = true
			case 1:
				h.core.WriteReg(e, RegStartCtrl, StartHalt)
			case 2:
				h.core.WriteReg(e, RegRunStall, 0)
			case 3:
				h.core.WriteReg(e, RegRunStall, 1)
			}
		case 6:
			e, off := int(next()%NumEngines), uint64(next())*4
			v := uint32(next()) | uint32(next())<<8 | uint32(next())<<16 | uint32(next())<<24
			h.core.WriteReg(e, off, v)
		case 7:
			switch n := next(); n {
			case 0xFD:
				i, v := next(), next()
				h.sync.Semaphores[i] += int32(v)
				h.sync.Events[v] ^= 1
				h.core.SyncChanged()
			case 0xFE:
				if err := h.core.Restore(h.core.State()); err != nil {
					t.Fatalf("restore of the core's own state: %v", err)
				}
			case 0xFF:
				h.core.Reset()
			default:
				for range int(n) {
					if !h.env.step() {
						break
					}
				}
			}
		}
		if h.env.steps > budget {
			t.Fatalf("step budget exceeded")
		}
	}
	for e := range NumEngines {
		if counts[e] > 0 && !started[e] {
			h.start(e, progBase(e))
		}
	}
	if !h.env.run(budget) {
		t.Fatalf("step budget exceeded: %d events pending", len(h.env.q))
	}
	st := h.core.State()
	for e := range NumEngines {
		es := &st.Engines[e]
		status := h.core.ReadReg(e, RegStatus)
		blocked := status&StatusRunning != 0 && (status&StatusWaiting != 0 || status&StatusStalled != 0)
		if es.InFlight || !(status == StatusDone || status == StatusError || status == 0 || blocked) {
			t.Fatalf("engine %d ends with status %#x, in flight %v", e, status, es.InFlight)
		}
	}
	if err := h.core.Restore(st); err != nil {
		t.Fatalf("restore of the final state: %v", err)
	}
}

// sanitize nudges random record bytes towards valid records, by the bits
// of s: 1 engine byte, 2 an executed opcode, 4 small tensors, 8 unused
// fields zero, 16 flags and op in range, 32 simple sync slots, 64 LAST.
func sanitize(raw *[isa.RecordSize]byte, e int, s byte, gen hwarch.Generation) {
	if s == 0 {
		return
	}
	r, _ := isa.Decode(raw[:])
	if s&1 != 0 {
		r.Engine = isa.Engine(e)
	}
	if s&2 != 0 {
		var ops []isa.Opcode
		for _, o := range isa.Opcodes() {
			if o.Executed && o.Opcode.AvailableOn(gen) && o.Engines.Has(isa.Engine(e)) {
				ops = append(ops, o.Opcode)
			}
		}
		r.Opcode = ops[int(raw[0])%len(ops)]
	}
	if s&4 != 0 {
		var dts []isa.Dtype
		for d := isa.Dtype(1); d < isa.NumDtypes; d++ {
			if d.AvailableOn(gen) && !d.Packed() {
				dts = append(dts, d)
			}
		}
		small := func(t *isa.Tensor) {
			t.Dtype = dts[int(t.Dtype)%len(dts)]
			psum, p0, off := isa.Location(t.Addr)
			t.Partitions = 1 + t.Partitions%16
			t.Addr = isa.Addr(psum, p0%112, 0x200+off%64*uint32(t.Dtype.Size()))
			ended := false
			for i := range t.Dims {
				d := &t.Dims[i]
				d.Size, d.Stride = d.Size%9, d.Stride%9-2
				if ended || d.Size == 0 {
					*d, ended = isa.Dim{}, true
				}
			}
		}
		small(&r.Dst)
		small(&r.Src0)
		r.Src1.Dtype = dts[int(r.Src1.Dtype)%len(dts)]
		_, p0, off := isa.Location(r.Src1.Addr)
		r.Src1.Addr = isa.Addr(r.Src1.Addr&isa.AddrPSUM != 0, p0%112, 0x200+off%64*uint32(r.Src1.Dtype.Size()))
	}
	info, known := r.Opcode.Info()
	if s&8 != 0 && known {
		u := info.Operands
		if u&isa.UsesDst == 0 {
			r.Dst = isa.Tensor{}
		}
		if u&isa.UsesSrc0 == 0 {
			r.Src0 = isa.Tensor{}
		}
		if u&isa.UsesSrc1 == 0 {
			r.Src1 = isa.Src1{}
		}
		if u&isa.UsesImm0 == 0 {
			r.Imm0 = 0
		}
		if u&isa.UsesImm1 == 0 {
			r.Imm1 = 0
		}
		if u&isa.UsesAux == 0 {
			r.Aux = 0
		} else {
			r.Aux %= 20
		}
		if r.Opcode == isa.OpDMATrigger {
			r.Imm0 %= 20
		}
	}
	if s&16 != 0 {
		r.Flags &= isa.FlagMask
		r.Op %= isa.NumALUOps
		if known && info.Operands&isa.UsesOp == 0 {
			r.Op = 0
		}
	}
	if s&32 != 0 {
		r.Wait = isa.Sync{}
		if raw[4]%2 == 1 {
			r.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: raw[5] % 4, Value: uint16(raw[6] % 3)}
		}
		r.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: raw[9] % 4, Value: 1}
	}
	if s&64 != 0 {
		r.Flags |= isa.FlagLast
	}
	reserved := raw[53]
	r.Encode(raw[:])
	if s&8 == 0 {
		raw[53] = reserved
	}
}

// fuzzSeeds returns streams of valid programs.
func fuzzSeeds() [][]byte {
	add := func(out []byte, e int, r isa.Record) []byte {
		b := r.Bytes()
		return append(append(out, byte(e), 0), b[:]...)
	}
	var seeds [][]byte
	for g := range 3 {
		var s []byte
		s = append(s, byte(g))
		ls, mm := rec(isa.OpLoadStationary, isa.PE), rec(isa.OpMultiplyMoving, isa.PE)
		ls.Src0 = sb(0, isa.BF16, 16, 16)
		mm.Dst, mm.Src0, mm.Flags = ps(0, isa.FP32, 16, 32), sb(0x100, isa.BF16, 16, 32), isa.FlagLast
		mm.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: 1, Value: 1}
		s = add(s, 0, ls)
		s = add(s, 0, mm)
		act := rec(isa.OpActivation, isa.ACT)
		act.Dst, act.Src0, act.Op, act.Imm0, act.Flags = sb(0x400, isa.BF16, 16, 32), ps(0, isa.FP32, 16, 32), isa.ActExp, f32(1), isa.FlagLast
		act.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: 1, Value: 1}
		s = add(s, 1, act)
		tt := rec(isa.OpTensorTensor, isa.DVE)
		tt.Dst, tt.Src0, tt.Src1, tt.Op = sb(0x800, isa.FP32, 16, 32), sb(0x400, isa.BF16, 16, 32), isa.Src1{Addr: 0x400, Dtype: isa.BF16}, isa.ALUMultiply
		s = add(s, 3, tt)
		io := rec(isa.OpIota, isa.POOL)
		io.Dst, io.Imm0, io.Imm1, io.Flags = sb(0x1000, isa.Int32, 8, 8), 1, 2, isa.FlagLast
		s = add(s, 2, io)
		db := rec(isa.OpDMATrigger, isa.SP)
		db.Aux, db.Imm0, db.Imm1, db.Flags = 1, 2, 3, isa.FlagLast
		s = add(s, 4, db)
		s = append(s, 5, 0, 7, 3, 5, 5*1+3, 6, 3, 0x40, 1, 0, 0, 0, 7, 0xFD, 1, 1, 7, 0xFE, 7, 10)
		seeds = append(seeds, s)
		// The same records, sanitized from noise.
		noise := []byte{byte(g)}
		for i := range 12 {
			noise = append(noise, byte(i%5), 0x7F)
			for j := range isa.RecordSize {
				noise = append(noise, byte(i*31+j*17))
			}
		}
		seeds = append(seeds, append(noise, 7, 0xFF, 5, 0))
		// One of every executed opcode, per engine, with control actions between.
		cat := []byte{byte(g)}
		for i, r := range catalogue(hwarch.Generations()[g]) {
			cat = add(cat, int(r.Engine), r)
			if i%4 == 3 {
				cat = append(cat, 7, byte(i), 5, byte(i%NumEngines), 7, 0xFD, byte(i%4), 1)
			}
		}
		seeds = append(seeds, cat)
	}
	return seeds
}

// catalogue returns valid records of every executed opcode (and one
// validated-only one) for generation gen, with waits and signals.
func catalogue(gen hwarch.Generation) []isa.Record {
	var out []isa.Record
	r := func(op isa.Opcode, e isa.Engine, f func(r *isa.Record)) {
		x := rec(op, e)
		if f != nil {
			f(&x)
		}
		out = append(out, x)
	}
	r(isa.OpLoadStationary, isa.PE, func(x *isa.Record) { x.Src0 = sb(0, isa.FP32, 8, 4) })
	r(isa.OpMultiplyMoving, isa.PE, func(x *isa.Record) {
		x.Dst, x.Src0, x.Flags = ps(0, isa.FP32, 4, 6), sb(0x100, isa.FP8E4M3, 8, 6), isa.FlagAccumulate
		x.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: 2, Value: 1}
	})
	r(isa.OpTranspose, isa.PE, func(x *isa.Record) { x.Dst, x.Src0 = ps(0x40, isa.FP32, 6, 4), ps(0, isa.FP32, 4, 6) })
	r(isa.OpBarrier, isa.PE, nil)
	for f := range isa.NumActFuncs {
		r(isa.OpActivation, isa.ACT, func(x *isa.Record) {
			x.Dst, x.Src0, x.Op, x.Imm0, x.Imm1 = sb(0x200, isa.FP16, 4, 6), ps(0, isa.FP32, 4, 6), f, f32(0.5), f32(1)
			x.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: 2, Value: 1}
		})
	}
	r(isa.OpTensorScalar, isa.ACT, func(x *isa.Record) {
		x.Dst, x.Src0, x.Op, x.Imm0 = sb(0x300, isa.Int16, 4, 6), sb(0x200, isa.Int16, 4, 6), isa.ALUMax, 3
	})
	r(isa.OpTensorCopy, isa.ACT, func(x *isa.Record) { x.Dst, x.Src0 = sb(0x400, isa.Uint8, 4, 6), sb(0x200, isa.FP16, 4, 6) })
	r(isa.OpDMATrigger, isa.ACT, func(x *isa.Record) { x.Aux, x.Imm0, x.Imm1 = 1, 1, 1 })
	r(isa.OpIota, isa.POOL, func(x *isa.Record) { x.Dst, x.Imm0, x.Imm1 = tensor(false, 2, 0x40, isa.Int8, 3, 2, 4, 3, -1), 5, 7 })
	r(isa.OpMemset, isa.POOL, func(x *isa.Record) { x.Dst, x.Imm0 = sb(0x500, isa.FP8E5M2, 4, 6), f32(2) })
	r(isa.OpTensorTensor, isa.POOL, func(x *isa.Record) {
		x.Dst, x.Src0, x.Src1, x.Op = sb(0x600, isa.Int32, 4, 6), sb(0x700, isa.Int32, 4, 6), isa.Src1{Addr: 0x800, Dtype: isa.Int32}, isa.ALUSubtract
		x.Signal = isa.Sync{Mode: isa.SignalEventSet, Index: 9}
	})
	r(isa.OpTensorReduce, isa.POOL, func(x *isa.Record) {
		x.Dst, x.Src0, x.Op = sb(0x900, isa.Int16, 4, 1), sb(0x600, isa.Int32, 4, 6), isa.ALUMultiply
	})
	r(isa.OpTensorReduce, isa.DVE, func(x *isa.Record) {
		x.Dst, x.Src0, x.Op = sb(0x900, isa.FP32, 4, 1), sb(0x200, isa.FP16, 4, 6), isa.ALUMin
		x.Wait = isa.Sync{Mode: isa.WaitEvent, Index: 9}
	})
	r(isa.OpReciprocal, isa.DVE, func(x *isa.Record) { x.Dst, x.Src0 = sb(0xA00, isa.BF16, 4, 6), sb(0x200, isa.FP16, 4, 6) })
	r(isa.OpTranspose, isa.DVE, func(x *isa.Record) { x.Dst, x.Src0 = sb(0xB00, isa.FP16, 6, 4), sb(0x200, isa.FP16, 4, 6) })
	r(isa.OpTensorTensor, isa.DVE, func(x *isa.Record) {
		x.Dst, x.Src0, x.Src1, x.Op = sb(0xC00, isa.FP32, 4, 6), sb(0x200, isa.FP16, 4, 6), isa.Src1{Addr: isa.AddrPSUM, Dtype: isa.FP32}, isa.ALUDivide
	})
	r(isa.OpSem, isa.SP, func(x *isa.Record) { x.Signal = isa.Sync{Mode: isa.SignalSemDecr, Index: 3, Value: 1} })
	r(isa.OpDMATrigger, isa.SP, func(x *isa.Record) { x.Aux, x.Imm1 = 2, 4 })
	if gen >= hwarch.Cayman {
		r(isa.OpCopyCast, isa.POOL, func(x *isa.Record) { x.Dst, x.Src0 = sb(0xD00, isa.Int64, 4, 6), sb(0x600, isa.Int32, 4, 6) })
		r(isa.OpActReciprocal, isa.ACT, func(x *isa.Record) { x.Dst, x.Src0 = sb(0xE00, isa.TF32, 4, 6), sb(0x200, isa.FP16, 4, 6) })
		r(isa.OpSort, isa.POOL, func(x *isa.Record) { x.Dst, x.Src0, x.Imm0 = sb(0xF00, isa.FP32, 4, 6), sb(0xC00, isa.FP32, 4, 6), 1 })
	}
	if gen >= hwarch.Mariana {
		r(isa.OpCtrlPollSem, isa.SP, func(x *isa.Record) { x.Wait = isa.Sync{Mode: isa.WaitSemEQ, Index: 2, Value: 0} })
		r(isa.OpTensorCopy, isa.DVE, func(x *isa.Record) {
			x.Dst, x.Src0 = sb(0x1000, isa.FP4E2M1FNx4, 4, 6), sb(0x1100, isa.FP4E2M1FNx4, 4, 6)
		})
		r(isa.OpTensorCopy, isa.DVE, func(x *isa.Record) { x.Dst, x.Src0 = sb(0x1200, isa.FP8E8M0, 4, 6), sb(0x200, isa.FP16, 4, 6) })
	}
	for i := range out { // the last record of each engine ends its program
		last := true
		for _, later := range out[i+1:] {
			last = last && later.Engine != out[i].Engine
		}
		if last {
			out[i].Flags |= isa.FlagLast
		}
	}
	return out
}
