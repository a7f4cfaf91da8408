package sim

import (
	"testing"
	"time"

	"github.com/neuronsim/neuronsim/hw/isa"
)

// BenchmarkDeviceSPRecords is the host time per record of an SP program
// that a device fetches from its HBM: records that each wait on an NC
// semaphore the record before raised and raise it in turn, so the program
// runs in the device's event loop without the host: per record one
// instruction fetch through the DMA bus, the check, the wait, the
// completion event and the signal.
func BenchmarkDeviceSPRecords(b *testing.B) {
	const records = 4096
	h := benchDevice(b)
	prog := make([]byte, 0, records*isa.RecordSize)
	for k := range records {
		r := isa.Record{Opcode: isa.OpNop, Engine: isa.SP,
			Wait:   isa.Sync{Mode: isa.WaitSemGE, Index: 1, Value: uint16(k)},
			Signal: isa.Sync{Mode: isa.SignalSemIncr, Index: 1, Value: 1}}
		if k == records-1 {
			r.Flags = isa.FlagLast
		}
		raw := r.Bytes()
		prog = append(prog, raw[:]...)
	}
	pc := h.geo.HBM[0].Base + 0x10_0000
	if err := h.d.hbm.Write(pc, prog); err != nil {
		b.Fatal(err)
	}
	seq, _ := isa.EngineCtrlOffset(isa.SP)
	ctrl := h.geo.BAR0.TPBWindow(0) + seq
	b.ReportAllocs()
	for b.Loop() {
		h.write(h.ncSem(0, h.geo.BAR0.SemSetOffset, 1), 0)
		h.write(ctrl+isa.EngineRegPCLo, uint32(pc))
		h.write(ctrl+isa.EngineRegPCHi, uint32(pc>>32))
		h.write(ctrl+isa.EngineRegStartCtrl, isa.StartRun)
		h.sleep(20 * time.Microsecond) // 4,096 one-cycle records: about 3.4 µs
	}
	if st, n := h.read(ctrl+isa.EngineRegStatus), h.read(ctrl+isa.EngineRegRetired); st != isa.StatusDone || n != records {
		b.Fatalf("status %#x, error %d, %d records retired", st, h.read(ctrl+isa.EngineRegError), n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
}
