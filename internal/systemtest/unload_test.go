package systemtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// usedBlocks is the allocator's live blocks and bytes over its channels.
func usedBlocks(mem *dmem.Allocator) (blocks int, used uint64) {
	for _, st := range mem.Stats() {
		blocks += st.Blocks
		used += st.Used
	}
	return blocks, used
}

// TestRunGivesBackProgramMemory: a program's blocks hold device memory
// while it runs and give it back when it is over — done, or stopped on an
// error — so that run after run on one core does not take ever more of it
// (a collective's SP program on a thousand ranks is megabytes a run).
func TestRunGivesBackProgramMemory(t *testing.T) {
	_, r := runner(t, hwarch.Cayman, 0)
	blocks0, used0 := usedBlocks(r.Mem)
	prog, err := asm.Assemble("race.s", []byte(raceProgram(true)))
	require.NoError(t, err)
	for range 3 {
		_, err := r.Run(prog)
		require.NoError(t, err)
		blocks, used := usedBlocks(r.Mem)
		assert.Equal(t, blocks0, blocks, "live blocks after a run")
		assert.Equal(t, used0, used, "bytes in use after a run")
	}

	r.Validator = acceptAll{}
	bad, err := asm.Assemble("bad.s", []byte(".engine dve\nnop\nmemset dst=sbuf[0:1,0x37FFC]:fp32[4] imm0=1 last\n"))
	require.NoError(t, err)
	_, err = r.Run(bad)
	require.ErrorIs(t, err, program.ErrEngineFault)
	blocks, used := usedBlocks(r.Mem)
	assert.Equal(t, blocks0, blocks, "a faulted program's blocks are given back too")
	assert.Equal(t, used0, used)
}

// TestUnloadRefusesRunningEngine: blocks an engine is still running (here
// waiting on a semaphore nothing signals) are not freed — the engine may
// still fetch from them — and are once it has stopped.
func TestUnloadRefusesRunningEngine(t *testing.T) {
	_, r := runner(t, hwarch.Cayman, 0)
	blocks0, _ := usedBlocks(r.Mem)
	prog, err := asm.Assemble("wait.s", []byte(".engine dve\ntensor_copy dst=sbuf[0:1,0x1000]:int32[4] src0=sbuf[0:1,0]:int32[4] wait=sem_ge(9,1) last\n"))
	require.NoError(t, err)
	blocks, err := r.Load(prog)
	require.NoError(t, err)
	require.Len(t, blocks, 1)
	require.NotZero(t, blocks[0].Handle)
	loaded, _ := usedBlocks(r.Mem)
	assert.Equal(t, blocks0+1, loaded)

	require.NoError(t, r.Start(blocks))
	err = r.Unload(blocks)
	require.ErrorIs(t, err, program.ErrRunning)
	n, _ := usedBlocks(r.Mem)
	assert.Equal(t, loaded, n, "nothing freed while the engine runs")
	assert.NotZero(t, blocks[0].Handle)

	require.NoError(t, r.Halt(blocks))
	require.NoError(t, r.Unload(blocks))
	n, _ = usedBlocks(r.Mem)
	assert.Equal(t, blocks0, n)
	assert.Zero(t, blocks[0].Handle)
	require.NoError(t, r.Unload(blocks), "unloading again passes over them")
}
