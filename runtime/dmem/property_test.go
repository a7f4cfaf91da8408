package dmem

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// model is the caller's view of an Allocator: the handles it holds.
type model struct {
	a    *Allocator
	live map[Handle]Block
	held []Handle
}

// alloc performs one Alloc and checks its result against the request.
func (m *model) alloc(req Request) error {
	h, err := m.a.Alloc(req)
	if err != nil {
		if !errors.Is(err, ErrNoMemory) && !errors.Is(err, ErrBadRequest) {
			return err
		}
		return nil
	}
	if _, dup := m.live[h]; dup || h == NoHandle {
		return errors.New("Alloc issued a live or zero handle")
	}
	b, err := m.a.Info(h)
	if err != nil {
		return err
	}
	align := max(req.Align, m.a.page)
	if b.Handle != h || b.Requested != req.Size || b.Addr%align != 0 || b.Name != req.Name ||
		(req.Channel != Any && b.Channel != req.Channel) || (b.Small && b.Size > m.a.smallMax) {
		return errors.New("Info disagrees with the request")
	}
	m.live[h] = b
	m.held = append(m.held, h)
	return nil
}

// free frees h and checks the outcome against the model.
func (m *model) free(h Handle) error {
	_, live := m.live[h]
	err := m.a.Free(h)
	switch {
	case live && err != nil:
		return err
	case !live && err == nil:
		return errors.New("Free of a handle that is not live succeeded")
	case !live && !errors.Is(err, ErrDoubleFree) && !errors.Is(err, ErrForeignHandle):
		return err
	}
	if live {
		delete(m.live, h)
	}
	return nil
}

// check compares the model with the allocator and runs verify.
func (m *model) check() error {
	if err := m.a.verify(); err != nil {
		return err
	}
	if got := len(m.a.Blocks()); got != len(m.live) {
		return errors.New("live block count differs from the model")
	}
	for h, want := range m.live {
		got, err := m.a.Info(h)
		if err != nil || got != want {
			return errors.New("a held block changed")
		}
		if b, off, ok := m.a.Translate(want.Addr+want.Size/2, 1); !ok || b != want || off != want.Size/2 {
			return errors.New("Translate does not find a held block")
		}
	}
	return nil
}

func TestRandomSequence(t *testing.T) {
	configs := []struct {
		name string
		opts func(g hwarch.Generation) Options
	}{
		{"qemu-64MiB", func(g hwarch.Generation) Options { return qemuChannels(g, 64*MiB) }},
		{"qemu-1GiB-page1k", func(g hwarch.Generation) Options {
			o := qemuChannels(g, GiB)
			o.PageSize = 1024
			return o
		}},
		{"silicon", func(hwarch.Generation) Options { return Options{} }},
	}
	for _, g := range hwarch.Generations() {
		for _, cfg := range configs {
			t.Run(g.String()+"/"+cfg.name, func(t *testing.T) {
				a := newAlloc(t, g, cfg.opts(g))
				m := &model{a: a, live: map[Handle]Block{}}
				rng := rand.New(rand.NewPCG(1, uint64(g)))
				geo := hwarch.MustGeometry(g)
				for i := range 4000 {
					switch op := rng.IntN(10); {
					case op < 6:
						size := uint64(rng.IntN(1<<uint(rng.IntN(27))) + 1)
						var align uint64
						if rng.IntN(4) == 0 {
							align = 1 << uint(rng.IntN(27))
						}
						req := Request{Size: size, Align: align, Channel: rng.IntN(len(geo.HBM)+1) - 1,
							NC: rng.IntN(geo.NeuronCores+1) - 1, Name: "r"}
						require.NoError(t, m.alloc(req), "op %d", i)
					case op < 9 && len(m.held) > 0:
						j := rng.IntN(len(m.held))
						h := m.held[j]
						m.held = append(m.held[:j], m.held[j+1:]...)
						if _, live := m.live[h]; live {
							require.NoError(t, m.free(h), "op %d", i)
						}
					default:
						require.NoError(t, m.free(Handle(rng.IntN(len(a.table)+3))), "op %d: stray free", i)
					}
					if i%50 == 0 {
						require.NoError(t, m.check(), "op %d", i)
					}
				}
				require.NoError(t, m.check())
				for h := range m.live {
					require.NoError(t, m.free(h))
				}
				require.NoError(t, m.check())
				for c, s := range a.Stats() {
					assert.Zero(t, s.Used, "channel %d", c)
					start, end := a.ChannelRange(c)
					assert.Equal(t, end-start, s.Total)
					sm, _ := a.SmallPoolRange(c)
					assert.Equal(t, max(sm-start, end-sm), s.LargestFree, "everything coalesced back")
				}
			})
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			a := newAlloc(t, g, qemuChannels(g, 256*MiB))
			geo := hwarch.MustGeometry(g)
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for w := range 8 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					var mine []Block
					for range 500 {
						if len(mine) > 0 && rng.IntN(2) == 0 {
							b := mine[len(mine)-1]
							mine = mine[:len(mine)-1]
							if got, err := a.Info(b.Handle); err != nil || got != b {
								errs <- errors.New("another goroutine changed my block")
								return
							}
							if err := a.Free(b.Handle); err != nil {
								errs <- err
								return
							}
							continue
						}
						h, err := a.Alloc(Request{Size: uint64(rng.IntN(2*int(MiB)) + 1), NC: w % geo.NeuronCores, Channel: Any})
						if errors.Is(err, ErrNoMemory) {
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						b, err := a.Info(h)
						if err != nil {
							errs <- err
							return
						}
						mine = append(mine, b)
						_ = a.Stats()
						_, _, _ = a.Translate(b.Addr, b.Size)
					}
					for _, b := range mine {
						if err := a.Free(b.Handle); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			requireValid(t, a)
			assert.Empty(t, a.Blocks())
			for _, s := range a.Stats() {
				assert.Zero(t, s.Used)
			}
		})
	}
}

// FuzzAllocator reads its input as a sequence of operations on a Sunda,
// Cayman or Mariana allocator with small (QEMU-like) channels; the allocator
// must never panic and its invariants must hold after every operation.
//
// Only the first 600 bytes count. Byte 0 picks the generation and the page
// size; then each operation is one op byte followed by its arguments:
//
//	op%4 == 0, 1: Alloc  size = (b1<<8|b2) pages − b3 bytes, align = 1<<(b4%32) or 0, channel b5%(n+2)−1, NC b6%(ncs+2)−1
//	op%4 == 2:    Free   handle b1 (may be foreign or free)
//	op%4 == 3:    Translate (b1<<8|b2) pages into channel b3%n, size b4 pages
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 0, 2, 1, 2, 1})
	f.Add([]byte{1, 0, 0x0c, 0, 0, 20, 1, 2, 1, 0, 0, 1, 0, 0, 0, 2, 1, 3, 0, 0, 1, 1})
	f.Add([]byte{5, 1, 0xff, 0xff, 0, 0, 0, 0, 2, 0, 2, 200, 0, 0, 0, 1, 9, 0, 0})
	f.Add([]byte{2, 0, 0, 128, 0, 0, 0, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 128, 0, 0, 0, 0, 2, 2, 0, 1, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		if len(data) > 600 { // ~100 operations: long inputs only slow the fuzzer's minimiser down
			data = data[:600]
		}
		g := hwarch.Generations()[int(data[0])%3]
		opts := qemuChannels(g, 64*MiB)
		opts.PageSize = 1024 << (data[0] / 3 % 3)
		a, err := New(hwarch.MustGeometry(g), opts)
		if err != nil {
			t.Fatal(err)
		}
		m := &model{a: a, live: map[Handle]Block{}}
		arg := func(i int) int {
			if i < len(data) {
				return int(data[i])
			}
			return 0
		}
		n, ncs := a.Channels(), a.ncs
		for i := 1; i < len(data); {
			op := data[i]
			switch op % 4 {
			case 0, 1:
				pages := uint64(arg(i+1)<<8 | arg(i+2))
				size := pages*a.page - min(uint64(arg(i+3)), pages*a.page)
				var align uint64
				if b := arg(i + 4); b >= 32 {
					align = 1 << (b % 32)
				}
				req := Request{Size: size, Align: align, Channel: arg(i+5)%(n+2) - 1, NC: arg(i+6)%(ncs+2) - 1}
				err = m.alloc(req)
				i += 7
			case 2:
				err = m.free(Handle(arg(i + 1)))
				i += 2
			case 3:
				start, _ := a.ChannelRange(arg(i+3) % n)
				addr := start + uint64(arg(i+1)<<8|arg(i+2))*a.page
				b, off, ok := a.Translate(addr, uint64(arg(i+4))*a.page)
				if ok && (b.Addr+off != addr || m.live[b.Handle] != b) {
					t.Fatalf("Translate(%#x) = %+v, %#x", addr, b, off)
				}
				i += 5
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func BenchmarkAllocFree(b *testing.B) {
	for _, g := range hwarch.Generations() {
		b.Run(g.String(), func(b *testing.B) {
			a := newAlloc(b, g, Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			// A resident population of 512 blocks, so the free lists are fragmented.
			ring := make([]Handle, 512)
			for i := range ring {
				h, err := a.Alloc(Request{Size: uint64(rng.IntN(4*int(MiB)) + 1), Channel: Any, NC: i % 2})
				require.NoError(b, err)
				ring[i] = h
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				j := i % len(ring)
				if err := a.Free(ring[j]); err != nil {
					b.Fatal(err)
				}
				h, err := a.Alloc(Request{Size: uint64(rng.IntN(4*int(MiB)) + 1), Channel: Any, NC: i % 2})
				if err != nil {
					b.Fatal(err)
				}
				ring[j] = h
			}
		})
	}
}
