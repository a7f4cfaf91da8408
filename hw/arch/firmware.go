package arch

// Offsets in the MISC RAM firmware mailbox (BAR0Map.MiscRAM + offset;
// driver-facts §9.1).
const (
	MiscFWAPIVersion = 0x000 // FW API version: ≥3 power readings, ≥7 the new mailbox
	MiscRoutingID    = 0x024 // routing id (device id in the system)
	MiscSerialLo     = 0x038 // serial number, low word
	MiscSerialHi     = 0x03C // serial number, high word
	MiscServerInfo   = 0x070 // PDS server info: bit 15 valid, [14:0] server id
	MiscResetTPBMap  = 0x1D8 // the TPB map of a TPB reset
	MiscResetRequest = 0x1EC // reset type; firmware writes 0 to acknowledge
	MiscTrigger      = 0x800 // doorbell ("TRIGGER_INT_NOSEC")
	MiscFWStatus     = 0x808 // firmware status
)

// Values of the reset handshake (driver-facts §8).
const (
	ResetTypeDevice     uint32 = 1           // +0x1EC: reset the whole device
	ResetTypeTPB        uint32 = 2           // +0x1EC: reset the NCs of the TPB map
	FWStatusResetActive uint32 = 1 << 3      // +0x808 bit 3: reset in progress / not ready
	NotReady            uint32 = 0xDEAD_BEEF // what a register read returns until the device is ready
	TPBResetMapAll      uint32 = 0xFFFF_FFFF // nc_map of a whole-device reset request
)

// ResetMap is the decoded TPB map of a reset: which NCs and which TOP_SPs it
// covers, one bit each.
type ResetMap struct {
	NCs    uint32
	TopSPs uint32
}

// TPBResetMap encodes a reset of the NCs in the bit mask ncs and of the
// TOP_SPs they own, as the driver writes it to +0x1D8 (and, under QEMU on
// V3/V4, to the QEMU reset register):
//   - V2: bit n for NC n, bit 8+j for TOP_SP j (NC n owns TOP_SPs 3n..3n+2);
//   - V3/V4: bits 0-7 the TPBs, 8-15 their SDMA groups, 16-23 their TOP_SP
//     groups (group n is TOP_SPs 2n and 2n+1).
func (g *Geometry) TPBResetMap(ncs uint32) uint32 {
	ncs &= 1<<g.NeuronCores - 1
	if g.Generation == Sunda {
		var m uint32
		per := g.TopSPsPerNC()
		for nc := 0; nc < g.NeuronCores; nc++ {
			if ncs&(1<<nc) != 0 {
				m |= 1<<nc | (1<<per-1)<<(8+per*nc)
			}
		}
		return m
	}
	return ncs | ncs<<8 | ncs<<16
}

// DecodeTPBResetMap returns the NCs and TOP_SPs a TPB map covers (the inverse
// of TPBResetMap; bits for units the device does not have are ignored).
func (g *Geometry) DecodeTPBResetMap(m uint32) ResetMap {
	r := ResetMap{NCs: m & (1<<g.NeuronCores - 1)}
	if g.Generation == Sunda {
		r.TopSPs = m >> 8 & (1<<g.TopSPs - 1)
		return r
	}
	groups := m >> 16 & 0xFF
	for grp := 0; grp < g.NeuronCores; grp++ {
		if groups&(1<<grp) != 0 {
			r.TopSPs |= 3 << (2 * grp)
		}
	}
	return r
}
