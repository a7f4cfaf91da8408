package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/runtime/stack"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/isa/asm"
)

const cliMatmul = `.engine pe
load_stationary src0=sbuf[0:128,0]:bf16[128]
multiply_moving dst=psum[0:128,0]:fp32[512] src0=sbuf[0:128,0x100]:bf16[512] signal=sem_incr(1,1) last
.engine act
activation op=relu dst=sbuf[0:128,0x900]:fp32[512] src0=psum[0:128,0]:fp32[512] imm0=f32(0.5) imm1=f32(0.25) wait=sem_ge(1,1) signal=sem_incr(2,1) last
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	cayOnly := writeFile(t, dir, "cay.s", ".engine sp\ndma_transpose dst=sbuf[0:1,0]:bf16[4] src0=sbuf[0:1,0x100]:bf16[4] aux=3\n")
	for _, arch := range []string{"cayman", "mariana"} {
		out, err := runCLI(t, "validate", cayOnly, "--arch", arch)
		require.NoError(t, err, arch)
		assert.Contains(t, out, "sp block: 1 record valid on "+arch)
	}
	out, err := runCLI(t, "validate", cayOnly, "--arch", "sunda")
	require.Error(t, err)
	assert.Contains(t, out, "Found invalid instruction! opcode=189, offset=0")
	assert.Contains(t, out, "record: dma_transpose")
	assert.Contains(t, out, "needs cayman or later; this is sunda")

	fp4 := writeFile(t, dir, "fp4.s", ".engine dve\ntensor_copy dst=sbuf[0:1,0]:fp4_e2m1fn_x4[4] src0=sbuf[0:1,0x100]:fp4_e2m1fn_x4[4]\n")
	out, err = runCLI(t, "validate", fp4, "--arch", "cayman")
	require.Error(t, err)
	assert.Contains(t, out, "is_valid_dtype")
	_, err = runCLI(t, "validate", fp4, "--arch", "mariana")
	require.NoError(t, err)

	// --engine validates every record as issued on one engine.
	out, err = runCLI(t, "validate", cayOnly, "--arch", "cayman", "--engine", "pe")
	require.Error(t, err)
	assert.Contains(t, out, "Found invalid instruction! opcode=189, offset=0")
}

func TestExecCommand(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "mm.s", cliMatmul)
	w := make([]byte, 128*256)
	x := make([]byte, 128*1024)
	for i := 0; i < len(w); i += 2 {
		w[i+1] = 0x3F // bf16 1.0 = 0x3F80
		w[i] = 0x80
	}
	for i := 0; i < len(x); i += 2 {
		x[i+1] = 0x3F
		x[i] = 0x80
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.bin"), w, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.bin"), x, 0o644))
	trace := filepath.Join(dir, "trace.json")
	out, err := runCLI(t, "exec", prog, "--arch", "mariana", "--core", "5",
		"--input", "sbuf[0:128,0]="+filepath.Join(dir, "w.bin"),
		"--input", "sbuf[0:128,0x100]="+filepath.Join(dir, "x.bin"),
		"--output", "sbuf[0:128,0x900]:2048="+filepath.Join(dir, "y.bin"),
		"--trace", trace)
	require.NoError(t, err)
	assert.Contains(t, out, "pe   2 records,       2 retired")
	assert.Contains(t, out, "act  1 record,        1 retired", "one record is singular")
	assert.Contains(t, out, "semaphore 2 = 1")
	y, err := os.ReadFile(filepath.Join(dir, "y.bin"))
	require.NoError(t, err)
	require.Len(t, y, 128*2048)
	// Every output element is relu(0.5·128 + 0.25) = 64.25 = 0x42808000.
	assert.Equal(t, []byte{0x00, 0x80, 0x80, 0x42}, y[:4])
	assert.Equal(t, []byte{0x00, 0x80, 0x80, 0x42}, y[len(y)-4:])
	raw, err := os.ReadFile(trace)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.NotEmpty(t, doc["traceEvents"])

	for _, bad := range []struct {
		args []string
		want string // the error names what is wrong
	}{
		{[]string{"exec", prog, "--input", "dram[0:1,0]=x"}, `--input "dram[0:1,0]=x": want SPACE[START:COUNT,OFFSET]=FILE`},
		{[]string{"exec", prog, "--output", "sbuf[0:1,0]=y"}, `--output "sbuf[0:1,0]=y": an output needs :BYTES`},
		{[]string{"exec", prog, "--core", "8"}, "--core 8: must be in 0..7 (a mariana device has 8 NeuronCores)"},
		{[]string{"exec", prog, "--core", "99999999999999999999"}, `--core "99999999999999999999": must be in 0..7 (a mariana device has 8 NeuronCores)`},
		{[]string{"exec", prog, "--arch", "trn1", "--core", "2"}, "--core 2: must be in 0..1 (a sunda device has 2 NeuronCores)"},
		{[]string{"exec", prog, "--input", "sbuf[0:1,0]:64=x"}, "an input takes no :BYTES"},
		{[]string{"exec", prog, "--output", "sbuf[0:1,0]:6=y"}, "bytes per partition 6: not a multiple of 4"},
		{[]string{"exec", prog, "--output", "sbuf[0:1,0]:0=y"}, `bytes per partition "0": must be in 4B..`},
		{[]string{"exec", filepath.Join(dir, "missing.s")}, "missing.s: no such file"},
	} {
		_, err := runCLI(t, bad.args...)
		assert.ErrorContains(t, err, bad.want, "%v", bad.args)
	}
}

// TestProgramFilesBounded: validate and exec read a program as asm and
// disasm bound it — no more than a program's records (/dev/zero once ran
// the process out of memory), and not none; a FIFO, a device or a
// directory is refused before it is read (a FIFO never blocks) — and
// exec refuses a program an engine of which would run past its end (no
// record with the last flag: it once fetched a gigabyte of zeros as
// no-ops, minutes for a larger file).
func TestProgramFilesBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.bin")
	require.NoError(t, os.WriteFile(big, make([]byte, (asm.MaxRecords+1)*hwisa.RecordSize), 0o644))
	bigSource := filepath.Join(dir, "big.s")
	require.NoError(t, os.WriteFile(bigSource, nil, 0o644))
	require.NoError(t, os.Truncate(bigSource, asm.MaxSource+1)) // a hole: refused by its size, never read
	fifo := filepath.Join(dir, "fifo.s")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644)) // no writer: a read would block
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", big}, "a program holds at most 1048576 records"},
		{[]string{"exec", big}, "a program holds at most 1048576 records"},
		{[]string{"asm", bigSource}, bigSource + ": more than 403701760 bytes; " + asm.MaxSourceWhy},
		{[]string{"validate", fifo}, fifo + ": is a FIFO (named pipe), not a regular file"},
		{[]string{"exec", fifo}, fifo + ": is a FIFO (named pipe), not a regular file"},
		{[]string{"asm", fifo}, fifo + ": is a FIFO (named pipe), not a regular file"},
		{[]string{"disasm", "/dev/zero"}, "/dev/zero: is a character device, not a regular file"},
		{[]string{"validate", dir}, dir + ": is a directory, not a regular file"},
		{[]string{"validate", writeFile(t, dir, "empty.bin", "")}, "bad program: empty: a program holds at least one 64-byte record"},
		{[]string{"exec", writeFile(t, dir, "nolast.s", ".engine pe\nnop\n")}, `the pe engine's block (1 record) has no record with the last flag`},
		{[]string{"exec", writeFile(t, dir, "onelast.s", ".engine pe\nnop last\n.engine act\nnop\nnop\n")}, `the act engine's block (2 records) has no record with the last flag`},
		{[]string{"exec", writeFile(t, dir, "afterlast.s", ".engine pe\nnop last\n.engine act\nnop last\n.engine pe\nnop last\n")}, // once: "pe 2 records, 1 retired, done"
			`bad program: the pe engine's block has 1 record after its record 0, the first with the last flag: the engine stops there and would never run them`},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+filepath.Base(tc.args[1]), func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			require.Error(t, err, "accepted; printed:\n%s", out)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestOutputIsNotAnInput: asm, disasm, exec, run and snapshot save refuse
// to write over a file they read — the source, the program, an --input, a
// scenario's program — by its path or through a link, symbolic or hard
// (each once replaced it silently); exec's --input is bounded by what its
// tile holds.
func TestOutputIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "p.s", ".engine pe\nnop last\n")
	bin := filepath.Join(dir, "p.bin")
	_, err := runCLI(t, "asm", src, "-o", bin)
	require.NoError(t, err)
	link := filepath.Join(dir, "link.s")
	require.NoError(t, os.Symlink(src, link))
	in := writeFile(t, dir, "w.bin", string(make([]byte, 4096)))
	huge := writeFile(t, dir, "huge.bin", string(make([]byte, 1<<20)))
	hard := filepath.Join(dir, "hard.s")
	require.NoError(t, os.Link(src, hard))
	scenario := func(name, outputs string) string {
		return writeFile(t, dir, name, "name: x\nsystem: {arch: cayman, devices: 1, boot: false, reset: false}\n"+
			"steps:\n  - validate: {program: p.s}\noutputs: {dir: "+dir+outputs+"}\n")
	}
	reportOver := scenario("report.yaml", ", report: hard.s")
	plain := scenario("plain.yaml", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", reportOver}, "outputs.report " + hard + ": the same file as steps[0] (validate).program " + src + ", which it would replace; nothing was run"},
		{[]string{"snapshot", "save", plain, hard}, "the snapshot saved " + hard + ": the same file as steps[0] (validate).program " + src},
		{[]string{"asm", src, "-o", src}, "the same file as the source"},
		{[]string{"asm", src, "-o", link}, "the same file as the source"},
		{[]string{"disasm", bin, "-o", bin}, "the same file as the program"},
		{[]string{"exec", src, "--output", "sbuf[0:128,0]:32=" + src}, "the same file as the program"},
		{[]string{"exec", src, "--input", "sbuf[0:128,0]=" + in, "--output", "sbuf[0:128,0]:32=" + in}, "the same file as --input"},
		{[]string{"exec", src, "--input", "sbuf[0:1,0]=" + huge}, "a tile of 1 partition holds at most that"},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+tc.want, func(t *testing.T) {
			before, err := os.ReadFile(src)
			require.NoError(t, err)
			out, err := runCLI(t, tc.args...)
			require.Error(t, err, "accepted; printed:\n%s", out)
			assert.Contains(t, err.Error(), tc.want)
			after, err := os.ReadFile(src)
			require.NoError(t, err)
			assert.Equal(t, before, after, "the source is left as it was")
		})
	}
}

// TestExecTileSpecErrors: a bad SPACE[START:COUNT,OFFSET] says what is
// wrong with which part.
func TestExecTileSpecErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"sbuf[0:0,0]=x.bin":           "partition count 0: must be in 1..128",
		"sbuf[120:10,0]=x.bin":        "10 partitions from 120 pass partition 127",
		"sbuf[128:1,0]=x.bin":         "start partition 128: must be in 0..127",
		"sbuf[0:129,0]=x.bin":         "partition count 129: must be in 1..128",
		"sbuf[0:128,0]=x.bin":         "",
		"sbuf[127:1,0]=x.bin":         "",
		"sbuf[0:1,1e3]=x.bin":         `offset "1e3": not a decimal or 0x hex integer`,
		"sbuf[0:1,0x1ffffffff]=x.bin": `offset "0x1ffffffff": at most 4294967295`,
		"sbuf[0:1,010]=x.bin":         "", // 010 is ten, not octal: the spec is good
		// START+COUNT once overflowed int and passed the check.
		"sbuf[1:9223372036854775807,0]=x.bin":   "partition count 9223372036854775807: must be in 1..128",
		"psum[2:9223372036854775807,0]:4=x.bin": "partition count 9223372036854775807: must be in 1..128",
		"sbuf[0:99999999999999999999,0]=x.bin":  `partition count "99999999999999999999": must be in 1..128`,
		"sbuf[99999999999999999999:1,0]=x.bin":  `start partition "99999999999999999999": must be in 0..127`,
	} {
		_, err := parseTile(spec, strings.Contains(spec, "]:"))
		if want == "" {
			assert.NoError(t, err, spec)
			continue
		}
		require.Error(t, err, spec)
		assert.Contains(t, err.Error(), want, spec)
	}
	tile, err := parseTile("sbuf[0:1,010]=x.bin", false)
	require.NoError(t, err)
	assert.Equal(t, uint64(10), tile.Offset)
}

// TestExecInvalidPrintsNoRun: a program the validators refuse never runs,
// so exec prints no device time for it (it once printed "0s of device
// time" before the validator's error).
func TestExecInvalidPrintsNoRun(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "cay.s", ".engine sp\ndma_transpose dst=sbuf[0:1,0]:bf16[4] src0=sbuf[0:1,0x100]:bf16[4] aux=3 last\n")
	out, err := runCLI(t, "exec", prog, "--arch", "sunda")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs cayman or later")
	assert.NotContains(t, out, "device time")
}

// TestExecReportsDoorbellErrors: a dma_trigger that rings a queue nobody
// set up retires, and its engine ends done, but the doorbell halts the
// queue (udma.ErrDoorbellDisabled): exec reports the queue's status and
// fails (it printed "done" and exited 0).
func TestExecReportsDoorbellErrors(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "trig.s", ".engine sp\ndma_trigger aux=0 imm0=15 imm1=16777200 last\n")
	out, err := runCLI(t, "exec", prog)
	require.ErrorIs(t, err, stack.ErrProgramDMA)
	assert.Contains(t, err.Error(), "DMA engine 0 queue 15, rung by the program's dma_trigger: status 0x802 (a doorbell on a queue or engine not enabled)")
	assert.Contains(t, out, "  sp   1 record,        1 retired, busy 53ns, done\n")
	assert.Contains(t, out, "  dma engine 0 queue 15 (rung by dma_trigger): status 0x802, HALTED: a doorbell on a queue or engine not enabled\n")

}

// FuzzExecTileSpec: any --input/--output spec is refused or yields a tile
// whose START and COUNT lie in a core's 128 partitions (START+COUNT never
// wrapped) and, for an output, whose BYTES is a non-zero multiple of 4.
func FuzzExecTileSpec(f *testing.F) {
	for _, s := range []string{"sbuf[0:128,0]=x.bin", "psum[127:1,0x10]:4=y.bin", "sbuf[1:9223372036854775807,0]=x.bin",
		"sbuf[9223372036854775807:2,0]:8=y", "sbuf[0:99999999999999999999,0]=x", "sbuf[120:10,0]=x", "sbuf[0:1,0xffffffff]:4G=y", "sbuf[0:0,0]=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, output := range []bool{false, true} {
			tile, err := parseTile(s, output)
			if err != nil {
				continue
			}
			if tile.Start < 0 || tile.Count < 1 || tile.Start > 128-tile.Count {
				t.Fatalf("%q: partitions %d+%d accepted", s, tile.Start, tile.Count)
			}
			if output && (tile.Bytes == 0 || tile.Bytes%4 != 0 || tile.Bytes > math.MaxUint32) {
				t.Fatalf("%q: %d bytes per partition accepted", s, tile.Bytes)
			}
		}
	})
}

// TestExecInputsOverlap: two --input tiles that share a byte of one space
// (a partition both hold, and a byte range both write in it) are refused
// naming both, before the device is brought up — the later file once
// overwrote the earlier one's bytes in silence, so a program read half of
// one input and half of another. Tiles side by side, in other partitions
// or in the other space are taken.
func TestExecInputsOverlap(t *testing.T) {
	dir := t.TempDir()
	prog := writeFile(t, dir, "mm.s", cliMatmul)
	w := filepath.Join(dir, "w.bin") // 256 bytes a partition over 128
	require.NoError(t, os.WriteFile(w, make([]byte, 128*256), 0o644))
	one := filepath.Join(dir, "one.bin") // 256 bytes, one partition
	require.NoError(t, os.WriteFile(one, make([]byte, 256), 0o644))
	for _, tc := range []struct {
		name  string
		specs []string
		err   string // "": taken
	}{
		{"second half over the first", []string{"sbuf[0:128,0]=" + w, "sbuf[0:128,0x80]=" + w},
			"--input sbuf[0:128,0x80]=" + w + ": overlaps --input sbuf[0:128,0]=" + w + ": SBUF partitions 0..127, bytes [0x80, 0x100) of each: give tiles that do not share a byte"},
		{"one partition inside", []string{"sbuf[0:128,0]=" + w, "sbuf[77:1,0xff]=" + one},
			"SBUF partitions 77..77, bytes [0xff, 0x100) of each"},
		{"the same tile twice", []string{"psum[0:128,0]=" + w, "psum[0:128,0]=" + w}, "PSUM partitions 0..127, bytes [0x0, 0x100)"},
		{"side by side", []string{"sbuf[0:128,0]=" + w, "sbuf[0:128,0x100]=" + w}, ""},
		{"other partitions", []string{"sbuf[0:1,0]=" + one, "sbuf[1:1,0]=" + one}, ""},
		{"other space", []string{"sbuf[0:128,0]=" + w, "psum[0:128,0]=" + w}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"exec", prog, "--arch", "cayman"}
			for _, s := range tc.specs {
				args = append(args, "--input", s)
			}
			out, err := runCLI(t, args...)
			if tc.err == "" {
				require.NoError(t, err, out)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.NotContains(t, out, "device time", "refused before anything runs")
		})
	}
}
