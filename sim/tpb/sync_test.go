package tpb

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

func TestLayoutMatchesGeometry(t *testing.T) {
	assert.EqualValues(t, 256, Count)
	assert.EqualValues(t, 0x2000, SyncSize)
	assert.EqualValues(t, 0x400, bankSize)
	assert.EqualValues(t, 0, EventsOffset)
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			geo := hwarch.MustGeometry(g)
			m := geo.BAR0
			assert.Equal(t, Count, geo.SemaphoresPerNC)
			assert.Equal(t, Count, geo.EventsPerNC)
			assert.EqualValues(t, SyncSize, m.SemRegionSize)
			assert.EqualValues(t, SemReadOffset, m.SemReadOffset-m.EventsOffset)
			assert.EqualValues(t, SemSetOffset, m.SemSetOffset-m.EventsOffset)
			assert.EqualValues(t, SemIncrOffset, m.SemIncrOffset-m.EventsOffset)
			assert.EqualValues(t, SemDecrOffset, m.SemDecrOffset-m.EventsOffset)
		})
	}
}

func TestDecodeBoundaries(t *testing.T) {
	tests := []struct {
		off   uint64
		bank  Bank
		index int
		ok    bool
	}{
		{0x0000, BankEvent, 0, true},
		{0x0004, BankEvent, 1, true},
		{0x03FC, BankEvent, 255, true},
		{0x0400, BankNone, 0, false}, // event 256: the driver's `>` check lets it through
		{0x0404, BankNone, 0, false},
		{0x0FFC, BankNone, 0, false},
		{0x1000, BankSemRead, 0, true},
		{0x13FC, BankSemRead, 255, true},
		{0x1400, BankSemSet, 0, true},
		{0x17FC, BankSemSet, 255, true},
		{0x1800, BankSemIncr, 0, true},
		{0x1BFC, BankSemIncr, 255, true},
		{0x1C00, BankSemDecr, 0, true},
		{0x1FFC, BankSemDecr, 255, true},
		{0x2000, BankNone, 0, false},
		{0x2004, BankNone, 0, false},
		{1, BankNone, 0, false},
		{2, BankNone, 0, false},
		{3, BankNone, 0, false},
		{0x1001, BankNone, 0, false},
		{0x1FFE, BankNone, 0, false},
		{math.MaxUint64 - 3, BankNone, 0, false},
		{math.MaxUint64, BankNone, 0, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%#x", tt.off), func(t *testing.T) {
			b, i, ok := Decode(tt.off)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.bank, b)
			assert.Equal(t, tt.index, i)
		})
	}
}

// TestDecodeExhaustive compares Decode with a reference rule for every byte
// offset of a block and a little beyond.
func TestDecodeExhaustive(t *testing.T) {
	banks := []struct {
		base uint64
		bank Bank
	}{
		{EventsOffset, BankEvent}, {SemReadOffset, BankSemRead}, {SemSetOffset, BankSemSet},
		{SemIncrOffset, BankSemIncr}, {SemDecrOffset, BankSemDecr},
	}
	counts := map[Bank]int{}
	for off := uint64(0); off < SyncSize+0x100; off++ {
		wantBank, wantIdx, wantOK := BankNone, 0, false
		if off%4 == 0 {
			for _, bk := range banks {
				if off >= bk.base && off < bk.base+4*Count {
					wantBank, wantIdx, wantOK = bk.bank, int(off-bk.base)/4, true
				}
			}
		}
		b, i, ok := Decode(off)
		if b != wantBank || i != wantIdx || ok != wantOK {
			t.Fatalf("Decode(%#x) = %v, %d, %v; want %v, %d, %v", off, b, i, ok, wantBank, wantIdx, wantOK)
		}
		if ok {
			counts[b]++
		}
	}
	for _, bk := range banks {
		assert.Equal(t, Count, counts[bk.bank], "words in bank %v", bk.bank)
	}
}

func semOff(base uint64, i int) uint64 { return base + 4*uint64(i) }

func TestSemaphoreSemantics(t *testing.T) {
	const minInt32, maxInt32 = math.MinInt32, math.MaxInt32
	type step struct {
		bank uint64
		v    uint32
		want int32
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"set", []step{{SemSetOffset, 42, 42}}},
		{"set negative", []step{{SemSetOffset, 0xFFFF_FFFF, -1}}},
		{"incr", []step{{SemSetOffset, 10, 10}, {SemIncrOffset, 5, 15}, {SemIncrOffset, 0, 15}}},
		{"decr", []step{{SemSetOffset, 10, 10}, {SemDecrOffset, 7, 3}}},
		{"decr below zero", []step{{SemDecrOffset, 7, -7}, {SemDecrOffset, 1, -8}}},
		{"incr of 1 at MaxInt32 wraps", []step{{SemSetOffset, maxInt32, maxInt32}, {SemIncrOffset, 1, minInt32}}},
		{"decr of 1 at MinInt32 wraps", []step{{SemSetOffset, 0x8000_0000, minInt32}, {SemDecrOffset, 1, maxInt32}}},
		{"incr of all ones is decr 1", []step{{SemSetOffset, 5, 5}, {SemIncrOffset, 0xFFFF_FFFF, 4}}},
		{"decr of all ones is incr 1", []step{{SemSetOffset, 5, 5}, {SemDecrOffset, 0xFFFF_FFFF, 6}}},
		{"incr back to zero", []step{{SemDecrOffset, 3, -3}, {SemIncrOffset, 3, 0}}},
	}
	for _, tt := range tests {
		for _, idx := range []int{0, 1, 128, Count - 1} {
			t.Run(fmt.Sprintf("%s/sem%d", tt.name, idx), func(t *testing.T) {
				var s SyncState
				for _, st := range tt.steps {
					require.True(t, s.Write(semOff(st.bank, idx), st.v))
					require.Equal(t, st.want, s.Semaphores[idx])
					// Every semaphore bank reads the value; none of those loads has a side effect.
					for _, bank := range []uint64{SemReadOffset, SemSetOffset, SemIncrOffset, SemDecrOffset} {
						v, ok := s.Read(semOff(bank, idx))
						require.True(t, ok)
						require.Equal(t, uint32(st.want), v, "load from bank %#x", bank)
					}
				}
				// Neighbours are untouched.
				for j := range Count {
					if j != idx {
						require.Zero(t, s.Semaphores[j], "semaphore %d", j)
					}
				}
				assert.Equal(t, [Count]uint8{}, s.Events)
			})
		}
	}
}

func TestReadBankWriteChangesNothing(t *testing.T) {
	var s SyncState
	for i := range Count {
		s.Semaphores[i] = int32(i*7 - 300)
		s.Events[i] = uint8(i & 1)
	}
	before := s
	for _, i := range []int{0, 17, Count - 1} {
		for _, v := range []uint32{0, 1, 0xFFFF_FFFF} {
			assert.False(t, s.Write(semOff(SemReadOffset, i), v))
		}
	}
	assert.Equal(t, before, s)
}

func TestEventStoresKeepBitZero(t *testing.T) {
	tests := []struct {
		v    uint32
		want uint8
	}{
		{0, 0}, {1, 1}, {2, 0}, {3, 1}, {0xFFFF_FFFE, 0}, {0xFFFF_FFFF, 1}, {0x8000_0001, 1},
	}
	for _, tt := range tests {
		for _, idx := range []int{0, 255} {
			t.Run(fmt.Sprintf("%#x/event%d", tt.v, idx), func(t *testing.T) {
				var s SyncState
				s.Events[idx] = 1 - tt.want // make sure the store changes it
				require.True(t, s.Write(semOff(EventsOffset, idx), tt.v))
				assert.Equal(t, tt.want, s.Events[idx])
				v, ok := s.Read(semOff(EventsOffset, idx))
				require.True(t, ok)
				assert.Equal(t, uint32(tt.want), v)
				assert.Equal(t, [Count]int32{}, s.Semaphores)
			})
		}
	}
}

func TestOutsideTheBanks(t *testing.T) {
	var s SyncState
	s.Semaphores[0], s.Events[0], s.Events[255] = 9, 1, 1
	before := s
	for _, off := range []uint64{0x400, 0x404, 0x800, 0xFFC, SyncSize, SyncSize + 4, 1, 0x1002, math.MaxUint64 &^ 3} {
		t.Run(fmt.Sprintf("%#x", off), func(t *testing.T) {
			assert.False(t, s.Write(off, 1))
			v, ok := s.Read(off)
			assert.False(t, ok)
			assert.Zero(t, v)
			assert.Equal(t, before, s)
		})
	}
}

func TestReset(t *testing.T) {
	var s SyncState
	for i := range Count {
		require.True(t, s.Write(semOff(SemSetOffset, i), uint32(i+1)))
		require.True(t, s.Write(semOff(EventsOffset, i), 1))
	}
	s.Reset()
	assert.Equal(t, SyncState{}, s)
	for i := range Count {
		v, ok := s.Read(semOff(SemReadOffset, i))
		require.True(t, ok)
		require.Zero(t, v)
	}
}
