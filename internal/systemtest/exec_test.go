package systemtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	"github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	rtisa "github.com/neuronsim/neuronsim/runtime/isa"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/scenarios"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/trace"
)

// runner brings up a device with a DMA layer, memory allocator and
// validator for running programs on NC nc.
func runner(t testing.TB, g hwarch.Generation, nc int) (*sim.Device, *program.Runner) {
	t.Helper()
	simDev, up, m := dmaDevice(t, g, 0)
	mem, err := dmem.New(up.Geometry, dmem.Options{ChannelBytes: up.HBMChannelBytes})
	require.NoError(t, err)
	return simDev, runnerOn(up, m, mem, nc)
}

// runnerOn is a program runner for NC nc of a brought-up device with a DMA
// layer and a device-memory allocator.
func runnerOn(up *bringup.Device, m *dma.DMA, mem *dmem.Allocator, nc int) *program.Runner {
	tables := arch.MustFor(up.Generation, arch.Options{})
	return &program.Runner{Dev: up, DMA: m, Mem: mem, Tables: tables, Validator: rtisa.New(tables), NC: nc}
}

// bf16 rounds an fp32 to bf16 (round to nearest even) and returns its bits.
func bf16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7F80_0000 == 0x7F80_0000 && b&0x7F_FFFF != 0 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7FFF + (b>>16)&1
	return uint16(b >> 16)
}

func fromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// matmulProgram is the shipped scenarios' program (scenarios/programs/matmul.s):
// C = relu(0.5 · (Wᵀ · X) + 0.25), W [128 × 128] and X [128 × 512] in bf16.
var matmulProgram = func() string {
	b, err := fs.ReadFile(scenarios.FS, "programs/matmul.s")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	return string(b)
}()

// TestMatmulActivationEveryGeneration assembles a matmul + activation
// program, runs it through the runtime (validate, stage by DMA, start over
// CSR) on every generation and compares PSUM and SBUF with a Go reference:
// bit-exact, the fp32 path being computed the same way.
func TestMatmulActivationEveryGeneration(t *testing.T) {
	prog, err := asm.Assemble("matmul.s", []byte(matmulProgram))
	require.NoError(t, err)
	for _, g := range hwarch.Generations() {
		t.Run(g.String(), func(t *testing.T) {
			simDev, r := runner(t, g, 1)
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			const K, M, N = 128, 128, 512
			w := make([]uint16, K*M)
			x := make([]uint16, K*N)
			for i := range w {
				w[i] = bf16(float32(rng.NormFloat64()))
			}
			for i := range x {
				x[i] = bf16(float32(rng.NormFloat64()))
			}
			require.NoError(t, r.WriteTile(false, 0, K, 0, u16bytes(w)))
			require.NoError(t, r.WriteTile(false, 0, K, 0x100, u16bytes(x)))

			before := simDev.Now()
			res, err := r.Run(prog)
			require.NoError(t, err)
			require.Len(t, res.Engines, 2)
			for _, e := range res.Engines {
				assert.NotZero(t, e.Status&0x8, "%s done", e.Engine)
				assert.Equal(t, uint32(e.Records), e.Retired)
			}
			assert.Greater(t, simDev.Now(), before)

			psum := make([]byte, M*N*4)
			require.NoError(t, r.ReadTile(true, 0, M, 0, psum))
			out := make([]byte, M*N*4)
			require.NoError(t, r.ReadTile(false, 0, M, 0x900, out))
			for m := 0; m < M; m++ {
				for n := 0; n < N; n++ {
					var acc float32
					for k := 0; k < K; k++ {
						acc += float32(fromBF16(w[k*M+m]) * fromBF16(x[k*N+n]))
					}
					got := math.Float32frombits(binary.LittleEndian.Uint32(psum[4*(m*N+n):]))
					if got != acc {
						t.Fatalf("PSUM[%d][%d] = %g, reference %g", m, n, got, acc)
					}
					want := float32(float32(acc*0.5) + 0.25)
					if want < 0 {
						want = 0
					}
					if a := math.Float32frombits(binary.LittleEndian.Uint32(out[4*(m*N+n):])); a != want {
						t.Fatalf("SBUF[%d][%d] = %g, reference %g", m, n, a, want)
					}
				}
			}
		})
	}
}

func u16bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

// raceProgram: POOL fills a tile (memset then iota, so it finishes late) and
// DVE copies it. With the semaphore the copy waits for the fill.
func raceProgram(withWait bool) string {
	wait := ""
	if withWait {
		wait = " wait=sem_ge(7,1)"
	}
	return `
.engine pool
memset dst=sbuf[0:128,0]:int32[1024] imm0=5
iota dst=sbuf[0:128,0]:int32[1024] imm0=0 imm1=1000 signal=sem_incr(7,1) last
.engine dve
tensor_copy dst=sbuf[0:128,0x1000]:int32[1024] src0=sbuf[0:128,0]:int32[1024]` + wait + ` last
`
}

// TestSemaphoreOrdersTwoEngines: without its wait the consumer reads the
// tile before the producer has written it (a wrong result, and the trace
// shows the two engines overlapping); with the wait the result is right and
// the consumer starts after the producer's signal.
func TestSemaphoreOrdersTwoEngines(t *testing.T) {
	for _, withWait := range []bool{false, true} {
		t.Run(map[bool]string{false: "no-wait", true: "wait"}[withWait], func(t *testing.T) {
			simDev, r := runner(t, hwarch.Cayman, 0)
			rec := trace.New(0)
			simDev.SetTrace(rec)
			prog, err := asm.Assemble("race.s", []byte(raceProgram(withWait)))
			require.NoError(t, err)
			_, err = r.Run(prog)
			require.NoError(t, err)
			out := make([]byte, 128*1024*4)
			require.NoError(t, r.ReadTile(false, 0, 128, 0x1000, out))
			correct := true
			for p := 0; p < 128 && correct; p++ {
				for i := 0; i < 1024; i++ {
					if int32(binary.LittleEndian.Uint32(out[4*(p*1024+i):])) != int32(i+1000*p) {
						correct = false
						break
					}
				}
			}
			assert.Equal(t, withWait, correct, "the copy is right exactly when it waits")

			var doc struct {
				TraceEvents []struct {
					Name string
					Ph   string
					Ts   float64
					Dur  float64
					Tid  int
					Args map[string]string
				}
			}
			var buf bytes.Buffer
			require.NoError(t, rec.WriteJSON(&buf))
			require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
			tracks := map[int]string{}
			for _, e := range doc.TraceEvents {
				if e.Ph == "M" && e.Name == "thread_name" {
					tracks[e.Tid] = e.Args["name"]
				}
			}
			var iotaEnd, copyStart, copyEnd float64
			for _, e := range doc.TraceEvents {
				switch {
				case e.Ph == "X" && e.Name == "iota":
					iotaEnd = e.Ts + e.Dur
				case e.Ph == "X" && e.Name == "tensor_copy":
					copyStart, copyEnd = e.Ts, e.Ts+e.Dur
					assert.Contains(t, tracks[e.Tid], "DVE")
				}
			}
			require.NotZero(t, iotaEnd)
			require.NotZero(t, copyEnd)
			if withWait {
				assert.GreaterOrEqual(t, copyStart, iotaEnd, "the copy starts after the fill's signal")
			} else {
				assert.Less(t, copyStart, iotaEnd, "the copy overlaps the fill")
				assert.Less(t, copyEnd, iotaEnd, "and reads before the fill lands")
			}
		})
	}
}

// An engine that meets a record the validators would have refused stops
// with an error status the runtime reads over CSR.
type acceptAll struct{}

func (acceptAll) FinalInstValidityCheck([]byte, uint32) error { return nil }

func TestEngineStopsOnBadRecord(t *testing.T) {
	tests := []struct {
		name, src string
		code      uint32
		refused   bool // the validators refuse it (a validated-only opcode is valid, just not executed)
	}{
		{"validated-only opcode", ".engine pool\nnop\nsort dst=sbuf[0:1,0]:fp32[4] src0=sbuf[0:1,0x100]:fp32[4] last\n", isa.ErrorUnsupported, false},
		{"opcode of a later generation", ".engine dve\nnop\ns3s3d1_bn dst=sbuf[0:1,0]:fp32[4] src0=sbuf[0:1,0x100]:fp32[4] last\n", isa.ErrorInvalid, true},
		{"tensor past its partition", ".engine dve\nnop\nmemset dst=sbuf[0:1,0x37FFC]:fp32[4] imm0=1 last\n", isa.ErrorInvalid, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := runner(t, hwarch.Cayman, 3)
			prog, err := asm.Assemble("bad.s", []byte(tt.src))
			require.NoError(t, err)
			if err := r.Validator.FinalInstValidityCheck(prog[64:], uint32(prog[65])); tt.refused {
				require.ErrorIs(t, err, rtisa.ErrInvalidInstruction, "the validators refuse it")
			} else {
				require.NoError(t, err)
			}
			r.Validator = acceptAll{}
			res, err := r.Run(prog)
			require.ErrorIs(t, err, program.ErrEngineFault)
			require.Len(t, res.Engines, 1)
			bad := res.Engines[0]
			assert.NotZero(t, bad.Status&isa.StatusError)
			assert.Equal(t, tt.code, bad.Error)
			assert.Equal(t, uint32(64), bad.FaultOffset, "the second record of the block")
			assert.Equal(t, uint32(1), bad.Retired, "the nop before it completed")
		})
	}
}
