package cluster

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/sim/bar"
)

// BufferCapacity returns the largest per-rank buffer area (Config.
// BufferBytes) a device of generation g and PCI revision revision (Config.
// Revision) holds for each of its ranksPerDevice ranks: attach allocates
// one block a rank from the device's memory as the runtime's allocator
// serves it (dmem: every HBM channel as the driver sizes it — its active
// size, or BAR4 / 4 under QEMU on Trn2 and Trn3, bringup.ChannelBytes —
// less the firmware carve-out at its start and the small pool at its end,
// which a block this large does not use;
// a rank's block tried first in its NeuronCore's channel, then in the
// others). Ranks sharing a channel share its pool: on a Trn3 device
// (36 GiB channels) one rank holds 35,824 MiB, each of 8 ranks 17,912 MiB.
// The bound is exact — the allocation itself, on a fresh allocator — so
// a sweep or a scenario can refuse a size or a buffer_bytes past it
// before any device is brought up, naming its flag or key, rather than
// fail in the allocator (a scenario's buffer_bytes was bounded by one
// channel's whole size, 36 GiB on Trn3, which no rank can have).
func BufferCapacity(g hwarch.Generation, revision uint8, ranksPerDevice int) (uint64, error) {
	geo, err := hwarch.GeometryOf(g)
	if err != nil {
		return 0, err
	}
	if ranksPerDevice < 1 || ranksPerDevice > geo.NeuronCores {
		return 0, fmt.Errorf("cluster: %d ranks a device: a %s device has %d NeuronCores: %w", ranksPerDevice, g, geo.NeuronCores, ErrConfig)
	}
	mode := hwarch.ModeOf(revision)
	channels := bringup.ChannelBytes(geo, mode, bar.DefaultSizes(geo, mode)[hwarch.BAR4])
	fits := func(size uint64) (bool, error) {
		mem, err := dmem.New(geo, dmem.Options{ChannelBytes: channels})
		if err != nil {
			return false, err
		}
		for nc := range ranksPerDevice {
			if _, err := mem.Alloc(bufferRequest(size, nc)); err != nil {
				return false, nil
			}
		}
		return true, nil
	}
	page := dmem.DefaultPageSize
	var most uint64
	for _, c := range channels {
		most = max(most, c)
	}
	lo, hi := uint64(0), most/page+1 // lo pages fit (0: none known), hi do not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fits(mid * page)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo * page, nil
}

// bufferRequest is the allocation of rank nc's buffers of a device
// (attach, BufferCapacity).
func bufferRequest(size uint64, nc int) dmem.Request {
	return dmem.Request{Size: max(size, 4096), Align: 4096, Channel: dmem.Any, NC: nc, Name: fmt.Sprintf("collective.nc%d", nc)}
}
