package enc

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAlgo(t *testing.T) {
	for _, a := range allAlgos {
		got, err := ParseAlgo(a.String())
		require.NoError(t, err)
		assert.Equal(t, a, got)
	}
	got, err := ParseAlgo(" KangaRing ")
	require.NoError(t, err)
	assert.Equal(t, KangaRing, got)
	assert.Equal(t, []string{"auto", "ring", "mesh", "rdh", "kangaring", "hier"},
		[]string{Auto.String(), Ring.String(), Mesh.String(), RDH.String(), KangaRing.String(), Hier.String()})
	assert.Equal(t, "Algo(6)", Algo(6).String())
	for _, bad := range []string{"", "tree", "flat_ring", "rd"} {
		_, err := ParseAlgo(bad)
		require.ErrorIs(t, err, ErrUnknownAlgo, bad)
		assert.ErrorContains(t, err, "kangaring")
	}
}

func TestDefaultPolicy(t *testing.T) {
	assert.Equal(t, Policy{MeshMax: 1 << 20, RDHMax: 56 << 20}, DefaultPolicy())
}

func TestPolicyChoose(t *testing.T) {
	const mib = int64(1) << 20
	def := DefaultPolicy()
	dual := def
	dual.DualRing = true
	tests := []struct {
		name  string
		p     Policy
		op    Op
		size  int64
		ranks int
		want  Algo
	}{
		{"tiny", def, AllReduce, 0, 8, Mesh},
		{"below 1MiB", def, AllReduce, mib - 1, 8, Mesh},
		{"at 1MiB pow2", def, AllReduce, mib, 8, RDH},
		{"at 1MiB not pow2", def, AllReduce, mib, 6, Ring},
		{"below 1MiB not pow2", def, AllReduce, mib - 1, 6, Mesh},
		{"mid pow2", def, AllGather, 8 * mib, 16, RDH},
		{"at 56MiB pow2", def, ReduceScatter, 56 * mib, 32, RDH},
		{"above 56MiB pow2", def, AllReduce, 56*mib + 1, 32, Ring},
		{"above 56MiB dual even", dual, AllReduce, 56*mib + 1, 32, KangaRing},
		{"above 56MiB dual odd", dual, AllReduce, 56*mib + 1, 5, Ring},
		{"mid dual not pow2", dual, AllReduce, 8 * mib, 6, Ring},
		{"mid dual pow2", dual, AllReduce, 8 * mib, 8, RDH},
		{"1 rank", def, AllReduce, 8 * mib, 1, RDH},
		{"alltoall small", def, AllToAll, 1, 8, Mesh},
		{"alltoall large", def, AllToAll, 1 << 30, 8, Mesh},
		{"permute small", def, Permute, 1, 8, Ring},
		{"permute large", dual, Permute, 1 << 30, 8, Ring},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p.Choose(tt.op, tt.size, tt.ranks))
		})
	}
}

// TestAutoAlwaysBuilds: whatever Auto picks can run the op.
func TestAutoAlwaysBuilds(t *testing.T) {
	for _, op := range allOps {
		for _, r := range []int{1, 2, 3, 6, 8} {
			for _, size := range []int64{0, 1 << 20, 56<<20 + 4*48} {
				for _, dual := range []bool{false, true} {
					t.Run(fmt.Sprintf("%v/r%d/%d/%v", op, r, size, dual), func(t *testing.T) {
						p := DefaultPolicy()
						p.DualRing = dual
						size := size - size%int64(4*r) // a multiple of elem×ranks
						want := p.Choose(op, size, r)
						require.NoError(t, want.check(op, r, 0))
						s, err := Build(op, Auto, r, size, 4, Options{Policy: p})
						require.NoError(t, err)
						assert.Equal(t, want, s.Algo)
					})
				}
			}
		}
	}
}

// TestPolicyChooseIn: over ranks in several nodes of more than one rank
// each, AllReduce, AllGather and ReduceScatter take Hier whatever the size;
// with the flat ring (Trn1), a flat Ring from FlatRingMin bytes on; one
// node, one rank per node, a group that does not divide the ranks and the
// other ops keep the one-node choice.
func TestPolicyChooseIn(t *testing.T) {
	const mib = int64(1) << 20
	def, flat := DefaultPolicy(), FlatRingPolicy()
	assert.Equal(t, int64(64*mib), flat.FlatRingMin)
	tests := []struct {
		name         string
		p            Policy
		op           Op
		size         int64
		ranks, group int
		want         Algo
	}{
		{"2 nodes small", def, AllReduce, 1024, 32, 16, Hier},
		{"2 nodes large", def, AllReduce, 1 << 30, 32, 16, Hier},
		{"2 nodes allgather", def, AllGather, 8 * mib, 32, 16, Hier},
		{"2 nodes reducescatter", def, ReduceScatter, 8 * mib, 32, 16, Hier},
		{"trn1 below flat", flat, AllReduce, 64*mib - 1, 32, 16, Hier},
		{"trn1 at flat", flat, AllReduce, 64 * mib, 32, 16, Ring},
		{"trn1 allgather large", flat, AllGather, 1 << 30, 32, 16, Ring},
		{"one node", def, AllReduce, 1024, 16, 16, Mesh},
		{"one node flat large", flat, AllReduce, 1 << 30, 16, 16, Ring},
		{"one rank per node", def, AllReduce, 8 * mib, 8, 1, RDH},
		{"no group", def, AllReduce, 1024, 32, 0, Mesh},
		{"group not dividing", def, AllReduce, 8 * mib, 32, 5, RDH},
		{"alltoall", def, AllToAll, 1024, 32, 16, Mesh},
		{"permute", def, Permute, 1024, 32, 16, Ring},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.ChooseIn(tt.op, tt.size, tt.ranks, tt.group)
			assert.Equal(t, tt.want, got)
			require.NoError(t, got.check(tt.op, tt.ranks, tt.group))
			s, err := Build(tt.op, Auto, tt.ranks, tt.size-tt.size%int64(4*tt.ranks), 4, Options{Policy: tt.p, GroupSize: tt.group})
			require.NoError(t, err)
			assert.Equal(t, tt.want, s.Algo, "Build's Auto")
		})
	}
}

// TestDocsAutoAcrossNodes: docs/collectives.md says what ChooseIn does
// across nodes — Auto picks Hier there — and not that Auto never picks it,
// which it said while docs/fabric.md §EFA said the opposite.
func TestDocsAutoAcrossNodes(t *testing.T) {
	require.Equal(t, Hier, DefaultPolicy().ChooseIn(AllReduce, 1<<20, 32, 16), "two nodes of 16 ranks")
	require.NotEqual(t, Hier, DefaultPolicy().ChooseIn(AllReduce, 1<<20, 16, 16), "one node")
	doc, err := os.ReadFile("../../docs/collectives.md")
	require.NoError(t, err)
	_, hier, ok := strings.Cut(string(doc), "### Hier (hierarchical)")
	require.True(t, ok, "docs/collectives.md has a Hier section")
	hier, _, _ = strings.Cut(hier, "\n#")
	assert.NotContains(t, hier, "Auto never picks it.")
	assert.Contains(t, hier, "Auto picks it across nodes")
}
