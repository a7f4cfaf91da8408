package kernelfake

import (
	"syscall"
	"unsafe"

	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// The APB BAR as the fake reports it in DEVICE_INFO: bar_address[0] is an
// x86-64 ioremap address like the real driver's, bar_size[0] the
// generation's smallest register BAR (hw/arch BAR0Map.MinimumBAR0). The
// driver maps no BAR2 on V2 and later, so bar_address[1] and bar_size[1]
// are 0.
const bar0VA = 0xffffc90010000000

// MaxRegisterWords bounds the fake's register file: the distinct BAR words
// written and kept. A write of a new word beyond it is an ABI fault (the
// fake cannot hold it; the real device would), so a test that needs more
// says so instead of growing the fake without bound.
const MaxRegisterWords = 1 << 20

// barRW is ncdev_bar_rw with ncdev_bar_read / ncdev_bar_write
// (neuron_cdev.c) over the fake's register file. The struct
// neuron_ioctl_bar_rw is decoded at the driver's offsets; its user
// pointers (the array of kernel virtual addresses, the data words) are
// dereferenced as copy_from_user / copy_to_user would. As in the driver,
// bar 0 copies in count addresses and any other bar one address (its reads
// are "always sequential"); BAR_WRITE accepts bar 0 only, BAR_READ bars 0
// and 2 (the fake maps no BAR2, so a read of it passes no address check).
// Every word of the APB BAR is storage: it reads back what was last
// written, 0 before.
func (d *Driver) barRW(cmd uint32, arg []byte) error {
	if err := d.copyIn("bar_rw", arg, ndl.BarRWSize, 4, 5, 6, 7, 28, 29, 30, 31); err != nil {
		return err
	}
	rw, _ := ndl.DecodeBarRW(arg) // copyIn checked the length
	if rw.Address == 0 || rw.Data == 0 {
		return syscall.EFAULT // copy_from_user of NULL
	}
	if rw.Count == 0 {
		return d.fault("bar_rw: count 0 (the driver kmallocs 0 bytes and copies nothing)")
	}
	addressCount := uint32(1)
	if rw.Bar == 0 {
		addressCount = rw.Count
	}
	addrs := unsafe.Slice((*uint64)(userPointer(rw.Address)), addressCount)
	data := unsafe.Slice((*uint32)(userPointer(rw.Data)), rw.Count)
	if cmd == ndl.IoctlBarWrite {
		if rw.Bar != 0 {
			return syscall.EINVAL // ncdev_bar_write: bar 0 only
		}
		for _, a := range addrs {
			if _, ok := d.bar0Offset(a); !ok {
				return syscall.EINVAL // offset > bar0_size
			}
		}
		for i, a := range addrs {
			off, _ := d.bar0Offset(a)
			if _, ok := d.regs[off]; !ok && len(d.regs) >= MaxRegisterWords {
				return d.fault("bar_rw: BAR_WRITE of a new word at BAR0 offset %#x: the fake's register file holds %d words, its limit", off, MaxRegisterWords)
			}
			d.regs[off] = data[i]
		}
		return nil
	}
	if rw.Bar != 0 && rw.Bar != 2 {
		return syscall.EINVAL
	}
	if rw.Count > addressCount {
		// reg_read32_array would read count addresses from a one-entry buffer.
		return d.fault("bar_rw: BAR_READ bar %d count %d reads past the %d address(es) copied in", rw.Bar, rw.Count, addressCount)
	}
	for i, a := range addrs {
		off, ok := d.bar0Offset(a)
		if !ok {
			return d.fault("bar_rw: readl of kernel address %#x outside the mapped BARs", a)
		}
		data[i] = d.regs[off]
	}
	return nil
}

// bar0Offset maps a kernel virtual address to a 4-aligned offset of the
// APB BAR.
func (d *Driver) bar0Offset(a uint64) (uint64, bool) {
	if a%4 != 0 || a < bar0VA || a-bar0VA >= d.geo.BAR0.MinimumBAR0 {
		return 0, false
	}
	return a - bar0VA, true
}
