package tpb

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
)

func TestNewCoreConfig(t *testing.T) {
	h := newHarness(t, hwarch.Sunda)
	good := Config{Generation: hwarch.Sunda, NC: 1, SBUF: h.sbuf, PSUM: h.psum, Sync: h.sync, Env: h.env}
	_, err := NewCore(good)
	require.NoError(t, err)
	for name, mutate := range map[string]func(*Config){
		"generation": func(c *Config) { c.Generation = 7 },
		"nc":         func(c *Config) { c.NC = 2 },
		"negative":   func(c *Config) { c.NC = -1 },
		"sbuf":       func(c *Config) { c.SBUF = nil },
		"psum":       func(c *Config) { c.PSUM = nil },
		"sync":       func(c *Config) { c.Sync = nil },
		"env":        func(c *Config) { c.Env = nil },
	} {
		cfg := good
		mutate(&cfg)
		_, err := NewCore(cfg)
		require.ErrorIs(t, err, ErrConfig, name)
	}
}

// copyRec is an ACT tensor_copy of a [128 × n] fp32 tile.
func copyRec(e isa.Engine, dst, src uint32, n int) isa.Record {
	r := rec(isa.OpTensorCopy, e)
	r.Dst, r.Src0 = sb(dst, isa.FP32, 128, n), sb(src, isa.FP32, 128, n)
	return r
}

func TestWaits(t *testing.T) {
	tests := []struct {
		wait           isa.Sync
		sem            int32 // a value that does not release it
		release        func(s *SyncState)
		releasedBefore bool
	}{
		{isa.Sync{Mode: isa.WaitSemGE, Index: 3, Value: 2}, 1, func(s *SyncState) { s.Semaphores[3] = 2 }, false},
		{isa.Sync{Mode: isa.WaitSemGE, Index: 3, Value: 0}, -1, func(s *SyncState) { s.Semaphores[3] = 0 }, false},
		{isa.Sync{Mode: isa.WaitSemEQ, Index: 200, Value: 5}, 6, func(s *SyncState) { s.Semaphores[200] = 5 }, false},
		{isa.Sync{Mode: isa.WaitSemGT, Index: 0, Value: 5}, 5, func(s *SyncState) { s.Semaphores[0] = 6 }, false},
		{isa.Sync{Mode: isa.WaitEvent, Index: 255}, 0, func(s *SyncState) { s.Events[255] = 1 }, false},
	}
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s[%d]=%d", tc.wait.Mode, tc.wait.Index, tc.wait.Value), func(t *testing.T) {
				h := newHarness(t, gen)
				tr := &recordingTracer{}
				h.core.SetTrace(tr)
				h.sync.Semaphores[tc.wait.Index] = tc.sem
				h.put(sb(0, isa.FP32, 128, 8), repeat(3, 128*8))
				r := copyRec(isa.ACT, 0x100, 0, 8)
				r.Wait = tc.wait
				h.launch(int(isa.ACT), r)
				h.run()
				require.Equal(t, uint32(StatusRunning|StatusWaiting), h.core.ReadReg(1, RegStatus))
				require.Empty(t, h.env.q)

				h.env.now = 1000
				h.core.SyncChanged() // nothing changed: still waiting
				require.Equal(t, uint32(StatusRunning|StatusWaiting), h.core.ReadReg(1, RegStatus))
				require.Equal(t, uint64(1000), h.core.Stats()[1].Waiting, "a wait in progress counts")

				h.env.now = 5000
				tc.release(h.sync)
				h.core.SyncChanged()
				require.Equal(t, uint32(StatusRunning), h.core.ReadReg(1, RegStatus))
				h.run()
				require.Equal(t, uint32(StatusDone), h.core.ReadReg(1, RegStatus))
				require.Equal(t, repeat(3, 128*8), h.get(sb(0x100, isa.FP32, 128, 8)))
				st := h.core.Stats()[1]
				require.Equal(t, uint64(5000), st.Waiting)
				cost := Picoseconds(64, h.core.Clocks()[1])
				require.Equal(t, 5000+cost, h.env.now, "starts when released")
				require.Len(t, tr.slices, 2)
				require.Equal(t, slice{"nc0/ACT", "wait", 0, 5000, map[string]string{"mode": tc.wait.Mode.String(),
					"index": fmt.Sprint(tc.wait.Index), "value": fmt.Sprint(tc.wait.Value)}}, tr.slices[0])
				require.Equal(t, slice{"nc0/ACT", "tensor_copy", 5000, 5000 + cost, map[string]string{"offset": "0x0"}}, tr.slices[1])
			})
		}
	})
}

// TestProducerConsumer: DVE fills a tile (slowly) and signals; ACT copies it.
func TestProducerConsumer(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		for _, synced := range []bool{true, false} {
			t.Run(fmt.Sprintf("synced=%v", synced), func(t *testing.T) {
				h := newHarness(t, gen)
				h.env.onSync = h.core.SyncChanged // the device calls back, re-entrantly
				tr := &recordingTracer{}
				h.core.SetTrace(tr)
				fill := rec(isa.OpMemset, isa.DVE)
				fill.Dst, fill.Imm0 = sb(0, isa.FP32, 128, 4096), f32(7)
				fill.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: 0, Value: 1}
				use := copyRec(isa.ACT, 0x10000, 0, 64)
				if synced {
					use.Wait = isa.Sync{Mode: isa.WaitSemGE, Index: 0, Value: 1}
				}
				h.place(progBase(3), true, fill)
				h.place(progBase(1), true, use)
				h.start(3, progBase(3))
				h.start(1, progBase(1))
				h.run()
				require.Equal(t, uint32(StatusDone), h.core.ReadReg(3, RegStatus))
				require.Equal(t, uint32(StatusDone), h.core.ReadReg(1, RegStatus))
				require.EqualValues(t, 1, h.sync.Semaphores[0])
				got := h.get(sb(0x10000, isa.FP32, 128, 64))
				var p, c slice
				for _, s := range tr.slices {
					switch s.name {
					case "memset":
						p = s
					case "tensor_copy":
						c = s
					}
				}
				if synced {
					require.Equal(t, repeat(7, 128*64), got)
					require.GreaterOrEqual(t, c.start, p.end, "the consumer starts after the producer ends")
				} else {
					require.Equal(t, repeat(0, 128*64), got, "the consumer read stale data")
					require.Less(t, c.start, p.end, "busy intervals overlap")
					require.Less(t, p.start, c.end)
				}
				require.GreaterOrEqual(t, h.env.syncChanged, 1)
			})
		}
	})
}

func TestSignalModes(t *testing.T) {
	h := newHarness(t, hwarch.Cayman)
	h.sync.Semaphores[1] = 10
	h.sync.Events[4] = 1
	sig := func(m isa.SyncMode, i uint8, v uint16) isa.Record {
		r := rec(isa.OpSem, isa.SP)
		r.Signal = isa.Sync{Mode: m, Index: i, Value: v}
		return r
	}
	h.mustRun(4, sig(isa.SignalSemSet, 0, 65535), sig(isa.SignalSemIncr, 1, 5), sig(isa.SignalSemDecr, 2, 3),
		sig(isa.SignalEventSet, 3, 0), sig(isa.SignalEventClr, 4, 0), sig(isa.SignalSemSet, 0, 65535))
	assert.Equal(t, []int32{65535, 15, -3}, h.sync.Semaphores[:3])
	assert.Equal(t, []uint8{0, 0, 0, 1, 0}, h.sync.Events[:5])
	assert.Equal(t, 5, h.env.syncChanged, "the last set changed nothing")
}

func TestInvalidRecords(t *testing.T) {
	type tc struct {
		name string
		r    isa.Record
		raw  func(b []byte) // edits the encoded bytes
	}
	good := func() isa.Record { return copyRec(isa.DVE, 0x100, 0, 8) }
	with := func(f func(r *isa.Record)) isa.Record { r := good(); f(&r); return r }
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		pb := uint32(hwarch.MustGeometry(gen).SBUFPartitionSize)
		cases := []tc{
			{"unknown opcode", with(func(r *isa.Record) { r.Opcode = 0x0F }), nil},
			{"engine byte not this engine", with(func(r *isa.Record) { r.Engine = isa.ACT }), nil},
			{"engine illegal for opcode", with(func(r *isa.Record) { r.Opcode = isa.OpActivation }), nil},
			{"top_sp engine", with(func(r *isa.Record) { r.Engine = isa.TopSP }), nil},
			{"reserved flag", with(func(r *isa.Record) { r.Flags = 4 }), nil},
			{"accumulate on a copy", with(func(r *isa.Record) { r.Flags = isa.FlagAccumulate }), nil},
			{"op on a copy", with(func(r *isa.Record) { r.Op = 1 }), nil},
			{"alu op 7", with(func(r *isa.Record) {
				r.Opcode, r.Op, r.Imm0 = isa.OpTensorScalar, isa.NumALUOps, 0
			}), nil},
			{"reduce subtract", with(func(r *isa.Record) {
				r.Opcode, r.Op, r.Dst = isa.OpTensorReduce, isa.ALUSubtract, sb(0x100, isa.FP32, 128, 1)
			}), nil},
			{"signal mode in the wait slot", with(func(r *isa.Record) { r.Wait.Mode = isa.SignalSemSet }), nil},
			{"wait mode in the signal slot", with(func(r *isa.Record) { r.Signal.Mode = isa.WaitSemGE }), nil},
			{"sync mode 10", with(func(r *isa.Record) { r.Signal.Mode = isa.NumSyncModes }), nil},
			{"empty slot with an index", with(func(r *isa.Record) { r.Wait.Index = 1 }), nil},
			{"event wait with a value", with(func(r *isa.Record) { r.Wait = isa.Sync{Mode: isa.WaitEvent, Value: 1} }), nil},
			{"event_set with a value", with(func(r *isa.Record) { r.Signal = isa.Sync{Mode: isa.SignalEventSet, Value: 1} }), nil},
			{"unused imm0", with(func(r *isa.Record) { r.Imm0 = 1 }), nil},
			{"unused imm1", with(func(r *isa.Record) { r.Imm1 = 1 }), nil},
			{"unused aux", with(func(r *isa.Record) { r.Aux = 1 }), nil},
			{"unused src1", with(func(r *isa.Record) { r.Src1.Dtype = isa.FP32 }), nil},
			{"unused dst", isa.Record{Opcode: isa.OpNop, Engine: isa.DVE, Dst: sb(0, isa.FP32, 1, 1)}, nil},
			{"reserved src1 byte", good(), func(b []byte) { b[53] = 1 }},
			{"zero partitions", with(func(r *isa.Record) { r.Src0.Partitions, r.Dst.Partitions = 0, 0 }), nil},
			{"partitions past 128", with(func(r *isa.Record) { r.Src0.Addr = isa.Addr(false, 1, 0) }), nil},
			{"dimension after the end", with(func(r *isa.Record) { r.Src0.Dims[2] = isa.Dim{Size: 1, Stride: 1} }), nil},
			{"stride on an ended dimension", with(func(r *isa.Record) { r.Src0.Dims[1] = isa.Dim{Stride: 1} }), nil},
			{"misaligned offset", with(func(r *isa.Record) { r.Src0.Addr = 2 }), nil},
			{"past the partition", with(func(r *isa.Record) { r.Src0.Addr = pb - 28 }), nil},
			{"PSUM past 16 KiB", with(func(r *isa.Record) { r.Dst.Addr = isa.Addr(true, 0, 16<<10-16) }), nil},
			{"negative stride below 0", with(func(r *isa.Record) { r.Src0.Dims[0].Stride = -1 }), nil},
			{"dtype 0", with(func(r *isa.Record) { r.Dst.Dtype = 0 }), nil},
			{"dtype 20", with(func(r *isa.Record) { r.Dst.Dtype = 20 }), nil},
			{"too many elements", with(func(r *isa.Record) {
				r.Src0 = tensor(false, 0, 0, isa.FP32, 128, 256, 0, 257, 0)
				r.Dst = tensor(false, 0, 0x100, isa.FP32, 128, 256, 0, 257, 0)
			}), nil},
			{"elementwise shape mismatch", with(func(r *isa.Record) { r.Dst.Dims[0].Size = 9 }), nil},
			{"elementwise partitions mismatch", with(func(r *isa.Record) { r.Dst.Partitions = 64 }), nil},
			{"transpose shape", with(func(r *isa.Record) { r.Opcode, r.Src0 = isa.OpTranspose, sb(0, isa.FP32, 8, 16) }), nil},
			{"DVE transpose over 32", with(func(r *isa.Record) {
				r.Opcode, r.Src0, r.Dst = isa.OpTranspose, sb(0, isa.FP32, 64, 8), sb(0x400, isa.FP32, 8, 64)
			}), nil},
			{"reduce to two elements", with(func(r *isa.Record) {
				r.Opcode, r.Op, r.Dst = isa.OpTensorReduce, isa.ALUAdd, sb(0x100, isa.FP32, 128, 2)
			}), nil},
			{"load_stationary rank 3", isa.Record{Opcode: isa.OpLoadStationary, Engine: isa.PE,
				Src0: tensor(false, 0, 0, isa.BF16, 128, 2, 64, 64, 1)}, nil},
			{"load_stationary M 129", isa.Record{Opcode: isa.OpLoadStationary, Engine: isa.PE, Src0: sb(0, isa.BF16, 128, 129)}, nil},
			{"multiply_moving N 513", isa.Record{Opcode: isa.OpMultiplyMoving, Engine: isa.PE,
				Src0: sb(0, isa.BF16, 128, 513), Dst: ps(0, isa.FP32, 1, 513)}, nil},
			{"multiply_moving to SBUF", isa.Record{Opcode: isa.OpMultiplyMoving, Engine: isa.PE,
				Src0: sb(0, isa.BF16, 128, 64), Dst: sb(0, isa.FP32, 128, 64)}, nil},
			{"multiply_moving to bf16", isa.Record{Opcode: isa.OpMultiplyMoving, Engine: isa.PE,
				Src0: sb(0, isa.BF16, 128, 64), Dst: ps(0, isa.BF16, 128, 64)}, nil},
			{"dma_trigger to another NC's engine", isa.Record{Opcode: isa.OpDMATrigger, Engine: isa.SP, Aux: 16, Imm1: 1}, nil},
			{"dma_trigger queue 16", isa.Record{Opcode: isa.OpDMATrigger, Engine: isa.SP, Aux: 3, Imm0: 16}, nil},
			{"memset with a source", with(func(r *isa.Record) { r.Opcode = isa.OpMemset }), nil},
		}
		if gen == hwarch.Sunda {
			cases = append(cases,
				tc{"copy_cast before cayman", with(func(r *isa.Record) { r.Opcode = isa.OpCopyCast }), nil},
				tc{"int64 before cayman", with(func(r *isa.Record) { r.Dst.Dtype = isa.Int64 }), nil})
		}
		if gen < hwarch.Mariana {
			cases = append(cases,
				tc{"ctrl_poll_sem before mariana", isa.Record{Opcode: isa.OpCtrlPollSem, Engine: isa.DVE}, nil},
				tc{"fp8_e4m3fn before mariana", with(func(r *isa.Record) { r.Dst.Dtype = isa.FP8E4M3FN }), nil})
		} else {
			cases = append(cases,
				tc{"packed compute", with(func(r *isa.Record) {
					r.Opcode, r.Op, r.Imm0 = isa.OpTensorScalar, isa.ALUAdd, 1
					r.Src0.Dtype, r.Dst.Dtype = isa.FP8E4M3FNx4, isa.FP8E4M3FNx4
				}), nil},
				tc{"packed cast", with(func(r *isa.Record) { r.Src0.Dtype, r.Dst.Dtype = isa.FP8E5M2x4, isa.FP8E4M3FNx4 }), nil})
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				h := newHarness(t, gen)
				e := int(isa.DVE)
				if c.r.Engine == isa.PE || c.r.Engine == isa.SP {
					e = int(c.r.Engine)
				}
				nop := rec(isa.OpNop, isa.Engine(e))
				h.place(progBase(e), false, nop, nop, c.r, nop)
				if c.raw != nil {
					b := h.env.code[progBase(e)+128]
					c.raw(b[:])
					h.env.code[progBase(e)+128] = b
				}
				h.start(e, progBase(e))
				h.run()
				require.Equal(t, uint32(StatusError), h.core.ReadReg(e, RegStatus))
				require.Equal(t, uint32(ErrInvalid), h.core.ReadReg(e, RegError))
				require.Equal(t, uint32(128), h.core.ReadReg(e, RegFaultOffset))
				require.Equal(t, uint32(2), h.core.ReadReg(e, RegRetired))
			})
		}
	})
}

func TestUnsupportedOpcodes(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		var cases []isa.Record
		if gen >= hwarch.Cayman {
			sort := rec(isa.OpSort, isa.POOL)
			sort.Dst, sort.Src0, sort.Imm0 = sb(0x100, isa.FP32, 4, 8), sb(0, isa.FP32, 4, 8), 1
			jpeg := rec(isa.OpJPEGDecode, isa.POOL)
			jpeg.Dst, jpeg.Src0 = sb(0x100, isa.Uint8, 4, 8), sb(0, isa.Uint8, 4, 8)
			dt := rec(isa.OpDMATranspose, isa.SP)
			dt.Dst, dt.Src0, dt.Aux = sb(0x100, isa.FP32, 4, 8), sb(0, isa.FP32, 4, 8), 1
			cases = append(cases, sort, jpeg, dt)
		}
		if gen >= hwarch.Mariana {
			es := rec(isa.OpCtrlES, isa.SP)
			es.Imm0 = 3
			cases = append(cases, es, isa.Record{Opcode: isa.OpModifyPoolCfg, Engine: isa.POOL, Imm0: 1, Imm1: 2})
		}
		for _, r := range cases {
			t.Run(r.Opcode.String(), func(t *testing.T) {
				h := newHarness(t, gen)
				e := int(r.Engine)
				h.place(progBase(e), true, rec(isa.OpNop, r.Engine), r)
				h.start(e, progBase(e))
				h.run()
				require.Equal(t, uint32(StatusError), h.core.ReadReg(e, RegStatus))
				require.Equal(t, uint32(ErrUnsupported), h.core.ReadReg(e, RegError))
				require.Equal(t, uint32(64), h.core.ReadReg(e, RegFaultOffset))
			})
		}
	})
}

func TestFetchAndRangeErrors(t *testing.T) {
	forEachGen(t, func(t *testing.T, gen hwarch.Generation) {
		t.Run("runs off the end", func(t *testing.T) {
			h := newHarness(t, gen)
			h.place(progBase(2), false, rec(isa.OpNop, isa.POOL), rec(isa.OpNop, isa.POOL))
			h.start(2, progBase(2))
			h.run()
			require.Equal(t, uint32(StatusError), h.core.ReadReg(2, RegStatus))
			require.Equal(t, uint32(ErrFetch), h.core.ReadReg(2, RegError))
			require.Equal(t, uint32(128), h.core.ReadReg(2, RegFaultOffset))
			require.Equal(t, uint32(2), h.core.ReadReg(2, RegRetired))
		})
		t.Run("misaligned start", func(t *testing.T) {
			h := newHarness(t, gen)
			h.start(0, progBase(0)+32)
			require.Equal(t, uint32(StatusError), h.core.ReadReg(0, RegStatus))
			require.Equal(t, uint32(ErrFetch), h.core.ReadReg(0, RegError))
			require.Zero(t, h.core.ReadReg(0, RegFaultOffset))
			require.Empty(t, h.env.q)
		})
		t.Run("multiply without a stationary tile", func(t *testing.T) {
			h := newHarness(t, gen)
			mm := rec(isa.OpMultiplyMoving, isa.PE)
			mm.Dst, mm.Src0 = ps(0, isa.FP32, 8, 8), sb(0, isa.BF16, 8, 8)
			status, code := h.runOne(mm)
			require.Equal(t, uint32(StatusError), status)
			require.Equal(t, uint32(ErrRange), code)
			require.Zero(t, h.core.ReadReg(0, RegRetired))
		})
		t.Run("multiply with the wrong K", func(t *testing.T) {
			h := newHarness(t, gen)
			ls, mm := rec(isa.OpLoadStationary, isa.PE), rec(isa.OpMultiplyMoving, isa.PE)
			ls.Src0 = sb(0, isa.BF16, 16, 8)
			mm.Dst, mm.Src0 = ps(0, isa.FP32, 8, 8), sb(0, isa.BF16, 32, 8)
			h.place(progBase(0), true, ls, mm)
			h.start(0, progBase(0))
			h.run()
			require.Equal(t, uint32(ErrRange), h.core.ReadReg(0, RegError))
			require.Equal(t, uint32(64), h.core.ReadReg(0, RegFaultOffset))
		})
		t.Run("memory fails at execute", func(t *testing.T) {
			h := newHarness(t, gen)
			h.sbuf.fail, h.sbuf.failAt = true, 0x10
			r := copyRec(isa.DVE, 0x1000, 0, 8)
			r.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: 1, Value: 1}
			status, code := h.runOne(r)
			require.Equal(t, uint32(StatusError), status)
			require.Equal(t, uint32(ErrRange), code)
			require.Zero(t, h.sync.Semaphores[1], "no signal after a failed record")
		})
	})
}

func TestControlBlock(t *testing.T) {
	h := newHarness(t, hwarch.Mariana)
	for e := range NumEngines {
		assert.Equal(t, uint32(1), h.core.ReadReg(e, RegRunStall), "power-on: run")
		assert.Zero(t, h.core.ReadReg(e, RegStatus))
	}
	// Plain storage, read-only registers, bad accesses.
	h.core.WriteReg(2, 0x100, 0xDEAD)
	h.core.WriteReg(2, RegStatus, 0xFF)
	h.core.WriteReg(2, RegRetired, 9)
	h.core.WriteReg(2, 0x1000, 1)
	h.core.WriteReg(2, 0x102, 1)
	h.core.WriteReg(5, 0x100, 1)
	h.core.WriteReg(-1, 0x100, 1)
	assert.Equal(t, uint32(0xDEAD), h.core.ReadReg(2, 0x100))
	assert.Zero(t, h.core.ReadReg(2, RegStatus))
	assert.Zero(t, h.core.ReadReg(2, RegRetired))
	assert.Zero(t, h.core.ReadReg(2, 0x1000))
	assert.Zero(t, h.core.ReadReg(2, 0x102))
	assert.Zero(t, h.core.ReadReg(5, 0x100))
	assert.Zero(t, h.core.ReadReg(1, 0x100))
	h.core.WriteReg(2, RegPCLo, 0x1234_5640)
	h.core.WriteReg(2, RegPCHi, 0x7)
	assert.Equal(t, uint32(0x1234_5640), h.core.ReadReg(2, RegPCLo))
	assert.Equal(t, uint32(7), h.core.ReadReg(2, RegPCHi))
	h.core.WriteReg(2, RegStartCtrl, 7) // not a command
	assert.Equal(t, uint32(7), h.core.ReadReg(2, RegStartCtrl))
	assert.Zero(t, h.core.ReadReg(2, RegStatus))

	t.Run("stall before start, then run", func(t *testing.T) {
		h := newHarness(t, hwarch.Cayman)
		h.core.WriteReg(3, RegRunStall, 0)
		h.launch(3, copyRec(isa.DVE, 0x100, 0, 8), copyRec(isa.DVE, 0x200, 0, 8))
		assert.Equal(t, uint32(StatusRunning|StatusStalled), h.core.ReadReg(3, RegStatus))
		assert.Empty(t, h.env.q)
		h.env.now = 777
		h.core.WriteReg(3, RegRunStall, 1)
		assert.Equal(t, uint32(StatusRunning), h.core.ReadReg(3, RegStatus))
		h.run()
		assert.Equal(t, uint32(StatusDone), h.core.ReadReg(3, RegStatus))
		assert.Equal(t, uint32(2), h.core.ReadReg(3, RegRetired))
		assert.Equal(t, 777+2*Picoseconds(64, h.core.Clocks()[3]), h.env.now)
	})
	t.Run("stall mid-run: the record in flight completes", func(t *testing.T) {
		h := newHarness(t, hwarch.Cayman)
		h.launch(3, copyRec(isa.DVE, 0x100, 0, 8), copyRec(isa.DVE, 0x200, 0, 8), copyRec(isa.DVE, 0x300, 0, 8))
		h.core.WriteReg(3, RegRunStall, 0)
		h.run()
		assert.Equal(t, uint32(StatusRunning|StatusStalled), h.core.ReadReg(3, RegStatus))
		assert.Equal(t, uint32(1), h.core.ReadReg(3, RegRetired))
		h.core.WriteReg(3, RegRunStall, 1)
		h.run()
		assert.Equal(t, uint32(StatusDone), h.core.ReadReg(3, RegStatus))
		assert.Equal(t, uint32(3), h.core.ReadReg(3, RegRetired))
	})
	t.Run("halt in flight", func(t *testing.T) {
		h := newHarness(t, hwarch.Sunda)
		h.launch(3, copyRec(isa.DVE, 0x100, 0, 8), copyRec(isa.DVE, 0x200, 0, 8))
		h.core.WriteReg(3, RegStartCtrl, StartHalt)
		assert.Equal(t, uint32(StatusRunning), h.core.ReadReg(3, RegStatus), "still running its record")
		h.run()
		assert.Zero(t, h.core.ReadReg(3, RegStatus), "halted: not running, not done")
		assert.Equal(t, uint32(1), h.core.ReadReg(3, RegRetired))
		assert.Equal(t, uint32(64*1_000_000/1_120_000), h.core.ReadReg(3, RegBusyLo), "57 ns")
		// Start again: counters clear, the program runs from its start.
		h.core.WriteReg(3, RegStartCtrl, StartRun)
		h.run()
		assert.Equal(t, uint32(StatusDone), h.core.ReadReg(3, RegStatus))
		assert.Equal(t, uint32(2), h.core.ReadReg(3, RegRetired))
	})
	t.Run("halt while waiting", func(t *testing.T) {
		h := newHarness(t, hwarch.Sunda)
		r := copyRec(isa.DVE, 0x100, 0, 8)
		r.Wait = isa.Sync{Mode: isa.WaitEvent, Index: 1}
		h.launch(3, r)
		h.env.now = 100
		h.core.WriteReg(3, RegStartCtrl, StartHalt)
		assert.Zero(t, h.core.ReadReg(3, RegStatus))
		assert.Equal(t, uint64(100), h.core.Stats()[3].Waiting)
		h.sync.Events[1] = 1
		h.core.SyncChanged()
		h.run()
		assert.Zero(t, h.core.ReadReg(3, RegRetired), "a halted engine starts nothing")
		h.core.WriteReg(3, RegStartCtrl, StartHalt) // halting an idle engine changes nothing
		assert.Zero(t, h.core.ReadReg(3, RegStatus))
	})
	t.Run("start while a record is in flight", func(t *testing.T) {
		h := newHarness(t, hwarch.Mariana)
		h.put(sb(0, isa.FP32, 128, 8), repeat(5, 1024))
		first := copyRec(isa.DVE, 0x100, 0, 8)
		first.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: 2, Value: 1}
		h.launch(3, first, rec(isa.OpNop, isa.DVE))
		h.env.now = 10
		h.place(progBase(3)+0x1000, true, copyRec(isa.DVE, 0x200, 0, 8))
		h.start(3, progBase(3)+0x1000)
		assert.Equal(t, uint32(StatusRunning), h.core.ReadReg(3, RegStatus))
		h.run()
		cost := Picoseconds(64, h.core.Clocks()[3])
		assert.Equal(t, uint32(StatusDone), h.core.ReadReg(3, RegStatus))
		assert.Equal(t, uint32(1), h.core.ReadReg(3, RegRetired), "the orphan does not count in the new run")
		assert.Equal(t, 2*cost, h.env.now, "the new run starts when the engine is free")
		assert.EqualValues(t, 1, h.sync.Semaphores[2], "the orphan's effects and signal happen")
		assert.Equal(t, repeat(5, 1024), h.get(sb(0x100, isa.FP32, 128, 8)))
		assert.Equal(t, repeat(5, 1024), h.get(sb(0x200, isa.FP32, 128, 8)))
	})
}

func TestCoreReset(t *testing.T) {
	h := newHarness(t, hwarch.Cayman)
	ls := rec(isa.OpLoadStationary, isa.PE)
	ls.Src0 = sb(0, isa.BF16, 8, 8)
	h.mustRun(0, ls)
	require.True(t, h.core.State().PE.Loaded)
	h.core.WriteReg(3, RegRunStall, 0)
	h.core.WriteReg(3, 0x200, 5)
	h.launch(1, copyRec(isa.ACT, 0x100, 0, 8), copyRec(isa.ACT, 0x200, 0, 8))
	require.Len(t, h.env.q, 1)
	h.core.Reset()
	for e := range NumEngines {
		assert.Zero(t, h.core.ReadReg(e, RegStatus))
		assert.Equal(t, uint32(1), h.core.ReadReg(e, RegRunStall))
	}
	assert.Zero(t, h.core.ReadReg(3, 0x200))
	assert.Equal(t, PEState{}, h.core.State().PE)
	h.run() // the stale completion is dropped
	assert.Zero(t, h.core.ReadReg(1, RegRetired))
	assert.Equal(t, repeat(0, 1024), h.get(sb(0x100, isa.FP32, 128, 8)), "the record in flight had no effect")
	mm := rec(isa.OpMultiplyMoving, isa.PE)
	mm.Dst, mm.Src0 = ps(0, isa.FP32, 8, 8), sb(0, isa.BF16, 8, 8)
	_, code := h.runOne(mm)
	assert.Equal(t, uint32(ErrRange), code, "the PE array was cleared")
	h.mustRun(1, copyRec(isa.ACT, 0x100, 0, 8))
}

func TestFireIgnoresBadEvents(t *testing.T) {
	h := newHarness(t, hwarch.Sunda)
	h.core.Fire(7)        // no such engine
	h.core.Fire(1<<8 | 2) // wrong epoch, nothing in flight
	h.core.Fire(2)        // nothing in flight
	for e := range NumEngines {
		assert.Zero(t, h.core.ReadReg(e, RegStatus))
	}
}

// TestDoorbellCallsBack: the device answers a doorbell by writing the
// engine's own control block (or resetting the TPB) before the record is
// done.
func TestDoorbellCallsBack(t *testing.T) {
	db := dmaOn(isa.SP)
	db.Signal = isa.Sync{Mode: isa.SignalSemIncr, Index: 1, Value: 1}
	t.Run("halt", func(t *testing.T) {
		h := newHarness(t, hwarch.Cayman)
		h.env.onDoorbell = func() { h.core.WriteReg(4, RegStartCtrl, StartHalt) }
		h.place(progBase(4), true, db, rec(isa.OpNop, isa.SP))
		h.start(4, progBase(4))
		h.run()
		assert.Zero(t, h.core.ReadReg(4, RegStatus))
		assert.Equal(t, uint32(1), h.core.ReadReg(4, RegRetired))
		assert.EqualValues(t, 1, h.sync.Semaphores[1])
	})
	t.Run("restart", func(t *testing.T) {
		h := newHarness(t, hwarch.Cayman)
		once := false
		h.env.onDoorbell = func() {
			if !once {
				once = true
				h.core.WriteReg(4, RegStartCtrl, StartRun)
			}
		}
		h.place(progBase(4), true, db, rec(isa.OpNop, isa.SP))
		h.start(4, progBase(4))
		h.run()
		assert.Equal(t, uint32(StatusDone), h.core.ReadReg(4, RegStatus))
		assert.Equal(t, uint32(2), h.core.ReadReg(4, RegRetired), "the new run: the doorbell again, then the nop")
		assert.EqualValues(t, 2, h.sync.Semaphores[1], "both doorbell records signalled")
		assert.Len(t, h.env.doorbells, 2)
	})
	t.Run("reset", func(t *testing.T) {
		h := newHarness(t, hwarch.Cayman)
		h.env.onDoorbell = h.core.Reset
		h.launch(4, db)
		h.run()
		assert.Zero(t, h.core.ReadReg(4, RegStatus))
		assert.Zero(t, h.core.ReadReg(4, RegRetired))
		assert.Zero(t, h.sync.Semaphores[1], "a reset drops the record")
	})
}
