package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// flatPort is a HostPort of one flat range [base, base+len(mem)).
type flatPort struct {
	base uint64
	mem  []byte
}

func (f *flatPort) Check(pa uint64, n int) error {
	if pa < f.base || pa-f.base > uint64(len(f.mem)) || uint64(n) > uint64(len(f.mem))-(pa-f.base) {
		return fmt.Errorf("flat port [%#x, +%d): %w", pa, n, ErrHostRange)
	}
	return nil
}

func (f *flatPort) Read(pa uint64, p []byte) error {
	if err := f.Check(pa, len(p)); err != nil {
		return err
	}
	copy(p, f.mem[pa-f.base:])
	return nil
}

func (f *flatPort) Write(pa uint64, p []byte) error {
	if err := f.Check(pa, len(p)); err != nil {
		return err
	}
	copy(f.mem[pa-f.base:], p)
	return nil
}

// valuePort is a HostPort that is not comparable.
type valuePort struct{ flatPort2 []byte }

func (valuePort) Check(uint64, int) error    { return nil }
func (valuePort) Read(uint64, []byte) error  { return nil }
func (valuePort) Write(uint64, []byte) error { return nil }

// TestHostPort: a device's host-window accesses (device address with the
// host bit, the driver's pci_host_base) reach its host port at the
// address without the bit; outside the port they fail with ErrHostRange;
// a port that is not the host-memory model has no allocator; a port that
// cannot be compared is refused.
func TestHostPort(t *testing.T) {
	for _, g := range []hwarch.Generation{hwarch.Sunda, hwarch.Cayman} {
		t.Run(g.String(), func(t *testing.T) {
			port := &flatPort{base: 0x4000_0000, mem: make([]byte, 0x1000)}
			d, err := NewWiredDevice(DeviceConfig{Generation: g, Ready: true}, Wiring{Host: port})
			require.NoError(t, err)
			assert.Nil(t, d.HostMemory())
			assert.Same(t, port, d.HostPort().(*flatPort))
			bus := (*deviceBus)(d)
			// pci_host_base: V2_PCIE_A0_BASE 1<<44, V3_PCIE_A0_BASE 1<<46
			bit := map[hwarch.Generation]uint64{hwarch.Sunda: 1 << 44, hwarch.Cayman: 1 << 46}[g]
			require.NoError(t, bus.WriteDMA(0x4000_0010|bit, []byte("guest")))
			assert.Equal(t, "guest", string(port.mem[0x10:0x15]))
			got := make([]byte, 5)
			require.NoError(t, bus.ReadDMA(0x4000_0010|bit, got))
			assert.Equal(t, "guest", string(got))
			_, err = bus.Check(0x4000_1000|bit, 1)
			assert.ErrorIs(t, err, ErrHostRange)
			assert.ErrorIs(t, bus.ReadDMA(0x3fff_ffff|bit, got), ErrHostRange)
			_, err = d.HostAlloc(64, 64)
			assert.ErrorIs(t, err, ErrNoHostModel)
			assert.ErrorIs(t, d.HostFree(0x4000_0000), ErrNoHostModel)
			require.NoError(t, d.HostRead(0x4000_0010, got), "HostRead goes through the port")
			b, err := NewPageBudget(1 << 20)
			require.NoError(t, err)
			require.NoError(t, d.SetPageBudget(b))
		})
	}
	_, err := NewWiredDevice(DeviceConfig{Generation: hwarch.Cayman}, Wiring{Host: valuePort{}})
	assert.ErrorContains(t, err, "not comparable")
	d, err := NewWiredDevice(DeviceConfig{Generation: hwarch.Cayman}, Wiring{Host: (*HostMemory)(nil)})
	require.NoError(t, err)
	assert.NotNil(t, d.HostMemory(), "a nil *HostMemory gives a private model")
}

// TestHostPortSnapshot: a device whose host port is not the host-memory
// model snapshots without host state and restores keeping its port; a
// snapshot that carries host state for it is refused.
func TestHostPortSnapshot(t *testing.T) {
	port := &flatPort{base: 0x4000_0000, mem: make([]byte, 0x1000)}
	d, err := NewWiredDevice(DeviceConfig{Generation: hwarch.Cayman, Ready: true}, Wiring{Host: port})
	require.NoError(t, err)
	s := d.Snapshot()
	assert.Zero(t, s.Host.Next)
	d2, err := NewWiredDeviceFromSnapshot(s, Wiring{Host: port})
	require.NoError(t, err)
	assert.Same(t, port, d2.HostPort().(*flatPort))
	require.NoError(t, d.Restore(s))
	h := NewHostMemory()
	_, err = h.Alloc(64, 64)
	require.NoError(t, err)
	s.Host = h.State()
	assert.ErrorIs(t, d.Restore(s), ErrInvalidState)
	_, err = NewWiredDeviceFromSnapshot(s, Wiring{Host: port})
	assert.ErrorIs(t, err, ErrInvalidState)
}
