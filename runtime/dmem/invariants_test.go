package dmem

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// qemuChannels returns Options with every channel of g cut to n bytes, as
// under QEMU where a channel is BAR4 size / 4.
func qemuChannels(g hwarch.Generation, n uint64) Options {
	cb := make([]uint64, len(hwarch.MustGeometry(g).HBM))
	for i := range cb {
		cb[i] = n
	}
	return Options{ChannelBytes: cb}
}

func newAlloc(t testing.TB, g hwarch.Generation, opts Options) *Allocator {
	t.Helper()
	a, err := New(hwarch.MustGeometry(g), opts)
	require.NoError(t, err)
	return a
}

func requireValid(t testing.TB, a *Allocator) {
	t.Helper()
	require.NoError(t, a.verify())
}

// verify checks every structural invariant of the allocator:
//   - each free list is sorted, non-empty, non-adjacent and inside its pool;
//   - live blocks are page aligned, never overlap, lie in their channel's pool
//     (small or main as Block.Small says) and never overlap a free range;
//   - per pool, used == sum of its blocks and used + free bytes == total;
//   - Stats add up (Used + Free == Total) and count the blocks;
//   - the handle table, the LIFO of free numbers and the address index agree.
func (a *Allocator) verify() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	perPool := make(map[*pool]uint64)
	inPool := make(map[*pool][]span) // live blocks of each pool, in address order
	blocks := make([]int, len(a.ch))
	var prev *Block
	order := a.addrOrder()
	if len(order) != len(a.byAddr) {
		return fmt.Errorf("%d live ranges, %d addresses with a handle", len(order), len(a.byAddr))
	}
	for i, h := range order {
		if h == NoHandle || int(h) > len(a.table) {
			return fmt.Errorf("byAddr[%d] = %d out of table", i, h)
		}
		e := &a.table[h-1]
		b := &e.b
		if !e.live || b.Handle != h {
			return fmt.Errorf("byAddr[%d] = handle %d: live %v, recorded handle %d", i, h, e.live, b.Handle)
		}
		if prev != nil && prev.End() > b.Addr {
			return fmt.Errorf("blocks %d [%#x,%#x) and %d [%#x,%#x) overlap or are unsorted",
				prev.Handle, prev.Addr, prev.End(), b.Handle, b.Addr, b.End())
		}
		prev = b
		if b.Channel < 0 || b.Channel >= len(a.ch) {
			return fmt.Errorf("block %d: channel %d", h, b.Channel)
		}
		ch := &a.ch[b.Channel]
		p := &ch.main
		if b.Small {
			p = &ch.small
		}
		if !p.contains(b.Addr, b.Size) {
			return fmt.Errorf("block %d [%#x,%#x) outside its pool [%#x,%#x)", h, b.Addr, b.End(), p.start, p.end)
		}
		if b.Addr%a.page != 0 || b.Size%a.page != 0 || b.Size < b.Requested || b.Size-b.Requested >= a.page {
			return fmt.Errorf("block %d: addr %#x size %#x requested %#x not page rounded", h, b.Addr, b.Size, b.Requested)
		}
		perPool[p] += b.Size
		inPool[p] = append(inPool[p], span{b.Addr, b.End()})
		blocks[b.Channel]++
	}
	live := 0
	for i := range a.table {
		if a.table[i].live {
			live++
		}
	}
	if live != len(order) || live+len(a.freeNums) != len(a.table) {
		return fmt.Errorf("table %d entries: %d live, %d indexed, %d free numbers", len(a.table), live, len(order), len(a.freeNums))
	}
	seen := make(map[Handle]bool)
	for _, h := range a.freeNums {
		if h == NoHandle || int(h) > len(a.table) || a.table[h-1].live || seen[h] {
			return fmt.Errorf("free number %d is invalid, live or repeated", h)
		}
		seen[h] = true
	}
	for c := range a.ch {
		ch := &a.ch[c]
		if ch.main.start != ch.start || ch.main.end != ch.small.start || ch.small.end != ch.end {
			return fmt.Errorf("channel %d pools do not tile [%#x,%#x)", c, ch.start, ch.end)
		}
		for _, p := range []*pool{&ch.main, &ch.small} {
			var free uint64
			spans := p.spans()
			for i, s := range spans {
				if s.start >= s.end || s.start < p.start || s.end > p.end {
					return fmt.Errorf("channel %d: free [%#x,%#x) empty or outside [%#x,%#x)", c, s.start, s.end, p.start, p.end)
				}
				if i > 0 && spans[i-1].end >= s.start {
					return fmt.Errorf("channel %d: free ranges %d and %d unsorted, overlapping or not coalesced", c, i-1, i)
				}
				free += s.end - s.start
			}
			if p.used != perPool[p] || p.used+free != p.total() {
				return fmt.Errorf("channel %d pool [%#x,%#x): used %#x (blocks %#x) + free %#x != %#x",
					c, p.start, p.end, p.used, perPool[p], free, p.total())
			}
			if err := tiles(p, inPool[p]); err != nil {
				return fmt.Errorf("channel %d: %w", c, err)
			}
		}
		if ch.blocks != blocks[c] {
			return fmt.Errorf("channel %d counts %d blocks, has %d", c, ch.blocks, blocks[c])
		}
	}
	for c, s := range a.stats() {
		if s.Used+s.Free != s.Total || s.SmallUsed > s.Used || s.LargestFree > s.Free || s.Blocks != blocks[c] {
			return fmt.Errorf("channel %d stats do not add up: %+v", c, s)
		}
	}
	return nil
}

// tiles checks that the live blocks and the free ranges of p, both sorted,
// together cover the pool exactly once: every byte is either allocated or free.
func tiles(p *pool, blocks []span) error {
	at, i, j := p.start, 0, 0
	free := p.spans()
	for i < len(blocks) || j < len(free) {
		var s span
		if j == len(free) || (i < len(blocks) && blocks[i].start < free[j].start) {
			s, i = blocks[i], i+1
		} else {
			s, j = free[j], j+1
		}
		if s.start != at {
			return fmt.Errorf("pool [%#x,%#x): range [%#x,%#x) follows %#x: overlap or hole", p.start, p.end, s.start, s.end, at)
		}
		at = s.end
	}
	if at != p.end {
		return fmt.Errorf("pool [%#x,%#x): covered only up to %#x", p.start, p.end, at)
	}
	return nil
}

func TestVerifyCatchesCorruption(t *testing.T) {
	a := newAlloc(t, hwarch.Sunda, qemuChannels(hwarch.Sunda, 64*hwarch.MiB))
	h1, err := a.Alloc(Request{Size: hwarch.MiB, NC: Any})
	require.NoError(t, err)
	_, err = a.Alloc(Request{Size: hwarch.MiB, NC: Any})
	require.NoError(t, err)
	requireValid(t, a)
	a.table[h1-1].b.Size += a.page // now overlaps the next block
	require.Error(t, a.verify())
	a.table[h1-1].b.Size -= a.page
	a.ch[0].main.used++
	require.Error(t, a.verify())
	a.ch[0].main.used--
	a.ch[0].main.free.Insert(a.ch[0].main.end-a.page, a.ch[0].main.end)
	require.Error(t, a.verify(), "an overlapping free range")
}
