package fabric

// pathCache keeps the paths a system's writes have taken, computed on
// first use from the topology's next-hop table. Up to denseLast devices it
// is a table of rows, one per source that has written, each of one entry
// per destination; past that a map keyed by the pair, so its memory grows
// with the pairs that have carried writes, not with the square of the
// device count (a row of 4,096 entries is 96 KiB; every device of a
// 4,096-device system writing once would have taken 384 MiB).
type pathCache struct {
	rows  [][][]int        // rows[src][dst], for systems of at most denseLast devices
	pairs map[uint64][]int // by src<<32 | dst, for larger systems
}

// newPathCache returns an empty cache for a topology of n devices.
func newPathCache(n int) pathCache {
	if n <= denseLast {
		return pathCache{rows: make([][][]int, n)}
	}
	return pathCache{pairs: map[uint64][]int{}}
}

// get returns the path from src to dst (none when src == dst), computing
// and keeping it on first use.
func (c *pathCache) get(t *Topology, src, dst int) ([]int, error) {
	if src == dst {
		return nil, nil
	}
	if c.pairs != nil {
		key := uint64(src)<<32 | uint64(dst)
		if p, ok := c.pairs[key]; ok {
			return p, nil
		}
		p, err := t.Path(src, dst)
		if err != nil {
			return nil, err
		}
		c.pairs[key] = p
		return p, nil
	}
	if src < 0 || src >= len(c.rows) {
		return t.Path(src, dst) // refused there, naming the devices
	}
	row := c.rows[src]
	if row == nil {
		row = make([][]int, t.Devices)
		c.rows[src] = row
	}
	if dst >= 0 && dst < len(row) && row[dst] != nil {
		return row[dst], nil
	}
	p, err := t.Path(src, dst)
	if err != nil {
		return nil, err
	}
	row[dst] = p
	return p, nil
}
