package collective

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/udma"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// Planning a run: every rank's descriptors and SP program, built from the
// schedule (docs/collectives.md §On devices, "The SP program"). A planner
// goes through the schedule once, stage by stage (next): release (go), then
// per step the synchronisation before it, its sends and their triggers,
// then the finish; the semaphore counts it accumulates are what the
// programs wait for. What it keeps is its mode's: a staged run plans
// everything before anything touches a device; a streamed run plans twice
// with the same planner — first the SP programs and every queue's count,
// then the descriptors, a stage at a time as the devices read them.

// planMode is what a planner keeps of what it plans.
type planMode int

const (
	// planAll keeps every descriptor and SP record (the staged run).
	planAll planMode = iota
	// planPrograms keeps the SP programs and counts the descriptors in
	// counting vrings (the streamed run's first pass).
	planPrograms
	// planDescriptors keeps the descriptors and no SP record (the streamed
	// run's second pass, which feeds the queues).
	planDescriptors
)

// rankPlan is what one rank runs.
type rankPlan struct {
	vr   []*dma.Vring // per engine: the collectives queue's descriptors
	rdh  []*dma.Vring // the inter-RDH engines' vrings (members of vr)
	ctl  *dma.Vring   // control queue
	prog []byte       // the SP program: its records' bytes
	// credits is how many credit semaphores the rank counts in
	// (CreditSem(0) … CreditSem(credits−1); planner.creditSem).
	credits int
}

// reduceOf is the DMA reduce word of a reducing transfer in d.
func reduceOf(d enc.Dtype) udma.Reduce {
	dt := [...]isa.Dtype{enc.Float32: isa.FP32, enc.BFloat16: isa.BF16, enc.Float16: isa.FP16, enc.Int32: isa.Int32,
		enc.Uint32: isa.Uint32, enc.Int8: isa.Int8, enc.Uint8: isa.Uint8, enc.Uint16: isa.Uint16, enc.Int16: isa.Int16}[d]
	return udma.Reduce{Op: udma.ReduceAdd, Dtype: dt}
}

// takeRec is an SP nop that waits until semaphore sem ≥ v and then takes
// v from it (its signal slot decrements by v): the wait consumes what it
// waited for, so a semaphore counts only what no wait has taken yet and
// a run leaves every one of them at zero. v is at most maxSemValue.
func takeRec(sem, v int) isa.Record {
	return isa.Record{Opcode: isa.OpNop, Engine: isa.SP,
		Wait:   isa.Sync{Mode: isa.WaitSemGE, Index: uint8(sem), Value: uint16(v)},
		Signal: isa.Sync{Mode: isa.SignalSemDecr, Index: uint8(sem), Value: uint16(v)}}
}

// triggerRec is an SP dma_trigger of n descriptor pairs on queue q of DMA
// engine eng.
func triggerRec(eng, q, n int) isa.Record {
	return isa.Record{Opcode: isa.OpDMATrigger, Engine: isa.SP, Aux: uint16(eng), Imm0: uint32(q), Imm1: uint32(n)}
}

// maxSemValue is the largest value a record's wait slot holds.
const maxSemValue = 1<<16 - 1

// planner builds the plans of one run.
type planner struct {
	x     *Executor
	mode  planMode
	stage int // the next stage next plans: 0 release, 1+k step k, then the finish
	s     *enc.Schedule
	red   udma.Reduce
	plans []rankPlan
	engs  [][]int // per rank: its DMA engine ids (Executor.engines)
	// layouts is, per rank, its control word and buffers (LayoutOf,
	// worked out once per run, not per transfer).
	layouts []Layout
	// cut is send's buffer of a transfer's slices (appendSplitEven).
	cut []int64
	// Per rank, what its semaphores will have counted since its last
	// wait on them (the next wait's value): slices landed, engine-steps
	// done.
	arrivals, done []int
	// err is the first error adding a descriptor; once set, nothing more
	// is added (it is reported after the step, or at the end).
	err error
	// before is sends' buffer: per rank and engine, the descriptors before
	// the step.
	before [][]int
	// writers, targets and seen are peers' buffers.
	writers, targets [][]int
	seen             map[[2]int]bool
	// credits is, per rank, its credit semaphores by target set
	// (creditSem); stepCredits is sync's buffer of each rank's for the
	// step.
	credits     []creditSets
	stepCredits []int
}

// plan builds every rank's plan — what mode keeps of it — through the
// whole schedule.
func (x *Executor) plan(s *enc.Schedule, d enc.Dtype, mode planMode) ([]rankPlan, error) {
	p := x.newPlanner(s, d, mode)
	p.presize()
	for more := true; more; {
		var err error
		if more, err = p.next(); err != nil {
			return nil, err
		}
	}
	return p.plans, nil
}

// next plans the run's next stage — the release, a step (the
// synchronisation before it and its sends), the finish — and reports
// whether one is left.
func (p *planner) next() (bool, error) {
	n := len(p.s.Steps)
	switch k := p.stage - 1; {
	case p.stage == 0:
		p.release()
	case k < n:
		st := p.s.Steps[k]
		writers, targets := p.peers(st)
		if k > 0 {
			p.sync(writers, targets)
		}
		p.sends(st)
		if p.err != nil {
			return false, fmt.Errorf("enc: step %d: %w", k, p.err)
		}
	case k == n:
		if err := p.finish(); err != nil {
			return false, err
		}
		if p.err != nil {
			return false, fmt.Errorf("enc: %w", p.err)
		}
	default:
		return false, nil
	}
	p.stage++
	return p.stage <= n+1, nil
}

// newPlanner returns a planner with every rank's empty vrings: one per
// DMA engine the executor uses, and the control queue's.
func (x *Executor) newPlanner(s *enc.Schedule, d enc.Dtype, mode planMode) *planner {
	n := s.Ranks
	p := &planner{x: x, mode: mode, s: s, red: reduceOf(d), plans: make([]rankPlan, n), engs: make([][]int, n),
		layouts: make([]Layout, n), arrivals: make([]int, n), done: make([]int, n), before: make([][]int, n), credits: make([]creditSets, n)}
	newVring := dma.NewVring
	if mode == planPrograms {
		newVring = dma.NewCountingVring
	}
	for r := range p.plans {
		pl := &p.plans[r]
		p.engs[r] = x.engines(r)
		pl.vr = make([]*dma.Vring, len(p.engs[r]))
		p.before[r] = make([]int, len(p.engs[r]))
		for j, e := range p.engs[r] {
			pl.vr[j] = newVring(fmt.Sprintf("cc.r%d.e%d", r, e))
		}
		pl.ctl = newVring(fmt.Sprintf("cc.r%d.ctl", r))
		for _, rel := range x.InterRDH {
			pl.rdh = append(pl.rdh, pl.vr[rel])
		}
		p.layouts[r] = LayoutOf(s, x.Ranks[r].Base)
	}
	return p
}

// presize grows every rank's data vrings and SP program to what planning
// will add to them — each transfer slice's descriptors and arrival signal
// exactly, one done signal and trigger per engine a step uses, and four
// records per step and six more for the synchronisation (at least what
// sync, release and finish add) — so that planning millions of
// descriptors does not copy them again and again as they grow. It changes
// no plan: only capacities. A planner that feeds queues step by step holds
// only what is in flight, and is not presized.
func (p *planner) presize() {
	if p.mode == planDescriptors {
		return
	}
	pairs := make([][]int, p.s.Ranks)
	touched := make([][]int, p.s.Ranks) // per rank and vring: the last step (+1) that used it
	recs := make([]int, p.s.Ranks)
	var cut []int64
	for r := range pairs {
		pairs[r] = make([]int, len(p.plans[r].vr))
		touched[r] = make([]int, len(p.plans[r].vr))
		recs[r] = 6 + 4*len(p.s.Steps)
	}
	for k, st := range p.s.Steps {
		for i, xf := range st.Xfers {
			r := xf.Src
			ne := p.x.dataEngines(r)
			rdh := p.x.crossesRDHDomains(p.s, xf)
			if rdh {
				ne = len(p.x.InterRDH)
			}
			if ne == 0 {
				continue
			}
			cut = appendSplitEven(cut[:0], xf.Len, p.s.Elem, ne)
			for j, size := range cut {
				v := (i + j) % ne
				if rdh {
					v = p.x.InterRDH[v]
				}
				pairs[r][v] += int((size+udma.MaxTransfer-1)/udma.MaxTransfer) + 1
				if touched[r][v] != k+1 {
					touched[r][v] = k + 1
					pairs[r][v]++
					recs[r]++
				}
			}
		}
	}
	for r := range pairs {
		for j, v := range p.plans[r].vr {
			v.Grow(pairs[r][j])
		}
		p.plans[r].prog = slices.Grow(p.plans[r].prog, recs[r]*isa.RecordSize)
	}
}

// sp appends rec to rank r's SP program, as its bytes (a planner that
// keeps no program drops it).
func (p *planner) sp(r int, rec isa.Record) {
	if p.mode == planDescriptors {
		return
	}
	pl := &p.plans[r]
	n := len(pl.prog)
	pl.prog = slices.Grow(pl.prog, isa.RecordSize)[:n+isa.RecordSize]
	rec.Encode(pl.prog[n:])
}

// signal adds to v a 4-byte write of rank from's control word to the INCR
// register of semaphore sem of rank to.
func (p *planner) signal(v *dma.Vring, from, to, sem int) {
	if p.err != nil {
		return
	}
	var a uint64
	if a, p.err = p.x.semAddr(from, to, sem); p.err == nil {
		p.err = v.AddEventAccel(p.layouts[from].Ones, a)
	}
}

// release is the go: rank 0 releases every other rank, which waits for it.
func (p *planner) release() {
	n := p.s.Ranks
	for r := 1; r < n; r++ {
		p.signal(p.plans[0].ctl, 0, r, SemGo)
		p.take(r, SemGo, 1)
	}
	if n > 1 {
		p.sp(0, triggerRec(p.x.controlEngine(0, p.engs[0]), ControlQueue, n-1))
	}
}

// peers returns, per rank, the other ranks that write into it in st
// (writers) and those it writes to (targets), each once, in transfer
// order. The slices and the set are the planner's, reused step after step
// (a ring on 1,024 ranks has 2,046 steps, each planned twice when
// streamed).
func (p *planner) peers(st enc.Step) (writers, targets [][]int) {
	n := p.s.Ranks
	if p.writers == nil {
		p.writers, p.targets, p.seen = make([][]int, n), make([][]int, n), map[[2]int]bool{}
	}
	for r := range n {
		p.writers[r], p.targets[r] = p.writers[r][:0], p.targets[r][:0]
	}
	clear(p.seen)
	for _, xf := range st.Xfers {
		if xf.Src != xf.Dst && !p.seen[[2]int{xf.Src, xf.Dst}] {
			p.seen[[2]int{xf.Src, xf.Dst}] = true
			p.writers[xf.Dst] = append(p.writers[xf.Dst], xf.Src)
			p.targets[xf.Src] = append(p.targets[xf.Src], xf.Dst)
		}
	}
	return p.writers, p.targets
}

// sync is what every rank does before a step other than the first: wait
// until the previous step finished here, grant credits to this step's
// writers, wait for credits from this step's targets. Each writer's credit
// goes to the credit semaphore of the writer's targets in the step
// (creditSem), so that a rank counts in one semaphore only the credits of
// steps that write to the same ranks.
func (p *planner) sync(writers, targets [][]int) {
	sems := p.stepCredits[:0]
	for r := range p.s.Ranks {
		sems = append(sems, p.creditSem(r, targets[r]))
	}
	p.stepCredits = sems
	for r := range p.s.Ranks {
		p.takePending(r)
		for _, w := range writers[r] {
			p.signal(p.plans[r].ctl, r, w, sems[w])
		}
		if len(writers[r]) > 0 {
			p.sp(r, triggerRec(p.x.controlEngine(r, p.engs[r]), ControlQueue, len(writers[r])))
		}
		if len(targets[r]) > 0 {
			p.take(r, sems[r], len(targets[r]))
		}
	}
}

// creditSem returns the semaphore in which rank r counts the credits of a
// step in which it writes to targets: one per distinct set of targets
// over the schedule, in the order the sets first occur (CreditSem). A
// credit is a count, whoever sent it: with one semaphore for every step, a
// rank waiting for its target's credit could take one that a rank it
// writes to only in a later step had sent early — that rank, in another
// part of a recursive-halving schedule, ahead of this one — and write into
// a target still in the step before, whose wait for that step's arrivals
// then counted these, so that it read what it was to send on before the
// sum had all landed (docs/collectives.md §On devices, "Semaphores"). Counted
// apart by target set, an early credit waits in its own set's semaphore:
// it is taken in a step that writes to that set, and a rank of the set
// sends its credit for a later such step only once it has had this rank's
// data of the earlier one, after this rank's wait for it.
func (p *planner) creditSem(r int, targets []int) int {
	if len(targets) == 0 {
		return SemCredits
	}
	c := &p.credits[r]
	if !slices.Equal(c.last, targets) { // a ring's steps all write to one rank: no key made
		sorted := slices.Clone(targets)
		slices.Sort(sorted)
		var key []byte // the sorted ranks as varints: a mesh rank's set of 4,095 in 8 KiB
		for _, t := range sorted {
			key = binary.AppendUvarint(key, uint64(t))
		}
		k := string(key)
		i, ok := c.sets[k]
		if !ok {
			if c.sets == nil {
				c.sets = map[string]int{}
			}
			i = len(c.sets)
			c.sets[k] = i
		}
		c.last, c.sem = append(c.last[:0], targets...), CreditSem(i)
		if c.sem < 0 && p.err == nil {
			p.err = fmt.Errorf("rank %d writes to %d different sets of ranks over the schedule's steps, each counting its credits in a semaphore of its own (at most %d): %w",
				r, i+1, MaxCreditSets, ErrSemaphoreRange)
		}
		p.plans[r].credits = max(p.plans[r].credits, i+1)
	}
	return c.sem
}

// MaxCreditSets is the most distinct sets of target ranks a rank's steps
// may write to: each counts its credits in a semaphore of its own
// (CreditSem), SemCredits and then the semaphores below SemGo.
const MaxCreditSets = 1 + SemGo

// CreditSem is the semaphore that counts the credits of a rank's i-th
// distinct set of target ranks: SemCredits for the first (every ring's
// only one), then SemGo − 1, SemGo − 2, … down to 0; −1 past
// MaxCreditSets.
func CreditSem(i int) int {
	switch {
	case i == 0:
		return SemCredits
	case i < MaxCreditSets:
		return SemGo - i
	}
	return -1
}

// creditSets is a rank's credit semaphores so far (planner.creditSem):
// its sets of targets by their sorted list, and the last step's targets
// and semaphore.
type creditSets struct {
	sets map[string]int
	last []int
	sem  int
}

// sends adds a step's transfers to their sources' engines, then, on every
// engine that got descriptors, its done increment and a trigger of them.
func (p *planner) sends(st enc.Step) {
	before := p.before
	for r := range before {
		for j, v := range p.plans[r].vr {
			before[r][j] = v.Descriptors()
		}
	}
	for i, xf := range st.Xfers {
		p.send(i, xf)
	}
	for r := range before {
		for j, v := range p.plans[r].vr {
			if v.Descriptors() == before[r][j] {
				continue
			}
			p.signal(v, r, r, SemDone)
			p.done[r]++
			p.sp(r, triggerRec(p.engs[r][j], CollectiveQueue, v.Descriptors()-before[r][j]))
		}
	}
}

// send splits transfer i of a step evenly over its source's engines (the
// inter-RDH ones for an RDH transfer between half-domains), the slices
// taking the engines in turn from engine i: each slice's descriptors, then
// the increment of the destination's arrivals.
func (p *planner) send(i int, xf enc.Xfer) {
	r := xf.Src
	use := p.plans[r].vr[:p.x.dataEngines(r)]
	if p.x.crossesRDHDomains(p.s, xf) {
		use = p.plans[r].rdh
	}
	ne := len(use)
	src0 := p.layouts[r].Buffer(xf.SrcBuf) + uint64(xf.SrcOff)
	p.cut = appendSplitEven(p.cut[:0], xf.Len, p.s.Elem, ne)
	cut := p.cut
	for j, off := 0, int64(0); j < len(cut) && p.err == nil; j, off = j+1, off+cut[j] {
		size := cut[j]
		v := use[(i+j)%ne]
		var dst uint64
		if dst, p.err = p.x.reach(r, xf.Dst, p.layouts[xf.Dst].Buffer(xf.DstBuf)+uint64(xf.DstOff+off)); p.err != nil {
			break
		}
		if xf.Reduce {
			p.err = v.AddReduce(src0+uint64(off), dst, uint64(size), p.red)
		} else {
			p.err = v.AddTransfer(src0+uint64(off), dst, uint64(size))
		}
		p.signal(v, r, xf.Dst, SemArrivals)
		p.arrivals[xf.Dst]++
	}
}

// take has rank r wait until semaphore sem has counted v more and take
// them (takeRec). A count a record's wait cannot hold is
// ErrSemaphoreRange, naming the rank, the semaphore and the count.
func (p *planner) take(r, sem, v int) {
	if p.err != nil {
		return
	}
	if v > maxSemValue {
		p.err = fmt.Errorf("rank %d would wait for %d counts of semaphore %d at once (at most %d): %w", r, v, sem, maxSemValue, ErrSemaphoreRange)
		return
	}
	p.sp(r, takeRec(sem, v))
}

// takePending has rank r wait for and take what its arrivals and done
// semaphores have counted since its last wait on them, if anything.
func (p *planner) takePending(r int) {
	if p.arrivals[r] > 0 {
		p.take(r, SemArrivals, p.arrivals[r])
		p.arrivals[r] = 0
	}
	if p.done[r] > 0 {
		p.take(r, SemDone, p.done[r])
		p.done[r] = 0
	}
}

// finish is the end: every rank waits for its last arrivals and sends,
// then tells rank 0, which finishes once all have; every program's last
// record carries the last flag.
func (p *planner) finish() error {
	n := p.s.Ranks
	for r := range n {
		p.takePending(r)
		if r > 0 {
			p.signal(p.plans[r].ctl, r, 0, SemFinished)
			p.sp(r, triggerRec(p.x.controlEngine(r, p.engs[r]), ControlQueue, 1))
		}
	}
	if n > 1 {
		p.take(0, SemFinished, n-1)
	}
	if p.mode == planDescriptors {
		return nil
	}
	for r := range n {
		if len(p.plans[r].prog) == 0 {
			p.sp(r, isa.Record{Opcode: isa.OpNop, Engine: isa.SP})
		}
		last := p.plans[r].prog[len(p.plans[r].prog)-isa.RecordSize:]
		rec, err := isa.Decode(last)
		if err != nil {
			return err
		}
		rec.Flags |= isa.FlagLast // the engine stops after it
		rec.Encode(last)
	}
	return nil
}

// splitEven cuts a transfer of n bytes (whole elements of elem bytes) into
// min(ways, elements) slices of whole elements whose sizes differ by at
// most one element, the larger first. A larger transfer never has fewer
// slices, nor any slice smaller: cutting into slices of ⌈elements/ways⌉
// (the rest in the last) gave 27 elements over 7 engines 7 slices but 30
// elements 6, so a larger message could take less time (issue 13).
func splitEven(n int64, elem, ways int) []int64 {
	return appendSplitEven(nil, n, elem, ways)
}

// appendSplitEven appends splitEven's slices to dst (presize reuses one
// buffer for every transfer of a run).
func appendSplitEven(dst []int64, n int64, elem, ways int) []int64 {
	elems := n / int64(elem)
	k := min(int64(ways), elems)
	if k < 1 {
		return dst
	}
	base, extra := elems/k, elems%k
	dst = slices.Grow(dst, int(k))
	for j := range k {
		size := base * int64(elem)
		if j < extra {
			size += int64(elem)
		}
		dst = append(dst, size)
	}
	return dst
}
