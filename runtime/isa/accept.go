package isa

import (
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// The silent predicates' combined form. The checker (check.go) walks the
// rules in the documented order so that a debug twin can name the first
// one a record breaks; a silent caller needs only the conjunction.
// Computing that as one test per part of the record, straight from the
// record's words and without a call per rule, costs about a plain decode
// of the record (BenchmarkIsValid against BenchmarkDecodeBaseline). accept
// must equal the checker's verdict on every input: TestAgree*, the rule
// tests and FuzzValidator hold the two against each other (IsValid runs
// accept, Debug the checker).

// acceptEntry is one opcode's row of the combined test, packed so that a
// record touches one table line.
type acceptEntry struct {
	zero     zeroMask         // the bytes that must be zero (words 1..7; word 0 is the header and the wait slot)
	engines  hwisa.EngineMask // the engines that may issue it; 0 when the opcode is not one of the generation
	flags    uint8            // the flag bits it accepts
	ops      uint8            // bit v: op byte v is accepted
	from, to uint8            // the tensors it uses: views[from:to]
	pred     predicate
}

// syncRule classifies a sync mode byte for accept: which slot takes it and
// whether it carries a value (event modes take none).
var syncRule = func() (r [256]uint8) {
	for m := hwisa.SyncMode(1); m < hwisa.NumSyncModes; m++ {
		switch {
		case m.IsWait():
			r[m] = syncWait
		case m.IsSignal():
			r[m] = syncSignal
		}
		if m != hwisa.WaitEvent && m != hwisa.SignalEventSet && m != hwisa.SignalEventClr {
			r[m] |= syncValue
		}
	}
	return r
}()

const (
	syncWait   = 1 << iota // a mode of the wait slot
	syncSignal             // a mode of the signal slot
	syncValue              // the mode takes a value
)

// slotOK is the events rule for one slot word (mode, index, value): all
// zero, or a mode of the slot with no value unless the mode takes one.
func slotOK(s uint32, slot uint8) bool {
	r := syncRule[s&0xFF]
	return s == 0 || r&slot != 0 && (s>>16 == 0 || r&syncValue != 0)
}

// intDtype marks the integer dtypes (iota's dst).
var intDtype = func() (m [256]bool) {
	for _, d := range []hwisa.Dtype{hwisa.Int8, hwisa.Int16, hwisa.Int32, hwisa.Uint8, hwisa.Uint16, hwisa.Uint32, hwisa.Int64, hwisa.Uint64} {
		m[d] = true
	}
	return m
}()

// A view is where accept finds one tensor's words: its address and dtype,
// its partitions, its three free-dim words. src1 is src0's partitions and
// dims at its own address and dtype.
type view struct{ addr, parts, dims int }

var views = [3]view{
	{offDst, offDst + 5, offDst + 6},
	{offSrc0, offSrc0 + 5, offSrc0 + 6},
	{offSrc1, offSrc0 + 5, offSrc0 + 6},
}

// accept is is_valid_neuron_isa_instruction's verdict on a 64-byte record.
func (f *forest) accept(b *[hwisa.RecordSize]byte) bool {
	a := &f.acc[b[offOpcode]]
	if uint32(a.engines)>>b[offEngine]&1 == 0 || b[offFlags]&^a.flags != 0 || uint32(a.ops)>>b[offOp]&1 == 0 {
		return false
	}
	if ev := le64(b[offWait:]); ev != 0 && !(slotOK(uint32(ev), syncWait) && slotOK(uint32(ev>>32), syncSignal)) {
		return false
	}
	if m := &a.zero; le64(b[8:])&m[1]|le64(b[16:])&m[2]|le64(b[24:])&m[3]|le64(b[32:])&m[4]|
		le64(b[40:])&m[5]|le64(b[48:])&m[6]|le64(b[56:])&m[7] != 0 {
		return false
	}
	// The tensors, views[a.from:a.to]: the ladder, is_valid_dtype,
	// addr_aligned_dtype and tensor_start_addr_valid at once. One loop
	// rather than a call per tensor: a call spills every live value.
	var (
		elems [3]uint64 // elements per partition
		size0 [3]uint32 // dims[0].size
		rank2 [3]bool   // [partitions × elements]
	)
	var lo, hi int64 // the lowest and highest element offsets the free dims reach
	for i := a.from; i < a.to; i++ {
		v := &views[i&3]
		addr, dt, parts := le32(b[v.addr&63:]), b[(v.addr+4)&63], b[v.parts&63]
		if i != 2 { // src1 has src0's shape, checked and spanned already
			d := (*[12]byte)(b[v.dims&63:])
			w0, w1, w2 := le32(d[0:]), le32(d[4:]), le32(d[8:])
			s0, s1, s2 := w0&0xFFFF, w1&0xFFFF, w2&0xFFFF
			in0 := b2u(s0 != 0)
			in1 := in0 & b2u(s1 != 0)
			in2 := in1 & b2u(s2 != 0)
			tail := w0&(in0-1) | w1&(in1-1) | w2&(in2-1)
			n := uint64(max(s0, 1)) * uint64(max(s1, 1)) * uint64(max(s2, 1))
			if parts == 0 || tail != 0 || n > hwisa.MaxFreeElements {
				return false
			}
			x0 := (int64(s0) - 1) * int64(int16(w0>>16))
			x1 := (int64(s1) - 1) * int64(int16(w1>>16))
			x2 := (int64(s2) - 1) * int64(int16(w2>>16))
			lo, hi = min(x0, 0)+min(x1, 0)+min(x2, 0), max(x0, 0)+max(x1, 0)+max(x2, 0)
			elems[i&3], size0[i&3], rank2[i&3] = n, s0, in0&^in1 != 0
		}
		es := int64(f.dsize[dt])
		off := int64(addr & offsetMask)
		first, end := off+lo*es, off+(hi+1)*es
		if startPartition(addr)+int(parts) > f.lim.Partitions || es == 0 || off&(es-1) != 0 ||
			first < 0 || end > f.partBytes[addr>>31] || (first^(end-1))&f.bankMask[addr>>31] != 0 {
			return false
		}
	}
	dElems, sElems, dSize0, sSize0, dRank2, sRank2 := elems[0], elems[1], size0[0], size0[1], rank2[0], rank2[1]
	// The opcode's own predicate, on the same facts.
	dt, st := hwisa.Dtype(b[offDst+4]), hwisa.Dtype(b[offSrc0+4])
	dp, sp := b[offDst+5], b[offSrc0+5]
	noPacked := !(packedDtype[dt] || packedDtype[st] || packedDtype[b[offSrc1+4]])
	sameShape := dp == sp && dElems == sElems
	dPSUM, sPSUM := b[offDst+3]&0x80 != 0, b[offSrc0+3]&0x80 != 0
	l := &f.lim
	switch a.pred {
	case pElementwise:
		return noPacked && sameShape
	case pComputes:
		return noPacked
	case pCopyLike:
		return (dt == st || !(packedDtype[dt] || packedDtype[st])) && sameShape
	case pLoadStationary:
		return sRank2 && int(sSize0) <= l.MaxStationary && !sPSUM && noPacked
	case pMultiplyMoving:
		return !sPSUM && sRank2 && int(sSize0) <= l.MaxMovingN && noPacked &&
			dPSUM && dt == hwisa.FP32 && dRank2 && dSize0 == sSize0
	case pTranspose:
		return noPacked && sRank2 && dRank2 && f.transposeOK(hwisa.Engine(b[offEngine]), dp, sp, dSize0, sSize0,
			le32(b[offDst:]), le32(b[offSrc0:]))
	case pTensorReduce:
		return noPacked && dp == sp && dElems == 1
	case pIotaInts:
		return intDtype[dt]
	case pQuantizeFP4:
		return !packedDtype[st]
	case pDmaTrigger:
		imm1 := le32(b[offImm1:])
		return int(le16(b[offAux:])) < l.DMAEngines && int(le32(b[offImm0:])) < l.DMAQueues && imm1 != 0 && imm1 <= l.MaxDMADescriptors
	case pDmaData:
		return int(le16(b[offAux:])) < l.DMAEngines
	}
	return true
}

// transposeOK is is_valid_transpose past the ranks: src0 [P × F] within the
// engine's limit, dst [F × P], and on DVE each inside one quadrant.
func (f *forest) transposeOK(eng hwisa.Engine, dp, sp uint8, dF, sF uint32, dAddr, sAddr uint32) bool {
	l := &f.lim
	most := l.MaxPETranspose
	if eng == hwisa.DVE {
		most = l.MaxDVETranspose
	}
	if int(sp) > most || int(sF) > most || uint32(dp) != sF || dF != uint32(sp) {
		return false
	}
	if eng != hwisa.DVE {
		return true
	}
	q := l.QuadrantPartitions
	inQuadrant := func(addr uint32, parts uint8) bool {
		first := startPartition(addr)
		return first/q == (first+int(parts)-1)/q
	}
	return inQuadrant(sAddr, sp) && inQuadrant(dAddr, dp)
}

// tensorViews returns the views an opcode's tensors occupy: dst, src0 and
// src1 in that order, and src1 only with src0 (newForest checks).
func tensorViews(uses uint16) (from, to uint8) {
	from, to = 3, 0
	for i, bit := range [3]uint16{hwisa.UsesDst, hwisa.UsesSrc0, hwisa.UsesSrc1} {
		if uses&bit != 0 {
			from, to = min(from, uint8(i)), uint8(i)+1
		}
	}
	if from > to {
		return 0, 0
	}
	return from, to
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
