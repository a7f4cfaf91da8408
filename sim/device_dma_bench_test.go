package sim

import (
	"fmt"
	"testing"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
)

// The descriptor-pair benchmarks: the host cost of a DMA descriptor pair
// through a whole device in timing-only mode — the doorbell of an SP's
// dma_trigger, the descriptor fetch from host rings, the bus checks, the
// timing, the completion event and the engine heap — as a collective run
// pays it per pair.

const (
	benchPairRing  = 256     // descriptors per ring
	benchPairBatch = 64      // pairs a doorbell makes available
	benchPairBytes = 4 << 10 // bytes per pair
)

// benchPairQueue is one queue of the benchmark: its host rings and the
// driver's next slot and phase in them.
type benchPairQueue struct {
	e, q     int
	m2s, s2m uint64 // ring host physical addresses
	next     uint32
	phase    uint8
}

// benchPairDevice is a ready timing-only Trn3 device with queues queues
// programmed (spread over the NCs' engines first, then over their queues),
// every ring in host memory.
func benchPairDevice(b *testing.B, queues int) (*Device, []benchPairQueue) {
	b.Helper()
	d, err := NewDevice(DeviceConfig{Generation: hwarch.Mariana, Ready: true, TimingOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	engines := d.geo.NeuronCores * d.geo.DMAEnginesPerNC
	if queues > engines*udma.Queues {
		b.Fatalf("%d queues: the device has %d", queues, engines*udma.Queues)
	}
	qs := make([]benchPairQueue, queues)
	for i := range qs {
		bq := &qs[i]
		bq.e, bq.q, bq.phase = i%engines, i/engines, udma.FirstRingID
		for _, ring := range []*uint64{&bq.m2s, &bq.s2m} {
			if *ring, err = d.HostAlloc(benchPairRing*udma.DescriptorSize, udma.RingAlign); err != nil {
				b.Fatal(err)
			}
		}
		d.mu.Lock()
		for _, h := range []struct {
			half uint64
			ring uint64
		}{{udma.M2S, bq.m2s}, {udma.S2M, bq.s2m}} {
			a := d.geo.HostAddress(h.ring)
			d.dma.WriteReg(bq.e, udma.QueueReg(h.half, bq.q, udma.QBaseLo), uint32(a))
			d.dma.WriteReg(bq.e, udma.QueueReg(h.half, bq.q, udma.QBaseHi), uint32(a>>32))
			d.dma.WriteReg(bq.e, udma.QueueReg(h.half, bq.q, udma.QLength), benchPairRing)
			d.dma.WriteReg(bq.e, udma.QueueReg(h.half, bq.q, udma.QCfg), udma.QCfgDriver)
		}
		d.mu.Unlock()
	}
	return d, qs
}

// push writes a batch of HBM→HBM pairs into the queue's rings.
func (bq *benchPairQueue) push(b *testing.B, d *Device, tx, rx []byte) {
	src, dst := d.geo.HBM[0].Base, d.geo.HBM[0].Base+benchPairBytes
	for i := range benchPairBatch {
		t := udma.Descriptor{LenCtrl: benchPairBytes | uint32(bq.phase)<<udma.RingIDShift | udma.FlagFirst | udma.FlagLast, Meta: udma.DefaultMetaCtrl, Addr: src}
		r := udma.Descriptor{LenCtrl: benchPairBytes | uint32(bq.phase)<<udma.RingIDShift, Addr: dst}
		t.Put(tx[i*udma.DescriptorSize:])
		r.Put(rx[i*udma.DescriptorSize:])
	}
	off := uint64(bq.next) * udma.DescriptorSize
	if err := d.HostWrite(bq.m2s+off, tx); err != nil {
		b.Fatal(err)
	}
	if err := d.HostWrite(bq.s2m+off, rx); err != nil {
		b.Fatal(err)
	}
	if bq.next += benchPairBatch; bq.next == benchPairRing {
		bq.next, bq.phase = 0, (bq.phase+1)%4
	}
}

// benchPairs runs rounds of one batch per queue: the rings written, every
// queue's doorbell rung as an SP's dma_trigger rings it, then the clock
// run until every pair is done.
func benchPairs(b *testing.B, queues int) {
	d, qs := benchPairDevice(b, queues)
	tx := make([]byte, benchPairBatch*udma.DescriptorSize)
	rx := make([]byte, benchPairBatch*udma.DescriptorSize)
	env := &coreEnv{d, 0}
	round := func() {
		for i := range qs {
			qs[i].push(b, d, tx, rx)
		}
		d.mu.Lock()
		for i := range qs {
			if err := env.Doorbell(qs[i].e, qs[i].q, benchPairBatch); err != nil {
				b.Fatal(err)
			}
		}
		d.mu.Unlock()
		if err := d.Sleep(time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
	round() // the prefetch state and the heap grown: the steady state
	b.ReportAllocs()
	rounds := 0
	for b.Loop() {
		round()
		rounds++
	}
	b.StopTimer()
	for i := range qs {
		st, err := d.DMAQueue(qs[i].e, qs[i].q)
		if err != nil {
			b.Fatal(err)
		}
		if want := uint64(rounds+1) * benchPairBatch; st.Done != want || st.Status != 0 {
			b.Fatalf("queue %d/%d: %d pairs done (want %d), status %#x", qs[i].e, qs[i].q, st.Done, want, st.Status)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rounds*queues*benchPairBatch), "ns/pair")
}

// BenchmarkDeviceDMAPairs is the host cost of a descriptor pair on one
// queue (everything the pair touches stays in cache) and on 512 queues of
// 128 engines (as a collective spreads its pairs, which misses the cache).
func BenchmarkDeviceDMAPairs(b *testing.B) {
	for _, queues := range []int{1, 512} {
		b.Run(fmt.Sprintf("queues=%d", queues), func(b *testing.B) { benchPairs(b, queues) })
	}
}
