package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/program"
	"github.com/neuronsim/neuronsim/runtime/stack"
)

// TestStepRegistry: every step kind is registered once, decodes into its
// own type, names itself, and is listed in docs/scenarios.md §Steps (and
// the table lists no kind that is not registered); a kind registered twice
// is refused.
func TestStepRegistry(t *testing.T) {
	require.Len(t, stepKinds, len(actions))
	assert.Equal(t, []string{"bringup", "csr_read", "csr_write", "dve_load", "validate", "exec", "dma_copy", "collective", "sweep", "fault", "recover", "snapshot", "reset"},
		stepKinds, "the order messages list the kinds in")
	types := map[reflect.Type]string{}
	for _, kind := range stepKinds {
		a := actionOf[kind]()
		assert.Equal(t, kind, a.Kind())
		typ := reflect.TypeOf(a)
		assert.Empty(t, types[typ], "%s: type %s is also kind %s's", kind, typ, types[typ])
		types[typ] = kind
	}

	doc, err := os.ReadFile("../../docs/scenarios.md")
	require.NoError(t, err)
	text := string(doc)
	i := strings.Index(text, "\n## Steps\n")
	require.GreaterOrEqual(t, i, 0)
	section := text[i+1:]
	if j := strings.Index(section[1:], "\n## "); j >= 0 {
		section = section[:j+1]
	}
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			kind, _, _ := strings.Cut(rest, "`")
			listed = append(listed, kind)
		}
	}
	assert.ElementsMatch(t, stepKinds, listed, "docs/scenarios.md §Steps lists every step kind")

	assert.PanicsWithValue(t, `scenario: step kind "recover" registered twice`, func() {
		indexActions([]func() Action{newAction[RecoverStep], newAction[BringUpStep], newAction[RecoverStep]})
	})
}

// TestStepDecodesIntoItsAction: a step's key picks its action, whose fields
// the value fills; an empty value ("- recover:") leaves the zero fields.
func TestStepDecodesIntoItsAction(t *testing.T) {
	doc := "name: x\nsystem: {arch: cayman, devices: 2}\nsteps:\n" +
		"  - recover:\n" +
		"  - csr_read: {device: 1, offset: 0x10, expect: 3}\n" +
		"  - exec: {core: 1, source: nop}\n" +
		"  - validate: {source: nop, expect: invalid}\n" +
		"  - fault: {kind: link_down, device: 1, to: \"0\", in: 2us}\n"
	p, err := Parse("x.yaml", []byte(doc))
	require.NoError(t, err)
	three := uint32(3)
	want := []Action{
		&RecoverStep{},
		&CSRReadStep{Device: 1, Offset: 0x10, Expect: &three},
		&ExecStep{Core: 1, Source: "nop"},
		&ValidateStep{Source: "nop", Expect: "invalid"},
		&FaultStep{FaultKind: "link_down", Device: 1, To: "0", In: 2000},
	}
	require.Len(t, p.Steps, len(want))
	for i, w := range want {
		assert.Equal(t, w, p.Steps[i].Action, "steps[%d]", i)
		assert.Equal(t, fmt.Sprintf("steps[%d] (%s)", i, w.Kind()), p.stepName(i))
	}
}

// hiddenDevice is an ndl.Device that is not the simulator's: only the
// interface's methods, no model internals such as RegisterBAR.
type hiddenDevice struct{ ndl.Device }

// TestBringUpStepOnAnyBackend: the bringup step reports and checks the
// register BAR bring-up chose (its policy), through the runtime, so it
// works on a device that is not the simulator's; expect_register_bar is
// held to it.
func TestBringUpStepOnAnyBackend(t *testing.T) {
	buildCluster = func(cfg cluster.Config) (*cluster.Cluster, error) {
		c, err := cluster.New(cfg)
		if err == nil {
			for _, d := range c.Devices {
				d.Up.Dev = hiddenDevice{d.Up.Dev}
			}
		}
		return c, err
	}
	defer func() { buildCluster = cluster.New }()
	for _, tc := range []struct {
		name, doc, report string
		failed            bool
	}{
		{"cayman silicon", "name: x\nsystem: {arch: cayman, reset: false}\nsteps:\n  - bringup: {expect_register_bar: 0}\n", "registers in BAR0", false},
		{"cayman qemu", "name: x\nsystem: {arch: cayman, revision: qemu, reset: false}\nsteps:\n  - bringup: {expect_register_bar: 2}\n", "registers in BAR2", false},
		{"wrong expectation", "name: x\nsystem: {arch: sunda, reset: false}\nsteps:\n  - bringup: {expect_register_bar: 2}\n", "neuron0: registers in BAR0, expected BAR2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("x.yaml", []byte(tc.doc))
			require.NoError(t, err)
			dir := t.TempDir()
			assert.NotPanics(t, func() { _, err = p.Run(Options{OutDir: dir}) })
			if tc.failed {
				require.ErrorIs(t, err, ErrFailed)
			} else {
				require.NoError(t, err)
			}
			report, rerr := os.ReadFile(filepath.Join(dir, "report.txt"))
			require.NoError(t, rerr)
			assert.Contains(t, string(report), tc.report)
		})
	}
}

// TestBringUpStepRefusesNoRegisterBAR: an expected register BAR that no
// bring-up finds the registers in is refused when the file is read (it
// failed only after bringing every device up).
func TestBringUpStepRefusesNoRegisterBAR(t *testing.T) {
	for _, bar := range []string{"1", "4", "77", "-1"} {
		_, err := Parse("x.yaml", []byte("name: x\nsystem: {arch: cayman}\nsteps:\n  - bringup: {expect_register_bar: "+bar+"}\n"))
		require.ErrorIs(t, err, ErrStrict, bar)
		assert.ErrorContains(t, err, "steps[0].bringup.expect_register_bar: "+bar+": the registers are in BAR0, or BAR2 under QEMU (V2, V3)")
	}
}

// TestExecStepFailsOnAHaltedDoorbell: an exec step whose program's
// dma_trigger rings a queue nobody set up fails, though its engines end
// done: the doorbell halted the queue (as neuronsim exec reports it).
func TestExecStepFailsOnAHaltedDoorbell(t *testing.T) {
	doc := "name: x\nsystem: {arch: cayman, devices: 1, boot: false, reset: false, buffer_bytes: 1M}\n" +
		"steps:\n  - exec: {source: \".engine sp\\ndma_trigger aux=0 imm0=15 imm1=3 last\\n\"}\n"
	_, err := runDoc(t, t.TempDir(), doc, Options{})
	require.ErrorIs(t, err, stack.ErrProgramDMA)
	assert.Contains(t, err.Error(), "steps[0] (exec): ")
	assert.Contains(t, err.Error(), "DMA engine 0 queue 15, rung by the program's dma_trigger: status 0x802")
}

// TestExecStepRefusesProgramEnds: an exec step's program whose engine
// block has no last record (its engine would run past the program's end)
// or records after it (never run) is refused before the run starts.
func TestExecStepRefusesProgramEnds(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`.engine pe\nnop\n`, "the pe engine's block (1 record) has no record with the last flag"},
		{`.engine pe\nnop last\nnop\n`, "the pe engine's block has 1 record after its record 0, the first with the last flag"},
	} {
		doc := "name: x\nsystem: {arch: cayman, devices: 1, boot: false, reset: false, buffer_bytes: 1M}\n" +
			"steps:\n  - exec: {source: \"" + tc.src + "\"}\n"
		_, err := runDoc(t, t.TempDir(), doc, Options{})
		require.ErrorIs(t, err, program.ErrBadProgram)
		assert.Contains(t, err.Error(), "steps[0] (exec): <source>: bad program: "+tc.want)
	}
}
