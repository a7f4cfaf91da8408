package enc

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	allOps   = []Op{AllReduce, AllGather, ReduceScatter, AllToAll, Permute}
	allAlgos = []Algo{Auto, Ring, Mesh, RDH, KangaRing, Hier}
	rankSet  = []int{1, 2, 3, 4, 5, 8, 16, 32}
)

// supported is the test's own statement of which combinations Build accepts.
func supported(op Op, a Algo, r, group int) bool {
	switch {
	case op == AllToAll && a != Auto && a != Mesh:
		return false
	case op == Permute && a != Auto && a != Ring && a != Mesh:
		return false
	}
	switch a {
	case RDH:
		return r&(r-1) == 0
	case KangaRing:
		return r%2 == 0
	case Hier:
		return group >= 1 && r%group == 0
	}
	return true
}

// hierGroup is the group size the matrix uses for Hier: 4 ranks per node
// when that divides, else 2, else one node.
func hierGroup(r int) int {
	for _, g := range []int{4, 2} {
		if r%g == 0 && r > g {
			return g
		}
	}
	return r
}

// testSize is the message size the matrix uses: 5 elements per rank block
// for the ops that split by rank, 5r+3 elements otherwise (uneven blocks).
func testSize(op Op, r, elem int) int64 {
	if op.splits() {
		return int64(5 * r * elem)
	}
	return int64((5*r + 3) * elem)
}

func TestCollectives(t *testing.T) {
	for _, op := range allOps {
		for _, a := range allAlgos {
			for _, r := range rankSet {
				opt := Options{GroupSize: hierGroup(r)}
				for _, d := range []Dtype{Int32, Float32, BFloat16} {
					t.Run(fmt.Sprintf("%v/%v/r%d/%v", op, a, r, d), func(t *testing.T) {
						size := testSize(op, r, d.Size())
						s, err := Build(op, a, r, size, d.Size(), opt)
						if !supported(op, a, r, opt.GroupSize) {
							require.ErrorIs(t, err, ErrBadCollective)
							return
						}
						require.NoError(t, err)
						if a != Auto {
							assert.Equal(t, a, s.Algo)
						}
						assert.NotEqual(t, Auto, s.Algo)
						checkCollective(t, s, d, opt, uint64(r)*31+uint64(op))
					})
				}
			}
		}
	}
}

// TestOddSizes covers messages smaller than the rank count (empty blocks),
// a single element and zero bytes.
func TestOddSizes(t *testing.T) {
	for _, op := range allOps {
		for _, a := range allAlgos {
			for _, r := range []int{1, 2, 4, 6, 8} {
				for _, elems := range []int{0, 1, 3} {
					opt := Options{GroupSize: hierGroup(r), Chunks: 2}
					if op.splits() {
						elems *= r
					}
					t.Run(fmt.Sprintf("%v/%v/r%d/e%d", op, a, r, elems), func(t *testing.T) {
						s, err := Build(op, a, r, int64(4*elems), 4, opt)
						if !supported(op, a, r, opt.GroupSize) {
							require.ErrorIs(t, err, ErrBadCollective)
							return
						}
						require.NoError(t, err)
						if elems == 0 {
							assert.Empty(t, s.Steps)
						}
						checkCollective(t, s, Int32, opt, 7)
					})
				}
			}
		}
	}
}

func TestOtherDtypes(t *testing.T) {
	for _, d := range []Dtype{Float16, Uint32, Int8, Uint8, Int16, Uint16} {
		for _, a := range []Algo{Ring, Mesh, RDH, KangaRing, Hier} {
			for _, op := range []Op{AllReduce, ReduceScatter, AllGather} {
				t.Run(fmt.Sprintf("%v/%v/%v", d, a, op), func(t *testing.T) {
					opt := Options{GroupSize: 2}
					s, err := Build(op, a, 8, testSize(op, 8, d.Size()), d.Size(), opt)
					require.NoError(t, err)
					checkCollective(t, s, d, opt, 3)
				})
			}
		}
	}
}

func TestHierGroupSizes(t *testing.T) {
	for _, r := range []int{6, 8, 12} {
		for g := 1; g <= r; g++ {
			for _, op := range []Op{AllReduce, AllGather, ReduceScatter} {
				t.Run(fmt.Sprintf("r%d/g%d/%v", r, g, op), func(t *testing.T) {
					opt := Options{GroupSize: g}
					s, err := Build(op, Hier, r, testSize(op, r, 4), 4, opt)
					if r%g != 0 {
						require.ErrorIs(t, err, ErrBadCollective)
						assert.ErrorContains(t, err, "does not divide")
						return
					}
					require.NoError(t, err)
					checkCollective(t, s, Int32, opt, 11)
					checkCollective(t, s, Float32, opt, 12)
				})
			}
		}
	}
}

func TestChunks(t *testing.T) {
	for _, op := range allOps {
		for _, a := range []Algo{Ring, Mesh, RDH, KangaRing, Hier} {
			for _, r := range []int{4, 6} {
				opt := Options{GroupSize: 2}
				if !supported(op, a, r, opt.GroupSize) {
					continue
				}
				one := 0
				for _, k := range []int{1, 2, 3} {
					t.Run(fmt.Sprintf("%v/%v/r%d/k%d", op, a, r, k), func(t *testing.T) {
						opt.Chunks = k
						// 12 elements per rank block: every piece and half-block non-empty.
						for _, d := range []Dtype{Int32, BFloat16} {
							s, err := Build(op, a, r, int64(12*r*d.Size()), d.Size(), opt)
							require.NoError(t, err)
							if k == 1 {
								one = len(s.Steps)
							}
							assert.Equal(t, k*one, len(s.Steps), "steps scale with the chunk count")
							checkCollective(t, s, d, opt, 5)
						}
					})
				}
			}
		}
	}
}

// TestStepCounts pins the step count of each algorithm (docs/collectives.md).
func TestStepCounts(t *testing.T) {
	tests := []struct {
		op    Op
		a     Algo
		r, g  int
		steps int
	}{
		{AllReduce, Ring, 8, 0, 2*8 - 1},
		{AllReduce, Ring, 5, 0, 2*5 - 1},
		{AllGather, Ring, 5, 0, 5 - 1},
		{ReduceScatter, Ring, 5, 0, 5},
		{AllReduce, KangaRing, 6, 0, 2*6 - 1},
		{AllGather, KangaRing, 6, 0, 6 - 1},
		{ReduceScatter, KangaRing, 6, 0, 6},
		{AllReduce, Mesh, 8, 0, 2 + 3},
		{AllReduce, Mesh, 5, 0, 2 + 3},
		{AllGather, Mesh, 5, 0, 1},
		{ReduceScatter, Mesh, 5, 0, 1 + 3},
		{ReduceScatter, Mesh, 2, 0, 1 + 1},
		{AllToAll, Mesh, 5, 0, 1},
		{Permute, Ring, 5, 0, 1},
		{Permute, Mesh, 5, 0, 1},
		{AllReduce, RDH, 16, 0, 1 + 2*4},
		{AllGather, RDH, 16, 0, 4},
		{ReduceScatter, RDH, 16, 0, 1 + 4},
		{AllReduce, Hier, 12, 4, 1 + 2*3 + 2*2},
		{AllGather, Hier, 12, 4, 2 + 3},
		{ReduceScatter, Hier, 12, 4, 1 + 3 + 2},
		{AllReduce, Hier, 8, 1, 2*8 - 1},
		{AllReduce, Hier, 8, 8, 2*8 - 1},
		{AllGather, Hier, 8, 8, 8 - 1},
		{AllReduce, Ring, 1, 0, 1},
		{AllToAll, Mesh, 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%v/r%d/g%d", tt.op, tt.a, tt.r, tt.g), func(t *testing.T) {
			s, err := Build(tt.op, tt.a, tt.r, int64(64*tt.r*4), 4, Options{GroupSize: tt.g})
			require.NoError(t, err)
			assert.Len(t, s.Steps, tt.steps)
			require.NoError(t, s.Validate())
		})
	}
}

// TestRingAllReduceTraffic: a ring all-reduce sends 2(r−1)/r·S bytes from
// every rank — the meaning of the all-reduce bus-bandwidth factor. The other
// bandwidth-optimal algorithms move the same.
func TestRingAllReduceTraffic(t *testing.T) {
	for _, a := range []Algo{Ring, KangaRing, RDH, Mesh} {
		for _, r := range []int{2, 3, 4, 8, 16, 32} {
			if !supported(AllReduce, a, r, 0) {
				continue
			}
			t.Run(fmt.Sprintf("%v/r%d", a, r), func(t *testing.T) {
				size := int64(r) * 4 * 1000
				s, err := Build(AllReduce, a, r, size, 4, Options{})
				require.NoError(t, err)
				sent := make([]int64, r)
				for _, st := range s.Steps {
					for _, x := range st.Xfers {
						if x.Src != x.Dst {
							sent[x.Src] += x.Len
						}
					}
				}
				perRank := int64(AllReduce.BusFactor(r) * float64(size))
				for i, n := range sent {
					assert.Equal(t, perRank, n, "rank %d", i)
				}
				total, _ := s.Traffic()
				assert.Equal(t, perRank*int64(r), total)
			})
		}
	}
	for _, op := range []Op{AllGather, ReduceScatter} {
		s, err := Build(op, Ring, 8, 8*4*100, 4, Options{})
		require.NoError(t, err)
		total, n := s.Traffic()
		assert.Equal(t, int64(op.BusFactor(8)*8*4*100)*8, total, "%v", op)
		assert.Equal(t, 7*8, n, "%v: one transfer per rank per step", op)
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name string
		op   Op
		a    Algo
		r    int
		size int64
		elem int
		opt  Options
		want string
	}{
		{"zero ranks", AllReduce, Ring, 0, 64, 4, Options{}, "rank count 0"},
		{"too many ranks", AllReduce, Ring, MaxRanks + 1, 64, 4, Options{}, "rank count 4097"},
		{"negative size", AllReduce, Ring, 4, -4, 4, Options{}, "negative"},
		{"huge size", AllReduce, Mesh, 4, MaxSize + 8, 4, Options{}, "exceeds MaxSize"},
		{"elem 3", AllReduce, Ring, 4, 12, 3, Options{}, "element size 3"},
		{"size not elem multiple", AllReduce, Ring, 4, 10, 4, Options{}, "not a multiple of the element size"},
		{"all_gather split", AllGather, Ring, 3, 16, 4, Options{}, "elem×ranks = 4×3 = 12"},
		{"alltoall split", AllToAll, Mesh, 3, 16, 4, Options{}, "one block per rank"},
		{"unknown op", Op(9), Ring, 4, 16, 4, Options{}, "unknown collective op"},
		{"unknown algo", AllReduce, Algo(9), 4, 16, 4, Options{}, "unknown collective algorithm"},
		{"rdh odd", AllReduce, RDH, 6, 48, 4, Options{}, "power-of-two"},
		{"kangaring odd", AllReduce, KangaRing, 5, 40, 4, Options{}, "even rank count"},
		{"hier no group", AllReduce, Hier, 8, 64, 4, Options{}, "GroupSize"},
		{"hier bad group", AllReduce, Hier, 8, 64, 4, Options{GroupSize: 3}, "does not divide"},
		{"ring alltoall", AllToAll, Ring, 4, 64, 4, Options{}, "alltoall"},
		{"rdh permute", Permute, RDH, 4, 64, 4, Options{}, "only all_reduce"},
		{"negative chunks", AllReduce, Ring, 4, 64, 4, Options{Chunks: -1}, "Chunks -1"},
		{"peers length", Permute, Ring, 4, 64, 4, Options{Peers: []int{1, 2, 3}}, "3 entries"},
		{"peers range", Permute, Ring, 4, 64, 4, Options{Peers: []int{1, 2, 3, 4}}, "not a rank"},
		{"peers repeat", Permute, Ring, 4, 64, 4, Options{Peers: []int{1, 1, 3, 0}}, "not a permutation"},
		{"peers two cycles", Permute, Ring, 4, 64, 4, Options{Peers: []int{1, 0, 3, 2}}, "not one cycle"},
		{"peers identity", Permute, Ring, 2, 64, 4, Options{Peers: []int{0, 1}}, "not one cycle"},
		{"too large", AllToAll, Mesh, 4096, 4096 * 40, 4, Options{Chunks: 5}, "more than 67108864 transfers"}, // 4096·4095·5 pieces of 2 elements
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "too large" && raceEnabled {
				t.Skip("race detector: counting 67 million transfers on one goroutine")
			}
			s, err := Build(tt.op, tt.a, tt.r, tt.size, tt.elem, tt.opt)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, ErrBadCollective)
			assert.ErrorContains(t, err, tt.want)
			_, _, cerr := Count(tt.op, tt.a, tt.r, tt.size, tt.elem, tt.opt, nil)
			assert.Equal(t, err, cerr, "Count refuses it as Build does")
		})
	}
}

func TestPermutePeers(t *testing.T) {
	peers := []int{2, 0, 3, 1} // 0→2→3→1→0
	opt := Options{Peers: peers}
	s, err := Build(Permute, Auto, 4, 64, 4, opt)
	require.NoError(t, err)
	assert.Equal(t, Ring, s.Algo)
	require.Len(t, s.Steps, 1)
	for _, x := range s.Steps[0].Xfers {
		assert.Equal(t, peers[x.Src], x.Dst)
	}
	checkCollective(t, s, Int32, opt, 1)
	checkCollective(t, s, Float32, opt, 2)
}

func TestAutoUsesPolicy(t *testing.T) {
	s, err := Build(AllReduce, Auto, 8, 2<<20, 4, Options{})
	require.NoError(t, err)
	assert.Equal(t, RDH, s.Algo, "zero Policy means DefaultPolicy")
	s, err = Build(AllReduce, Auto, 8, 2<<20, 4, Options{Policy: Policy{MeshMax: 4 << 20, RDHMax: 8 << 20}})
	require.NoError(t, err)
	assert.Equal(t, Mesh, s.Algo)
	s, err = Build(AllReduce, Auto, 6, 64<<20, 4, Options{Policy: Policy{MeshMax: 1, RDHMax: 2, DualRing: true}})
	require.NoError(t, err)
	assert.Equal(t, KangaRing, s.Algo)
	_, err = Build(AllReduce, Auto, 6, 64<<20, 4, Options{Policy: Policy{MeshMax: 1, RDHMax: 2, DualRing: true}, Chunks: 2})
	require.NoError(t, err)
}

func TestScratchBytes(t *testing.T) {
	const r, blk = 8, 64 * 4
	tests := []struct {
		op      Op
		a       Algo
		scratch int64
	}{
		{AllReduce, Ring, 0},
		{AllGather, Ring, 0},
		{ReduceScatter, Ring, (r - 2) * blk},
		{ReduceScatter, RDH, (r / 2) * blk},
		{ReduceScatter, Mesh, (r - 1) * blk},
		{AllReduce, Mesh, (r - 1) * blk},
		{AllReduce, RDH, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%v", tt.op, tt.a), func(t *testing.T) {
			s, err := Build(tt.op, tt.a, r, r*blk, 4, Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.scratch, s.ScratchBytes)
			s2, err := Build(tt.op, tt.a, r, r*blk, 4, Options{Chunks: 4})
			require.NoError(t, err)
			assert.Equal(t, tt.scratch/4, s2.ScratchBytes, "pieces reuse the scratch")
		})
	}
}

// TestRingNeighbours: Ring only talks to the next rank; KangaRing keeps both
// directions of every ring link busy in every step.
func TestRingNeighbours(t *testing.T) {
	const r = 6
	for _, op := range []Op{AllReduce, AllGather, ReduceScatter} {
		for _, a := range []Algo{Ring, KangaRing} {
			t.Run(fmt.Sprintf("%v/%v", op, a), func(t *testing.T) {
				s, err := Build(op, a, r, r*4*10, 4, Options{})
				require.NoError(t, err)
				for si, st := range s.Steps {
					up, down := map[int]bool{}, map[int]bool{}
					for _, x := range st.Xfers {
						switch x.Dst {
						case x.Src:
						case (x.Src + 1) % r:
							up[x.Src] = true
						case (x.Src + r - 1) % r:
							require.Equal(t, KangaRing, a, "step %d: %v goes down the ring", si, x)
							down[x.Src] = true
						default:
							t.Fatalf("step %d: %v is not between ring neighbours", si, x)
						}
					}
					if len(up) == 0 {
						continue // a step of local copies
					}
					assert.Len(t, up, r, "step %d: every rank sends up", si)
					if a == KangaRing {
						assert.Len(t, down, r, "step %d: every rank sends down", si)
					}
				}
			})
		}
	}
}

// TestHierInterNodeTraffic: in a Hier all-reduce (N nodes of g ranks) every
// rank sends 2(N−1)/N·S/g bytes to other nodes, spread over all ranks (each
// with its own network interface share); a flat ring through the ranks in
// order sends nothing across nodes from most ranks but 2(r−1)/r·S from the
// last rank of each node.
func TestHierInterNodeTraffic(t *testing.T) {
	const r, g, n = 16, 4, 4
	const size = r * 4 * 64
	interPerRank := func(s *Schedule) []int64 {
		sent := make([]int64, r)
		for _, st := range s.Steps {
			for _, x := range st.Xfers {
				if x.Src/g != x.Dst/g {
					sent[x.Src] += x.Len
				}
			}
		}
		return sent
	}
	s, err := Build(AllReduce, Hier, r, size, 4, Options{GroupSize: g})
	require.NoError(t, err)
	for i, b := range interPerRank(s) {
		assert.Equal(t, int64(2*(n-1)*size/n/g), b, "rank %d", i)
	}
	total, _ := s.Traffic()
	assert.Equal(t, int64(r*(2*(g-1)*size/g+2*(n-1)*size/n/g)), total)

	flat, err := Build(AllReduce, Ring, r, size, 4, Options{})
	require.NoError(t, err)
	for i, b := range interPerRank(flat) {
		if i%g == g-1 {
			assert.Equal(t, int64(2*(r-1)*size/r), b, "rank %d", i)
		} else {
			assert.Zero(t, b, "rank %d", i)
		}
	}
}
