package arch

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Soc is the encoder's fabric geometry: the geometry band of the 744-byte
// soc_struct_t that *_arch_init fills (seed 000). Slot offsets are kept as
// metadata in SocSlots.
type Soc struct {
	gen                hwarch.Generation
	switchFamily       hwarch.SwitchFamily
	numTPB             int
	numSBPorts         int
	partitionSize      uint64
	numPartitionsRaw   int32 // the leaf's immediate: 0xffffff80
	sbufBases          []uint64
	sbufWindow         uint64
	sengPerMLA         int
	interRDHFoldN      int
	interRDHDMAMap     [3]int32
	queueIdx           []QueueIdxEntry
	p2p                []P2PPort
	maxLinksPerPodPort int // 0: the leaf asserts
	maxDevs            int // sunda/cayman constant; mariana computed
	meshMaxFolds       int
}

// QueueIdxEntry is one {queue_id, rel_queue_idx} record of <arch>_queue_idx.
type QueueIdxEntry struct {
	QueueID    uint32
	RelQueueID uint32
}

// MLALocation is one link end of a p2p port record: the sequencer engine and
// NeuronCore (TPB) that drive the link.
type MLALocation struct {
	SENG int
	TPB  int
}

// P2PPort is one 72-byte record of <arch>_p2p_port_info_tbl:
// {int fold_n@+0, int link_n@+4, mla_location_t links[16]@+8}.
type P2PPort struct {
	FoldN int
	LinkN int
	Links [16]MLALocation
}

// TDRVHWPortInvalid is TDRV_HW_PORT_INVALID, the last record of the p2p table.
const TDRVHWPortInvalid = 12

// p2pRecordStride is the size of one p2p port record (lea (rdi,rdi,8) then ×8).
const p2pRecordStride = 72

// p2pTable builds a 13-record table. Only sunda's record 0 ({fold_n 3,
// link_n 3}) is decoded in seed 000; the rest is the project's choice,
// documented in docs/seed-conformance.md: every physical port 0..11 has
// fold_n 3 and link_n links driven round-robin by the SENGs (first TPB of
// each), and the INVALID record 12 is all zero.
func p2pTable(numSENG, tpbPerSENG, linkN int) []P2PPort {
	t := make([]P2PPort, TDRVHWPortInvalid+1)
	for port := 0; port < TDRVHWPortInvalid; port++ {
		p := &t[port]
		p.FoldN, p.LinkN = 3, linkN
		for l := 0; l < linkN; l++ {
			seng := (port + l) % numSENG
			p.Links[l] = MLALocation{SENG: seng, TPB: seng * tpbPerSENG}
		}
	}
	return t
}

var sharedQueueIdx = []QueueIdxEntry{{0x0b, 0}, {0x0c, 1}, {0x0d, 2}, {0x0f, 3}}

// bigChipSBUFBases is cayman_sbuf_base_addresses == mariana_sbuf_base_addresses:
// the eight 32 MiB SBUF tile windows, tiles 4..7 carrying the mesh bit 47.
var bigChipSBUFBases = []uint64{
	0x20_0000_0000, 0x30_0000_0000, 0x60_0000_0000, 0x70_0000_0000,
	0x8020_0000_0000, 0x8030_0000_0000, 0x8060_0000_0000, 0x8070_0000_0000,
}

func newSoc(gen hwarch.Generation, family hwarch.SwitchFamily) *Soc {
	s := &Soc{
		gen: gen, switchFamily: family, numSBPorts: 16, numPartitionsRaw: -128,
		sbufWindow: 0x200_0000, interRDHFoldN: 2, queueIdx: sharedQueueIdx,
	}
	switch gen {
	case hwarch.Sunda:
		s.numTPB, s.partitionSize, s.sengPerMLA = 2, 0x30000, 2
		// Chosen: a single-mesh table of the two NeuronCores' TPB windows
		// (device 0xFFF_C000_0000 + n·0x400_0000, driver-facts §2.2).
		s.sbufBases = []uint64{0xFFF_C000_0000, 0xFFF_C400_0000}
		s.interRDHDMAMap = [3]int32{0, 1, 0}
		s.p2p = p2pTable(2, 1, 3)
		s.maxDevs, s.meshMaxFolds = 16, 8
	case hwarch.Cayman, hwarch.Mariana:
		s.numTPB, s.sengPerMLA = 8, 4
		s.sbufBases = bigChipSBUFBases
		s.interRDHDMAMap = [3]int32{4, 5, 0}
		if gen == hwarch.Cayman {
			s.partitionSize, s.maxLinksPerPodPort = 0x38000, 1
			s.maxDevs, s.meshMaxFolds = 16, 8
		} else {
			s.partitionSize, s.maxLinksPerPodPort = 0x40000, 2
			s.maxDevs = int(v1Toggle(family.IsV1(), 0xFFFF_FFF0, 0x20))
			s.meshMaxFolds = int(v1Toggle(family.IsV1(), 0xFFFF_FFF8, 0x10))
		}
		s.p2p = p2pTable(4, 2, s.maxLinksPerPodPort)
	}
	return s
}

// v1Toggle is the branchless idiom of mariana_get_max_devs and
// mariana_get_mesh_max_folds: cmp $1,%al; sbb %eax,%eax gives 0 for a v1
// switch and all ones otherwise; and mask; add base. With mask 0xfffffff0 and
// base 0x20 that is 32 or 16; with 0xfffffff8 and 0x10 it is 16 or 8.
func v1Toggle(v1 bool, mask, base uint32) uint32 {
	var sbb uint32
	if !v1 {
		sbb = ^uint32(0)
	}
	return sbb&mask + base
}

// Generation returns the generation these tables describe.
func (s *Soc) Generation() hwarch.Generation { return s.gen }

// SwitchFamily returns the switch family the extent leaves were evaluated for.
func (s *Soc) SwitchFamily() hwarch.SwitchFamily { return s.switchFamily }

// NumSBPorts returns the SBUF ports of a NeuronCore (<arch>_get_num_sb_ports, slot +424): 16.
func (s *Soc) NumSBPorts() int { return s.numSBPorts }

// ValidSBUFPartitionSize returns the SBUF partition size
// (<arch>_get_valid_sbuf_partition_size, slot +560): 0x30000 / 0x38000 / 0x40000.
func (s *Soc) ValidSBUFPartitionSize() uint64 { return s.partitionSize }

// NumSBUFPartitionsRaw returns the leaf's raw return value
// (<arch>_get_num_sbuf_partitions: mov $0xffffff80,%eax), which read as a
// signed int is -128.
func (s *Soc) NumSBUFPartitionsRaw() int32 { return s.numPartitionsRaw }

// NumSBUFPartitions returns the SBUF partitions (<arch>_get_num_sbuf_partitions,
// slot +576). The slot is typed uint8_t (*)(), so the caller keeps only the low
// byte of 0xffffff80: 128.
func (s *Soc) NumSBUFPartitions() uint8 { return uint8(s.numPartitionsRaw) }

// SBUFBaseAddresses returns the SBUF window bases is_address_in_sbuf walks
// (<arch>_sbuf_base_addresses).
func (s *Soc) SBUFBaseAddresses() []uint64 { return append([]uint64(nil), s.sbufBases...) }

// IsAddressInSBUF reports whether a device address lies in one of the SBUF
// windows [base, base+0x2000000) (<arch>_is_address_in_sbuf, slot +392).
func (s *Soc) IsAddressInSBUF(addr uint64) bool {
	for _, b := range s.sbufBases {
		if addr >= b && addr-b < s.sbufWindow {
			return true
		}
	}
	return false
}

// SBUFWindowSize returns the window size is_address_in_sbuf tests (V2_SBUF_SIZE, 32 MiB).
func (s *Soc) SBUFWindowSize() uint64 { return s.sbufWindow }

func (s *Soc) checkTPB(what string, idx int) error {
	if idx < 0 || idx >= s.numTPB {
		return fmt.Errorf("%s %s: tpb idx %d: %w (num_tpb %d)", s.gen, what, idx, ErrTPBIndex, s.numTPB)
	}
	return nil
}

// SENGIdxFromTPBIdx returns the sequencer engine of a NeuronCore
// (<arch>_get_seng_idx_from_tpb_idx, slot +648): idx>>1 on every generation.
// The leaf itself does not check its input; this accessor refuses idx ≥ num_tpb.
func (s *Soc) SENGIdxFromTPBIdx(idx int) (int, error) {
	if err := s.checkTPB("get_seng_idx_from_tpb_idx", idx); err != nil {
		return 0, err
	}
	return idx >> 1, nil
}

// DieIdxFromTPBIdx returns the die of a NeuronCore
// (<arch>_get_die_idx_from_tpb_idx, slot +640): idx>>2 on every generation.
func (s *Soc) DieIdxFromTPBIdx(idx int) (int, error) {
	if err := s.checkTPB("get_die_idx_from_tpb_idx", idx); err != nil {
		return 0, err
	}
	return idx >> 2, nil
}

// NumSenginesPerMLA returns the sequencer engines per MLA
// (<arch>_get_num_sengines_per_mla, slot +584): 2 / 4 / 4.
func (s *Soc) NumSenginesPerMLA() int { return s.sengPerMLA }

// QueueBundleIDForQset returns the queue bundle of a queue set
// (<arch>_get_queue_bundle_id_for_qset, slot +336): 4·(qb>3).
func (s *Soc) QueueBundleIDForQset(qb uint32) uint32 {
	if qb > 3 {
		return 4
	}
	return 0
}

// QueueIdxTable returns <arch>_queue_idx: {0x0b→0, 0x0c→1, 0x0d→2, 0x0f→3}.
func (s *Soc) QueueIdxTable() []QueueIdxEntry { return append([]QueueIdxEntry(nil), s.queueIdx...) }

// RelQueueIdx maps a physical queue id to its relative index by a linear scan
// of <arch>_queue_idx (<arch>_get_rel_queue_idx, slot +632). The ids are
// sparse: 0x0e, like every id not in the table, is NRT_INVALID (ErrInvalidQueueID).
func (s *Soc) RelQueueIdx(queueID uint32) (uint32, error) {
	for _, e := range s.queueIdx {
		if e.QueueID == queueID {
			return e.RelQueueID, nil
		}
	}
	return 0, fmt.Errorf("%s get_rel_queue_idx: queue id %#x: %w", s.gen, queueID, ErrInvalidQueueID)
}

// InterRDHFoldN returns the folds between reduction half-domains
// (<arch>_get_inter_rdh_fold_n, slot +544): 2.
func (s *Soc) InterRDHFoldN() int { return s.interRDHFoldN }

// NoInterRDHDMA is get_inter_rdh_dma_id's out-of-range sentinel (-1).
const NoInterRDHDMA int32 = -1

// InterRDHDMAID returns the DMA engine bridging reduction half-domain idx
// (<arch>_get_inter_rdh_dma_id, slot +552): map[idx] for idx ≤ 2 — {4,5,0} on
// cayman/mariana, {0,1,0} on sunda — and -1 (NoInterRDHDMA) beyond.
func (s *Soc) InterRDHDMAID(idx uint32) int32 {
	if idx > 2 {
		return NoInterRDHDMA
	}
	return s.interRDHDMAMap[idx]
}

// InterRDHDMAMap returns the whole <arch>_inter_rdh_dma_map.
func (s *Soc) InterRDHDMAMap() [3]int32 { return s.interRDHDMAMap }

// P2PPortInfo returns record port of <arch>_p2p_port_info_tbl, for
// port ≤ TDRV_HW_PORT_INVALID (12); beyond is ErrIndex.
func (s *Soc) P2PPortInfo(port int) (P2PPort, error) {
	if port < 0 || port > TDRVHWPortInvalid {
		return P2PPort{}, fmt.Errorf("%s p2p_port_info_tbl[%d]: %w (ports 0..%d, %d is TDRV_HW_PORT_INVALID)",
			s.gen, port, ErrIndex, TDRVHWPortInvalid, TDRVHWPortInvalid)
	}
	return s.p2p[port], nil
}

// P2PPortFoldN returns tbl[port].fold_n (<arch>_get_p2p_port_fold_n, slot +16).
func (s *Soc) P2PPortFoldN(port int) (int, error) {
	p, err := s.P2PPortInfo(port)
	return p.FoldN, err
}

// P2PRecordOffset returns the byte offset of a port's record in the table (stride 72).
func P2PRecordOffset(port int) int { return port * p2pRecordStride }

// MaxLinksPerPodPort returns the links per pod port
// (<arch>_get_max_links_per_pod_port, slot +368): cayman 1, mariana 2. The
// sunda leaf asserts, so on sunda this is an error wrapping ErrLeafAborts.
func (s *Soc) MaxLinksPerPodPort() (int, error) {
	if s.maxLinksPerPodPort == 0 {
		return 0, fmt.Errorf("%s get_max_links_per_pod_port: %w", s.gen, ErrLeafAborts)
	}
	return s.maxLinksPerPodPort, nil
}

// MaxDevs returns the devices the fabric spans (<arch>_get_max_devs, slot +680):
// 16 on sunda and cayman; on mariana 32 when the switch is NeuronSwitch-v1
// (nrt_is_neuron_switch_v1_family) and 16 otherwise.
func (s *Soc) MaxDevs() int { return s.maxDevs }

// MeshMaxFolds returns the folds a mesh collective may take
// (<arch>_get_mesh_max_folds, slot +736): 8 on sunda and cayman; on mariana 16
// with a v1 switch and 8 otherwise.
func (s *Soc) MeshMaxFolds() int { return s.meshMaxFolds }

// Slot is one soc_struct_t function-pointer slot of the geometry band.
type Slot struct {
	Offset int    // byte offset in soc_struct_t (DWARF)
	Name   string // slot member name
}

// SocStructSize is sizeof(soc_struct_t): 744 bytes (0x2E8).
const SocStructSize = 744

// SocSlots lists the geometry-band slots of soc_struct_t with their byte
// offsets, in the order mariana_arch_init writes them.
var SocSlots = []Slot{
	{424, "get_num_sb_ports"},
	{560, "get_valid_sbuf_partition_size"},
	{576, "get_num_sbuf_partitions"},
	{392, "is_address_in_sbuf"},
	{648, "get_seng_idx_from_tpb_idx"},
	{640, "get_die_idx_from_tpb_idx"},
	{584, "get_num_sengines_per_mla"},
	{336, "get_queue_bundle_id_for_qset"},
	{632, "get_rel_queue_idx"},
	{544, "get_inter_rdh_fold_n"},
	{552, "get_inter_rdh_dma_id"},
	{16, "get_p2p_port_fold_n"},
	{368, "get_max_links_per_pod_port"},
	{680, "get_max_devs"},
	{736, "get_mesh_max_folds"},
}

// SocSlotOffset returns the soc_struct_t offset of a slot by name.
func SocSlotOffset(name string) (int, bool) {
	for _, s := range SocSlots {
		if s.Name == name {
			return s.Offset, true
		}
	}
	return 0, false
}
