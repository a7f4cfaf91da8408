package isa_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/runtime/isa"
)

func TestSeedStrings(t *testing.T) {
	assert.Equal(t, "Unknown hal->isa engine enum conversion (%u --> ?)", isa.MsgUnknownEngine)
	assert.Equal(t, "Found invalid instruction! opcode=%u, offset=%u", isa.MsgInvalidInstruction)
	assert.Equal(t, "Error message number:%u, message: %s", isa.MsgErrorMessage)
	assert.Equal(t, "Found invalid instruction! opcode=%d, offset=%d", isa.GoFormat(isa.MsgInvalidInstruction))
}

func TestHalToISAEngine(t *testing.T) {
	cases := []struct {
		hal  uint32
		want hwisa.Engine
		log  string
	}{
		{0, hwisa.PE, ""}, {1, hwisa.ACT, ""}, {2, hwisa.POOL, ""}, {3, hwisa.DVE, ""}, {4, hwisa.SP, ""},
		{5, hwisa.TopSP, "Unknown hal->isa engine enum conversion (5 --> ?)"},
		{99, hwisa.TopSP, "Unknown hal->isa engine enum conversion (99 --> ?)"},
		{0xFFFFFFFF, hwisa.TopSP, "Unknown hal->isa engine enum conversion (4294967295 --> ?)"},
	}
	for _, g := range gens {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d", g, tc.hal), func(t *testing.T) {
				var c capture
				v := validators[g].WithLogger(&c)
				assert.Equal(t, tc.want, v.HalToISAEngine(tc.hal))
				if tc.log == "" {
					assert.Empty(t, c.all())
				} else {
					assert.Equal(t, []string{tc.log}, c.all())
				}
				// The HAL engines are hw/arch's.
				if tc.hal < hwarch.NumEngines {
					assert.Equal(t, uint8(hwarch.Engine(tc.hal)), uint8(tc.want))
				}
				// No logger: same answer, no panic.
				assert.Equal(t, tc.want, validators[g].HalToISAEngine(tc.hal))
			})
		}
	}
}

func TestIsValidEngineInstructionLogs(t *testing.T) {
	var c capture
	v := validators[hwarch.Sunda].WithLogger(&c)
	b := enc(example(hwisa.OpDMATranspose))
	assert.False(t, v.IsValidEngineInstruction(uint32(hwisa.ACT), b))
	assert.Equal(t, []string{"Error message number:2, message: is_valid_opcode opcode: opcode 0xbd (dma_transpose) needs cayman or later; this is sunda"}, c.all())

	c = capture{}
	assert.False(t, v.IsValidEngineInstruction(7, enc(example(hwisa.OpNop))))
	assert.Equal(t, []string{
		"Unknown hal->isa engine enum conversion (7 --> ?)",
		"Error message number:13, message: ib_is_valid_engine_instruction engine: the HAL engine maps to top_sp, which issues no instruction records",
	}, c.all())

	c = capture{}
	assert.True(t, v.IsValidEngineInstruction(uint32(hwisa.PE), enc(example(hwisa.OpNop))))
	assert.Empty(t, c.all())
}

func block(recs ...[]byte) []byte {
	var b []byte
	for _, r := range recs {
		b = append(b, r...)
	}
	return b
}

func TestFinalInstValidityCheck(t *testing.T) {
	dve := uint32(hwisa.DVE)
	good := func() []byte {
		r := example(hwisa.OpReciprocal)
		return enc(r)
	}
	bad := func() []byte { // DVE record, op byte set where unused
		r := example(hwisa.OpReciprocal)
		r.Op = 3
		return enc(r)
	}
	for _, g := range gens {
		t.Run(g.String(), func(t *testing.T) {
			var c capture
			v := validators[g].WithLogger(&c)
			for _, n := range []int{63, 65, 1, 127} {
				err := v.FinalInstValidityCheck(make([]byte, n), dve)
				require.Error(t, err, "size %d", n)
				assert.True(t, errors.Is(err, isa.ErrBlockSize))
				assert.False(t, errors.Is(err, isa.ErrInvalidInstruction))
				assert.Contains(t, err.Error(), fmt.Sprintf("a block of %d bytes", n))
			}
			assert.NoError(t, v.FinalInstValidityCheck(nil, dve))
			assert.NoError(t, v.FinalInstValidityCheck([]byte{}, dve))
			assert.NoError(t, v.FinalInstValidityCheck(good(), dve))
			assert.NoError(t, v.FinalInstValidityCheck(block(good(), good()), dve))
			assert.Empty(t, c.all())

			// 64 zero bytes: a nop built for pe, valid on pe, not on dve.
			assert.NoError(t, v.FinalInstValidityCheck(make([]byte, 64), uint32(hwisa.PE)))
			err := v.FinalInstValidityCheck(make([]byte, 64), dve)
			var ie *isa.InvalidError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, 0, ie.Offset)

			// A bad record at offset 128 stops the walk; the one after is never reached.
			c = capture{}
			err = v.FinalInstValidityCheck(block(good(), good(), bad(), []byte(string(make([]byte, 64)))), dve)
			require.Error(t, err)
			assert.True(t, errors.Is(err, isa.ErrInvalidInstruction))
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, uint8(hwisa.OpReciprocal), ie.Opcode)
			assert.Equal(t, 128, ie.Offset)
			assert.Equal(t, isa.Reason{Check: isa.CheckHeader, Field: "op", Msg: "reciprocal does not use byte 3 (op); it must be 0, got 3"}, ie.Reason)
			assert.Equal(t, "Found invalid instruction! opcode=54, offset=128: has_valid_neuron_header op: reciprocal does not use byte 3 (op); it must be 0, got 3", err.Error())
			assert.Equal(t, []string{
				"Error message number:3, message: has_valid_neuron_header op: reciprocal does not use byte 3 (op); it must be 0, got 3",
				"Found invalid instruction! opcode=54, offset=128",
			}, c.all())
		})
	}
}

// TestFinalInstValidityCheckUnknownEngine: an unknown HAL engine maps to
// TOP_SP, so the first record already fails.
func TestFinalInstValidityCheckUnknownEngine(t *testing.T) {
	var c capture
	v := validators[hwarch.Mariana].WithLogger(&c)
	err := v.FinalInstValidityCheck(block(enc(example(hwisa.OpNop)), enc(example(hwisa.OpNop))), 5)
	var ie *isa.InvalidError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 0, ie.Offset)
	assert.Equal(t, isa.CheckEngine, ie.Reason.Check)
	assert.Equal(t, []string{
		"Unknown hal->isa engine enum conversion (5 --> ?)",
		"Error message number:13, message: ib_is_valid_engine_instruction engine: the HAL engine maps to top_sp, which issues no instruction records",
		"Found invalid instruction! opcode=0, offset=0",
	}, c.all())
}

func TestLoggerFunc(t *testing.T) {
	var got string
	v := validators[hwarch.Cayman].WithLogger(isa.LoggerFunc(func(f string, a ...any) { got = fmt.Sprintf(f, a...) }))
	v.HalToISAEngine(6)
	assert.Equal(t, "Unknown hal->isa engine enum conversion (6 --> ?)", got)
	assert.Equal(t, validators[hwarch.Cayman].Limits(), v.Limits())
}

// TestConcurrent: a Validator is shared by goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	v := validators[hwarch.Mariana].WithLogger(&capture{})
	mix := validMix(hwarch.Mariana, hwisa.NumEngines)
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func(i int) {
			ok := true
			for j := 0; j < 200; j++ {
				b := mix[(i+j)%len(mix)]
				ok = ok && v.IsValid(b) && v.Debug(b).OK
				v.IsValidEngineInstruction(uint32(j%7), b)
			}
			done <- ok
		}(i)
	}
	for i := 0; i < 8; i++ {
		assert.True(t, <-done)
	}
}
