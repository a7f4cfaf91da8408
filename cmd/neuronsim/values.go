package main

// Flag values that are read and checked once, when the flag is parsed.
//
// Every numeric flag of the command line is one of the types below. Each
// converts its text through internal/units under the flag's name, so a value
// that is not a number, is negative where none can be, does not fit, or lies
// outside the flag's range is refused with an error that names the flag and
// the limit. A flag that is not given is "unset" — a state no typed value can
// produce — so no value a user can type (0, -1) stands for "the default".
// An unset flag's String is empty, which makes --help print no default for
// it; its usage text says the default in words instead.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// flagError makes the error of a flag whose value was refused by
// internal/units that error itself, which names the flag, the value and the
// limit (pflag would wrap it in "invalid argument ... for ... flag: ...",
// naming the flag twice). Other flag errors are kept as they are.
func flagError(_ *cobra.Command, err error) error {
	var ue *units.Error
	if errors.As(err, &ue) {
		return ue
	}
	// pflag's "invalid argument %q for %q flag: …" echoes the value whole,
	// and so may the refusal after it: cut it as units.Error does.
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) {
		if v := ive.GetValue(); len(v) > units.MaxShown {
			return &clippedError{msg: strings.ReplaceAll(err.Error(), v, units.Clip(v)), err: err}
		}
	}
	return err
}

// clippedError is an error whose message has a long value cut
// (units.Clip); it wraps the error it was made from.
type clippedError struct {
	msg string
	err error
}

func (e *clippedError) Error() string { return e.msg }
func (e *clippedError) Unwrap() error { return e.err }

// scaledValue is a latency or a bandwidth, kept as the integer its
// parser gives: a latency in (fractional) nanoseconds, a bare number, kept
// in picoseconds, 0 ns up to units.MaxLatencyPS ([newLatency],
// units.ParseNanoseconds); a bandwidth with its unit (50GiB/s, 53.7GB/s,
// 400Gbps; a bare number is refused) kept in B/s, a whole number of them,
// positive and at most units.MaxBandwidthBps ([newBandwidth],
// units.ParseBandwidth).
type scaledValue struct {
	name, unit string
	parse      func(field, s string) (uint64, error)
	v          uint64
	set        bool
	text       string
}

func newLatency(name string) *scaledValue {
	return &scaledValue{name: name, unit: "ns", parse: units.ParseNanoseconds}
}

func newBandwidth(name string) *scaledValue {
	return &scaledValue{name: name, unit: "bandwidth", parse: units.ParseBandwidth}
}

func (v *scaledValue) String() string { return v.text }

// Set implements pflag.Value.
func (v *scaledValue) Set(s string) error {
	n, err := v.parse(v.name, s)
	if err != nil {
		return err
	}
	v.v, v.set, v.text = n, true, s
	return nil
}

// Type implements pflag.Value: the unit the number is given in (ns), or
// "bandwidth" for a value that names its own.
func (v *scaledValue) Type() string { return v.unit }

// intValue is an integer in [min, max]. Unset, it holds def (which need
// not lie in the range: a default is not typed); String shows def only when
// showDef is set, so --help prints "(default N)" only for a real number.
type intValue struct {
	name     string
	min, max int64
	v        int64
	set      bool
	showDef  bool
	// bound says what max is when it is not the value's own limit but a
	// bound over cases checked later (the most NeuronCores of any
	// generation, where the generation given may have fewer): a value past
	// max is refused saying so.
	bound string
}

// newInt is an integer flag in [min, max] with no numeric default (its usage
// text says what an unset flag means).
func newInt(name string, min, max int64) *intValue {
	return &intValue{name: name, min: min, max: max}
}

// newIntDefault is an integer flag in [min, max] whose default is def.
func newIntDefault(name string, min, max, def int64) *intValue {
	return &intValue{name: name, min: min, max: max, v: def, showDef: true}
}

// bounded sets what the flag's max is (intValue.bound) and returns v.
func (v *intValue) bounded(what string) *intValue {
	v.bound = what
	return v
}

func (v *intValue) String() string {
	if !v.set && !v.showDef {
		return ""
	}
	return strconv.FormatInt(v.v, 10)
}

// Set implements pflag.Value.
func (v *intValue) Set(s string) error {
	n, err := units.ParseInt(v.name, s, v.min, v.max)
	if err != nil {
		var ue *units.Error
		if v.bound != "" && errors.Is(err, units.ErrRange) && errors.As(err, &ue) {
			e := *ue // flagError shows the units.Error itself: say it there
			e.Reason += fmt.Sprintf(" (%d is %s)", v.max, v.bound)
			return &e
		}
		return err
	}
	v.v, v.set = n, true
	return nil
}

// Type implements pflag.Value.
func (v *intValue) Type() string { return "int" }

// durationValue is a duration flag read as time.ParseDuration reads it
// ("1.5ms", "2s", "1h2m"), refused when it is not a whole number of
// nanoseconds, which time.ParseDuration would drop ("1.5ns" is 1ns).
type durationValue struct {
	name string
	v    *time.Duration
}

// durationVar defines a duration flag on fs, as pflag's DurationVar with
// the whole-nanosecond check.
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(&durationValue{name: "--" + name, v: p}, name, usage)
}

func (v *durationValue) String() string { return v.v.String() }

// Set implements pflag.Value.
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return &units.Error{Field: v.name, Value: strconv.Quote(s), Reason: `expected a duration such as "1.5ms" or "2s" (units ns, us, ms, s, m, h)`, Err: units.ErrSyntax}
	}
	if !units.WholeNanoseconds(s) {
		return &units.Error{Field: v.name, Value: strconv.Quote(s), Reason: "not a whole number of nanoseconds: a duration's resolution is 1ns", Err: units.ErrRange}
	}
	*v.v = d
	return nil
}

// Type implements pflag.Value.
func (v *durationValue) Type() string { return "duration" }

// deviceIndex is a --device flag: a device's index, 0 unless given. Which
// indices there are is known only once the system is — the --devices of a
// simulated one, what a served one exports — so Set reads any decimal
// integer and index checks it against that range, naming it.
type deviceIndex struct {
	v    int // an integer past int's range is held saturated (units.ParseCount): out of every range
	set  bool
	text string // as given
}

func newDeviceIndex() *deviceIndex { return &deviceIndex{} }

func (d *deviceIndex) String() string { return strconv.Itoa(d.v) }

// Set implements pflag.Value.
func (d *deviceIndex) Set(s string) error {
	v, err := units.ParseCount("--device", s)
	if err != nil {
		return err
	}
	d.v, d.set, d.text = v, true, s
	return nil
}

// Type implements pflag.Value.
func (d *deviceIndex) Type() string { return "int" }

// index returns the device index (0 when not given) checked against a
// system of n devices; why says which system that is ("the system has 2
// devices, --devices").
func (d *deviceIndex) index(n int, why string) (int, error) {
	if _, err := units.Int("--device", int64(d.v), 0, int64(n)-1); err != nil {
		var ue *units.Error
		if !errors.As(err, &ue) {
			return 0, err
		}
		if d.v == math.MaxInt || d.v == math.MinInt {
			ue.Value = strconv.Quote(d.text) // saturated: the text as given
		}
		ue.Reason += " (" + why + ")"
		return 0, ue
	}
	return d.v, nil
}

// coreIndex is a --core flag: a NeuronCore's index, 0 unless given. How
// many cores there are is the device's generation's (hw/arch
// Geometry.NeuronCores: 2 on sunda, 8 on cayman and mariana), known only
// once --arch is read or a served device is opened, so Set reads any
// decimal integer and index checks it against that generation, naming its
// range (not one maximum over every generation, which let --core 5 past
// the flag on a sunda and named 0..7 as the range for one).
type coreIndex struct {
	v    int // an integer past int's range is held saturated (units.ParseCount): out of every range
	set  bool
	text string // as given
}

func newCoreIndex() *coreIndex { return &coreIndex{} }

func (c *coreIndex) String() string { return strconv.Itoa(c.v) }

// Set implements pflag.Value.
func (c *coreIndex) Set(s string) error {
	v, err := units.ParseCount("--core", s)
	if err != nil {
		return err
	}
	c.v, c.set, c.text = v, true, s
	return nil
}

// Type implements pflag.Value.
func (c *coreIndex) Type() string { return "int" }

// index returns the core (0 when not given) checked against the
// NeuronCores of geo's generation; where names the device ("" for none
// more than its generation).
func (c *coreIndex) index(geo *hwarch.Geometry, where string) (int, error) {
	if _, err := units.Int("--core", int64(c.v), 0, int64(geo.NeuronCores)-1); err != nil {
		var ue *units.Error
		if !errors.As(err, &ue) {
			return 0, err
		}
		if c.v == math.MaxInt || c.v == math.MinInt {
			ue.Value = strconv.Quote(c.text) // saturated: the text as given
		}
		ue.Reason += fmt.Sprintf(" (a %s device%s has %d NeuronCores)", geo.Generation, where, geo.NeuronCores)
		return 0, ue
	}
	return c.v, nil
}

// int returns the value (or the default) as an int; the ranges of the flags
// fit an int.
func (v *intValue) int() int { return int(v.v) }

// within checks a given value against a bound known only once the other
// flags are read (the generation's NeuronCores, its DMA engines); why says
// where the bound comes from.
func (v *intValue) within(max int64, why string) error {
	if !v.set {
		return nil
	}
	if _, err := units.Int(v.name, v.v, v.min, max); err != nil {
		return fmt.Errorf("%w (%s)", err, why)
	}
	return nil
}

// maxOfGenerations is the largest of a geometry property over every
// generation: the bound of a flag read before --arch is known (the
// generation's own bound is checked with within).
func maxOfGenerations(prop func(*hwarch.Geometry) int) int64 {
	var m int
	for _, g := range hwarch.Generations() {
		m = max(m, prop(hwarch.MustGeometry(g)))
	}
	return int64(m)
}

// sizeValue is a byte count in [min, max], read with units.ParseBytes (K,
// M, G, T are powers of 1024).
type sizeValue struct {
	name     string
	min, max int64
	v        int64
	set      bool
	text     string
}

func newSize(name string, min, max int64) *sizeValue {
	return &sizeValue{name: name, min: min, max: max}
}

func (v *sizeValue) String() string { return v.text }

// Set implements pflag.Value.
func (v *sizeValue) Set(s string) error {
	n, err := units.ParseBytesIn(v.name, s, v.min, v.max)
	if err != nil {
		return err
	}
	v.v, v.set, v.text = n, true, s
	return nil
}

// Type implements pflag.Value.
func (v *sizeValue) Type() string { return "size" }

// devicesValue is --devices: the number of devices of the simulated system,
// the same in every command. Commands that build one system take one count;
// the fabric commands, which build one system per count, also take a list
// (2,4,8) and run each. Each count is at least 1 and at most the
// generation's get_max_devs, or with --what-if, where a command has it,
// rtarch.MaxWhatIfDevices (resolve: rtarch.Soc.CheckDevicesField).
type devicesValue struct {
	list   bool
	field  string // where the counts came from, for errors: "--devices" when empty
	counts []int
	texts  []string // each count as given, for errors (one past int is held saturated in counts)
	text   string
}

func (v *devicesValue) String() string { return v.text }

// Type implements pflag.Value.
func (v *devicesValue) Type() string {
	if v.list {
		return "count[,count...]"
	}
	return "count"
}

// Set implements pflag.Value.
func (v *devicesValue) Set(s string) error {
	counts, texts, err := parseDeviceCounts("--devices", s, v.list)
	if err != nil {
		return err
	}
	v.counts, v.texts, v.text, v.field = counts, texts, s, ""
	return nil
}

// parseDeviceCounts reads one device count, or with list a comma-separated
// list of distinct counts, and returns them with their texts. field names
// the flag (or --system key) in errors. The counts are bounded by resolve,
// which knows the system; a count past int is held saturated
// (units.ParseCount; its text kept), for resolve to refuse naming the
// system's range.
func parseDeviceCounts(field, s string, list bool) ([]int, []string, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 1 && !list {
		return nil, nil, &units.Error{Field: field, Value: strconv.Quote(s), Err: units.ErrSyntax,
			Reason: "this command builds one system: give one device count (the fabric commands take a list)"}
	}
	if len(parts) > sweep.MaxAxisValues {
		// Refused before any count is read or any system built: a list
		// holds as many as a sweep grid's axis (one system each).
		return nil, nil, &units.Error{Field: field, Err: units.ErrRange,
			Reason: fmt.Sprintf("%d counts; a list holds at most %d (as a sweep grid's axis: a system each)", len(parts), sweep.MaxAxisValues)}
	}
	var counts []int
	var texts []string
	seen := map[string]bool{}
	for i, p := range parts {
		// In a list, an element's error names its place and the whole list.
		element := func(e *units.Error) error {
			if len(parts) == 1 {
				return e
			}
			if strings.TrimSpace(p) == "" {
				e.Reason = fmt.Sprintf("element %d of %d is %s", i+1, len(parts), e.Reason)
			} else {
				e.Reason = fmt.Sprintf("element %d of %d, %s: %s", i+1, len(parts), e.Value, e.Reason)
			}
			e.Value = strconv.Quote(s)
			return e
		}
		if strings.TrimSpace(p) == "" {
			return nil, nil, element(&units.Error{Field: field, Value: strconv.Quote(p), Err: units.ErrSyntax, Reason: "empty: want a device count such as 4"})
		}
		n, err := units.ParseCount(field, p)
		var ue *units.Error
		if errors.As(err, &ue) {
			return nil, nil, element(ue)
		}
		if err != nil {
			return nil, nil, err
		}
		text := strings.TrimSpace(p)
		if n != math.MaxInt && n != math.MinInt {
			text = strconv.Itoa(n) // 04 and 4 are one count
		}
		if seen[text] {
			return nil, nil, &units.Error{Field: field, Value: strconv.Quote(s), Err: units.ErrSyntax,
				Reason: fmt.Sprintf("the count %s is given twice", text)}
		}
		seen[text] = true
		counts, texts = append(counts, n), append(texts, text)
	}
	return counts, texts, nil
}

// resolve returns the counts given, or def when the flag is unset, after
// checking each against the system's bound (rtarch.Soc.CheckDevicesField):
// 1..get_max_devs of the generation and switch family, or with what-if
// 1..rtarch.MaxWhatIfDevices. hasWhatIf says whether the command has
// --what-if (for the hint).
func (v *devicesValue) resolve(def int, soc *rtarch.Soc, whatIf, hasWhatIf bool) ([]int, error) {
	if v.counts == nil {
		return []int{def}, nil
	}
	field := v.field
	if field == "" {
		field = "--devices"
	}
	hint := ""
	if hasWhatIf {
		hint = "--what-if"
	}
	for i, n := range v.counts {
		text := strconv.Itoa(n)
		if i < len(v.texts) {
			text = v.texts[i]
		}
		if err := soc.CheckDevicesField(field, text, n, whatIf, hint); err != nil {
			return nil, err
		}
	}
	return v.counts, nil
}

// switchValue is --switch: a NeuronSwitch family whose default depends on
// the generation (v1 for mariana, none otherwise), so unset it shows no
// default of its own in --help; the command reads Changed("switch").
type switchValue struct {
	f   *hwarch.SwitchFamily
	set bool
}

func (v *switchValue) String() string {
	if !v.set {
		return ""
	}
	return v.f.String()
}

// Set implements pflag.Value.
func (v *switchValue) Set(s string) error {
	if err := v.f.Set(s); err != nil {
		return err
	}
	v.set = true
	return nil
}

// Type implements pflag.Value.
func (v *switchValue) Type() string { return v.f.Type() }

// dtypeValue is the element type of a collective. It is shared by two
// flags, -d/--datatype and --dtype (nccom-test spells it both ways), so
// giving both with different types is refused instead of the last one
// silently winning.
type dtypeValue struct {
	d    enc.Dtype
	by   string // the flag that set it, "" while unset
	text string
}

func (v *dtypeValue) String() string {
	if v.text == "" {
		return v.d.String()
	}
	return v.text
}

// Type implements pflag.Value.
func (v *dtypeValue) Type() string { return "type" }

// setter returns the pflag.Value for the flag named name.
func (v *dtypeValue) setter(name string) *dtypeFlag { return &dtypeFlag{v: v, name: name} }

// dtypeFlag is one of the names of a dtypeValue.
type dtypeFlag struct {
	v    *dtypeValue
	name string
}

func (f *dtypeFlag) String() string { return f.v.String() }

// Type implements pflag.Value.
func (f *dtypeFlag) Type() string { return f.v.Type() }

// Set implements pflag.Value.
func (f *dtypeFlag) Set(s string) error {
	d, err := enc.ParseDtype(s)
	if err != nil {
		return err
	}
	if f.v.by != "" && f.v.by != f.name && d != f.v.d {
		return &units.Error{Field: f.name, Value: s, Err: units.ErrSyntax,
			Reason: fmt.Sprintf("disagrees with %s %s given before it; give the element type once", f.v.by, f.v.text)}
	}
	f.v.d, f.v.by, f.v.text = d, f.name, s
	return nil
}

// refuseEmpty refuses string flag name given as "" (v): an empty value is
// not the flag left out, whose default it would otherwise stand for.
// shown is the flag as the message names it, want what to give instead.
func refuseEmpty(cmd *cobra.Command, name, shown, v, want string) error {
	if cmd.Flags().Changed(name) && v == "" {
		return fmt.Errorf("%s: empty: %s", shown, want)
	}
	return nil
}

// seedValue is a --seed flag: 0..2^64−1, decimal or 0x hex (units.ParseUint:
// 010 is ten, not eight as pflag's uint64 flag read it), 1 unless given.
type seedValue struct{ v uint64 }

func newSeed() *seedValue { return &seedValue{v: 1} }

func (v *seedValue) String() string { return strconv.FormatUint(v.v, 10) }

// Set implements pflag.Value.
func (v *seedValue) Set(s string) error {
	n, err := units.ParseUint("--seed", s, math.MaxUint64)
	if err != nil {
		return err
	}
	v.v = n
	return nil
}

// Type implements pflag.Value.
func (v *seedValue) Type() string { return "uint64" }

// onceValue wraps a flag's value so that the flag may be given once: pflag
// lets a later occurrence replace an earlier one (`--devices 4 --devices 8`
// ran 8 devices), so a command line that says two things about one setting
// had one of them silently dropped. Flags meant to be repeated (string
// arrays: exec's --input and --output) are not wrapped.
type onceValue struct {
	pflag.Value
	name  string
	first string // the value of the first occurrence
	set   bool
}

// Set refuses a second occurrence, naming both values.
func (o *onceValue) Set(s string) error {
	if o.set {
		if o.Type() == "bool" { // --json --json: the values say nothing
			return &units.Error{Field: "--" + o.name, Err: units.ErrSyntax, Reason: "given twice: give the flag once"}
		}
		return &units.Error{Field: "--" + o.name, Value: s, Err: units.ErrSyntax,
			Reason: fmt.Sprintf("given twice (first %q): give the flag once", o.first)}
	}
	if err := o.Value.Set(s); err != nil {
		return err
	}
	o.first, o.set = s, true
	return nil
}

// repeatable reports whether a flag of this value type is meant to be given
// more than once.
func repeatable(v pflag.Value) bool {
	t := v.Type()
	return strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array") || t == "count" || strings.HasPrefix(t, "stringTo")
}

// onceFlags wraps every flag of c and its subcommands, other than the
// repeatable ones, in a onceValue (once per flag: a persistent flag is
// reached from every command it applies to).
func onceFlags(c *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(*onceValue); done || repeatable(f.Value) {
			return
		}
		f.Value = &onceValue{Value: f.Value, name: f.Name}
	}
	c.Flags().VisitAll(wrap)
	c.PersistentFlags().VisitAll(wrap)
	for _, sub := range c.Commands() {
		onceFlags(sub)
	}
}

// emptyRefusals says, for each string flag whose empty value would
// otherwise read as the flag left out, what to give instead.
var emptyRefusals = map[string]string{
	"remote": "give the ADDR a neuronsim serve listens at (unix:PATH or tcp:HOST:PORT), or leave --remote out for a fresh simulated device",
	"kernel": "give a /dev/neuronN path, or leave --kernel out for a fresh simulated device",
	"trace":  "name a file, or leave --trace out",
	"tables": "name a directory, or leave --tables out for the built-in tables",
}

// refuseEmptyFlags makes cmd refuse, before it runs, any of the string
// flags of emptyRefusals it has that is given as "": --remote "" (an unset
// shell variable, say) would otherwise run on a fresh simulated device,
// --kernel "" on a simulated one instead of the hardware, --trace "" write
// no trace and --tables "" load the built-in tables, all silently.
func refuseEmptyFlags(cmd *cobra.Command) {
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		for _, name := range []string{"remote", "kernel", "trace", "tables"} {
			if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed && fl.Value.String() == "" {
				return fmt.Errorf("--%s: empty: %s", name, emptyRefusals[name])
			}
		}
		return nil
	}
}
