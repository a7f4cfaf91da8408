package arch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/neuronsim/neuronsim/internal/units"
)

// Generation is a Neuron silicon generation. The integer values are the
// contract shared by the kernel driver (enum neuron_arch: NEURON_ARCH_V2..V4)
// and the runtime (enum al_hal_tpb_arch_type: AL_HAL_TPB_ARCH_TYPE_SUNDA..MARIANA);
// both start at 2 and keep 0 and 1 unused.
type Generation uint8

// The generations. Invalid and Reserved1 exist only so the numbering matches
// the seeds; no device reports them.
const (
	Invalid        Generation = 0 // AL_HAL_TPB_ARCH_TYPE_INVALID / NEURON_ARCH_INVALID
	Reserved1      Generation = 1 // AL_HAL_TPB_ARCH_TYPE_INVALID_1 (reserved; the kernel has no value 1)
	Sunda          Generation = 2 // AL_HAL_TPB_ARCH_TYPE_SUNDA / NEURON_ARCH_V2: Trn1 and Inf2
	Cayman         Generation = 3 // AL_HAL_TPB_ARCH_TYPE_CAYMAN / NEURON_ARCH_V3: Trn2
	Mariana        Generation = 4 // AL_HAL_TPB_ARCH_TYPE_MARIANA / NEURON_ARCH_V4: Trn3
	NumGenerations Generation = 5 // AL_HAL_TPB_ARCH_TYPE_NUM / NEURON_ARCH_NUM (terminator)
)

// ErrUnknownGeneration is returned (wrapped) when a word or number names no
// supported generation.
var ErrUnknownGeneration = errors.New("unknown generation")

// Generations lists the supported generations in ascending order.
func Generations() []Generation { return []Generation{Sunda, Cayman, Mariana} }

// Valid reports whether g is one of the supported generations (2, 3 or 4).
func (g Generation) Valid() bool { return g >= Sunda && g <= Mariana }

type generationNames struct{ runtime, kernel, product string }

var genNames = [NumGenerations]generationNames{
	Invalid:   {"invalid", "INVALID", "none"},
	Reserved1: {"invalid_1", "INVALID_1", "none"},
	Sunda:     {"sunda", "V2", "Trn1+Inf2"},
	Cayman:    {"cayman", "V3", "Trn2"},
	Mariana:   {"mariana", "V4", "Trn3"},
}

func (g Generation) names() generationNames {
	if g >= NumGenerations {
		return generationNames{fmt.Sprintf("generation(%d)", uint8(g)), fmt.Sprintf("V?(%d)", uint8(g)), "unknown"}
	}
	return genNames[g]
}

// String returns the runtime's name of the generation: "sunda", "cayman" or
// "mariana".
func (g Generation) String() string { return g.names().runtime }

// KernelName returns the kernel driver's name: "V2", "V3" or "V4".
func (g Generation) KernelName() string { return g.names().kernel }

// Product returns the product family: "Trn1+Inf2", "Trn2" or "Trn3".
func (g Generation) Product() string { return g.names().product }

// generationWords maps every accepted spelling to its generation, in the order
// the error message lists them.
var generationWords = []struct {
	word string
	gen  Generation
}{
	{"sunda", Sunda}, {"cayman", Cayman}, {"mariana", Mariana},
	{"v2", Sunda}, {"v3", Cayman}, {"v4", Mariana},
	{"trn1", Sunda}, {"inf2", Sunda}, {"trn2", Cayman}, {"trn3", Mariana},
	{"2", Sunda}, {"3", Cayman}, {"4", Mariana},
}

// AcceptedGenerationWords returns the words ParseGeneration accepts.
func AcceptedGenerationWords() []string {
	out := make([]string, len(generationWords))
	for i, w := range generationWords {
		out[i] = w.word
	}
	return out
}

// ParseGeneration reads a generation from any of its names, case-insensitively:
// sunda|cayman|mariana, v2|v3|v4, trn1|inf2|trn2|trn3, or 2|3|4. Anything else
// is an error wrapping ErrUnknownGeneration that lists the accepted words.
func ParseGeneration(s string) (Generation, error) {
	word := units.Word(s)
	for _, w := range generationWords {
		if w.word == word {
			return w.gen, nil
		}
	}
	return Invalid, fmt.Errorf("%w %q: accepted words are %s", ErrUnknownGeneration, s,
		strings.Join(AcceptedGenerationWords(), "|"))
}

// Set implements flag.Value (and pflag.Value) so a Generation can be a flag.
func (g *Generation) Set(s string) error {
	v, err := ParseGeneration(s)
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// Type implements pflag.Value.
func (g *Generation) Type() string { return "arch" }
