package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
)

// This file drives a simulated device's H2T DMA exactly as the Neuron kernel
// driver 2.24.7.0 does for NEURON_IOCTL_MEM_BUF_COPY64 to and from device
// memory: every register write of the engine init, the queue init and the
// copies goes through the device's register BAR in the driver's order, the
// descriptors are built in host memory as the driver builds them, and the
// completion is the driver's marker poll with its wait budget. Our own code,
// following the driver; each step cites the driver's file:line (paths from
// the driver's source root). docs/dma-model.md "What driver 2.24.7.0
// programs" lists the facts.

// Register offsets inside one engine's UDMA window (udma/udma_regs.h struct
// unit_regs_v4; driver-facts §4.4).
const (
	h2tM2SAxiDescRdCfg3 = 0x11c
	h2tM2SAxiDataRdCfg  = 0x118
	h2tM2SAxiOstand     = 0x124
	h2tM2SCfgLen        = 0x254
	h2tM2SStreamCfg     = 0x258
	h2tM2SPrefCfg2      = 0x304
	h2tM2SPrefCfg3      = 0x308
	h2tM2SRdDataCfg     = 0x310
	h2tM2SAppAck        = 0x408
	h2tS2MAxiDescRdCfg3 = udma.S2M + 0x11c
	h2tS2MOstandRd      = udma.S2M + 0x124
	h2tS2MOstandWr      = udma.S2M + 0x128
	h2tS2MPrefCfg3      = udma.S2M + 0x308
	h2tS2MCompCfg1c     = udma.S2M + 0x380
	h2tS2MAppAck        = udma.S2M + 0x38c
	h2tGenAxiCfg1       = 0x38000 + 0x2300
	h2tGenSpareZeroes0  = 0x38000 + 0x3460
	h2tGenExVMPR        = 0x3C000 + 0x400 // + q·0x40: tx_sel, rx_sel[0..2]
	h2tQRateLimitMask   = 0x74            // M2S queue: rlimit.mask
	h2tQCompCfgM2S      = 0xa0
	h2tQCompCfgS2M      = 0x54
)

const (
	h2tRingDescs     = 8192 // ndmar_ring_get_desc_count(DMA_H2T_DESC_COUNT 4096): 4096+16 rounded up to a power of two (neuron_ring.c:52-66, neuron_ring.h:11)
	h2tCDescPerLine  = 16   // UDMA_MAX_NUM_CDESC_PER_CACHE_LINE (udma/udma.h:16)
	h2tMaxDesc       = 65536
	h2tMarkerSize    = 4
	h2tCompletionLen = 4 * 2 * 3 // sizeof(u32) * 2 * NEURON_DMA_H2T_CTX_HANDLE_CNT (neuron_ring.c:325)
)

// h2tQueue is the driver's software state of one half of the H2T queue:
// struct udma_q's next_desc_idx, next_cdesc_idx (the acked count) and
// desc_ring_id (udma/udma_main.c:446-453).
type h2tQueue struct {
	ring       uint64 // host physical address (without the host bit)
	next, cidx uint32
	ringID     uint32
}

// h2tDriver is the part of the driver a MEM_BUF_COPY64 exercises.
type h2tDriver struct {
	t          *testing.T
	d          *Device
	geo        *hwarch.Geometry
	bar        int
	eng, q     int
	engBase    uint64 // BAR offset of the engine's UDMA registers
	tx, rx     h2tQueue
	completion uint64 // host pa of the completion words (SYNC handle: offset 0)
	bounce     uint64 // host pa of the 64 KiB bounce buffer of ncdev_mem_buf_copy
	polls      int    // marker polls of the last copy
}

func (k *h2tDriver) w(off uint64, v uint32) {
	k.t.Helper()
	if err := k.d.Write32(k.bar, k.engBase+off, v); err != nil {
		k.t.Fatalf("write %#x = %#x: %v", off, v, err)
	}
}

func (k *h2tDriver) r(off uint64) uint32 {
	k.t.Helper()
	v, err := k.d.Read32(k.bar, k.engBase+off)
	if err != nil {
		k.t.Fatalf("read %#x: %v", off, err)
	}
	return v
}

func (k *h2tDriver) qreg(half uint64, reg uint64) uint64 { return udma.QueueReg(half, k.q, reg) }

// hostAddr is what the driver puts in a descriptor for a host buffer:
// virt_to_phys(va) | pci_host_base (neuron_dma.c:210, 671, 692).
func (k *h2tDriver) hostAddr(pa uint64) uint64 { return pa | k.geo.HostAddressBit }

// engineInit is ndma_init_v2 / ndma_init_v3 for the H2T engine
// (v2/neuron_dhal_v2.c:1395-1446, v3/neuron_dhal_v3.c:1629-1703) →
// udma_m2m_init_engine (udma/udma_m2m.c:231-262) → udma_init
// (udma/udma_main.c:323-355). It never writes change_state.
func (k *h2tDriver) engineInit() {
	// udma_handle_init_aux: every queue enabled, EN_PREF|EN_SCHED ORed onto
	// the cached cfg, which is 0 on the first init (ndmar_preinit memsets
	// the engine, neuron_ring.c:498; udma/udma_main.c:302-315, 247-263).
	for q := range udma.Queues {
		k.w(udma.QueueReg(udma.M2S, q, udma.QCfg), udma.QCfgEnable)
		k.w(udma.QueueReg(udma.S2M, q, udma.QCfg), udma.QCfgEnable)
	}
	// udma_set_defaults (udma/udma_main.c:64-161).
	k.w(h2tM2SRdDataCfg, 1024|0x100<<16) // num_beats 1024 (v2/neuron_dhal_v2.c:1759)
	if k.geo.Generation == hwarch.Sunda {
		k.w(h2tM2SAxiOstand, 111|8<<8) // reserve_max_read_axi_id on V2 (v2/neuron_dhal_v2.c:1431)
	} else {
		k.w(h2tM2SAxiOstand, 128|128<<8|128<<16|32<<24)
	}
	k.w(h2tGenAxiCfg1, 100*1000*1000)
	k.w(h2tM2SAppAck, 0)
	k.w(h2tM2SCfgLen, 0x010F_FFFF) // encode 64 KiB as 0, max packet size (udma/udma_main.c:40-61)
	k.w(h2tM2SStreamCfg, 0x102)
	for q := range udma.Queues {
		k.w(h2tGenExVMPR+uint64(q)*0x40, 0xFFFF_FFFF)
	}
	k.w(h2tM2SAxiDataRdCfg, 1<<16|0x8) // udma_m2s_data_rd_cfg_boundaries_set (v2:1269-1273, v3:1529-1533)
	k.w(h2tS2MAppAck, 0)
	for q := range udma.Queues {
		for i := range 3 {
			k.w(h2tGenExVMPR+uint64(q)*0x40+4+4*uint64(i), 0xFFFF_FFFF)
		}
	}
	k.w(h2tS2MOstandRd, 128|0x40<<16)
	k.w(h2tS2MOstandWr, 128|0x40<<8|128<<16|0x40<<24)
	k.w(h2tGenSpareZeroes0, k.r(h2tGenSpareZeroes0)&^1) // read-modify-write (udma/udma_main.c:152-158)
	k.w(h2tS2MCompCfg1c, 0x1004)                        // q promotion, 16-byte completion descriptors (udma/udma_main.c:344-347)
	// udma_set_max_descs_and_prefetch (udma/udma_m2m.c:102-146).
	k.w(h2tM2SPrefCfg2, 65|1<<8)
	k.w(h2tM2SPrefCfg3, 65<<8|8<<4|1)
	k.w(h2tS2MPrefCfg3, 65<<8|8<<4|1)
	k.w(h2tM2SAxiDescRdCfg3, 8|1<<16)
	k.w(h2tS2MAxiDescRdCfg3, 8|1<<16)
	// sdma_init_engine: the SDMA block after the UDMA registers (V3/V4
	// UDMA+0x40000, v3/neuron_dhal_v3.c:1680-1681; on V2 the separate
	// H2D/D2H SDMA block, v2:1411-1413). Whatever the device has there,
	// these writes must not disturb the engine.
	sdma := k.engBase + 0x40000
	if k.geo.Generation == hwarch.Sunda {
		sdma = map[int]uint64{32: 0x3064_0000, 33: 0x30D4_0000}[k.eng]
	}
	for _, wr := range [][2]uint64{{0x1c, 1}, {0x20, 1}, {0x0, 1}} {
		if err := k.d.Write32(k.bar, sdma+wr[0], uint32(wr[1])); err != nil {
			k.t.Fatalf("SDMA write: %v", err)
		}
	}
	if k.geo.Generation == hwarch.Sunda {
		k.w(h2tGenAxiCfg1, 0xFFFF_FFFF) // udma_m2m_set_axi_error_abort step 4 (udma/udma_m2m.c:480)
	}
}

// halfInit is udma_q_init for one half (udma/udma_main.c:428-470): queue
// config (TX: the rate-limit mask with DMB pause enabled, v2:1283-1296,
// v3:1543-1556), pause, queue reset, ring base and length, comp_cfg 0 (no
// completion ring), enable.
func (k *h2tDriver) halfInit(half uint64, ring uint64) {
	swCtrl, compCfg := uint64(udma.QSwCtrlM2S), uint64(h2tQCompCfgM2S)
	if half == udma.S2M {
		swCtrl, compCfg = udma.QSwCtrlS2M, h2tQCompCfgS2M
	} else {
		k.w(k.qreg(half, h2tQRateLimitMask), 0b111&^0b100)
	}
	k.w(k.qreg(half, udma.QCfg), udma.QCfgReset) // udma_q_pause: cached cfg 3<<24 without the enables (udma/udma_main.c:163,397-401)
	k.w(k.qreg(half, swCtrl), udma.QSwReset)     // udma_q_reset (udma/udma_main.c:406-423)
	a := k.hostAddr(ring)                        // ndmar_ring_set_mem_chunk (neuron_ring.c:86-87)
	k.w(k.qreg(half, udma.QBaseLo), uint32(a))
	k.w(k.qreg(half, udma.QBaseHi), uint32(a>>32))
	k.w(k.qreg(half, udma.QLength), h2tRingDescs) // udma_q_set_pointers (udma/udma_main.c:221-243)
	k.w(k.qreg(half, compCfg), 0)                 // udma_q_config_compl with NO_COMP_UPDATE (udma/udma_main.c:201-202)
	k.w(k.qreg(half, udma.QCfg), udma.QCfgDriver) // udma_q_enable (udma/udma_main.c:247-263)
}

// ringInit is ndmar_h2t_ring_alloc + ndmar_h2t_ring_init (neuron_ring.c:287-367):
// two host rings of 8192 descriptors and the completion words, then
// udma_m2m_init_queue, TX first then RX (udma/udma_m2m.c:149-228).
func (k *h2tDriver) ringInit() {
	alloc := func(n uint64) uint64 {
		pa, err := k.d.HostAlloc(n, 4096) // dma_alloc_coherent: page aligned (neuron_mempool.c:630-632)
		if err != nil {
			k.t.Fatal(err)
		}
		return pa
	}
	k.rx.ring = alloc(h2tRingDescs * udma.DescriptorSize)
	k.tx.ring = alloc(h2tRingDescs * udma.DescriptorSize)
	k.completion = alloc(h2tCompletionLen)
	k.bounce = alloc(h2tMaxDesc) // ncdev_mem_buf_copy's MC_LIFESPAN_LOCAL bounce (neuron_cdev.c:1105-1106)
	for _, h := range []*h2tQueue{&k.tx, &k.rx} {
		h.next, h.cidx, h.ringID = 0, 0, 1 // UDMA_INITIAL_RING_ID (udma/udma.h:33)
	}
	k.halfInit(udma.M2S, k.tx.ring)
	k.halfInit(udma.S2M, k.rx.ring)
}

// available is udma_available_get (udma/udma.h:312-324).
func (h *h2tQueue) available() uint32 {
	return (h.cidx - (h.next + h2tCDescPerLine)) & (h2tRingDescs - 1)
}

// slot is udma_desc_get + udma_ring_id_get (udma/udma.h:333-388): the ring
// slot of the next descriptor and its ring id.
func (h *h2tQueue) slot() (uint64, uint32) {
	i := h.next
	h.next = (h.next + 1) & (h2tRingDescs - 1)
	id := h.ringID
	if h.next == 0 {
		h.ringID = (h.ringID + 1) & 3
	}
	return h.ring + uint64(i)*udma.DescriptorSize, id
}

// prepareOne is udma_m2m_copy_prepare_one (udma/udma_m2m.c:366-407) with
// udma_m2m_build_descriptor (327-361): FIRST|LAST on the M2S side, the
// default meta_ctrl with the write barrier when asked, 64 KiB encoded as 0.
func (k *h2tDriver) prepareOne(src, dst uint64, size uint32, writeBarrier bool) {
	k.t.Helper()
	if k.tx.available() < 1 || k.rx.available() < 1 {
		k.t.Fatalf("no room in the H2T rings (tx %d, rx %d free)", k.tx.available(), k.rx.available())
	}
	rxSlot, rxID := k.rx.slot()
	txSlot, txID := k.tx.slot()
	n := size & 0xFFFF // 65536 → 0
	meta := udma.DefaultMetaCtrl
	if writeBarrier {
		meta |= udma.MetaWriteBarrier // sdma_m2s_set_write_barrier (udma/udma_m2m.c:95-99)
	}
	var b [udma.DescriptorSize]byte
	udma.Descriptor{LenCtrl: udma.FlagFirst | udma.FlagLast | txID<<udma.RingIDShift | n, Meta: meta, Addr: src}.Put(b[:])
	k.hostWrite(txSlot, b[:])
	udma.Descriptor{LenCtrl: rxID<<udma.RingIDShift | n, Addr: dst}.Put(b[:])
	k.hostWrite(rxSlot, b[:])
}

func (k *h2tDriver) hostWrite(pa uint64, p []byte) {
	k.t.Helper()
	if err := k.d.HostWrite(pa, p); err != nil {
		k.t.Fatal(err)
	}
}

func (k *h2tDriver) hostRead32(pa uint64) uint32 {
	k.t.Helper()
	var b [4]byte
	if err := k.d.HostRead(pa, b[:]); err != nil {
		k.t.Fatal(err)
	}
	return binary.LittleEndian.Uint32(b[:])
}

// memcpy is ndma_memcpy (neuron_dma.c:566-569): ndma_memcpy_offset_move
// with both sides moving.
func (k *h2tDriver) memcpy(src, dst uint64, size uint64) error {
	return k.offsetMove(src, dst, size, true, true)
}

// h2tSyncThreshold is ndma_memcpy_chunks' sync_threshold: DMA_H2T_DESC_COUNT/2
// − UDMA_MAX_NUM_CDESC_PER_CACHE_LINE − 1 (neuron_dma.c:311). The batch ends
// on the pair added when this many are pending, so a batch holds up to 2032
// data pairs and the completion pair.
const h2tSyncThreshold = 4096/2 - h2tCDescPerLine - 1

// offsetMove is ndma_memcpy_offset_move for a synchronous copy
// (neuron_dma.c:428-530): batches of ndma_memcpy_chunks (neuron_dma.c:301-366)
// — data pairs of at most 64 KiB, the source and destination advancing per
// smove/dmove, the last pair of a batch with V2/V3's write barrier
// (v2:1512-1518, v3:1801-1807), then the completion pair
// (neuron_dma.c:194-222: marker word → the next word), the doorbells S2M then
// M2S (udma/udma_m2m.c:413-444) — each waited for with the marker poll
// (neuron_dma.c:224-277) and the driver's budget for the generation and mode
// (v2:1309-1331, v3:1569-1591). It returns an error when the driver would
// time out.
func (k *h2tDriver) offsetMove(src, dst, size uint64, smove, dmove bool) error {
	k.t.Helper()
	var offset uint64
	remaining := size
	for {
		k.hostWrite(k.completion, binary.LittleEndian.AppendUint32(nil, udma.Marker)) // WRITE_ONCE(*src, marker)
		k.hostWrite(k.completion+h2tMarkerSize, make([]byte, 4))                      // WRITE_ONCE(*dst, 0)
		left, pending, done := remaining, uint32(0), false
		for !done {
			chunk := min(left, h2tMaxDesc)
			if chunk == left || pending == h2tSyncThreshold {
				done = true
			}
			s, d := src, dst
			if smove {
				s += offset + (remaining - left)
			}
			if dmove {
				d += offset + (remaining - left)
			}
			k.prepareOne(s, d, uint32(chunk), done)
			left -= chunk
			pending++
		}
		c := k.hostAddr(k.completion) // virt_to_phys(completion) | pci_host_base (neuron_dma.c:210)
		k.prepareOne(c, c+h2tMarkerSize, h2tMarkerSize, false)
		pending++
		k.w(k.qreg(udma.S2M, udma.QTailInc), pending) // udma_desc_action_add: mb(), then the doorbell (udma/udma_main.c:674-684)
		k.w(k.qreg(udma.M2S, udma.QTailInc), pending)
		if err := k.waitMarker(pending); err != nil {
			return err
		}
		outstanding := remaining - left
		if left == 0 {
			return nil
		}
		remaining -= outstanding
		offset += outstanding
	}
}

// waitMarker is ndma_memcpy_wait_for_completion (neuron_dma.c:224-277) for
// count descriptors of a synchronous copy.
func (k *h2tDriver) waitMarker(count uint32) error {
	k.t.Helper()
	est := uint64(4 * (count - 1)) // µs per descriptor: V2 4, V3/V4 2
	first := est - 3
	if k.geo.Generation != hwarch.Sunda {
		est = uint64(2 * (count - 1))
		first = est - 1
	}
	wait := (est*100 - first) * 100
	switch k.d.Identity().Mode() {
	case hwarch.ModeQEMU:
		wait *= 10 * 1000
	case hwarch.ModeEMU:
		wait *= 100 * 1000
	}
	loop := wait + 1
	if err := k.d.Sleep(time.Duration(first) * time.Microsecond); err != nil { // udelay(first_wait_time)
		return err
	}
	for i := uint64(0); i <= loop; i++ {
		k.polls = int(i) + 1
		if k.hostRead32(k.completion+h2tMarkerSize) == udma.Marker {
			k.hostWrite(k.completion+h2tMarkerSize, make([]byte, 4))
			k.hostWrite(k.completion, binary.LittleEndian.AppendUint32(nil, udma.Marker))
			// ndma_ack_completed_desc: udma_cdesc_ack on both halves, software only (udma/udma.h:404-420).
			k.rx.cidx = (k.rx.cidx + count) & (h2tRingDescs - 1)
			k.tx.cidx = (k.tx.cidx + count) & (h2tRingDescs - 1)
			return nil
		}
		// The model is deterministic: once the queue is halted, or has
		// nothing in flight and nothing available, no more waiting can
		// bring the marker. Stop there instead of spinning through the
		// driver's whole budget (minutes of polls under QEMU).
		if qs, err := k.d.DMAQueue(k.eng, k.q); err != nil || qs.Status&udma.StatusHalted != 0 || !qs.InFlight && (qs.M2S.Avail == 0 || qs.S2M.Avail == 0) {
			break
		}
		if err := k.d.Sleep(time.Microsecond); err != nil { // udelay(1)
			return err
		}
	}
	qs, _ := k.d.DMAQueue(k.eng, k.q)
	return fmt.Errorf("DMA completion timeout on engine %d q%d after %d polls (the driver's -1): queue status %#x, engine state %#x, M2S head %d avail %d, S2M head %d avail %d",
		k.eng, k.q, k.polls, qs.Status, k.r(udma.M2S+udma.EngineState), qs.M2S.Head, qs.M2S.Avail, qs.S2M.Head, qs.S2M.Avail)
}

// bufCopy is ncdev_mem_buf_copy for device memory (neuron_cdev.c:1096-1143):
// 64 KiB at a time through the bounce buffer, to the device
// (ndma_memcpy_buf_to_mc, neuron_dma.c:664-683) or from it
// (ndma_memcpy_buf_from_mc, 685-704).
func (k *h2tDriver) bufCopy(devAddr uint64, buf []byte, toDevice bool) error {
	for off := 0; off < len(buf); off += h2tMaxDesc {
		n := min(h2tMaxDesc, len(buf)-off)
		if toDevice {
			k.hostWrite(k.bounce, buf[off:off+n]) // copy_from_user into the bounce
			if err := k.memcpy(k.hostAddr(k.bounce), devAddr+uint64(off), uint64(n)); err != nil {
				return err
			}
			continue
		}
		if err := k.memcpy(devAddr+uint64(off), k.hostAddr(k.bounce), uint64(n)); err != nil {
			return err
		}
		if err := k.d.HostRead(k.bounce, buf[off:off+n]); err != nil { // copy_to_user from the bounce
			return err
		}
	}
	return nil
}

func newH2TDriver(t *testing.T, gen hwarch.Generation, rev uint8, nc int) *h2tDriver {
	t.Helper()
	d, err := NewDevice(DeviceConfig{Generation: gen, Revision: rev, Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	geo := d.Geometry()
	eng, q, err := udma.H2TEngine(geo, nc) // ndmar_get_h2t_eng_id / _qid (v2:528-542, v3:734-755)
	if err != nil {
		t.Fatal(err)
	}
	base, err := udma.EngineBAR0(geo, eng)
	if err != nil {
		t.Fatal(err)
	}
	return &h2tDriver{t: t, d: d, geo: geo, bar: d.RegisterBAR(), eng: eng, q: q, engBase: base}
}

// TestDriverH2TCopy: MEM_BUF_COPY64 of 1 MiB + 3 bytes into device memory
// and back, programmed as driver 2.24.7.0 programs the H2T queue, on every
// generation and mode; the driver's marker poll sees its marker within the
// driver's wait budget, and the bytes read back are the bytes written.
func TestDriverH2TCopy(t *testing.T) {
	for _, tc := range []struct {
		gen hwarch.Generation
		rev uint8
		nc  int
	}{
		{hwarch.Sunda, hwarch.RevisionQEMU, 0},
		{hwarch.Sunda, 0, 1},
		{hwarch.Cayman, hwarch.RevisionQEMU, 0},
		{hwarch.Cayman, hwarch.RevisionEMU, 3},
		{hwarch.Mariana, 0, 6},
	} {
		t.Run(fmt.Sprintf("%s_rev%#x_nc%d", tc.gen, tc.rev, tc.nc), func(t *testing.T) {
			k := newH2TDriver(t, tc.gen, tc.rev, tc.nc)
			k.engineInit()
			k.ringInit()
			dev := k.geo.HBM[0].Base + 0x10_0000 // an mc of device memory (mc->pa, neuron_dma.c:677)
			src := make([]byte, 1<<20+3)
			for i := range src {
				src[i] = byte(i*31 + i>>11)
			}
			if err := k.bufCopy(dev, src, true); err != nil {
				t.Fatal(err)
			}
			back := make([]byte, len(src))
			if err := k.bufCopy(dev, back, false); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(src, back) {
				t.Fatal("the bytes read back from device memory differ from those written")
			}
			qs, err := k.d.DMAQueue(k.eng, k.q)
			if err != nil {
				t.Fatal(err)
			}
			const pairs = 2 * 17 * 2 // 17 chunks each way, each a data pair and a completion pair
			if qs.Status != 0 || qs.Done != pairs || qs.M2S.Head != pairs || qs.S2M.Head != pairs {
				t.Fatalf("queue after the copies: status %#x, %d pairs done, heads %d/%d; want status 0, %d pairs", qs.Status, qs.Done, qs.M2S.Head, qs.S2M.Head, pairs)
			}
		})
	}
}

// TestDriverH2TRingWrap: enough small copies to wrap the driver's 8192-slot
// rings, so the ring id (phase) advances from 1 to 2 the way
// udma_ring_id_get computes it, and the free-slot rule of
// udma_available_get holds the driver 16 slots short of the ring.
func TestDriverH2TRingWrap(t *testing.T) {
	for _, gen := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		t.Run(gen.String(), func(t *testing.T) {
			k := newH2TDriver(t, gen, hwarch.RevisionQEMU, 1)
			k.engineInit()
			k.ringInit()
			dev := k.geo.HBM[0].Base
			for i := range h2tRingDescs/2 + 5 {
				w := binary.LittleEndian.AppendUint32(nil, uint32(i)^0xA5A5_0000)
				if err := k.bufCopy(dev+uint64(i%64)*4, w, true); err != nil {
					t.Fatalf("copy %d: %v", i, err)
				}
			}
			back := make([]byte, 4)
			if err := k.bufCopy(dev+4*((h2tRingDescs/2+4)%64), back, false); err != nil {
				t.Fatal(err)
			}
			if got, want := binary.LittleEndian.Uint32(back), uint32(h2tRingDescs/2+4)^0xA5A5_0000; got != want {
				t.Fatalf("read back %#x, want %#x", got, want)
			}
			if k.tx.ringID != 2 || k.rx.ringID != 2 {
				t.Fatalf("driver ring ids %d/%d, want 2 after one wrap", k.tx.ringID, k.rx.ringID)
			}
			head := k.r(k.qreg(udma.M2S, udma.QHead))
			if want := uint32(2)<<30 | k.tx.next; head != want {
				t.Fatalf("M2S head register %#x, want %#x (index %d, phase 2)", head, want, k.tx.next)
			}
		})
	}
}

// TestDriverH2TMemset: NEURON_IOCTL_MEMSET64 of device memory as ndma_memset
// does it (neuron_dma.c:532-565): the first 64 KiB from the driver's memset
// host buffer, the rest device to device from that first chunk (the source
// fixed, the destination moving) in batches of up to 2032 data pairs and a
// completion pair per doorbell — more than one batch here.
func TestDriverH2TMemset(t *testing.T) {
	for _, gen := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		t.Run(gen.String(), func(t *testing.T) {
			k := newH2TDriver(t, gen, 0, 0)
			k.engineInit()
			k.ringInit()
			memsetBuf, err := k.d.HostAlloc(h2tMaxDesc, 4096) // nd->memset_mc (neuron_pci.c:287)
			if err != nil {
				t.Fatal(err)
			}
			const size = (h2tSyncThreshold+1)*h2tMaxDesc + 3*h2tMaxDesc + 100
			dev := k.geo.HBM[0].Base + 0x20_0000
			fill := bytes.Repeat([]byte{0x5A}, h2tMaxDesc)
			k.hostWrite(memsetBuf, fill) // memset(memset_mc->va, value, transfer_size)
			if err := k.memcpy(k.hostAddr(memsetBuf), dev, h2tMaxDesc); err != nil {
				t.Fatal(err)
			}
			if err := k.offsetMove(dev, dev+h2tMaxDesc, size-h2tMaxDesc, false, true); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, size+8)
			if err := k.d.hbm.Read(dev, got); err != nil {
				t.Fatal(err)
			}
			for i, b := range got {
				if want := byte(0x5A); i >= size {
					want = 0
					if b != want {
						t.Fatalf("byte %d past the memset is %#x", i-size, b)
					}
				} else if b != want {
					t.Fatalf("byte %d of %d is %#x, want %#x", i, size, b, want)
				}
			}
			qs, _ := k.d.DMAQueue(k.eng, k.q)
			const pairs = 2 + (h2tSyncThreshold + 1) + 1 + 3 + 1 // the first chunk and its marker; a full batch of 2032 and its marker; 2 × 64 KiB + 100 B and its marker
			if qs.Done != pairs || qs.Status != 0 {
				t.Fatalf("%d pairs done, status %#x; want %d, 0", qs.Done, qs.Status, pairs)
			}
		})
	}
}
