package program

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/hw/isa"
)

func rec(op isa.Opcode, e isa.Engine) []byte {
	r := isa.Record{Opcode: op, Engine: e}
	b := r.Bytes()
	return b[:]
}

func TestSplit(t *testing.T) {
	var prog []byte
	prog = append(prog, rec(isa.OpNop, isa.PE)...)
	prog = append(prog, rec(isa.OpSem, isa.DVE)...)
	prog = append(prog, rec(isa.OpBarrier, isa.PE)...)
	blocks, err := Split(prog)
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	assert.Equal(t, isa.PE, blocks[0].Engine)
	assert.Len(t, blocks[0].Bytes, 128)
	assert.Equal(t, byte(isa.OpBarrier), blocks[0].Bytes[64], "order kept")
	assert.Equal(t, isa.DVE, blocks[1].Engine)

	// One engine's records: the program is its block, not a copy, and an
	// append to the block cannot reach past the program.
	sp := append(rec(isa.OpNop, isa.SP), rec(isa.OpSem, isa.SP)...)
	blocks, err = Split(sp)
	require.NoError(t, err)
	require.Len(t, blocks, 1)
	assert.Equal(t, isa.SP, blocks[0].Engine)
	assert.Equal(t, sp, blocks[0].Bytes)
	assert.Same(t, &sp[0], &blocks[0].Bytes[0], "the program itself")
	assert.Equal(t, len(sp), cap(blocks[0].Bytes))

	for _, bad := range [][]byte{nil, make([]byte, 63), append(rec(isa.OpNop, isa.PE), 1), rec(isa.OpNop, isa.TopSP)} {
		_, err := Split(bad)
		assert.True(t, errors.Is(err, ErrBadProgram), "%d bytes", len(bad))
	}
}

// refuse is a Validator that refuses every block of one engine.
type refuse struct {
	engine isa.Engine
	calls  []isa.Engine
}

var errRefused = errors.New("refused")

func (r *refuse) FinalInstValidityCheck(block []byte, hal uint32) error {
	r.calls = append(r.calls, isa.Engine(hal))
	if isa.Engine(hal) == r.engine {
		return errRefused
	}
	return nil
}

// TestValidate: a program is split and its blocks checked in engine order
// until the first refused one, whose index comes back with the validator's
// error as it was; a program that does not split checks nothing.
func TestValidate(t *testing.T) {
	var prog []byte
	prog = append(prog, rec(isa.OpNop, isa.SP)...)
	prog = append(prog, rec(isa.OpNop, isa.PE)...)
	prog = append(prog, rec(isa.OpNop, isa.DVE)...)
	tests := []struct {
		name      string
		prog      []byte
		refuse    isa.Engine
		blocks    int
		valid     int
		calls     []isa.Engine
		wantErr   error
		wantPlain bool // the error is exactly the validator's
	}{
		{"all valid", prog, isa.TopSP, 3, 3, []isa.Engine{isa.PE, isa.DVE, isa.SP}, nil, false},
		{"second refused", prog, isa.DVE, 3, 1, []isa.Engine{isa.PE, isa.DVE}, errRefused, true},
		{"first refused", prog, isa.PE, 3, 0, []isa.Engine{isa.PE}, errRefused, true},
		{"does not split", prog[:100], isa.PE, 0, 0, nil, ErrBadProgram, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &refuse{engine: tt.refuse}
			blocks, valid, err := Validate(tt.prog, v)
			assert.Len(t, blocks, tt.blocks)
			assert.Equal(t, tt.valid, valid)
			assert.Equal(t, tt.calls, v.calls)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			if tt.wantPlain {
				assert.Equal(t, errRefused, err, "the validator's error, not wrapped")
			}
		})
	}
}

// TestLoadNamesRefusedBlock: Load refuses a program before staging
// anything and names the block the validator refused.
func TestLoadNamesRefusedBlock(t *testing.T) {
	var prog []byte
	prog = append(prog, rec(isa.OpNop, isa.PE)...)
	prog = append(prog, rec(isa.OpNop, isa.POOL)...)
	r := &Runner{Validator: &refuse{engine: isa.POOL}}
	_, err := r.Load(prog)
	require.ErrorIs(t, err, errRefused)
	assert.EqualError(t, err, "program: "+isa.POOL.String()+" block: refused")
	_, err = r.Load(prog[:10])
	require.ErrorIs(t, err, ErrBadProgram)
}

// TestCheckSize: a program of no records or of a partial record is
// ErrBadProgram, whatever engine it is meant for.
func TestCheckSize(t *testing.T) {
	tests := []struct {
		size int
		want string
	}{
		{0, "bad program: empty: a program holds at least one 64-byte record"},
		{1, "bad program: 1 bytes is not a whole number of 64-byte records"},
		{100, "bad program: 100 bytes is not a whole number of 64-byte records"},
		{64, ""},
		{128, ""},
	}
	for _, tt := range tests {
		err := CheckSize(make([]byte, tt.size))
		if tt.want == "" {
			assert.NoError(t, err, tt.size)
			continue
		}
		assert.ErrorIs(t, err, ErrBadProgram, tt.size)
		assert.EqualError(t, err, tt.want)
	}
}

// TestHostTimeText: a run's host time past its limit is written rounded up
// to a thousandth of the limit or finer, so it reads as more than the limit
// and says by how much; rounded to the millisecond, 1.2 µs past a 1 µs
// limit read "0s" and 2.0004 ms past 2 ms read "2ms".
func TestHostTimeText(t *testing.T) {
	for _, tc := range []struct {
		host, limit, want time.Duration
	}{
		{1234 * time.Nanosecond, time.Microsecond, 1234 * time.Nanosecond},
		{2000400 * time.Nanosecond, 2 * time.Millisecond, 2001 * time.Microsecond},
		{10*time.Minute + 1500*time.Microsecond, 10 * time.Minute, 10*time.Minute + 2*time.Millisecond},
		{51 * time.Microsecond, 50 * time.Microsecond, 51 * time.Microsecond},
		{3 * time.Nanosecond, 2 * time.Nanosecond, 3 * time.Nanosecond},
	} {
		got := hostTimeText(tc.host, tc.limit)
		assert.Equal(t, tc.want, got, "%v past %v", tc.host, tc.limit)
		assert.Greater(t, got, tc.limit)
	}
}
