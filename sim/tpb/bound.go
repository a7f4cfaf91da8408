package tpb

import (
	"fmt"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// MinProgramPS returns a lower bound on the device time, in ps, that
// running prog (64-byte records, each engine's block made of the records
// naming it, in order) on NeuronCore nc of a gen device takes from its
// engines' start until the last of them stops, at the default clocks
// (DefaultClocks): the largest, over the engines, of the sum of their
// records' costs (Cycles with the cheapest PE state: no MM_INIT, the
// stationary tile's M not counted) up to and including the engine's
// first record with the last flag. An engine stops early at a record its
// core would refuse (check), so the sum of an engine ends before such a
// record, and waits (which only add) are not counted: every run of prog
// takes at least this long. It is for refusing, before a run, a program
// that cannot finish within a time limit. prog's size must be a whole
// number of records; an engine byte past SP ends nothing (Split refuses
// such a program).
func MinProgramPS(gen hwarch.Generation, nc int, prog []byte) (uint64, error) {
	geo, err := hwarch.GeometryOf(gen)
	if err != nil {
		return 0, err
	}
	if nc < 0 || nc >= geo.NeuronCores {
		return 0, fmt.Errorf("tpb: NC %d: the %s has NCs 0..%d", nc, gen, geo.NeuronCores-1)
	}
	if len(prog)%isa.RecordSize != 0 {
		return 0, fmt.Errorf("tpb: %d bytes is not a whole number of %d-byte records", len(prog), isa.RecordSize)
	}
	c := &Core{gen: gen, geo: geo, nc: nc, sbufPart: int64(geo.SBUFPartitionSize)} // enough for check
	clocks := DefaultClocks(gen)
	var sum [NumEngines]uint64
	var stopped [NumEngines]bool
	var pe PEState // cheapest: M 0, not Fresh
	for off := 0; off < len(prog); off += isa.RecordSize {
		raw := prog[off : off+isa.RecordSize]
		e := int(raw[1])
		if e >= NumEngines || stopped[e] {
			continue
		}
		r, err := isa.Decode(raw)
		if err != nil || c.check(e, raw, &r) != ErrNone {
			stopped[e] = true // the engine stops with an error here
			continue
		}
		d := uint64(simkernel.AtRate(Cycles(&r, &pe), clocks[e]))
		if sum[e]+d < sum[e] { // not reached (a record costs at most 8·MaxFreeElements cycles): saturate
			sum[e] = ^uint64(0)
		} else {
			sum[e] += d
		}
		if r.Flags&isa.FlagLast != 0 {
			stopped[e] = true
		}
	}
	var most uint64
	for _, s := range sum {
		most = max(most, s)
	}
	return most, nil
}
