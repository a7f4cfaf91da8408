package dma

import (
	"fmt"

	"github.com/neuronsim/neuronsim/hw/udma"
)

// decodeQueue splits an engine register offset into a queue register: the
// half (udma.M2S or udma.S2M), the queue and the register offset inside the
// queue block. ok is false for any other register.
func decodeQueue(off uint64) (half uint64, q int, reg uint64, ok bool) {
	half = udma.M2S
	if off >= udma.S2M {
		half, off = udma.S2M, off-udma.S2M
	}
	if off < udma.QueueBase || off >= udma.QueueBase+udma.Queues*udma.QueueStride {
		return 0, 0, 0, false
	}
	off -= udma.QueueBase
	return half, int(off / udma.QueueStride), off % udma.QueueStride, true
}

// queueModelled reports whether register reg of a queue's half (udma.M2S
// or udma.S2M) is a field of the queue's state — its configuration, ring,
// doorbell, status, head, tail and software control — which ReadReg and
// WriteReg handle; a queue's other registers (its rate limiter, its
// completion configuration, …) are kept as storage (EngineState.Regs),
// like any register of the engine's window that is not modelled.
func queueModelled(half, reg uint64) bool {
	switch reg {
	case udma.QCfg, udma.QBaseLo, udma.QBaseHi, udma.QLength, udma.QTailInc, udma.QStatus, udma.QHead, udma.QTail:
		return true
	}
	return (half == udma.M2S && reg == udma.QSwCtrlM2S) || (half == udma.S2M && reg == udma.QSwCtrlS2M)
}

// stored reports whether WriteReg keeps a write to off as storage, which
// ReadReg reads back: a register of the engine's window neither modelled
// by a queue's state (queueModelled) nor the engine's state change, state
// or error-queues register.
func stored(off uint64) bool {
	if half, _, reg, ok := decodeQueue(off); ok && queueModelled(half, reg) {
		return false
	}
	switch off {
	case udma.M2S + udma.ChangeState, udma.S2M + udma.ChangeState, udma.M2S + udma.EngineState, udma.S2M + udma.EngineState, udma.M2S + udma.ErrorQueues:
		return false
	}
	return true
}

func (qs *QueueState) half(h uint64) *HalfState {
	if h == udma.S2M {
		return &qs.S2M
	}
	return &qs.M2S
}

// ReadReg is a 32-bit read of engine e's register at off (an offset inside
// its udma.EngineRegSize window). Unknown registers read back what was last
// written (0 at reset).
func (c *Controller) ReadReg(e int, off uint64) uint32 {
	es := c.view(e)
	if half, q, reg, ok := decodeQueue(off); ok && queueModelled(half, reg) {
		qs := &es.Queues[q]
		h := qs.half(half)
		switch reg {
		case udma.QCfg:
			return h.Cfg
		case udma.QStatus:
			st := qs.Status
			if h.Avail > 0 && st&udma.StatusHalted == 0 {
				st |= udma.StatusBusy
			}
			return st
		case udma.QBaseLo:
			return h.BaseLo &^ 0x3F
		case udma.QBaseHi:
			return h.BaseHi
		case udma.QLength:
			return h.Length
		case udma.QHead:
			return h.Head | uint32(h.HeadRing)<<30
		case udma.QTail:
			return h.Tail | uint32(h.TailRing)<<30
		case udma.QTailInc:
			return 0
		}
		if (half == udma.M2S && reg == udma.QSwCtrlM2S) || (half == udma.S2M && reg == udma.QSwCtrlS2M) {
			return h.SwCtrl
		}
	}
	switch off {
	case udma.M2S + udma.EngineState, udma.S2M + udma.EngineState:
		return udma.EngineStateWord(es.State)
	case udma.M2S + udma.ErrorQueues:
		var m uint32
		for q := range es.Queues {
			if es.Queues[q].Status&udma.StatusHalted != 0 {
				m |= 1 << q
			}
		}
		return m
	}
	return es.Regs[off]
}

// WriteReg is a 32-bit write of engine e's register at off.
func (c *Controller) WriteReg(e int, off uint64, v uint32) {
	es := c.engine(e)
	if half, q, reg, ok := decodeQueue(off); ok && queueModelled(half, reg) {
		qs := &es.Queues[q]
		h := qs.half(half)
		switch {
		case reg == udma.QCfg:
			h.Cfg = v
			return
		case reg == udma.QBaseLo:
			h.BaseLo = v &^ 0x3F
			return
		case reg == udma.QBaseHi:
			h.BaseHi = v
			return
		case reg == udma.QLength:
			h.Length = v & 0xFF_FFFF
			return
		case reg == udma.QTailInc:
			c.doorbell(e, q, half, v)
			return
		case reg == udma.QStatus, reg == udma.QHead, reg == udma.QTail:
			return // read-only
		case (half == udma.M2S && reg == udma.QSwCtrlM2S) || (half == udma.S2M && reg == udma.QSwCtrlS2M):
			h.SwCtrl = v &^ udma.QSwReset
			if v&udma.QSwReset != 0 {
				c.resetQueue(e, q)
			}
			return
		}
	}
	switch off {
	case udma.M2S + udma.ChangeState, udma.S2M + udma.ChangeState:
		switch {
		case v&udma.ChangeAbort != 0:
			es.State = udma.StateAbort
			for q := range es.Queues { // in-flight transfers never land
				if es.Queues[q].InFlight {
					es.Queues[q].InFlight = false
					es.Queues[q].Epoch++
				}
			}
		case v&udma.ChangeDisable != 0:
			es.State = udma.StateIdle
		case v&udma.ChangeNormal != 0:
			es.State = udma.StateNormal
			for q := range es.Queues {
				c.kick(e, q)
			}
		}
		return
	case udma.M2S + udma.EngineState, udma.S2M + udma.EngineState, udma.M2S + udma.ErrorQueues:
		return // read-only
	}
	es.setReg(off, v)
}

// resetQueue is q_sw_ctrl's queue reset: both halves back to an empty ring
// at phase 1, the status cleared, a transfer in flight dropped.
func (c *Controller) resetQueue(e, q int) {
	qs := &c.engine(e).Queues[q]
	qs.M2S.reset()
	qs.S2M.reset()
	qs.Status = 0
	qs.InFlight = false
	qs.Epoch++
}

// enabled reports whether a queue half may take doorbells.
func (c *Controller) enabled(e int, h *HalfState) bool {
	return c.view(e).State == udma.StateNormal && h.Cfg&udma.QCfgEnable == udma.QCfgEnable
}

// fail halts a queue with error bits.
func (c *Controller) fail(e, q int, bits uint32) {
	qs := &c.engine(e).Queues[q]
	qs.Status |= bits | udma.StatusHalted
	qs.InFlight = false
}

// Doorbell rings queue q of engine e as an NC's dma_trigger does: n
// written to the S2M half's tail_inc, then to the M2S half's — exactly the
// two register writes, without decoding their offsets. An engine or queue
// the controller does not have is an error wrapping udma.ErrEngine, and
// nothing is rung.
func (c *Controller) Doorbell(e, q int, n uint32) error {
	if e < 0 || e >= len(c.st.engines) || q < 0 || q >= udma.Queues {
		return fmt.Errorf("dma: doorbell of engine %d queue %d: %w", e, q, udma.ErrEngine)
	}
	c.doorbell(e, q, udma.S2M, n)
	c.doorbell(e, q, udma.M2S, n)
	return nil
}

// doorbell is a write of n to a half's tail_inc.
func (c *Controller) doorbell(e, q int, half uint64, n uint32) {
	qs := &c.engine(e).Queues[q]
	h := qs.half(half)
	switch {
	case qs.Status&udma.StatusHalted != 0:
		return // a halted queue ignores doorbells until it is reset
	case !c.enabled(e, h):
		c.fail(e, q, udma.ErrDoorbellDisabled)
		return
	case udma.CheckRing(h.base(), h.Length) != nil:
		c.fail(e, q, udma.ErrRingConfig)
		return
	case n == 0:
		return
	case uint64(h.Avail)+uint64(n) > uint64(h.Length):
		c.fail(e, q, udma.ErrRingOverrun)
		return
	}
	h.Avail += n
	t := uint64(h.Tail) + uint64(n)
	wraps := t / uint64(h.Length)
	h.Tail = uint32(t % uint64(h.Length))
	h.TailRing = uint8((uint64(h.TailRing) + wraps) % 4)
	c.kick(e, q)
}
