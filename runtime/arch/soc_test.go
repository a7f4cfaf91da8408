package arch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func TestSocConstants(t *testing.T) {
	tests := []struct {
		gen       hwarch.Generation
		partition uint64
		sengMLA   int
	}{
		{hwarch.Sunda, 0x30000, 2},
		{hwarch.Cayman, 0x38000, 4},
		{hwarch.Mariana, 0x40000, 4},
	}
	for _, tt := range tests {
		t.Run(tt.gen.String(), func(t *testing.T) {
			s := tables(t, tt.gen).Soc
			assert.Equal(t, 16, s.NumSBPorts())
			assert.Equal(t, tt.partition, s.ValidSBUFPartitionSize())
			assert.Equal(t, tt.sengMLA, s.NumSenginesPerMLA())
			assert.Equal(t, 2, s.InterRDHFoldN())
			assert.Equal(t, uint64(0x2000000), s.SBUFWindowSize())
		})
	}
}

// The leaf is mov $0xffffff80,%eax; ret. Read as a signed int it is -128; the
// slot is uint8_t (*)(), so the runtime sees the low byte: 128.
func TestNumSBUFPartitionsIsUint8(t *testing.T) {
	for _, g := range hwarch.Generations() {
		s := tables(t, g).Soc
		raw := s.NumSBUFPartitionsRaw()
		assert.EqualValues(t, -128, raw)
		assert.Equal(t, uint32(0xffffff80), uint32(raw), "the leaf's immediate")
		assert.Equal(t, uint8(128), s.NumSBUFPartitions())
		assert.Equal(t, 128, int(s.NumSBUFPartitions()), "used as a count it is 128, not -128")
	}
}

func TestIsAddressInSBUF(t *testing.T) {
	bases := []uint64{0x2000000000, 0x3000000000, 0x6000000000, 0x7000000000,
		0x802000000000, 0x803000000000, 0x806000000000, 0x807000000000}
	for _, g := range []hwarch.Generation{hwarch.Cayman, hwarch.Mariana} {
		s := tables(t, g).Soc
		assert.Equal(t, bases, s.SBUFBaseAddresses(), "cayman and mariana share one table")
		for _, b := range bases {
			assert.True(t, s.IsAddressInSBUF(b))
			assert.True(t, s.IsAddressInSBUF(b+0x2000000-1))
			assert.False(t, s.IsAddressInSBUF(b+0x2000000), "window end is exclusive")
			assert.False(t, s.IsAddressInSBUF(b-1))
		}
		assert.False(t, s.IsAddressInSBUF(0))
		assert.False(t, s.IsAddressInSBUF(0x20000000), "the truncated 32-bit reading is wrong")
	}
	s := tables(t, hwarch.Sunda).Soc
	assert.True(t, s.IsAddressInSBUF(0xFFF_C000_0000))
	assert.True(t, s.IsAddressInSBUF(0xFFF_C400_0000+0x1FF_FFFF))
	assert.False(t, s.IsAddressInSBUF(0x802000000000), "sunda has no mesh half")
	assert.False(t, s.IsAddressInSBUF(0x2000000000))
}

func TestSocTPBDecomposition(t *testing.T) {
	m := tables(t, hwarch.Mariana).Soc
	for idx := 0; idx < 8; idx++ {
		seng, err := m.SENGIdxFromTPBIdx(idx)
		require.NoError(t, err)
		assert.Equal(t, idx>>1, seng)
		die, err := m.DieIdxFromTPBIdx(idx)
		require.NoError(t, err)
		assert.Equal(t, idx>>2, die)
	}
	_, err := m.SENGIdxFromTPBIdx(8)
	assert.ErrorIs(t, err, ErrTPBIndex)
	_, err = m.DieIdxFromTPBIdx(-1)
	assert.ErrorIs(t, err, ErrTPBIndex)
	s := tables(t, hwarch.Sunda).Soc
	seng, err := s.SENGIdxFromTPBIdx(1)
	require.NoError(t, err)
	assert.Equal(t, 0, seng, "the seed's >>1 holds on sunda too")
	_, err = s.SENGIdxFromTPBIdx(2)
	assert.ErrorIs(t, err, ErrTPBIndex)
}

func TestQueueBundleIDForQset(t *testing.T) {
	s := tables(t, hwarch.Cayman).Soc
	for qb, want := range map[uint32]uint32{0: 0, 3: 0, 4: 4, 7: 4, 100: 4} {
		assert.Equal(t, want, s.QueueBundleIDForQset(qb), "qb %d", qb)
	}
}

func TestRelQueueIdx(t *testing.T) {
	for _, g := range hwarch.Generations() {
		s := tables(t, g).Soc
		assert.Equal(t, []QueueIdxEntry{{0x0b, 0}, {0x0c, 1}, {0x0d, 2}, {0x0f, 3}}, s.QueueIdxTable())
		for id, want := range map[uint32]uint32{0x0b: 0, 0x0c: 1, 0x0d: 2, 0x0f: 3} {
			got, err := s.RelQueueIdx(id)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		}
		// 0x0f maps to 3, not 0x0f-0x0b = 4: the table is a scan, not an offset.
		got, _ := s.RelQueueIdx(0x0f)
		assert.NotEqual(t, uint32(0x0f-0x0b), got)
		for _, bad := range []uint32{0x0e, 0x0a, 0x10, 0} {
			_, err := s.RelQueueIdx(bad)
			assert.ErrorIs(t, err, ErrInvalidQueueID, "queue %#x", bad)
		}
	}
}

func TestInterRDHDMAID(t *testing.T) {
	want := map[hwarch.Generation][3]int32{
		hwarch.Sunda: {0, 1, 0}, hwarch.Cayman: {4, 5, 0}, hwarch.Mariana: {4, 5, 0},
	}
	for g, m := range want {
		s := tables(t, g).Soc
		assert.Equal(t, m, s.InterRDHDMAMap())
		for i := uint32(0); i <= 2; i++ {
			assert.Equal(t, m[i], s.InterRDHDMAID(i))
		}
		for _, idx := range []uint32{3, 4, 0xFFFF_FFFF} {
			assert.Equal(t, int32(-1), s.InterRDHDMAID(idx), "idx %d is the -1 sentinel", idx)
		}
	}
}

func TestP2PPortTable(t *testing.T) {
	s := tables(t, hwarch.Sunda).Soc
	p0, err := s.P2PPortInfo(0)
	require.NoError(t, err)
	assert.Equal(t, 3, p0.FoldN, "sunda entry 0 fold_n")
	assert.Equal(t, 3, p0.LinkN, "sunda entry 0 link_n")
	for _, g := range hwarch.Generations() {
		s := tables(t, g).Soc
		inv, err := s.P2PPortInfo(TDRVHWPortInvalid)
		require.NoError(t, err, "port 12 (TDRV_HW_PORT_INVALID) is inside the table")
		assert.Equal(t, P2PPort{}, inv)
		for port := 0; port < TDRVHWPortInvalid; port++ {
			fold, err := s.P2PPortFoldN(port)
			require.NoError(t, err)
			assert.Equal(t, 3, fold)
		}
		_, err = s.P2PPortFoldN(13)
		assert.ErrorIs(t, err, ErrIndex)
		_, err = s.P2PPortInfo(-1)
		assert.ErrorIs(t, err, ErrIndex)
	}
	assert.Equal(t, 72, P2PRecordOffset(1))
	assert.Equal(t, 12*72, P2PRecordOffset(TDRVHWPortInvalid))
}

func TestMaxLinksPerPodPort(t *testing.T) {
	v, err := tables(t, hwarch.Cayman).Soc.MaxLinksPerPodPort()
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	v, err = tables(t, hwarch.Mariana).Soc.MaxLinksPerPodPort()
	require.NoError(t, err)
	assert.Equal(t, 2, v)
	_, err = tables(t, hwarch.Sunda).Soc.MaxLinksPerPodPort()
	assert.ErrorIs(t, err, ErrLeafAborts, "the sunda leaf asserts")
}

func TestFabricExtent(t *testing.T) {
	tests := []struct {
		gen         hwarch.Generation
		sw          hwarch.SwitchFamily
		devs, folds int
	}{
		{hwarch.Sunda, hwarch.SwitchNone, 16, 8},
		{hwarch.Sunda, hwarch.SwitchV1, 16, 8},
		{hwarch.Cayman, hwarch.SwitchNone, 16, 8},
		{hwarch.Cayman, hwarch.SwitchV1, 16, 8},
		{hwarch.Mariana, hwarch.SwitchNone, 16, 8},
		{hwarch.Mariana, hwarch.SwitchV1, 32, 16}, // v1 doubles the extent
	}
	for _, tt := range tests {
		t.Run(tt.gen.String()+"/"+tt.sw.String(), func(t *testing.T) {
			tab, err := For(tt.gen, Options{Switch: tt.sw})
			require.NoError(t, err)
			assert.Equal(t, tt.devs, tab.Soc.MaxDevs())
			assert.Equal(t, tt.folds, tab.Soc.MeshMaxFolds())
			assert.Equal(t, tt.sw, tab.Soc.SwitchFamily())
		})
	}
	// The branchless idiom: sbb gives 0 (v1) or ~0; and mask; add base.
	assert.Equal(t, uint32(0x20), v1Toggle(true, 0xFFFF_FFF0, 0x20))
	assert.Equal(t, uint32(0x10), v1Toggle(false, 0xFFFF_FFF0, 0x20))
	assert.Equal(t, uint32(0x10), v1Toggle(true, 0xFFFF_FFF8, 0x10))
	assert.Equal(t, uint32(0x08), v1Toggle(false, 0xFFFF_FFF8, 0x10))
}

func TestSocSlots(t *testing.T) {
	want := map[string]int{
		"get_num_sb_ports": 424, "get_valid_sbuf_partition_size": 560, "get_num_sbuf_partitions": 576,
		"get_inter_rdh_fold_n": 544, "get_inter_rdh_dma_id": 552, "get_rel_queue_idx": 632,
		"get_seng_idx_from_tpb_idx": 648, "get_die_idx_from_tpb_idx": 640, "get_max_devs": 680,
		"get_mesh_max_folds": 736, "get_p2p_port_fold_n": 16, "get_max_links_per_pod_port": 368,
		"get_queue_bundle_id_for_qset": 336, "is_address_in_sbuf": 392, "get_num_sengines_per_mla": 584,
	}
	assert.Len(t, SocSlots, len(want))
	seen := map[int]bool{}
	for _, s := range SocSlots {
		assert.Equal(t, want[s.Name], s.Offset, s.Name)
		assert.Zero(t, s.Offset%8, "%s: function pointers are 8-byte aligned", s.Name)
		assert.Less(t, s.Offset, SocStructSize)
		assert.False(t, seen[s.Offset], "slot offset %d used twice", s.Offset)
		seen[s.Offset] = true
		off, ok := SocSlotOffset(s.Name)
		assert.True(t, ok)
		assert.Equal(t, s.Offset, off)
	}
	assert.Equal(t, 0x2E8, SocStructSize)
	_, ok := SocSlotOffset("get_nothing")
	assert.False(t, ok)
}
