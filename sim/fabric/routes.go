package fabric

// routes is a topology's next-hop table: for each node and device, the
// link a packet at the node takes towards the device (-1: none; a device
// needs none towards itself). Up to denseRoutes devices it is a row per
// node. Past that each node's row is kept as runs of consecutive
// destinations that take the same link, of which a switched fabric has
// few (a device's row is three runs, in its own server and on either side
// of it, however many devices there are; a switch's is a run per port),
// so the table does not grow with the square of the device count.
type routes struct {
	dense [][]int32  // dense[x][dst], for topologies of at most denseRoutes devices
	runs  [][]hopRun // runs[x], by start, the first at destination 0, past that
}

// hopRun is a run of destinations that take one link: from start up to the
// next run's start (or the last device).
type hopRun struct {
	start int32
	link  int32
}

// denseRoutes is the largest topology whose next-hop table is dense (4 MiB
// of rows at 1,024 devices).
const denseRoutes = 1024

// routeBlock is how many destinations a table of runs is routed at a
// time: the dense rows of one block (nodes × routeBlock links) are all it
// holds besides the runs.
const routeBlock = 256

// built reports whether the table has been filled (Topology.route).
func (r *routes) built() bool { return r.dense != nil || r.runs != nil }

// hop is the link a packet at node x takes towards device dst.
func (r *routes) hop(x, dst int) int32 {
	if r.dense != nil {
		return r.dense[x][dst]
	}
	rs := r.runs[x]
	lo, hi := 0, len(rs) // the run wanted is the last one starting at or before dst: in [lo, hi)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if int(rs[mid].start) <= dst {
			lo = mid
		} else {
			hi = mid
		}
	}
	return rs[lo].link
}

// each calls f with each run of node x's row: destinations [lo, hi) take
// link (dense rows give a run per destination).
func (r *routes) each(x, devices int, f func(lo, hi int, link int32)) {
	if r.dense != nil {
		for dst, id := range r.dense[x] {
			f(dst, dst+1, id)
		}
		return
	}
	rs := r.runs[x]
	for i, run := range rs {
		hi := devices
		if i+1 < len(rs) {
			hi = int(rs[i+1].start)
		}
		f(int(run.start), hi, run.link)
	}
}

// appendRuns adds to runs the destinations lo, lo+1, … taking the links of
// col in turn, continuing the last run where its link goes on.
func appendRuns(runs []hopRun, lo int, col []int32) []hopRun {
	for i, id := range col {
		if n := len(runs); n > 0 && runs[n-1].link == id {
			continue
		}
		runs = append(runs, hopRun{start: int32(lo + i), link: id})
	}
	return runs
}
