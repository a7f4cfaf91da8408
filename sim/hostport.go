package sim

import (
	"errors"
	"fmt"
	"reflect"
)

// HostPort is the host side of a device's DMA: the memory its host window
// reaches (docs/device-model.md §Host window). A DMA descriptor's address
// with the generation's host bit set — the driver's pci_host_base, bit 44
// on V2 and bit 46 on V3/V4 — is a host address; the device strips that bit
// and the rest, the host's physical address (a guest-physical one when a
// guest drives the device), goes to the port. *HostMemory (the host-memory
// model, with an allocator for an in-process runtime) is one;
// *vfiouser.GuestMemory (a vfio-user client's DMA_MAP regions) is another.
//
// Read and Write move bytes and Check tests a range; each fails with an
// error wrapping ErrHostRange for a range outside the memory, which the
// device turns into a DMA error of the queue that met it (a descriptor
// address error), as hardware reports a failed PCIe read or write. A port
// must be safe for concurrent use and comparable (a pointer): device
// configurations are compared when snapshots are restored.
type HostPort interface {
	Read(pa uint64, p []byte) error
	Write(pa uint64, p []byte) error
	Check(pa uint64, n int) error
}

var _ HostPort = (*HostMemory)(nil)

// ErrNoHostModel is returned by the host-memory calls of a device whose
// host port is not a host-memory model (HostAlloc and HostFree of a device
// served to a guest, whose memory the guest's kernel allocates).
var ErrNoHostModel = errors.New("the device's host memory is not the host-memory model")

// hostPort resolves a configured host port: nil (or a nil *HostMemory)
// gives a private host-memory model; a *HostMemory is also the model; any
// other port has none. A port of a type that is not comparable is refused.
func hostPort(name string, p HostPort) (HostPort, *HostMemory, error) {
	if h, ok := p.(*HostMemory); ok && h == nil || p == nil {
		h := NewHostMemory()
		return h, h, nil
	}
	if !reflect.TypeOf(p).Comparable() {
		return nil, nil, fmt.Errorf("sim device %s: host port of type %T is not comparable (give a pointer)", name, p)
	}
	h, _ := p.(*HostMemory)
	return p, h, nil
}

// hostModel returns the device's host-memory model, or an error wrapping
// ErrNoHostModel when its host port is something else.
func (d *Device) hostModel(op string) (*HostMemory, error) {
	if d.hostMem == nil {
		return nil, fmt.Errorf("sim device %s: %s: host port %T: %w", d.cfg.Name, op, d.host, ErrNoHostModel)
	}
	return d.hostMem, nil
}
