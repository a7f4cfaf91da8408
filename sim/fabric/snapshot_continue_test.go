package fabric

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/udma"
	sim "github.com/neuronsim/neuronsim/sim/simkernel"
)

// The continuation property: a system saved and loaded part way through a
// sequence of operations goes on as the system it was saved from, and as a
// system that was never saved (a save settles the links' queues of the
// system it saves, which must change nothing it does). A sequence is a
// configuration (contConfig) and operations of contOpBytes bytes each,
// [k a b c d], whose kind is contKinds[k%16]:
//
//	write    reserve and post at once (contOp.write's fields from a b c
//	         d, the engine's sent time (k/16)·100 ns after its start)
//	reserve  reserve only: the same write, posted by a later post
//	post     post the write pending on slot a%32 (device slot/8, queue
//	         slot%8), with a payload when a ≥ 128; nothing if none is
//	         pending there
//	advance  advance the clock by c·100 ns + b ps
//	tick     advance the clock by d ps (events due in the next moment)
//	link     take link (a<<8|b) mod the links down (c%4 = 0) or up
//	fault    schedule at now + d·100 ns + b ps, by c%8: link (a<<8|b) mod
//	         the links down (0, 1) or up (2..6), or a reset of device a%4
//	         (7)
//
// A write's a byte: source device a%4, destination the source's
// ((a>>2)&3)%3 + 1'th next device (mod 4: one of its node's and the other
// node's), queue (a>>4)&7, a payload when a ≥ 128; b<<8|c: its size less
// one (1 B to 64 KiB); d: its start, (d%64)·250 ns from now, at device
// address 0x100000 + (d>>6)·64 KiB.

// contKind is what an operation does.
type contKind uint8

const (
	contWrite contKind = iota
	contReserve
	contPost
	contAdvance
	contTick
	contLink
	contFault
)

// String names the kind, as the encoding above does.
func (k contKind) String() string {
	return [...]string{"write", "reserve", "post", "advance", "tick", "link", "fault"}[k]
}

// contKinds is the kind of operation k%16: writes most often, links taken
// down or up least, so that a sequence keeps paths to write on.
var contKinds = [16]contKind{
	contWrite, contWrite, contWrite, contWrite, contWrite, contWrite, contWrite,
	contReserve, contReserve, contPost, contPost,
	contAdvance, contAdvance, contTick, contLink, contFault,
}

// contOpBytes is the length of one encoded operation.
const contOpBytes = 5

// contMaxOps bounds a fuzzed sequence's operations.
const contMaxOps = 64

// contSlots are the reservation slots the sequences use: 4 devices × 8
// queues of engine 0.
const contSlots = 4 * 8

// contPayload is what the writes with a payload carry (their first n bytes).
var contPayload = func() []byte {
	p := make([]byte, 64<<10)
	for i := range p {
		p[i] = byte(i*7 + i>>8)
	}
	return p
}()

// contConfig is the configuration a byte encodes: routing c%3, 1 + (c/3)%4
// spines, the aware (c/12 even) or the free model, real endpoints (c/24
// even) or ideal ones (the parity mode).
type contConfig struct {
	routing EFARouting
	spines  int
	model   Model
	ideal   bool
}

// decodeContConfig is the configuration byte c encodes.
func decodeContConfig(c byte) contConfig {
	return contConfig{
		routing: []EFARouting{RouteSpray, RouteFixed, RouteAdaptive}[c%3],
		spines:  1 + int(c/3)%4,
		model:   []Model{Aware, Free}[(c/12)%2],
		ideal:   (c/24)%2 == 1,
	}
}

// encode is the byte decodeContConfig decodes to cc.
func (cc contConfig) encode() byte {
	r := map[EFARouting]byte{RouteSpray: 0, RouteFixed: 1, RouteAdaptive: 2}[cc.routing]
	m := map[Model]byte{Aware: 0, Free: 1}[cc.model]
	i := byte(0)
	if cc.ideal {
		i = 1
	}
	return r + 3*byte(cc.spines-1) + 12*m + 24*i
}

// String is the configuration as a subtest's name: routing, spines,
// model, endpoints.
func (cc contConfig) String() string {
	e := "real"
	if cc.ideal {
		e = "ideal"
	}
	return fmt.Sprintf("%s/spines=%d/%s/%s", cc.routing, cc.spines, cc.model, e)
}

// system builds cc's system: sprayConfig's two nodes of two Trn2 devices,
// under cc's model and endpoints.
func (cc contConfig) system() (*System, error) {
	cfg := sprayConfig(cc.spines, cc.routing)
	p := *cfg.Params
	if cc.ideal {
		p = p.WithIdealEndpoints()
	}
	p.Model = cc.model
	cfg.Params = &p
	return New(cfg)
}

// contOp is one decoded operation (see the encoding above).
type contOp struct {
	kind          contKind // contKinds[k%16]
	k, a, b, c, d byte
}

// String is the operation's kind and bytes.
func (o contOp) String() string {
	return fmt.Sprintf("%s [%d %d %d %d %d]", o.kind, o.k, o.a, o.b, o.c, o.d)
}

// decodeContOps decodes up to max operations; a trailing partial one is
// ignored.
func decodeContOps(data []byte, max int) []contOp {
	var ops []contOp
	for len(data) >= contOpBytes && len(ops) < max {
		ops = append(ops, contOp{kind: contKinds[data[0]%16], k: data[0], a: data[1], b: data[2], c: data[3], d: data[4]})
		data = data[contOpBytes:]
	}
	return ops
}

// contXfer is a write an operation's bytes describe.
type contXfer struct {
	src, dst, q, n int
	addr           uint64
	offset, sent   sim.Time // its start from now, its engine's sent from its start
	payload        bool
}

// write is the write the operation's bytes describe.
func (o contOp) write() contXfer {
	src := int(o.a % 4)
	return contXfer{
		src:     src,
		dst:     (src + 1 + int(o.a>>2&3)%3) % 4,
		q:       int(o.a>>4) & 7,
		n:       1 + (int(o.b)<<8 | int(o.c)),
		addr:    0x100000 + uint64(o.d>>6)*(64<<10),
		offset:  sim.Time(o.d%64) * 250 * ns,
		sent:    sim.Time(o.k/16) * 100 * ns,
		payload: o.a >= 128,
	}
}

// link is the link an operation names, of n.
func (o contOp) link(n int) int { return (int(o.a)<<8 | int(o.b)) % n }

// pending is a write reserved and not yet posted.
type pending struct {
	valid bool
	dst   int
	addr  uint64
	n     int
	lands sim.Time
}

// contResult is what an operation did on one system: the error it
// returned (its message, and whether it is ErrLinkDown), the times a
// reservation gave and the spine its path crossed, the system's clock and
// counters after it.
type contResult struct {
	err             string
	linkDown        bool
	reserved        bool
	injected, lands sim.Time
	spine           int
	now             sim.Time
	stats           Stats
}

func (r *contResult) setErr(err error) {
	if err != nil {
		r.err, r.linkDown = err.Error(), errors.Is(err, ErrLinkDown)
	}
}

// apply carries out op on s, given the writes pending (which it leaves as
// they are: the caller updates them from the result).
func (o contOp) apply(s *System, pend *[contSlots]pending) contResult {
	r := contResult{spine: -2}
	switch o.kind {
	case contWrite, contReserve:
		w := o.write()
		a, err := hwarch.FabricAddress(w.dst, w.addr)
		if err != nil {
			panic(err)
		}
		start := s.Now() + w.offset
		r.injected, r.lands, err = s.ports[w.src].Reserve(0, w.q, a, w.n, start, start+w.sent)
		r.setErr(err)
		if err != nil {
			break
		}
		r.reserved = true
		r.spine = spineOn(s, s.st.Reservations[w.src][w.q].Path)
		if o.kind == contReserve {
			break
		}
		var p []byte
		if w.payload {
			p = contPayload[:w.n]
		}
		r.setErr(s.ports[w.src].Post(0, w.q, a, w.n, p, udma.Reduce{}, r.lands))
	case contPost:
		slot := int(o.a % contSlots)
		w := pend[slot]
		if !w.valid {
			break
		}
		a, err := hwarch.FabricAddress(w.dst, w.addr)
		if err != nil {
			panic(err)
		}
		var p []byte
		if o.a >= 128 {
			p = contPayload[:w.n]
		}
		r.setErr(s.ports[slot/8].Post(0, slot%8, a, w.n, p, udma.Reduce{}, w.lands))
	case contAdvance:
		s.Advance(sim.Time(o.c)*100*ns + sim.Time(o.b))
	case contTick:
		s.Advance(sim.Time(o.d))
	case contLink:
		r.setErr(s.SetLinkDown(o.link(len(s.st.Links)), o.c%4 == 0))
	case contFault:
		f := Fault{At: s.Now() + sim.Time(o.d)*100*ns + sim.Time(o.b), Link: o.link(len(s.st.Links))}
		switch c := o.c % 8; {
		case c < 2:
			f.Kind = LinkDown
		case c < 7:
			f.Kind = LinkUp
		default:
			f.Kind, f.Link, f.Device = DeviceReset, 0, int(o.a%4)
		}
		r.setErr(s.ScheduleFault(f))
	}
	r.now, r.stats = s.Now(), s.Stats()
	return r
}

// update records in pend what op's result leaves pending.
func (o contOp) update(pend *[contSlots]pending, r contResult) {
	switch o.kind {
	case contWrite, contReserve:
		if !r.reserved {
			return // refused: the slot's reservation, if any, stands
		}
		w := o.write()
		slot := w.src*8 + w.q
		pend[slot] = pending{valid: o.kind == contReserve, dst: w.dst, addr: w.addr, n: w.n, lands: r.lands}
	case contPost:
		pend[o.a%contSlots].valid = false
	}
}

// contEnd is what a system ends a sequence in, after its last operation
// and 10 ms more, past any write or fault it booked: the clock, the
// counters, every link's state (its queue of arrivals aside, whose runs
// over by the present may be dropped at different times), when the last
// write lands, the faults still pending and what Describe says.
type contEnd struct {
	now     sim.Time
	stats   Stats
	links   []LinkState
	last    sim.Time
	faults  []PendingFault
	counted int
	report  string
}

// endOf advances s past the sequence and returns how it ends.
func endOf(t *testing.T, s *System) contEnd {
	t.Helper()
	s.Advance(10 * sim.Millisecond) // past every landing and fault the operations can book
	e := contEnd{now: s.Now(), stats: s.Stats(), last: s.LastLanding(), faults: s.PendingFaults(), counted: s.FaultCount(), report: s.Describe()}
	for i := range len(s.st.Links) {
		l, err := s.Link(i)
		require.NoError(t, err)
		l.Queue = nil
		e.links = append(e.links, l)
	}
	return e
}

// runContinuation runs ops on cc's system, saves it before op cut (after
// the last when cut is len(ops)) and loads a copy, then runs the rest on
// both and on a system never saved, and requires every operation to do
// the same on all three and the three to end the same. It reports false
// when New refuses the configuration.
func runContinuation(t *testing.T, cc contConfig, ops []contOp, cut int) bool {
	t.Helper()
	ref, err := cc.system()
	if err != nil {
		return false
	}
	orig, err := cc.system()
	require.NoError(t, err)
	systems := []*System{ref, orig}
	names := []string{"never saved", "saved"}
	var pend [contSlots]pending
	for i := 0; i <= len(ops); i++ {
		if i == cut {
			var b bytes.Buffer
			require.NoError(t, orig.Save(&b), "save before op %d", i)
			cp, err := Load(bytes.NewReader(b.Bytes()))
			require.NoError(t, err, "load before op %d", i)
			systems, names = append(systems, cp), append(names, "restored")
		}
		if i == len(ops) {
			break
		}
		o := ops[i]
		want := o.apply(ref, &pend)
		for j, s := range systems[1:] {
			got := o.apply(s, &pend)
			require.Equal(t, want, got, "op %d of %d (%v, cut %d): the %s system differs from the one never saved", i, len(ops), o, cut, names[j+1])
		}
		o.update(&pend, want)
	}
	want := endOf(t, ref)
	for j, s := range systems[1:] {
		require.Equal(t, want, endOf(t, s), "the end (cut %d of %d): the %s system differs from the one never saved", cut, len(ops), names[j+1])
	}
	return true
}

// seedOp is the encoding of an operation of kind with bytes a b c d (and
// the sent time's step, the k byte's high bits, 0).
func seedOp(kind contKind, a, b, c, d byte) []byte {
	k := byte(0)
	for k < 16 && contKinds[k] != kind {
		k++
	}
	return []byte{k, a, b, c, d}
}

// seedWrite is the encoding of a write (or a reservation, kind
// contReserve) of n bytes from device src to dst on queue q, with a
// payload or not, starting start·250 ns from now at the first address,
// its engine's bytes all sent sent·100 ns after its start.
func seedWrite(kind contKind, src, dst, q, n int, payload bool, start, sent byte) []byte {
	op := seedOp(kind, byte(src|(dst-src+3)%4<<2|q<<4), byte((n-1)>>8), byte(n-1), start)
	op[0] += 16 * sent
	if payload {
		op[1] |= 0x80
	}
	return op
}

// FuzzSnapshotContinues: a system of two nodes joined over an EFA fat tree
// — any routing, 1 to 4 spines, either model, real or ideal endpoints —
// saved part way through a sequence of writes (reserved and posted at
// once or later, with and without payloads), clock advances, links taken
// down and up, and link and device faults scheduled, and loaded again,
// goes on as the system saved and as one never saved: every operation
// after the cut gives the same error or none, the same times and spine,
// clock and counters on all three, and they end with the same counters,
// links, last landing and pending faults. Configurations New refuses are
// skipped.
func FuzzSnapshotContinues(f *testing.F) {
	spray := contConfig{RouteSpray, 2, Aware, false}
	fixed := contConfig{RouteFixed, 2, Free, false}
	adaptive := contConfig{RouteAdaptive, 3, Aware, false}
	writes := slices.Concat(
		seedWrite(contWrite, 0, 2, 0, 64<<10, false, 0, 0),
		seedWrite(contWrite, 1, 3, 1, 64<<10, false, 4, 0),
		seedWrite(contWrite, 0, 2, 2, 4<<10, false, 8, 1),
		seedWrite(contReserve, 2, 0, 0, 4, false, 0, 0),
		seedOp(contAdvance, 0, 7, 20, 0), // 2 µs + 7 ps
		seedOp(contPost, 0x80|2*8+0, 0, 0, 0),
		seedWrite(contWrite, 0, 3, 3, 16<<10, true, 1, 0),
		seedOp(contTick, 0, 0, 0, 200),
		seedWrite(contWrite, 1, 0, 0, 64<<10, false, 0, 2), // within node 0
		seedWrite(contReserve, 3, 1, 5, 32<<10, false, 0, 0),
		seedOp(contPost, 3*8+5, 0, 0, 0),
	)
	ops := uint8(len(writes) / contOpBytes)
	for _, cc := range []contConfig{spray, fixed, adaptive, {RouteSpray, 4, Free, false}, {RouteAdaptive, 2, Free, false}, {RouteFixed, 1, Aware, false}, {RouteSpray, 2, Aware, true}, {RouteAdaptive, 3, Free, true}} {
		f.Add(cc.encode(), ops/2, writes)
	}
	f.Add(spray.encode(), uint8(0), writes) // cut before anything
	f.Add(adaptive.encode(), ops, writes)   // cut after everything
	// A link down before the cut — device 0's leaf's uplink to spine 0: a
	// write there is sprayed past it, or refused under fixed routing — a
	// fault bringing it back up after the cut, and a device reset.
	for _, cc := range []contConfig{spray, fixed, adaptive} {
		s, err := cc.system()
		require.NoError(f, err)
		up := s.topo.Scale.leafUp[0][0]
		down := slices.Concat(
			seedOp(contLink, byte(up>>8), byte(up), 0, 0),
			seedWrite(contWrite, 0, 2, 0, 64<<10, false, 0, 0),
			seedWrite(contReserve, 0, 2, 1, 64<<10, false, 0, 0),
			seedOp(contFault, byte(up>>8), byte(up), 2, 30), // up in 3 µs
			seedWrite(contWrite, 0, 3, 2, 64<<10, true, 0, 0),
			seedOp(contAdvance, 0, 0, 40, 0),
			seedOp(contPost, 0x80|0*8+1, 0, 0, 0),
			seedWrite(contWrite, 0, 2, 0, 64<<10, true, 0, 0),
			seedOp(contFault, 0, 0, 7, 10), // device 0 resets in 1 µs
			seedWrite(contWrite, 3, 0, 4, 8<<10, true, 0, 0),
			seedOp(contAdvance, 0, 0, 255, 0),
		)
		f.Add(cc.encode(), uint8(3), down)
	}
	f.Fuzz(func(t *testing.T, config, cut uint8, data []byte) {
		ops := decodeContOps(data, contMaxOps)
		cc := decodeContConfig(config)
		if !runContinuation(t, cc, ops, int(cut)%(len(ops)+1)) {
			t.Skipf("New refuses %s", cc)
		}
	})
}

// TestSnapshotContinues: FuzzSnapshotContinues' property on a fixed
// pseudo-random sequence of 200 operations, cut in the middle, for every
// routing and model on 2 and 3 spines, so that every run of the tests
// checks it.
func TestSnapshotContinues(t *testing.T) {
	const n = 200
	for _, routing := range []EFARouting{RouteSpray, RouteFixed, RouteAdaptive} {
		for _, model := range []Model{Aware, Free} {
			for _, spines := range []int{2, 3} {
				cc := contConfig{routing, spines, model, false}
				t.Run(cc.String(), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(0x5eed, uint64(cc.encode())))
					data := make([]byte, n*contOpBytes)
					for i := range data {
						data[i] = byte(rng.Uint32())
					}
					ops := decodeContOps(data, n)
					require.Len(t, ops, n)
					require.True(t, runContinuation(t, cc, ops, n/2), "New refuses %s", cc)
				})
			}
		}
	}
}
