package bringup

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// scriptedDevice is a minimal register file with the firmware handshake done
// instantly: notReady reads of 0xDEADBEEF, then MISC RAM answers; a trigger
// acknowledges at once. It records the sleeps the bring-up asked for.
type scriptedDevice struct {
	mu       sync.Mutex
	id       hwarch.PCIIdentity
	bar      int
	size     uint64
	regs     map[uint64]uint32
	notReady int
	slept    time.Duration
	writes   []uint64
	geo      *hwarch.Geometry
	// busyFor, when set, keeps a reset running for that much sleeping
	// after its start (the trigger or the QEMU register store): FW status
	// bit 3 set and the QEMU register non-zero.
	busyFor    time.Duration
	resetStart time.Duration
	qemuValues []uint32 // values stored to the QEMU reset register
}

func (s *scriptedDevice) busy() bool {
	return s.busyFor > 0 && s.slept-s.resetStart < s.busyFor
}

func newScripted(g hwarch.Generation, rev uint8, notReady int) *scriptedDevice {
	dev, _ := hwarch.DefaultDeviceID(g)
	geo := hwarch.MustGeometry(g)
	s := &scriptedDevice{
		id:  hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: dev, Revision: rev},
		bar: geo.BAR0.RegisterBAR(hwarch.ModeOf(rev)), size: geo.BAR0.MinimumBAR0,
		regs: map[uint64]uint32{}, notReady: notReady, geo: geo,
	}
	s.regs[geo.BAR0.MiscRAM+hwarch.MiscFWAPIVersion] = 7
	s.regs[geo.BAR0.MiscRAM+hwarch.MiscRoutingID] = 3
	s.regs[geo.BAR0.MiscRAM+hwarch.MiscSerialLo] = 0xCAFE
	return s
}

func (s *scriptedDevice) Identity() hwarch.PCIIdentity { return s.id }
func (s *scriptedDevice) BARSize(b int) uint64 {
	if b == s.bar {
		return s.size
	}
	return 0
}
func (s *scriptedDevice) Close() error { return nil }
func (s *scriptedDevice) Sleep(d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slept += d
	return nil
}
func (s *scriptedDevice) Read32(b int, off uint64) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b != s.bar {
		return 0, fmt.Errorf("bar %d: %w", b, ndl.ErrBadBAR)
	}
	if s.notReady > 0 {
		s.notReady--
		return hwarch.NotReady, nil
	}
	switch off {
	case s.geo.BAR0.MiscRAM + hwarch.MiscFWStatus:
		if s.busy() {
			return hwarch.FWStatusResetActive, nil
		}
	case s.geo.BAR0.QEMUResetReg:
		if s.busy() {
			return 1, nil
		}
	}
	return s.regs[off], nil
}
func (s *scriptedDevice) Write32(b int, off uint64, v uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b != s.bar {
		return fmt.Errorf("bar %d: %w", b, ndl.ErrBadBAR)
	}
	s.writes = append(s.writes, off)
	s.regs[off] = v
	switch off {
	case s.geo.BAR0.MiscRAM + hwarch.MiscTrigger: // the firmware acknowledges at once
		s.regs[s.geo.BAR0.MiscRAM+hwarch.MiscResetRequest] = 0
		s.regs[off] = 0
		if s.id.Mode() != hwarch.ModeQEMU {
			s.resetStart = s.slept
		}
	case s.geo.BAR0.QEMUResetReg:
		s.qemuValues = append(s.qemuValues, v)
		s.regs[off] = 0
		s.resetStart = s.slept
	}
	return nil
}
func (s *scriptedDevice) ReadBAR(b int, off uint64, dst []uint32) error {
	for i := range dst {
		v, err := s.Read32(b, off+4*uint64(i))
		if err != nil {
			return err
		}
		dst[i] = v
	}
	return nil
}
func (s *scriptedDevice) WriteBAR(b int, off uint64, src []uint32) error {
	for i, v := range src {
		if err := s.Write32(b, off+4*uint64(i), v); err != nil {
			return err
		}
	}
	return nil
}

func TestBringUpOverAScriptedDevice(t *testing.T) {
	for _, g := range hwarch.Generations() {
		for _, rev := range []uint8{0, hwarch.RevisionEMU, hwarch.RevisionQEMU} {
			t.Run(fmt.Sprintf("%s/%#x", g, rev), func(t *testing.T) {
				s := newScripted(g, rev, 3)
				d, err := BringUp(s, Options{})
				require.NoError(t, err)
				assert.Equal(t, 3, d.ReadyRetries)
				want := 3 * time.Second // three 1 s sleeps through 0xDEADBEEF; the scripted reset needs none
				if hwarch.ModeOf(rev) == hwarch.ModeQEMU {
					want += 2 * time.Second // the driver sleeps 2 s after every QEMU register read, the last too
				}
				assert.Equal(t, want, s.slept)
				assert.Equal(t, uint32(3), d.RoutingID)
				assert.Equal(t, uint64(0xCAFE), d.Serial)
				assert.Equal(t, g, d.Tables.Generation)
				geo := d.Geometry
				qemuWrites, mailboxWrites := 0, 0
				for _, w := range s.writes {
					switch w {
					case geo.BAR0.QEMUResetReg:
						qemuWrites++
					case geo.BAR0.MiscRAM + hwarch.MiscTrigger:
						mailboxWrites++
					}
				}
				mode := hwarch.ModeOf(rev)
				switch {
				case g == hwarch.Mariana && mode == hwarch.ModeEMU:
					assert.Zero(t, qemuWrites+mailboxWrites, "V4 EMU: no reset")
				case mode == hwarch.ModeQEMU && g == hwarch.Sunda:
					assert.Equal(t, [2]int{1, 1}, [2]int{qemuWrites, mailboxWrites}, "V2 QEMU: QEMU register, then the mailbox")
				case mode == hwarch.ModeQEMU:
					assert.Equal(t, [2]int{1, 0}, [2]int{qemuWrites, mailboxWrites}, "V3/V4 QEMU: QEMU register only")
					// Driver 2.24.7.0 stores the TPB map, which is empty for
					// a device reset (v3/neuron_dhal_v3.c 301–316, 339–351).
					assert.Equal(t, []uint32{0}, s.qemuValues)
				default:
					assert.Equal(t, [2]int{0, 1}, [2]int{qemuWrites, mailboxWrites}, "the mailbox only")
				}
			})
		}
	}
}

func TestDefaultPolicy(t *testing.T) {
	tests := []struct {
		g                hwarch.Generation
		mode             hwarch.Mode
		bar, status      int
		qemu, then, skip bool
		giveUp           time.Duration
	}{
		{hwarch.Sunda, hwarch.ModeSilicon, 0, 5, false, false, false, 120 * time.Second},
		{hwarch.Sunda, hwarch.ModeEMU, 0, 5000, false, false, false, 120 * time.Second},
		{hwarch.Sunda, hwarch.ModeQEMU, 2, 5, true, true, false, 120 * time.Second},
		{hwarch.Cayman, hwarch.ModeSilicon, 0, 5, false, false, false, 480 * time.Second},
		{hwarch.Cayman, hwarch.ModeEMU, 0, 5000, false, false, false, 480 * time.Second},
		{hwarch.Cayman, hwarch.ModeQEMU, 2, 5000, true, false, false, 480 * time.Second}, // driver 2.24.7.0, v3/neuron_dhal_v3.c 2188
		{hwarch.Mariana, hwarch.ModeEMU, 0, 5000, false, false, true, 480 * time.Second},
		{hwarch.Mariana, hwarch.ModeQEMU, 0, 5000, true, false, false, 480 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.g, tt.mode), func(t *testing.T) {
			p := DefaultPolicy(tt.g, tt.mode)
			assert.Equal(t, tt.bar, p.RegisterBAR)
			assert.Equal(t, tt.status, p.StatusRetries)
			assert.Equal(t, [3]bool{tt.qemu, tt.then, tt.skip}, [3]bool{p.QEMUResetPath, p.QEMUThenFWIO, p.SkipReset})
			assert.Equal(t, tt.giveUp, p.ResetGiveUp)
			assert.Equal(t, 30, p.ReadyRetries)
			assert.Equal(t, time.Second, p.ReadyInterval)
			assert.Equal(t, 100*time.Millisecond, p.AckPoll)
			assert.Equal(t, 2*time.Second, p.QEMUPoll)
		})
	}
}

// TestResetWaitBudgets: bring-up waits for a reset exactly as long as
// driver 2.24.7.0 does, no longer: FW status reads at 0, 0, 0.1, 0.3 and
// 0.6 s (v2/neuron_dhal_v2.c 189–209, v3/neuron_dhal_v3.c 362–382, retry
// count 5); QEMU register reads at 0, 2, 4.1, 6.3 and 8.6 s on V2 (v2
// 211–231, retry count 5, not scaled under QEMU, v2 1787–1792).
func TestResetWaitBudgets(t *testing.T) {
	tests := []struct {
		name string
		g    hwarch.Generation
		rev  uint8
		busy time.Duration
		ok   bool
	}{
		{"status clears before the last read", hwarch.Cayman, 0, 550 * time.Millisecond, true},
		{"status clears after the driver's last read", hwarch.Cayman, 0, 650 * time.Millisecond, false},
		{"V2 status after the last read", hwarch.Sunda, 0, 650 * time.Millisecond, false},
		{"V2 QEMU register clears before the last read", hwarch.Sunda, hwarch.RevisionQEMU, 8500 * time.Millisecond, true},
		{"V2 QEMU register clears after the driver's last read", hwarch.Sunda, hwarch.RevisionQEMU, 8700 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScripted(tt.g, tt.rev, 0)
			s.busyFor = tt.busy
			_, err := BringUp(s, Options{})
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrResetTimeout)
		})
	}
}

func TestBringUpRefusesForeignDevices(t *testing.T) {
	s := newScripted(hwarch.Cayman, 0, 0)
	s.id.Vendor = 0x8086
	_, err := BringUp(s, Options{})
	require.ErrorIs(t, err, hwarch.ErrUnknownVendor)
}

// TestWhatIfRoutingIDs (issue 16): bring-up of a real system refuses a
// routing id of 64 or more, as the driver does; a what-if one
// (Options.WhatIf) takes any the fabric window names (< 16,384) and puts
// the register BAR at DefaultVABase + routing id × VAStride, reading the
// routing id back through csr_read there; past the fabric window it is
// refused still.
func TestWhatIfRoutingIDs(t *testing.T) {
	tests := []struct {
		rid    uint32
		whatIf bool
		ok     bool
		text   string
	}{
		{63, false, true, ""},
		{64, false, false, "must be < 64, the driver's MAX_NEURON_DEVICE_COUNT; a what-if system allows < 16384"},
		{143, false, false, "must be < 64"},
		{64, true, true, ""},
		{143, true, true, ""},
		{hwarch.MaxFabricDevices - 1, true, true, ""},
		{hwarch.MaxFabricDevices, true, false, "must be < 16384, the devices the fabric window names, even in a what-if system"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("rid=%d/what-if=%v", tt.rid, tt.whatIf), func(t *testing.T) {
			s := newScripted(hwarch.Mariana, 0, 0)
			s.regs[s.geo.BAR0.MiscRAM+hwarch.MiscRoutingID] = tt.rid
			d, err := BringUp(s, Options{WhatIf: tt.whatIf, NoReset: true})
			if !tt.ok {
				require.ErrorIs(t, err, ErrRoutingID)
				assert.Contains(t, err.Error(), tt.text)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.rid, d.RoutingID)
			assert.Equal(t, uint64(DefaultVABase)+uint64(tt.rid)*VAStride, d.VABase)
			got, err := d.CSR.Read(d.MiscVA(hwarch.MiscRoutingID))
			require.NoError(t, err)
			assert.Equal(t, tt.rid, got)
		})
	}
	assert.Equal(t, uint32(MaxRoutingID), RoutingIDLimit(false))
	assert.Equal(t, uint32(MaxWhatIfRoutingID), RoutingIDLimit(true))
}
