package main

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden command outputs under testdata/golden")

// goldenCases are commands whose whole output — stdout, stderr, the error
// and the files written — is kept in testdata/golden/NAME.txt: the outputs
// of the commands that run on the runtime's stack (dve load, dma copy,
// exec, csr, ls) and of the fabric commands, refusals included, so that a
// change of structure that changes a byte of them fails here. IN is the
// test's input directory, OUT its output directory, PROGS the shipped
// programs.
var goldenCases = []struct{ name, args string }{
	{"dve-mariana", "dve load"},
	{"dve-sunda-core1", "dve load --arch sunda --core 1"},
	{"dve-cayman-qemu", "dve load --arch cayman --revision qemu --core 7"},
	{"dve-mariana-emu", "dve load --arch mariana --revision emu --core 2"},
	{"dve-tables", "dve load --arch cayman --tables IN/dve"},
	{"dve-tables-wrong", "dve load --arch sunda --tables IN/dve"},
	{"dve-badcore", "dve load --arch cayman --core 99"},
	{"dve-device", "dve load --device 1"},
	{"dve-devices2", "dve load --devices 2"},
	{"dve-devices99", "dve load --devices 99"},
	{"dma-h2d", "dma copy --from host --to device --size 1MiB"},
	{"dma-d2d", "dma copy --from device --to device --size 1MiB --arch trn2 --core 5"},
	{"dma-d2h", "dma copy --from device --to host --size 64K --arch sunda"},
	{"dma-h2h-odd", "dma copy --from host --to host --size 4097 --arch cayman"},
	{"dma-h2d-odd", "dma copy --from host --to device --size 4099 --arch cayman"},
	{"dma-d2d-odd", "dma copy --from device --to device --size 4099 --arch mariana --core 3"},
	{"dma-timing", "dma copy --from host --to device --size 4GiB --timing-only"},
	{"dma-timing-d2d", "dma copy --from device --to device --size 16M --timing-only --arch sunda"},
	{"dma-qemu", "dma copy --from host --to device --size 1M --arch cayman --revision qemu"},
	{"dma-big", "dma copy --from host --to device --size 2GiB"},
	{"dma-badside", "dma copy --from foo --to device"},
	{"dma-badcore", "dma copy --core 99"},
	{"dma-devalloc", "dma copy --from device --to device --size 100G --arch sunda --timing-only"},
	{"dma-kernel-flags", "dma copy --kernel /dev/neuron0 --from host"},
	{"exec-mariana", "exec PROGS/matmul.s --input sbuf[0:128,0]=IN/w.bin --input sbuf[0:128,0x100]=IN/x.bin --output sbuf[0:128,0x900]:2048=OUT/y.bin --trace OUT/trace.json"},
	{"exec-cayman", "exec PROGS/matmul.s --arch cayman --core 3 --input sbuf[0:128,0]=IN/w.bin --input sbuf[0:128,0x100]=IN/x.bin --output sbuf[0:128,0x900]:2K=OUT/y.bin --output psum[0:128,0]:2048=OUT/p.bin"},
	{"exec-sunda-trace-max", "exec PROGS/matmul.s --arch sunda --core 1 --input sbuf[0:128,0]=IN/w.bin --input sbuf[0:128,0x100]=IN/x.bin --output sbuf[0:128,0x900]:2048=OUT/y.bin --trace OUT/t.json --trace-max 4K"},
	{"exec-qemu", "exec PROGS/matmul.s --arch cayman --revision qemu --input sbuf[0:128,0]=IN/w.bin --input sbuf[0:128,0x100]=IN/x.bin --output sbuf[0:128,0x900]:2048=OUT/y.bin"},
	{"exec-transpose-sunda", "exec PROGS/dma_transpose.s --arch sunda"},
	{"exec-transpose-cayman", "exec PROGS/dma_transpose.s --arch cayman --input sbuf[0:1,0x100]=IN/small.bin --output sbuf[0:1,0]:8=OUT/tr.bin"},
	{"exec-badcore", "exec PROGS/matmul.s --core 8"},
	{"exec-badtile", "exec PROGS/matmul.s --input sbuf[0:129,0]=IN/w.bin"},
	{"exec-tile-range", "exec PROGS/matmul.s --output sbuf[0:128,0xFFFFF]:2048=OUT/z.bin"},
	{"exec-same-file", "exec PROGS/matmul.s --output sbuf[0:128,0]:4=OUT/z.bin --trace OUT/z.bin"},
	{"csr-misc", "csr read 0x6C84024"},
	{"csr-cayman", "csr read 0xD2701000 --count 4 --arch cayman"},
	{"csr-qemu", "csr read 0x30FA0024 --arch trn1 --revision qemu"},
	{"csr-dev3", "csr read 0x6C84024 --devices 4 --device 3"},
	{"csr-devbad", "csr read 0x6C84024 --devices 4 --device 4"},
	{"csr-outside", "csr read 0xFFFFFFFFF"},
	{"csr-write", "csr write 0xD2701800 1 1 1 --device 0"},
	{"csr-cayman17", "csr read 0x6C84024 --devices 17 --arch cayman"},
	{"ls-default", "ls"},
	{"ls-trn2-16", "ls --arch trn2 --devices 16"},
	{"ls-mariana-qemu-json", "ls --arch mariana --revision qemu --json"},
	{"ls-sunda-json", "ls --arch sunda --devices 2 --json"},
	{"ls-mariana-33", "ls --arch mariana --devices 33"},
	{"ls-mariana-none-17", "ls --arch mariana --switch none --devices 17"},
	{"topo-list", "fabric topo --arch cayman --devices 2,4,8"},
	{"topo-17", "fabric topo --arch cayman --devices 17"},
	{"topo-65", "fabric topo --arch cayman --devices 65 --what-if"},
	{"sweep-overrides", "fabric sweep --arch cayman --devices 4 --topology star -b 1K -e 1M -f 4 --link-latency 123.5 --link-bw 17GB/s --endpoint-delay 7 --switch-latency 9 --chunk-bytes 4K"},
	{"sweep-json-plot", "fabric sweep --arch mariana --devices 8 -b 1K -e 64K -f 8 --json OUT/s.json --plot OUT/p.png"},
	{"sweep-list-json", "fabric sweep --arch cayman --devices 2,4 -b 1K -e 16K -f 4 --json OUT/r.json --op all_gather"},
	{"sweep-functional", "fabric sweep --arch sunda --devices 2 --ranks-per-device 2 -b 4K -e 16K -f 2 --mode functional --op reduce_scatter"},
	{"sweep-engines", "fabric sweep --arch cayman --devices 4 -b 1M -e 1M --engines 3 --chunks 2"},
	{"sweep-pcap", "fabric sweep --arch cayman --devices 2 -b 1K -e 4K -f 2 --pcap OUT/f.pcap --pcap-max 1K"},
	{"sweep-free", "fabric sweep --arch mariana --devices 16 --model free -b 1M -e 4M -f 2 --link-bw 50GB/s"},
	{"sweep-17", "fabric sweep --arch cayman --devices 17"},
	{"sweep-whatif", "fabric sweep --arch cayman --devices 20 --what-if -b 1K -e 1K"},
	{"sweep-hier-nogroup", "fabric sweep --arch mariana --devices 8 --algo hier"},
	{"sweep-memlimit", "fabric sweep --arch cayman --devices 16 --mode functional -b 64M -e 64M --mem-limit 4G"},
	{"topo-system", "fabric topo --system trn1-32xl"},
	{"sweep-system", "fabric sweep --system trn3-gen1 -b 1M -e 64M -f 8 --json OUT/g1.json"},
	{"sweep-system-conflict", "fabric sweep --system trn3-gen1 --devices 32"},
	{"sweep-plot-devices", "fabric sweep --arch cayman --devices 2,4,8 --topology ring -b 64K -e 16M -f 16 --plot-devices OUT/d.png --plot-sizes 64K,16M"},
}

// goldenInputs writes the inputs the golden commands read: the matmul's
// bf16 operands (small values), a small tile and the cayman DVE tables.
func goldenInputs(t *testing.T, dir string) {
	t.Helper()
	r := rand.New(rand.NewPCG(15, 2))
	operand := func(n int) []byte {
		b := make([]byte, 2*n)
		for i := 0; i < len(b); i += 2 {
			b[i], b[i+1] = byte(r.Uint32()), byte(r.Uint32())&0x3F|byte(r.Uint32())&0x80
		}
		return b
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.bin"), operand(128*128), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.bin"), operand(128*512), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "small.bin"), operand(256), 0o644))
	_, err := runCLI(t, "dve", "defaults", filepath.Join(dir, "dve"), "--arch", "cayman")
	require.NoError(t, err)
}

// TestGoldenOutputs runs every golden command and compares its whole
// output with the one kept (go test -run TestGoldenOutputs -update
// rewrites them).
func TestGoldenOutputs(t *testing.T) {
	in := t.TempDir()
	goldenInputs(t, in)
	progs, err := filepath.Abs("../../scenarios/programs")
	require.NoError(t, err)
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			expand := strings.NewReplacer("IN", in, "OUT", out, "PROGS", progs)
			var stdout, stderr bytes.Buffer
			root := newRootCommand(&stdout, &stderr)
			root.SetArgs(strings.Fields(expand.Replace(tc.args)))
			runErr := root.Execute()
			var b strings.Builder
			fmt.Fprintf(&b, "$ neuronsim %s\n--- stdout\n%s\n--- stderr\n%s\n--- error\n", tc.args, stdout.String(), stderr.String())
			if runErr != nil {
				fmt.Fprintf(&b, "%s\n", runErr)
			}
			b.WriteString("--- files\n")
			ents, err := os.ReadDir(out)
			require.NoError(t, err)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			for _, n := range names {
				data, err := os.ReadFile(filepath.Join(out, n))
				require.NoError(t, err)
				fmt.Fprintf(&b, "%s %d bytes sha256 %x\n", n, len(data), sha256.Sum256(data))
			}
			got := strings.NewReplacer(out, "OUT", in, "IN", progs, "PROGS").Replace(b.String())
			path := filepath.Join("testdata", "golden", tc.name+".txt")
			if *updateGolden {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "no golden output: go test -run TestGoldenOutputs -update")
			require.Equal(t, string(want), got)
		})
	}
}
