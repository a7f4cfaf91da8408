package dmem

import (
	"fmt"
	"io"
	"strings"

	"github.com/neuronsim/neuronsim/internal/extent"
)

// Alloc reserves a block of device memory. The size is rounded up to the
// page. A rounded size ≤ SmallMax is tried in the channel's small pool first
// and then in its main pool; larger sizes use the main pool only. With
// Channel ≥ 0 only that channel is tried (NC is then only range-checked);
// with Channel == Any the channels are tried in order, wrapping, starting
// from NC's channel (NC / TPBPerHBM) or from channel 0 when NC is Any.
func (a *Allocator) Alloc(req Request) (Handle, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	size, align, first, count, err := a.check(req)
	if err != nil {
		return NoHandle, err
	}
	for i := range count {
		c := (first + i) % len(a.ch)
		ch := &a.ch[c]
		small := size <= a.smallMax
		addr, ok := uint64(0), false
		if small {
			addr, ok = ch.small.alloc(size, align)
		}
		if !ok {
			small = false
			addr, ok = ch.main.alloc(size, align)
		}
		if !ok {
			continue
		}
		ch.blocks++
		return a.insert(Block{Channel: c, Addr: addr, Size: size, Requested: req.Size, Name: req.Name, Small: small}), nil
	}
	return NoHandle, a.noMemory(req, size, align, first, count)
}

// check validates req and returns the rounded size, the effective alignment
// and the channels to try: count channels from first, wrapping.
func (a *Allocator) check(req Request) (size, align uint64, first, count int, err error) {
	switch {
	case req.Size == 0:
		return 0, 0, 0, 0, fmt.Errorf("dmem: alloc %q: size 0: %w", req.Name, ErrBadRequest)
	case req.Align != 0 && !isPow2(req.Align):
		return 0, 0, 0, 0, fmt.Errorf("dmem: alloc %q: alignment %#x is not a power of two: %w", req.Name, req.Align, ErrBadRequest)
	case req.Channel < Any || req.Channel >= len(a.ch):
		return 0, 0, 0, 0, fmt.Errorf("dmem: alloc %q: channel %d out of range (device has %d; %d = any): %w",
			req.Name, req.Channel, len(a.ch), Any, ErrBadRequest)
	case req.NC < Any || req.NC >= a.ncs:
		return 0, 0, 0, 0, fmt.Errorf("dmem: alloc %q: NeuronCore %d out of range (device has %d; %d = none): %w",
			req.Name, req.NC, a.ncs, Any, ErrBadRequest)
	}
	align = max(req.Align, a.page)
	size, ok := alignUp(req.Size, a.page)
	if !ok {
		return 0, 0, 0, 0, fmt.Errorf("dmem: alloc %q: size %#x cannot be rounded to the page: %w", req.Name, req.Size, ErrNoMemory)
	}
	if req.Channel != Any {
		return size, align, req.Channel, 1, nil
	}
	if req.NC != Any {
		first = (req.NC / a.ncPerCh) % len(a.ch)
	}
	return size, align, first, len(a.ch), nil
}

// noMemory builds the exhaustion error: size, alignment, channels tried and
// the largest free block among the pools the request could use.
func (a *Allocator) noMemory(req Request, size, align uint64, first, count int) error {
	order := make([]int, count)
	for i := range order {
		order[i] = (first + i) % len(a.ch)
	}
	var largest, aligned uint64
	where := -1
	for _, c := range order {
		ch := &a.ch[c]
		pools := []*pool{&ch.main}
		if size <= a.smallMax {
			pools = append(pools, &ch.small)
		}
		for _, p := range pools {
			if l := p.largest(); l > largest {
				largest, where = l, c
			}
			aligned = max(aligned, p.largestAligned(align))
		}
	}
	chans := make([]string, len(order))
	for i, c := range order {
		chans[i] = fmt.Sprint(c)
	}
	what := "channel " + chans[0]
	if len(order) > 1 {
		what = "channels " + strings.Join(chans, ",")
	}
	free := "no free block"
	if where >= 0 {
		free = fmt.Sprintf("largest free block %s on channel %d", sizeString(largest), where)
		if aligned < largest {
			free += fmt.Sprintf(" (%s at this alignment)", sizeString(aligned))
		}
	}
	return fmt.Errorf("dmem: alloc %q of %s (requested %#x) aligned %s on %s: %s: %w",
		req.Name, sizeString(size), req.Size, sizeString(align), what, free, ErrNoMemory)
}

// insert records a new live block under a fresh or recycled handle number.
func (a *Allocator) insert(b Block) Handle {
	if n := len(a.freeNums); n > 0 {
		b.Handle = a.freeNums[n-1]
		a.freeNums = a.freeNums[:n-1]
		a.table[b.Handle-1] = entry{b: b, live: true}
	} else {
		a.table = append(a.table, entry{b: b, live: true})
		b.Handle = Handle(len(a.table))
		a.table[b.Handle-1].b.Handle = b.Handle
	}
	a.live.Insert(b.Addr, b.End())
	a.byAddr[b.Addr] = b.Handle
	return b.Handle
}

// lookup returns the table entry of h or ErrForeignHandle.
func (a *Allocator) lookup(op string, h Handle) (*entry, error) {
	if h == NoHandle || int64(h) > int64(len(a.table)) {
		return nil, fmt.Errorf("dmem: %s handle %d: never issued (%d issued): %w", op, h, len(a.table), ErrForeignHandle)
	}
	return &a.table[h-1], nil
}

// Free releases the block of h and coalesces its range with free neighbours.
// Freeing a handle that is currently free is ErrDoubleFree; 0 or a number
// never issued is ErrForeignHandle; neither changes any state. The number of
// h goes on top of the LIFO of free numbers and is the next one Alloc issues:
// from then on a stale copy of h names the new block (as in the driver).
func (a *Allocator) Free(h Handle) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, err := a.lookup("free", h)
	if err != nil {
		return err
	}
	if !e.live {
		return fmt.Errorf("dmem: free handle %d (was %q at %#x on channel %d): %w",
			h, e.b.Name, e.b.Addr, e.b.Channel, ErrDoubleFree)
	}
	b := e.b
	ch := &a.ch[b.Channel]
	if b.Small {
		ch.small.release(b.Addr, b.Size)
	} else {
		ch.main.release(b.Addr, b.Size)
	}
	ch.blocks--
	e.live = false
	a.freeNums = append(a.freeNums, h)
	a.live.Delete(b.Addr)
	delete(a.byAddr, b.Addr)
	return nil
}

// Info returns the block of a live handle. A handle that was issued but is
// free now is ErrStaleHandle; 0 or a number never issued is ErrForeignHandle.
func (a *Allocator) Info(h Handle) (Block, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, err := a.lookup("info", h)
	if err != nil {
		return Block{}, err
	}
	if !e.live {
		return Block{}, fmt.Errorf("dmem: info handle %d: freed: %w", h, ErrStaleHandle)
	}
	return e.b, nil
}

// Translate finds the live block that holds the whole range [addr, addr+size)
// and returns it with the offset of addr inside it. The block's rounded Size
// counts, so the padding after Requested is inside. A size of 0 is treated as
// 1 (the byte at addr). ok is false when no single live block holds the range.
func (a *Allocator) Translate(addr, size uint64) (b Block, off uint64, ok bool) {
	size = max(size, 1)
	a.mu.Lock()
	defer a.mu.Unlock()
	r, found := a.live.Floor(addr)
	if !found {
		return Block{}, 0, false
	}
	b = a.table[a.byAddr[r.Start]-1].b
	off = addr - b.Addr
	if off >= b.Size || size > b.Size-off {
		return Block{}, 0, false
	}
	return b, off, true
}

// Stats returns the usage of every channel, indexed by channel.
func (a *Allocator) Stats() []ChannelStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats()
}

func (a *Allocator) stats() []ChannelStats {
	out := make([]ChannelStats, len(a.ch))
	for i := range a.ch {
		ch := &a.ch[i]
		total := ch.main.total() + ch.small.total()
		used := ch.main.used + ch.small.used
		out[i] = ChannelStats{Total: total, Used: used, Free: total - used,
			LargestFree: max(ch.main.largest(), ch.small.largest()), Blocks: ch.blocks, SmallUsed: ch.small.used}
	}
	return out
}

// Blocks returns the live blocks in address order.
func (a *Allocator) Blocks() []Block {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.blocks()
}

func (a *Allocator) blocks() []Block {
	out := make([]Block, 0, a.live.Len())
	for _, h := range a.addrOrder() {
		out = append(out, a.table[h-1].b)
	}
	return out
}

// addrOrder returns the live handles in address order.
func (a *Allocator) addrOrder() []Handle {
	out := make([]Handle, 0, a.live.Len())
	a.live.Ascend(func(e extent.Extent) bool {
		out = append(out, a.byAddr[e.Start])
		return true
	})
	return out
}

// Dump writes the live blocks in address order, one a line, followed by one
// usage line per channel, all from one consistent snapshot. It returns the first write error.
func (a *Allocator) Dump(w io.Writer) error {
	a.mu.Lock()
	blocks, stats := a.blocks(), a.stats()
	a.mu.Unlock()
	var sb strings.Builder
	fmt.Fprintf(&sb, "%6s %2s %-18s %10s %10s %-5s %s\n", "handle", "ch", "address", "size", "requested", "pool", "name")
	for _, b := range blocks {
		pool := "main"
		if b.Small {
			pool = "small"
		}
		fmt.Fprintf(&sb, "%6d %2d 0x%016x %10s %#10x %-5s %s\n", b.Handle, b.Channel, b.Addr, sizeString(b.Size), b.Requested, pool, b.Name)
	}
	for i, s := range stats {
		fmt.Fprintf(&sb, "channel %d: %d blocks, used %s of %s (small %s), largest free %s\n",
			i, s.Blocks, sizeString(s.Used), sizeString(s.Total), sizeString(s.SmallUsed), sizeString(s.LargestFree))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
