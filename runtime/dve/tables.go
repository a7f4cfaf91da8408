package dve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/inputfile"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/runtime/arch"
)

// The table names, in dve_config_dma_state_t order. They name the tables in
// errors, in Dest.Name, in the default-bins generator's seed string and (with
// ".bin") in the files of LoadBins and WriteBins.
const (
	TableOpcode      = "opcode"
	TableControlFast = "control_fast"
	TableControlSlow = "control_slow" // absent on sunda
	TableDatapath    = "datapath"
	TableParamRAM    = "param_ram" // bn_param_ram
)

// TableNames lists the five table names in dve_config_dma_state_t (and load)
// order; sunda skips TableControlSlow.
func TableNames() []string {
	return []string{TableOpcode, TableControlFast, TableControlSlow, TableDatapath, TableParamRAM}
}

// ParamRAMEntries is the number of float32 reciprocals in the parameter RAM
// (get_dve_parameter_ram_params returns 0x400 bytes = 256 × 4).
const ParamRAMEntries = 256

// Errors of the table half. Each is returned wrapped with the generation and
// the table or file concerned.
var (
	// ErrSize: a table's length differs from the generation's size.
	ErrSize = errors.New("wrong DVE table size")
	// ErrNoControlSlow: a control-slow table was given for sunda, which has none.
	ErrNoControlSlow = errors.New("sunda has no control-slow table")
	// ErrNoArch: a nil *arch.Tables was passed.
	ErrNoArch = errors.New("no arch tables")
)

// Tables is one DVE table set: the four micro-tables in dve_config_dma_state_t
// order and the parameter RAM (bn_param_ram). ControlSlow is nil or empty on
// sunda. The slices are not copied by the functions of this package unless
// they say so; do not change them while they are in use.
type Tables struct {
	Opcode      []byte
	ControlFast []byte
	ControlSlow []byte // empty on sunda
	Datapath    []byte
	ParamRAM    []byte
}

// Get returns the table named name (one of TableNames), or nil for an
// unknown name.
func (t *Tables) Get(name string) []byte {
	if p := t.slot(name); p != nil {
		return *p
	}
	return nil
}

func (t *Tables) slot(name string) *[]byte {
	switch name {
	case TableOpcode:
		return &t.Opcode
	case TableControlFast:
		return &t.ControlFast
	case TableControlSlow:
		return &t.ControlSlow
	case TableDatapath:
		return &t.Datapath
	case TableParamRAM:
		return &t.ParamRAM
	}
	return nil
}

// Clone returns a deep copy of the table set.
func (t Tables) Clone() Tables {
	c := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		return append([]byte{}, b...)
	}
	return Tables{c(t.Opcode), c(t.ControlFast), c(t.ControlSlow), c(t.Datapath), c(t.ParamRAM)}
}

// Sizes returns the byte size of every table of a generation, keyed by table
// name, from aws_hal_get_dve_table_sizes_<arch> (Khal.DVETableSizes) and
// get_dve_parameter_ram_params (Khal.DVEParameterRAM). Sunda's control-slow
// size is 0.
func Sizes(at *arch.Tables) (map[string]uint64, error) {
	if at == nil || at.Khal == nil {
		return nil, ErrNoArch
	}
	s := at.Khal.DVETableSizes()
	_, pr := at.Khal.DVEParameterRAM()
	return map[string]uint64{
		TableOpcode:      s.Opcode,
		TableControlFast: s.ControlFast,
		TableControlSlow: s.ControlSlow,
		TableDatapath:    s.Datapath,
		TableParamRAM:    pr,
	}, nil
}

// staged reports whether generation g stages the named table: every table
// except control-slow on sunda (the 4-vs-5 quirk of dve_dynamic_config_init).
func staged(g hwarch.Generation, name string) bool {
	return !(g == hwarch.Sunda && name == TableControlSlow)
}

// Validate checks the table set against generation at: every table's length
// must equal the generation's size (Khal.DVETableSizes; the parameter RAM
// 0x400 bytes), and on sunda ControlSlow must be empty (ErrNoControlSlow).
// A size mismatch is ErrSize, naming the table and both sizes.
func (t *Tables) Validate(at *arch.Tables) error {
	sizes, err := Sizes(at)
	if err != nil {
		return fmt.Errorf("dve validate: %w", err)
	}
	g := at.Generation
	for _, name := range TableNames() {
		got := uint64(len(t.Get(name)))
		if !staged(g, name) {
			if got != 0 {
				return fmt.Errorf("dve %s %s: %w (got %#x bytes)", g, name, ErrNoControlSlow, got)
			}
			continue
		}
		if want := sizes[name]; got != want {
			return fmt.Errorf("dve %s %s: %w: got %#x bytes, want %#x", g, name, ErrSize, got, want)
		}
	}
	return nil
}

// ParamRAM returns the DVE parameter RAM image (bn_param_ram): 256
// little-endian float32 reciprocals, entry i = 1/(i+1) for i = 0..255, 0x400
// bytes in all. Each entry is float32(1.0/float64(i+1)): the runtime's SIMD
// loop (_mm_div_pd) divides in double precision and then stores the result
// rounded to float32 (round to nearest even). For these 256 divisors that
// double rounding gives the same float32 as rounding the exact quotient once
// (the tests check it). A new slice is returned on every call.
func ParamRAM() []byte {
	b := make([]byte, ParamRAMEntries*4)
	for i := range ParamRAMEntries {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(1.0/float64(i+1))))
	}
	return b
}

// GeneratorSeed returns the string whose FNV-1a hash seeds the default-bins
// generator for one table: "neuronsim-dve-<arch>-<table>", e.g.
// "neuronsim-dve-cayman-control_fast".
func GeneratorSeed(g hwarch.Generation, table string) string {
	return "neuronsim-dve-" + g.String() + "-" + table
}

// Synthetic returns n bytes of the default-bins generator for a seed string:
// x = FNV64a([]byte(seed), FNVOffset64) (replaced by FNVOffset64 if it is 0);
// then for every 8-byte word, x is advanced by one xorshift64 step
// (x ^= x<<13; x ^= x>>7; x ^= x<<17) and written little-endian. A trailing
// partial word takes the low bytes of the next value. See docs/dve.md.
func Synthetic(seed string, n int) []byte {
	x := FNV64a([]byte(seed), FNVOffset64)
	if x == 0 {
		x = FNVOffset64
	}
	out := make([]byte, n)
	var w [8]byte
	for i := 0; i < n; i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(w[:], x)
		copy(out[i:], w[:])
	}
	return out
}

// DefaultBins stands for get_dve_default_bins(arch), the built-in tables
// dve_dynamic_config_init falls back to when a NEFF carries none. The real
// binaries are not public: each table here is Synthetic(GeneratorSeed(g,
// name), size) with the generation's size, the parameter RAM is ParamRAM(),
// and sunda has no control-slow table (nil). The result is deterministic and
// freshly allocated. An invalid generation is an error.
func DefaultBins(g hwarch.Generation) (Tables, error) {
	at, err := arch.For(g, arch.Options{})
	if err != nil {
		return Tables{}, fmt.Errorf("get_dve_default_bins: %w", err)
	}
	sizes, err := Sizes(at)
	if err != nil {
		return Tables{}, fmt.Errorf("get_dve_default_bins: %w", err)
	}
	var t Tables
	for _, name := range TableNames() {
		if !staged(g, name) || name == TableParamRAM {
			continue
		}
		*t.slot(name) = Synthetic(GeneratorSeed(g, name), int(sizes[name]))
	}
	t.ParamRAM = ParamRAM()
	return t, nil
}

// FileName returns the file LoadBins and WriteBins use for a table:
// "<table>.bin".
func FileName(table string) string { return table + ".bin" }

// LoadBins reads a table set for generation g from dir: opcode.bin,
// control_fast.bin, control_slow.bin (cayman/mariana only: its presence on
// sunda is ErrNoControlSlow), datapath.bin and the optional param_ram.bin
// (ParamRAM() when absent). A missing required file is an error wrapping
// fs.ErrNotExist; a file of the wrong size is ErrSize naming the file, the
// expected and the actual size. The result is then checked with Validate.
func LoadBins(dir string, g hwarch.Generation) (Tables, error) {
	at, err := arch.For(g, arch.Options{})
	if err != nil {
		return Tables{}, fmt.Errorf("dve load bins: %w", err)
	}
	sizes, err := Sizes(at)
	if err != nil {
		return Tables{}, fmt.Errorf("dve load bins: %w", err)
	}
	var t Tables
	for _, name := range TableNames() {
		path := filepath.Join(dir, FileName(name))
		fi, err := os.Stat(path)
		switch {
		case !staged(g, name):
			if err == nil {
				return Tables{}, fmt.Errorf("dve load bins %s: %s: %w", g, path, ErrNoControlSlow)
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return Tables{}, fmt.Errorf("dve load bins %s: %w", g, err)
			}
			continue
		case name == TableParamRAM && errors.Is(err, fs.ErrNotExist):
			t.ParamRAM = ParamRAM()
			continue
		case err != nil:
			return Tables{}, fmt.Errorf("dve load bins %s: %w", g, err)
		}
		want := sizes[name]
		if !fi.Mode().IsRegular() {
			return Tables{}, fmt.Errorf("dve load bins %s: %s: not a regular file", g, path)
		}
		if got := uint64(fi.Size()); got != want {
			return Tables{}, fmt.Errorf("dve load bins %s: %s: %w: expected %#x bytes, got %#x", g, path, ErrSize, want, got)
		}
		// Read as every file a command reads whole is: opened without
		// blocking, checked again once open, and never past its size.
		b, err := inputfile.Read(path, int64(want), fmt.Sprintf("the %s table is %#x bytes", name, want))
		if err != nil {
			return Tables{}, fmt.Errorf("dve load bins %s: %w", g, err)
		}
		if got := uint64(len(b)); got != want { // changed between Stat and the read
			return Tables{}, fmt.Errorf("dve load bins %s: %s: %w: expected %#x bytes, got %#x", g, path, ErrSize, want, got)
		}
		*t.slot(name) = b
	}
	if err := t.Validate(at); err != nil {
		return Tables{}, fmt.Errorf("dve load bins: %w", err)
	}
	return t, nil
}

// WriteBins writes every non-empty table of t to dir as <table>.bin
// (creating dir if needed, files mode 0644), so LoadBins can read them back:
// a sunda set, whose ControlSlow is empty, writes no control_slow.bin. It
// neither validates t nor removes files already in dir.
func WriteBins(dir string, t Tables) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dve write bins: %w", err)
	}
	for _, name := range TableNames() {
		b := t.Get(name)
		if len(b) == 0 {
			continue
		}
		if err := output.WriteFile(filepath.Join(dir, FileName(name)), b); err != nil {
			return fmt.Errorf("dve write bins: %w", err)
		}
	}
	return nil
}
