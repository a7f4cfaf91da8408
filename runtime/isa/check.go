package isa

import (
	"fmt"
	"strings"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// checker is the debug twins' validator body (dbg_is_valid_*, the
// NEURON_ISA_TPB_DEBUG_BOOL idea): it walks the rules in the documented
// order and stops at the first one a record breaks, which becomes the
// Reason. The silent predicates compute the same verdict in one pass
// (accept.go); the tests hold the two equal on every input.
type checker struct {
	r   hwisa.Record // the header, the preamble and the operands the opcode uses (unused ones stay zero)
	f   *forest
	e   *opEntry
	why Reason // the first broken rule, once record or engine returned false
}

// fail records the broken rule and returns false; msg builds its message.
func (c *checker) fail(check, field string, msg func() string) bool {
	c.why = Reason{Check: check, Field: field, Msg: msg()}
	return false
}

// record is is_valid_neuron_isa_instruction: the size, the header and
// events preamble, the unused operands, the used tensors and the opcode's
// own predicate, in that order; the first failure is the reason. It decodes
// only what the opcode uses, straight from the bytes.
func (c *checker) record(rec []byte) bool {
	if len(rec) != hwisa.RecordSize {
		n := len(rec)
		return c.fail(CheckRecordSize, "record", func() string {
			return fmt.Sprintf("a record is %d bytes, got %d", hwisa.RecordSize, n)
		})
	}
	b := (*[hwisa.RecordSize]byte)(rec)
	e := &c.f.ops[b[offOpcode]]
	c.e = e
	c.r.Opcode, c.r.Engine, c.r.Flags, c.r.Op = hwisa.Opcode(b[offOpcode]), hwisa.Engine(b[offEngine]), b[offFlags], b[offOp]
	if !c.header() {
		return false
	}
	if le64(b[offWait:]) != 0 { // both slots empty is valid
		c.r.Wait, c.r.Signal = loadSync(b[offWait:offSignal]), loadSync(b[offSignal:offDst])
		if !c.events() {
			return false
		}
	}
	// The zero mask: unused operands and the Src1 reserved byte (bytes 0..7,
	// the header and the wait slot, are never in it).
	if m := &e.zero; le64(b[8:])&m[1]|le64(b[16:])&m[2]|le64(b[24:])&m[3]|le64(b[32:])&m[4]|
		le64(b[40:])&m[5]|le64(b[48:])&m[6]|le64(b[56:])&m[7] != 0 {
		return c.unused(b)
	}
	ops := e.info.Operands
	if ops&hwisa.UsesDst != 0 {
		t := &c.r.Dst
		loadTensor(t, b[offDst:offSrc0])
		rk, lo, hi, ok := c.shape(&dstNames, t)
		if !ok || !c.place(&dstNames, rk, t.Addr, t.Dtype, t.Partitions, lo, hi) {
			return false
		}
	}
	if ops&hwisa.UsesSrc0 != 0 {
		t := &c.r.Src0
		loadTensor(t, b[offSrc0:offSrc1])
		rk, lo, hi, ok := c.shape(&src0Names, t)
		if !ok || !c.place(&src0Names, rk, t.Addr, t.Dtype, t.Partitions, lo, hi) {
			return false
		}
		// src1 is src0's shape and strides at its own address, in its own dtype.
		if ops&hwisa.UsesSrc1 != 0 {
			c.r.Src1 = hwisa.Src1{Addr: le32(b[offSrc1:]), Dtype: hwisa.Dtype(b[offSrc1+4])}
			if !c.place(&src1Names, rk, c.r.Src1.Addr, c.r.Src1.Dtype, t.Partitions, lo, hi) {
				return false
			}
		}
	}
	c.r.Imm0, c.r.Imm1, c.r.Aux = le32(b[offImm0:]), le32(b[offImm1:]), le16(b[offAux:])
	return e.pred == pNone || e.pred.run(c)
}

// header is has_valid_neuron_header plus is_valid_opcode and the op byte's
// is_valid_enum.
func (c *checker) header() bool {
	e, r, g := c.e, &c.r, c.f.lim.Generation
	if !e.known {
		return c.fail(CheckOpcode, "opcode", func() string {
			return fmt.Sprintf("opcode 0x%02x is not an opcode of the ISA", uint8(r.Opcode))
		})
	}
	if !e.avail {
		return c.fail(CheckOpcode, "opcode", func() string {
			return fmt.Sprintf("opcode 0x%02x (%s) needs %s or later; this is %s", uint8(r.Opcode), e.info.Name, e.info.Since, g)
		})
	}
	if !e.info.Engines.Has(r.Engine) { // top_sp is in no opcode's engines
		return c.fail(CheckHeader, "engine", func() string {
			switch {
			case r.Engine > hwisa.TopSP:
				return fmt.Sprintf("engine byte %d is not an ISA engine (0 pe, 1 act, 2 pool, 3 dve, 4 sp)", uint8(r.Engine))
			case r.Engine == hwisa.TopSP:
				return "engine 5 (top_sp) is never valid in a record"
			}
			return fmt.Sprintf("%s cannot be built for %s (its engines: %s)", e.info.Name, r.Engine, engineList(e.info.Engines))
		})
	}
	if r.Flags&^e.flags != 0 {
		return c.fail(CheckHeader, "flags", func() string {
			if r.Flags&^hwisa.FlagMask != 0 {
				return fmt.Sprintf("flags 0x%02x have unknown bits 0x%02x (known: accumulate 0x01, last 0x02)", r.Flags, r.Flags&^hwisa.FlagMask)
			}
			return fmt.Sprintf("accumulate is defined for multiply_moving and activation only, not %s", e.info.Name)
		})
	}
	if r.Op >= 8 || e.ops&(1<<r.Op) == 0 {
		if e.opSet == 0 {
			return c.fail(CheckHeader, "op", func() string {
				return fmt.Sprintf("%s does not use byte 3 (op); it must be 0, got %d", e.info.Name, r.Op)
			})
		}
		return c.fail(CheckEnum, "op", func() string {
			return fmt.Sprintf("%s: op %d is not one of %s", e.info.Name, r.Op, e.opList())
		})
	}
	return true
}

type slotNames struct{ slot, mode, index, value string }

var (
	waitNames   = slotNames{"wait", "wait.mode", "wait.index", "wait.value"}
	signalNames = slotNames{"signal", "signal.mode", "signal.index", "signal.value"}
)

// events is has_valid_neuron_events: a wait mode (or none) in the wait slot,
// a signal mode (or none) in the signal slot; an empty slot is all zero, and
// event modes carry no value.
func (c *checker) events() bool {
	return c.slot(&c.r.Wait, &waitNames, true) && c.slot(&c.r.Signal, &signalNames, false)
}

func (c *checker) slot(s *hwisa.Sync, n *slotNames, wait bool) bool {
	m := s.Mode
	switch {
	case *s == hwisa.Sync{}:
	case m >= hwisa.NumSyncModes:
		return c.fail(CheckEnum, n.mode, func() string {
			return fmt.Sprintf("%s mode %d is not a sync mode (0..%d)", n.slot, uint8(m), hwisa.NumSyncModes-1)
		})
	case m == hwisa.SyncNone:
		if s.Index != 0 {
			return c.fail(CheckEvents, n.index, func() string {
				return fmt.Sprintf("the %s slot is empty (mode none) but its index is %d", n.slot, s.Index)
			})
		}
		if s.Value != 0 {
			return c.fail(CheckEvents, n.value, func() string {
				return fmt.Sprintf("the %s slot is empty (mode none) but its value is %d", n.slot, s.Value)
			})
		}
	case wait && !m.IsWait():
		return c.fail(CheckEvents, n.mode, func() string {
			return fmt.Sprintf("%s is a signal mode; the wait slot takes none, sem_ge, sem_eq, sem_gt or event", m)
		})
	case !wait && !m.IsSignal():
		return c.fail(CheckEvents, n.mode, func() string {
			return fmt.Sprintf("%s is a wait mode; the signal slot takes none, sem_set, sem_incr, sem_decr, event_set or event_clear", m)
		})
	case syncRule[m]&syncValue == 0 && s.Value != 0: // an event mode
		return c.fail(CheckEvents, n.value, func() string {
			return fmt.Sprintf("%s mode %s takes no value; it must be 0, got %d", n.slot, m, s.Value)
		})
	}
	return true
}

// unused reports the first operand the opcode does not use that is not
// all zero (or the Src1 reserved byte), once the opcode's zero mask
// (operandFields) found a non-zero byte.
func (c *checker) unused(b *[hwisa.RecordSize]byte) bool {
	field := "src1.reserved"
	for _, f := range operandFields {
		if c.e.info.Operands&f.uses == 0 && !allZero(b[f.from:f.to]) {
			field = f.name
			break
		}
	}
	return c.fail(c.e.check, field, func() string {
		if field == "src1.reserved" {
			return fmt.Sprintf("the src1 reserved byte must be 0, got %d", b[offSrc1+5])
		}
		return fmt.Sprintf("%s does not use %s; its bytes must be 0", c.e.info.Name, field)
	})
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// tensorNames are the Reason.Field names of one tensor operand.
type tensorNames struct {
	name, addr, dtype, partitions, dims string
	size, stride                        [hwisa.MaxFreeDims]string
}

func namesOf(n string) tensorNames {
	t := tensorNames{name: n, addr: n + ".addr", dtype: n + ".dtype", partitions: n + ".partitions", dims: n + ".dims"}
	for i := range t.size {
		t.size[i] = fmt.Sprintf("%s.dims[%d].size", n, i)
		t.stride[i] = fmt.Sprintf("%s.dims[%d].stride", n, i)
	}
	return t
}

var (
	dstNames  = namesOf("dst")
	src0Names = namesOf("src0")
	// src1 is its own address and dtype on src0's shape: a start partition
	// too high for src0's partitions is a fault of src1.addr.
	src1Names = func() tensorNames { t := namesOf("src1"); t.partitions = t.addr; return t }()
)

// rank is 1 + the free dimensions in use (a size of 0 ends the list).
func rank(t *hwisa.Tensor) int {
	switch {
	case t.Dims[0].Size == 0:
		return 1
	case t.Dims[1].Size == 0:
		return 2
	case t.Dims[2].Size == 0:
		return 3
	}
	return 4
}

// dimWord packs a free dimension into one word: 0 exactly when it is unused.
func dimWord(d hwisa.Dim) uint32 { return uint32(d.Size) | uint32(uint16(d.Stride))<<16 }

// elements is the product of the free sizes in use, in 64 bits, for a
// tensor whose dims past the end of the list are zero (the ladder holds).
func elements(t *hwisa.Tensor) int64 {
	return max(int64(t.Dims[0].Size), 1) * max(int64(t.Dims[1].Size), 1) * max(int64(t.Dims[2].Size), 1)
}

// offsetMask selects the byte offset of a start address (bits 23..0).
const offsetMask = 0xFF_FFFF

func startPartition(a uint32) int { _, p, _ := hwisa.Location(a); return p }
func inPSUM(a uint32) bool        { return a&hwisa.AddrPSUM != 0 }

// A tensor operand is checked in two halves: shape (the ladder's
// tensor1d_valid … tensor4d_valid on the free-dimension list) and place (the
// ladder's partition range, is_valid_dtype, addr_aligned_dtype,
// tensor_start_addr_valid). src1 has src0's shape, so it is only placed.

// shape is the ladder's shape half: at least one partition, every dim
// from the first size-0 one on all zero, and at most MaxFreeElements per
// partition. It returns the rank and the lowest and highest element offsets
// the free dims reach (negative strides reach below the start).
func (c *checker) shape(n *tensorNames, t *hwisa.Tensor) (rk int, lo, hi int64, ok bool) {
	rk = rank(t)
	if t.Partitions == 0 {
		return rk, 0, 0, c.fail(ladder[rk], n.partitions, func() string {
			return fmt.Sprintf("%s has 0 partitions; a tensor needs at least 1", n.name)
		})
	}
	d := &t.Dims
	for i := rk - 1; i < len(d); i++ { // the first non-zero dim past the end
		if dimWord(d[i]) == 0 {
			continue
		}
		field := n.stride[i]
		if d[i].Size != 0 {
			field = n.size[i]
		}
		return rk, 0, 0, c.fail(ladder[rk], field, func() string {
			return fmt.Sprintf("%s.dims[%d] lies past the end of the free dims (dims[%d].size is 0): its size and stride must be 0, got size %d stride %d",
				n.name, i, rk-1, d[i].Size, d[i].Stride)
		})
	}
	if elems := elements(t); elems > hwisa.MaxFreeElements {
		return rk, 0, 0, c.fail(ladder[rk], n.size[0], func() string {
			return fmt.Sprintf("%s has %d elements per partition; at most %d (the engines' free size)", n.name, elems, hwisa.MaxFreeElements)
		})
	}
	for _, dim := range d[:rk-1] {
		x := (int64(dim.Size) - 1) * int64(dim.Stride)
		lo, hi = lo+min(x, 0), hi+max(x, 0)
	}
	return rk, lo, hi, true
}

// place is the rest of the ladder (the partitions from the start partition
// on exist), is_valid_dtype, addr_aligned_dtype and tensor_start_addr_valid,
// in that order, for a tensor of the given rank, partitions and element
// span at addr in dtype dt.
func (c *checker) place(n *tensorNames, rk int, addr uint32, dt hwisa.Dtype, parts uint8, lo, hi int64) bool {
	l := &c.f.lim
	if start := startPartition(addr); start+int(parts) > l.Partitions {
		return c.fail(ladder[rk], n.partitions, func() string {
			return fmt.Sprintf("%s covers partitions %d..%d (start %d + %d partitions); the last partition is %d",
				n.name, start, start+int(parts)-1, start, parts, l.Partitions-1)
		})
	}
	es := int64(c.f.dsize[dt]) // 1, 2, 4 or 8; 0: not a dtype of this generation
	if es == 0 {
		return c.fail(CheckDtype, n.dtype, func() string {
			if dt == hwisa.DtypeInvalid || dt >= hwisa.NumDtypes {
				return fmt.Sprintf("%s dtype %d is not a dtype", n.name, uint8(dt))
			}
			return fmt.Sprintf("%s dtype %s needs %s or later; this is %s", n.name, dt, dt.Since(), l.Generation)
		})
	}
	off := int64(addr & offsetMask)
	if off%es != 0 {
		return c.fail(CheckAligned, n.addr, func() string {
			return fmt.Sprintf("%s offset %#x is not a multiple of %d, the size of %s", n.name, off, es, dt)
		})
	}
	first, end := off+lo*es, off+(hi+1)*es
	psum := inPSUM(addr)
	size := int64(l.SBUFPartitionBytes)
	if psum {
		size = int64(l.PSUMPartitionBytes)
	}
	if first < 0 || end > size {
		return c.fail(CheckStartAddr, n.addr, func() string {
			mem := "SBUF"
			if psum {
				mem = "PSUM"
			}
			return fmt.Sprintf("%s reaches bytes [%#x, %#x) of its partition; the %s partition is bytes [0, %#x)", n.name, first, end, mem, size)
		})
	}
	if bank := int64(l.PSUMBankBytes); psum && first/bank != (end-1)/bank {
		return c.fail(CheckStartAddr, n.addr, func() string {
			return fmt.Sprintf("%s reaches PSUM bytes [%#x, %#x), crossing a %d-byte bank boundary (a PSUM tensor lives in one bank)", n.name, first, end, bank)
		})
	}
	return true
}

// engine is the per-engine legality of ib_is_valid_engine_instruction: the
// HAL engine's ISA engine must issue the opcode and be the engine the record
// was built for; TOP_SP issues no records.
func (c *checker) engine(eng hwisa.Engine) bool {
	e := c.e
	switch {
	case eng == hwisa.TopSP:
		return c.fail(CheckEngine, "engine", func() string {
			return "the HAL engine maps to top_sp, which issues no instruction records"
		})
	case !e.info.Engines.Has(eng):
		return c.fail(CheckEngine, "engine", func() string {
			return fmt.Sprintf("%s cannot be issued on %s (its engines: %s)", e.info.Name, eng, engineList(e.info.Engines))
		})
	case c.r.Engine != eng:
		return c.fail(CheckEngine, "engine", func() string {
			return fmt.Sprintf("the record is built for %s but the block is %s's", c.r.Engine, eng)
		})
	}
	return true
}

func engineList(m hwisa.EngineMask) string {
	var s []string
	for e := hwisa.Engine(0); e < hwisa.NumEngines; e++ {
		if m.Has(e) {
			s = append(s, e.String())
		}
	}
	return strings.Join(s, " ")
}
