package dve

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// pinnedFingerprints are the dve_tbl_hash of DefaultBins, reproduced
// independently by the Python generator of docs/dve.md.
var pinnedFingerprints = map[hwarch.Generation]string{
	hwarch.Sunda:   "dc8d538ef1bbe330560a8a9820494fc523b0c7a500f626cd648494c029fc2059",
	hwarch.Cayman:  "5c9ba802f1dfe9274f8adb38a56a6e22099d37ded8643bfa74d587843817e21c",
	hwarch.Mariana: "3de02013bbfb30f6733c33433ee0381810eb0c7e036b3f32e50d185a18f06e8e",
}

func TestFingerprint(t *testing.T) {
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			tb := defaults(t, g)
			fp := Fingerprint(g, tb)
			assert.Equal(t, pinnedFingerprints[g], hex.EncodeToString(fp[:]))

			// One sha256_update per buffer == SHA-256 of the concatenation.
			var cat []byte
			cat = append(cat, tb.Opcode...)
			cat = append(cat, tb.ControlFast...)
			if g != hwarch.Sunda {
				cat = append(cat, tb.ControlSlow...)
			}
			cat = append(cat, tb.Datapath...)
			cat = append(cat, tb.ParamRAM...)
			assert.Equal(t, sha256.Sum256(cat), fp)

			// The arch gate: control-slow counts except on sunda.
			with := tb.Clone()
			with.ControlSlow = append(with.ControlSlow, 1)
			assert.Equal(t, g == hwarch.Sunda, Fingerprint(g, with) == fp, "control-slow gate")

			// Every staged table counts.
			for _, name := range TableNames() {
				if name == TableControlSlow {
					continue
				}
				c := tb.Clone()
				c.Get(name)[0] ^= 1
				assert.NotEqual(t, fp, Fingerprint(g, c), name)
			}
		})
	}
	t.Run("order", func(t *testing.T) {
		a := Tables{Opcode: []byte{1}, ControlFast: []byte{2}}
		b := Tables{Opcode: []byte{2}, ControlFast: []byte{1}}
		assert.NotEqual(t, Fingerprint(hwarch.Cayman, a), Fingerprint(hwarch.Cayman, b))
		assert.Equal(t, sha256.Sum256(nil), Fingerprint(hwarch.Cayman, Tables{}))
	})
	t.Run("cayman vs mariana share tables", func(t *testing.T) {
		tb := defaults(t, hwarch.Cayman)
		assert.Equal(t, Fingerprint(hwarch.Cayman, tb), Fingerprint(hwarch.Mariana, tb))
	})
}

func TestFNVConstants(t *testing.T) {
	assert.Equal(t, uint64(0x100000001B3), FNVPrime64)
	assert.Equal(t, uint64(0xcbf29ce484222325), FNVOffset64)
	assert.Equal(t, FNVOffset64, FNV64a(nil, FNVOffset64), "empty input returns the seed")
	assert.Equal(t, uint64(42), FNV64a(nil, 42))
}

func TestFNV64a(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want uint64 // published FNV-1a 64 test vectors where given
	}{
		{"empty", nil, 0xcbf29ce484222325},
		{"a", []byte("a"), 0xaf63dc4c8601ec8c},
		{"foobar", []byte("foobar"), 0x85944171f73967e8},
		{"zero byte", []byte{0}, 0},
		{"binary", []byte{0xff, 0x00, 0x80, 0x7f}, 0},
		{"qDveTbl", []byte(VringName), 0},
		{"long", ParamRAM(), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := fnv.New64a()
			h.Write(tc.in)
			got := FNV64a(tc.in, FNVOffset64)
			assert.Equal(t, h.Sum64(), got)
			if tc.want != 0 {
				assert.Equal(t, tc.want, got)
			}
			// Chaining: the result of one buffer seeds the next.
			mid := len(tc.in) / 2
			assert.Equal(t, got, FNV64a(tc.in[mid:], FNV64a(tc.in[:mid], FNVOffset64)))
		})
	}
	t.Run("other seed", func(t *testing.T) {
		// One byte by hand: (seed ^ b) * prime.
		require.Equal(t, (uint64(7)^'x')*FNVPrime64, FNV64a([]byte("x"), 7))
		assert.NotEqual(t, FNV64a([]byte("x"), 7), FNV64a([]byte("x"), FNVOffset64))
	})
}

func FuzzFNV64a(f *testing.F) {
	for _, s := range []string{"", "a", "foobar", VringName, QueueName, "neuronsim-dve-cayman-opcode"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h := fnv.New64a()
		h.Write(in)
		if got, want := FNV64a(in, FNVOffset64), h.Sum64(); got != want {
			t.Fatalf("FNV64a(%x) = %#x, hash/fnv %#x", in, got, want)
		}
	})
}
