package arch

import (
	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Provenance says where a value comes from.
type Provenance uint8

// The provenances, as docs/seed-conformance.md marks them.
const (
	Seed    Provenance = iota // read from a seed table or code block
	Derived                   // worked out from the reference facts or from other seed values
	Chosen                    // the project's choice where nothing gives a value
)

// String returns "seed", "derived" or "chosen".
func (p Provenance) String() string {
	return [...]string{"seed", "derived", "chosen"}[p]
}

// Property is one row of the arch report: a value every generation has, where
// it comes from, and the test that pins it.
type Property struct {
	Key      string        // JSON key: the seed leaf name without arch prefix and aws_hal_
	Group    string        // "geometry", "tdrv", "soc" or "khal"
	Symbol   string        // the seed symbol, <arch> standing for sunda/cayman/mariana
	Slot     int           // soc_struct_t byte offset, or -1
	Source   string        // seed file and section, or the reference facts
	Prov     [3]Provenance // per generation: sunda, cayman, mariana
	Hex      bool          // show numbers in hex
	Accessor string        // the Go accessor
	Test     string        // the test function that checks the values
	Get      func(t *Tables) any
}

// ProvenanceOf returns the property's provenance for generation g.
func (p Property) ProvenanceOf(g hwarch.Generation) Provenance {
	if !g.Valid() {
		return Chosen
	}
	return p.Prov[g-hwarch.Sunda]
}

var (
	allSeed        = [3]Provenance{Seed, Seed, Seed}
	sundaDerived   = [3]Provenance{Derived, Seed, Seed}
	sundaChosen    = [3]Provenance{Chosen, Seed, Seed}
	marianaDerived = [3]Provenance{Seed, Seed, Derived}
	derivedChosen  = [3]Provenance{Chosen, Derived, Derived}
	allChosen      = [3]Provenance{Chosen, Chosen, Chosen}
)

func tpbEach[T any](t *Tables, f func(int) (T, error)) []any { return each(t.Tdrv.NumTPB(), f) }

func engineEach[T any](f func(hwarch.Engine) (T, error)) []any {
	return each(hwarch.NumEngines, func(i int) (T, error) { return f(hwarch.Engine(i)) })
}

func seqRecord(p SeqParams) Record {
	return Record{{"seq", p.Seq}, {"seqtop", p.SeqTop}, {"hostvis", p.HostVis}, {"sz1", p.Size1}, {"sz2", p.Size2}}
}

func dveRecord(d DVETables) Record {
	return Record{{"opcode", d.Opcode}, {"control_fast", d.ControlFast}, {"control_slow", d.ControlSlow}, {"datapath", d.Datapath}}
}

func nonzero(v uint64) any { return orNil(v, v != 0) }

// Properties returns every property of the geometry and the three tables, in
// report order.
func Properties() []Property { return properties }

var properties = []Property{
	// ---- geometry (hw/arch) ----
	{Key: "neuron_cores", Group: "geometry", Symbol: "AL_HAL_NUM_TPB_<ARCH> / nc_per_device", Slot: -1, Source: "003; driver-facts §2", Prov: allSeed, Accessor: "hwarch.Geometry.NeuronCores", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.NeuronCores }},
	{Key: "dies", Group: "geometry", Symbol: "dice_per_device", Slot: -1, Source: "driver-facts §2.3, §2.4", Prov: [3]Provenance{Seed, Seed, Derived}, Accessor: "hwarch.Geometry.Dies", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.Dies }},
	{Key: "hbm_channels", Group: "geometry", Symbol: "dram_channels", Slot: -1, Source: "driver-facts §7", Prov: allSeed, Accessor: "hwarch.Geometry.HBM", Test: "TestGeometry",
		Get: func(t *Tables) any { return len(t.Geometry.HBM) }},
	{Key: "hbm_active_size", Group: "geometry", Symbol: "HBM_ACTIVE_SIZE", Slot: -1, Source: "driver-facts §2, §7", Prov: allSeed, Hex: true, Accessor: "hwarch.HBMChannel.ActiveSize", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.HBM[0].ActiveSize }},
	{Key: "hbm_bar4_offsets", Group: "geometry", Symbol: "PCIE_BAR4_HBM_n_OFFSET", Slot: -1, Source: "driver-facts §2", Prov: allSeed, Hex: true, Accessor: "hwarch.HBMChannel.BAR4Offset", Test: "TestGeometry",
		Get: func(t *Tables) any {
			return each(len(t.Geometry.HBM), func(i int) (uint64, error) { return t.Geometry.HBM[i].BAR4Offset, nil })
		}},
	{Key: "sbuf_window_size", Group: "geometry", Symbol: "V2_SBUF_SIZE", Slot: -1, Source: "000 §3", Prov: allSeed, Hex: true, Accessor: "hwarch.Geometry.SBUFWindowSize", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.SBUFWindowSize }},
	{Key: "psum_size", Group: "geometry", Symbol: "PSUM per NC", Slot: -1, Source: "trainium-facts §3", Prov: allSeed, Hex: true, Accessor: "hwarch.Geometry.PSUMSize", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.PSUMSize }},
	{Key: "dma_engines_per_nc", Group: "geometry", Symbol: "dma_eng_per_nc", Slot: -1, Source: "driver-facts §4.1", Prov: allSeed, Accessor: "hwarch.Geometry.DMAEnginesPerNC", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.DMAEnginesPerNC }},
	{Key: "dma_engines", Group: "geometry", Symbol: "dma_eng_per_nd", Slot: -1, Source: "driver-facts §4.1", Prov: allSeed, Accessor: "hwarch.Geometry.DMAEngines", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.DMAEngines }},
	{Key: "host_dma_engines", Group: "geometry", Symbol: "h2t_eng_id", Slot: -1, Source: "driver-facts §4.1", Prov: allSeed, Accessor: "hwarch.Geometry.HostDMAEngines", Test: "TestGeometry",
		Get: func(t *Tables) any { return list(t.Geometry.HostDMAEngines) }},
	{Key: "semaphores_per_nc", Group: "geometry", Symbol: "semaphore count", Slot: -1, Source: "driver-facts §5", Prov: allSeed, Accessor: "hwarch.Geometry.SemaphoresPerNC", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.SemaphoresPerNC }},
	{Key: "events_per_nc", Group: "geometry", Symbol: "event count", Slot: -1, Source: "driver-facts §5", Prov: allSeed, Accessor: "hwarch.Geometry.EventsPerNC", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.EventsPerNC }},
	{Key: "top_sps", Group: "geometry", Symbol: "ts_per_device", Slot: -1, Source: "driver-facts §5", Prov: allSeed, Accessor: "hwarch.Geometry.TopSPs", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.TopSPs }},
	{Key: "host_address_bit", Group: "geometry", Symbol: "pci_host_base", Slot: -1, Source: "driver-facts §2", Prov: allSeed, Hex: true, Accessor: "hwarch.Geometry.HostAddressBit", Test: "TestGeometry",
		Get: func(t *Tables) any { return t.Geometry.HostAddressBit }},

	// ---- tdrv_arch_ops (seed 003) ----
	{Key: "num_tpb", Group: "tdrv", Symbol: "tdrv_arch_get_num_tpb", Slot: -1, Source: "003", Prov: allSeed, Accessor: "Tdrv.NumTPB", Test: "TestTdrvCounts",
		Get: func(t *Tables) any { return t.Tdrv.NumTPB() }},
	{Key: "num_seng", Group: "tdrv", Symbol: "tdrv_arch_get_num_seng", Slot: -1, Source: "003", Prov: allSeed, Accessor: "Tdrv.NumSENG", Test: "TestTdrvCounts",
		Get: func(t *Tables) any { return t.Tdrv.NumSENG() }},
	{Key: "get_num_tpb_per_hbm", Group: "tdrv", Symbol: "get_num_tpb_per_hbm_<arch>", Slot: -1, Source: "003", Prov: allSeed, Accessor: "Tdrv.NumTPBPerHBM", Test: "TestTdrvCounts",
		Get: func(t *Tables) any { return t.Tdrv.NumTPBPerHBM() }},
	{Key: "num_tpb_per_seng", Group: "tdrv", Symbol: "tdrv_arch_get_num_tpb_per_seng", Slot: -1, Source: "003", Prov: allSeed, Accessor: "Tdrv.NumTPBPerSENG", Test: "TestTdrvCounts",
		Get: func(t *Tables) any { return t.Tdrv.NumTPBPerSENG() }},
	{Key: "get_tpb_mem_offset", Group: "tdrv", Symbol: "get_tpb_mem_offset_<arch>", Slot: -1, Source: "003", Prov: [3]Provenance{Seed, Derived, Derived}, Hex: true, Accessor: "Tdrv.TPBMemOffset", Test: "TestTdrvPerTPB",
		Get: func(t *Tables) any { return tpbEach(t, t.Tdrv.TPBMemOffset) }},
	{Key: "get_tpb_csr_apb_offset", Group: "tdrv", Symbol: "get_tpb_csr_apb_offset_<arch>", Slot: -1, Source: "003", Prov: [3]Provenance{Seed, Derived, Derived}, Hex: true, Accessor: "Tdrv.TPBCSRAPBOffset", Test: "TestTdrvPerTPB",
		Get: func(t *Tables) any { return tpbEach(t, t.Tdrv.TPBCSRAPBOffset) }},
	{Key: "h2d_dma_eng_id", Group: "tdrv", Symbol: "mariana_h2d_dma_eng_id", Slot: -1, Source: "003", Prov: [3]Provenance{Derived, Derived, Seed}, Accessor: "Tdrv.H2DEngineTable", Test: "TestTdrvH2D",
		Get: func(t *Tables) any { tab := t.Tdrv.H2DEngineTable(); return list(tab[:]) }},
	{Key: "is_h2d_engine", Group: "tdrv", Symbol: "tdrv_arch_is_h2d_engine_<arch>", Slot: -1, Source: "003", Prov: [3]Provenance{Derived, Derived, Seed}, Accessor: "Tdrv.IsH2DEngine", Test: "TestTdrvH2D",
		Get: func(t *Tables) any {
			var ids []any
			for e := uint32(0); e < 256; e++ {
				if t.Tdrv.IsH2DEngine(e) {
					ids = append(ids, e)
				}
			}
			return ids
		}},
	{Key: "apb_se_bases", Group: "tdrv", Symbol: "mariana_apb_se_bases", Slot: -1, Source: "003", Prov: [3]Provenance{Derived, Derived, Seed}, Hex: true, Accessor: "Tdrv.APBSEBase", Test: "TestTdrvAPB",
		Get: func(t *Tables) any { return each(t.Tdrv.NumSENG(), t.Tdrv.APBSEBase) }},
	{Key: "apb_bar_offsets", Group: "tdrv", Symbol: "mariana_apb_bar_offsets", Slot: -1, Source: "003", Prov: [3]Provenance{Derived, Derived, Seed}, Hex: true, Accessor: "Tdrv.APBBAROffset", Test: "TestTdrvAPB",
		Get: func(t *Tables) any { return each(t.Tdrv.NumSENG(), t.Tdrv.APBBAROffset) }},
	{Key: "get_nx_core_type", Group: "tdrv", Symbol: "tdrv_arch_get_nx_core_type_<arch>", Slot: -1, Source: "003", Prov: [3]Provenance{Derived, Seed, Derived}, Accessor: "Tdrv.NXCoreType", Test: "TestNXCoreType",
		Get: func(t *Tables) any {
			return engineEach(func(e hwarch.Engine) (int, error) { c, _ := t.Tdrv.NXCoreType(e); return int(c), nil })
		}},

	// ---- soc_struct_t (seed 000) ----
	{Key: "get_num_sb_ports", Group: "soc", Symbol: "<arch>_get_num_sb_ports", Slot: 424, Source: "000 §1–§2", Prov: allSeed, Accessor: "Soc.NumSBPorts", Test: "TestSocConstants",
		Get: func(t *Tables) any { return t.Soc.NumSBPorts() }},
	{Key: "get_valid_sbuf_partition_size", Group: "soc", Symbol: "<arch>_get_valid_sbuf_partition_size", Slot: 560, Source: "000 §4", Prov: allSeed, Hex: true, Accessor: "Soc.ValidSBUFPartitionSize", Test: "TestSocConstants",
		Get: func(t *Tables) any { return t.Soc.ValidSBUFPartitionSize() }},
	{Key: "get_num_sbuf_partitions", Group: "soc", Symbol: "<arch>_get_num_sbuf_partitions", Slot: 576, Source: "000 §1 NOTE", Prov: allSeed, Accessor: "Soc.NumSBUFPartitions", Test: "TestNumSBUFPartitionsIsUint8",
		Get: func(t *Tables) any { return t.Soc.NumSBUFPartitions() }},
	{Key: "sbuf_base_addresses", Group: "soc", Symbol: "<arch>_is_address_in_sbuf / <arch>_sbuf_base_addresses", Slot: 392, Source: "000 §3", Prov: sundaChosen, Hex: true, Accessor: "Soc.SBUFBaseAddresses", Test: "TestIsAddressInSBUF",
		Get: func(t *Tables) any { return list(t.Soc.SBUFBaseAddresses()) }},
	{Key: "get_seng_idx_from_tpb_idx", Group: "soc", Symbol: "<arch>_get_seng_idx_from_tpb_idx", Slot: 648, Source: "000 §1", Prov: allSeed, Accessor: "Soc.SENGIdxFromTPBIdx", Test: "TestSocTPBDecomposition",
		Get: func(t *Tables) any { return tpbEach(t, t.Soc.SENGIdxFromTPBIdx) }},
	{Key: "get_die_idx_from_tpb_idx", Group: "soc", Symbol: "<arch>_get_die_idx_from_tpb_idx", Slot: 640, Source: "000 §1", Prov: allSeed, Accessor: "Soc.DieIdxFromTPBIdx", Test: "TestSocTPBDecomposition",
		Get: func(t *Tables) any { return tpbEach(t, t.Soc.DieIdxFromTPBIdx) }},
	{Key: "get_num_sengines_per_mla", Group: "soc", Symbol: "<arch>_get_num_sengines_per_mla", Slot: 584, Source: "000 §2", Prov: allSeed, Accessor: "Soc.NumSenginesPerMLA", Test: "TestSocConstants",
		Get: func(t *Tables) any { return t.Soc.NumSenginesPerMLA() }},
	{Key: "get_queue_bundle_id_for_qset", Group: "soc", Symbol: "<arch>_get_queue_bundle_id_for_qset", Slot: 336, Source: "000 §1", Prov: allSeed, Accessor: "Soc.QueueBundleIDForQset", Test: "TestQueueBundleIDForQset",
		Get: func(t *Tables) any {
			return each(8, func(i int) (uint32, error) { return t.Soc.QueueBundleIDForQset(uint32(i)), nil })
		}},
	{Key: "get_rel_queue_idx", Group: "soc", Symbol: "<arch>_get_rel_queue_idx / <arch>_queue_idx", Slot: 632, Source: "000 §3", Prov: allSeed, Accessor: "Soc.RelQueueIdx", Test: "TestRelQueueIdx",
		Get: func(t *Tables) any {
			var r Record
			for _, e := range t.Soc.QueueIdxTable() {
				r = append(r, Field{formatHexKey(e.QueueID), e.RelQueueID})
			}
			return r
		}},
	{Key: "get_inter_rdh_fold_n", Group: "soc", Symbol: "<arch>_get_inter_rdh_fold_n", Slot: 544, Source: "000 §1", Prov: [3]Provenance{Derived, Derived, Seed}, Accessor: "Soc.InterRDHFoldN", Test: "TestSocConstants",
		Get: func(t *Tables) any { return t.Soc.InterRDHFoldN() }},
	{Key: "get_inter_rdh_dma_id", Group: "soc", Symbol: "<arch>_get_inter_rdh_dma_id / <arch>_inter_rdh_dma_map", Slot: 552, Source: "000 §1, §3", Prov: allSeed, Accessor: "Soc.InterRDHDMAID", Test: "TestInterRDHDMAID",
		Get: func(t *Tables) any { m := t.Soc.InterRDHDMAMap(); return list(m[:]) }},
	{Key: "get_p2p_port_fold_n", Group: "soc", Symbol: "<arch>_get_p2p_port_fold_n / <arch>_p2p_port_info_tbl", Slot: 16, Source: "000 §3", Prov: allChosen, Accessor: "Soc.P2PPortFoldN", Test: "TestP2PPortTable",
		Get: func(t *Tables) any { return each(TDRVHWPortInvalid+1, t.Soc.P2PPortFoldN) }},
	{Key: "get_max_links_per_pod_port", Group: "soc", Symbol: "<arch>_get_max_links_per_pod_port", Slot: 368, Source: "000 §1, §4", Prov: allSeed, Accessor: "Soc.MaxLinksPerPodPort", Test: "TestMaxLinksPerPodPort",
		Get: func(t *Tables) any { return valueOrNil(t.Soc.MaxLinksPerPodPort()) }},
	{Key: "get_max_devs", Group: "soc", Symbol: "<arch>_get_max_devs", Slot: 680, Source: "000 §4", Prov: allSeed, Accessor: "Soc.MaxDevs", Test: "TestFabricExtent",
		Get: func(t *Tables) any { return t.Soc.MaxDevs() }},
	{Key: "get_mesh_max_folds", Group: "soc", Symbol: "<arch>_get_mesh_max_folds", Slot: 736, Source: "000 §4", Prov: allSeed, Accessor: "Soc.MeshMaxFolds", Test: "TestFabricExtent",
		Get: func(t *Tables) any { return t.Soc.MeshMaxFolds() }},

	// ---- kaena_khal offsets (seed 001 §2–§3) ----
	{Key: "get_tpb_base", Group: "khal", Symbol: "aws_hal_get_tpb_base_<arch>", Slot: -1, Source: "001 §2–§3; 000 §2", Prov: sundaDerived, Hex: true, Accessor: "Khal.TPBBase", Test: "TestKhalBaseTables",
		Get: func(t *Tables) any { return list(t.Khal.TPBBases()) }},
	{Key: "get_psum_base", Group: "khal", Symbol: "aws_hal_get_psum_base_<arch>", Slot: -1, Source: "001 §3 NOTE", Prov: sundaChosen, Hex: true, Accessor: "Khal.PSUMBase", Test: "TestKhalBaseTables",
		Get: func(t *Tables) any { return tpbEach(t, t.Khal.PSUMBase) }},
	{Key: "get_preproc_base", Group: "khal", Symbol: "aws_hal_get_preproc_base_<arch>", Slot: -1, Source: "001 §3; driver-facts §2.3", Prov: derivedChosen, Hex: true, Accessor: "Khal.PREPROCBase", Test: "TestKhalBaseTables",
		Get: func(t *Tables) any { return tpbEach(t, t.Khal.PREPROCBase) }},
	{Key: "get_hbm_base", Group: "khal", Symbol: "aws_hal_get_hbm_base_<arch>", Slot: -1, Source: "001 §3; driver-facts §7", Prov: allSeed, Hex: true, Accessor: "Khal.HBMBase", Test: "TestKhalHBM",
		Get: func(t *Tables) any { return each(t.Khal.NumHBM(), t.Khal.HBMBase) }},
	{Key: "get_hbm_size", Group: "khal", Symbol: "aws_hal_get_hbm_size_<arch>", Slot: -1, Source: "001 §3 GOTCHA", Prov: allSeed, Hex: true, Accessor: "Khal.HBMSize", Test: "TestKhalHBM",
		Get: func(t *Tables) any { return t.Khal.HBMSize() }},
	{Key: "get_tpb_eng_iram_size", Group: "khal", Symbol: "aws_hal_get_tpb_eng_iram_size_<arch>", Slot: -1, Source: "001 §3", Prov: allSeed, Hex: true, Accessor: "Khal.TPBEngIRAMSize", Test: "TestKhalIRAM",
		Get: func(t *Tables) any { return engineEach(t.Khal.TPBEngIRAMSize) }},
	{Key: "get_seq_params", Group: "khal", Symbol: "aws_hal_get_seq_params_<arch> (host_visible=0)", Slot: -1, Source: "001 §2–§3", Prov: sundaDerived, Hex: true, Accessor: "Khal.SeqParams", Test: "TestSeqParams",
		Get: func(t *Tables) any {
			return engineEach(func(e hwarch.Engine) (Record, error) { p, err := t.Khal.SeqParams(e, false); return seqRecord(p), err })
		}},
	{Key: "get_seq_params_host_visible", Group: "khal", Symbol: "aws_hal_get_seq_params_<arch> (host_visible=1)", Slot: -1, Source: "001 §2–§3", Prov: sundaDerived, Hex: true, Accessor: "Khal.SeqParams", Test: "TestSeqParams",
		Get: func(t *Tables) any {
			return engineEach(func(e hwarch.Engine) (Record, error) { p, err := t.Khal.SeqParams(e, true); return seqRecord(p), err })
		}},
	{Key: "get_q7_params", Group: "khal", Symbol: "aws_hal_get_q7_params_<arch>", Slot: -1, Source: "001 §3", Prov: allChosen, Hex: true, Accessor: "Khal.Q7Params", Test: "TestQ7Params",
		Get: func(t *Tables) any {
			return each(t.Khal.NumQ7(), func(i int) (Record, error) {
				q, err := t.Khal.Q7Params(i)
				return Record{{"base", q.Base}, {"size", q.Size}}, err
			})
		}},
	{Key: "get_dve_table_offsets", Group: "khal", Symbol: "aws_hal_get_dve_table_offsets_<arch>", Slot: -1, Source: "001 §3 CORRECTION", Prov: allSeed, Hex: true, Accessor: "Khal.DVETableOffsets", Test: "TestDVETables",
		Get: func(t *Tables) any { d, ok := t.Khal.DVETableOffsets(); return orNil(dveRecord(d), ok) }},
	{Key: "get_dve_table_sizes", Group: "khal", Symbol: "aws_hal_get_dve_table_sizes_<arch>", Slot: -1, Source: "001 §3", Prov: derivedChosen, Hex: true, Accessor: "Khal.DVETableSizes", Test: "TestDVETables",
		Get: func(t *Tables) any { return dveRecord(t.Khal.DVETableSizes()) }},
	{Key: "get_dve_parameter_ram_params", Group: "khal", Symbol: "aws_hal_get_dve_parameter_ram_params_<arch>", Slot: -1, Source: "001 §3 CORRECTION", Prov: allSeed, Hex: true, Accessor: "Khal.DVEParameterRAM", Test: "TestDVETables",
		Get: func(t *Tables) any { o, s := t.Khal.DVEParameterRAM(); return Record{{"offset", o}, {"size", s}} }},
	{Key: "get_sdma_fp8_cfg_offset", Group: "khal", Symbol: "aws_hal_get_sdma_fp8_cfg_offset_<arch> (name chosen)", Slot: -1, Source: "001 §3", Prov: [3]Provenance{Seed, Seed, Chosen}, Hex: true, Accessor: "Khal.ConfigOffset(SDMAFP8Cfg)", Test: "TestConfigOffsetsAbsent",
		Get: func(t *Tables) any { return orNil(t.Khal.ConfigOffset(SDMAFP8Cfg, 0)) }},
	{Key: "get_sdma_emax_cfg_offset", Group: "khal", Symbol: "aws_hal_get_sdma_emax_cfg_offset_<arch> (name chosen)", Slot: -1, Source: "001 §3", Prov: [3]Provenance{Seed, Seed, Chosen}, Hex: true, Accessor: "Khal.ConfigOffset(SDMAEMAXCfg)", Test: "TestConfigOffsetsAbsent",
		Get: func(t *Tables) any { return orNil(t.Khal.ConfigOffset(SDMAEMAXCfg, 0)) }},
	{Key: "get_eng_fp8_cfg_offset", Group: "khal", Symbol: "aws_hal_get_eng_fp8_cfg_offset_<arch> (CSWTCH.14)", Slot: -1, Source: "001 §3 GOTCHA", Prov: allSeed, Hex: true, Accessor: "Khal.ConfigOffset(EngFP8Cfg)", Test: "TestConfigOffsetsAbsent",
		Get: func(t *Tables) any {
			if _, ok := t.Khal.ConfigOffset(EngFP8Cfg, 0); !ok {
				return nil
			}
			return each(4, func(i int) (uint64, error) { v, _ := t.Khal.ConfigOffset(EngFP8Cfg, hwarch.Engine(i)); return v, nil })
		}},
	{Key: "get_dve_emax_cfg_offset", Group: "khal", Symbol: "aws_hal_get_dve_emax_cfg_offset_<arch> (name chosen)", Slot: -1, Source: "001 §3", Prov: [3]Provenance{Seed, Seed, Chosen}, Hex: true, Accessor: "Khal.ConfigOffset(DVEEMAXCfg)", Test: "TestConfigOffsetsAbsent",
		Get: func(t *Tables) any { return orNil(t.Khal.ConfigOffset(DVEEMAXCfg, 0)) }},
	{Key: "get_act_emax_cfg_offset", Group: "khal", Symbol: "aws_hal_get_act_emax_cfg_offset_<arch> (name chosen)", Slot: -1, Source: "001 §3", Prov: [3]Provenance{Seed, Seed, Chosen}, Hex: true, Accessor: "Khal.ConfigOffset(ACTEMAXCfg)", Test: "TestConfigOffsetsAbsent",
		Get: func(t *Tables) any { return orNil(t.Khal.ConfigOffset(ACTEMAXCfg, 0)) }},
	{Key: "get_eng_hw_decode_table_params", Group: "khal", Symbol: "aws_hal_get_eng_hw_decode_table_params_<arch> (host_visible=1)", Slot: -1, Source: "001 §3 QUIRK", Prov: allSeed, Hex: true, Accessor: "Khal.HWDecodeTableParams", Test: "TestHWDecodeTableParams",
		Get: func(t *Tables) any {
			if _, err := t.Khal.HWDecodeTableParams(0, true); err != nil {
				return nil
			}
			return each(4, func(i int) (Record, error) {
				p, err := t.Khal.HWDecodeTableParams(hwarch.Engine(i), true)
				return Record{{"base", p.Base}, {"hdr", p.HeaderSize}, {"blk", p.BlockSize}}, err
			})
		}},
	{Key: "get_offset_topsp_window", Group: "khal", Symbol: "aws_hal_arch_<arch>_topsp NX-local window", Slot: -1, Source: "001 §2 QUIRK", Prov: [3]Provenance{Seed, Chosen, Chosen}, Hex: true, Accessor: "Khal.TopSPLocalRegs", Test: "TestTopSPLocalRegs",
		Get: func(t *Tables) any { return nonzero(t.Khal.TopSPLocalRegs().Window) }},
	{Key: "get_offset_topsp_stop_signal", Group: "khal", Symbol: "aws_hal_arch_<arch>_get_offset_topsp_stop_signal", Slot: -1, Source: "001 §2 QUIRK", Prov: marianaDerived, Hex: true, Accessor: "Khal.TopSPLocalRegs", Test: "TestTopSPLocalRegs",
		Get: func(t *Tables) any { return nonzero(t.Khal.TopSPLocalRegs().StopSignal) }},
	{Key: "get_offset_topsp_basic_block_switch", Group: "khal", Symbol: "aws_hal_arch_<arch>_get_offset_topsp_basic_block_switch", Slot: -1, Source: "001 §2 QUIRK", Prov: marianaDerived, Hex: true, Accessor: "Khal.TopSPLocalRegs", Test: "TestTopSPLocalRegs",
		Get: func(t *Tables) any { return nonzero(t.Khal.TopSPLocalRegs().BasicBlockSwitch) }},
	{Key: "get_offset_topsp_host_trigger", Group: "khal", Symbol: "aws_hal_arch_cayman_get_offset_topsp_host_trigger", Slot: -1, Source: "001 §2 QUIRK", Prov: marianaDerived, Hex: true, Accessor: "Khal.TopSPLocalRegs", Test: "TestTopSPLocalRegs",
		Get: func(t *Tables) any { return nonzero(t.Khal.TopSPLocalRegs().HostTrigger) }},
	{Key: "write_tpb_nx_local_reg_start_ctrl", Group: "khal", Symbol: "aws_hal_arch_<arch>_write_tpb_nx_local_reg_start_ctrl", Slot: -1, Source: "001 §2", Prov: [3]Provenance{Derived, Seed, Derived}, Hex: true, Accessor: "NXStartCtrlOffset", Test: "TestLocalRegisterOffsets",
		Get: func(t *Tables) any { return NXStartCtrlOffset }},
	{Key: "update_tpb_notific_sw_queue_num2_events_semaphores_nt", Group: "khal", Symbol: "aws_hal_arch_<arch>_update_tpb_notific_sw_queue_num2_events_semaphores_nt", Slot: -1, Source: "001 §2", Prov: [3]Provenance{Derived, Seed, Derived}, Hex: true, Accessor: "UpdateNotificEventsSemaphores", Test: "TestLocalRegisterOffsets",
		Get: func(t *Tables) any {
			return Record{{"offset", NotificSWQueueNum2}, {"mask", NotificEvtSemMask}, {"shift", NotificEvtSemShift}}
		}},
	{Key: "get_offset_tpb_xt_local_reg_memcopy_dmas", Group: "khal", Symbol: "aws_hal_arch_<arch>_get_offset_tpb_xt_local_reg_memcopy_dmas", Slot: -1, Source: "001 §2", Prov: [3]Provenance{Derived, Seed, Derived}, Hex: true, Accessor: "XTMemcopyDMAsOffset", Test: "TestLocalRegisterOffsets",
		Get: func(t *Tables) any { return XTMemcopyDMAsOffset }},
}

func formatHexKey(v uint32) string {
	const digits = "0123456789abcdef"
	return "0x" + string([]byte{digits[v>>4&0xf], digits[v&0xf]})
}
