package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/enc/nccom"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// systemFlag is --system NAME of the fabric commands: one of the systems
// AWS sells (fabric.Systems), which sets the generation, the device count,
// the topology and the switch family together.
type systemFlag struct {
	name string
	spec *fabric.SystemSpec // the system named, once applied; nil without --system
}

// systemNames is the catalogue's names joined by "|", for the help text.
func systemNames() string {
	names := make([]string, len(fabric.Systems))
	for i, s := range fabric.Systems {
		names[i] = s.Name
	}
	return strings.Join(names, "|")
}

func (s *systemFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.name, "system", "", systemNames()+": a system AWS sells, built as the hardware is — its generation, device count, topology "+
		"and switch family (docs/fabric.md §Systems); --arch, --devices, --topology or --switch may be given only if they agree with it. "+
		"Its device count is the hardware's, not bounded by get_max_devs, so --what-if does not go with it")
}

// apply resolves --system into the fabric flags: the generation, topology
// and switch family of the system named. An explicit --arch, --devices,
// --topology (auto agrees: it is what the real system has) or --switch
// that contradicts it is refused naming both; --what-if is refused (the
// system's device count is the hardware's).
func (s *systemFlag) apply(f *fabricFlags) error {
	fl := f.cmd.Flags()
	if !fl.Changed("system") || s.spec != nil {
		return nil
	}
	spec, err := fabric.LookupSystem(s.name)
	if err != nil {
		return fmt.Errorf("--system: %w", err)
	}
	what := fmt.Sprintf("--system %s (%s)", spec.Name, spec.About)
	if fl.Changed("arch") && f.gen != spec.Generation {
		return fmt.Errorf("--arch %s contradicts %s: a %s system; drop --arch or make it agree", fl.Lookup("arch").Value, what, spec.Generation)
	}
	if def := hwarch.DefaultProduct(spec.Generation); f.device != 0 && hwarch.ProductOfDevice(f.device) != def {
		return fmt.Errorf("--arch %s contradicts %s: %s devices; drop --arch or make it agree", fl.Lookup("arch").Value, what, def)
	}
	if fl.Changed("devices") && !slices.Equal(f.devices.counts, []int{spec.Devices}) {
		return fmt.Errorf("--devices %s contradicts %s: %d devices; drop --devices or make it agree", f.devices.String(), what, spec.Devices)
	}
	if fl.Changed("topology") && f.kind != fabric.KindAuto && f.kind != spec.Kind {
		return fmt.Errorf("--topology %s contradicts %s: topology %s; drop --topology or make it agree", f.kind, what, spec.Kind)
	}
	if fl.Changed("switch") && f.family != spec.Switch() {
		return fmt.Errorf("--switch %s contradicts %s: switch %s; drop --switch or make it agree", f.family, what, spec.Switch())
	}
	if f.whatIf {
		return fmt.Errorf("--what-if with %s: a named system is built at its own device count (%d), whatever get_max_devs says; --what-if applies to --devices", what, spec.Devices)
	}
	f.gen, f.kind, f.family = spec.Generation, spec.Kind, spec.Switch()
	s.spec = &spec
	return nil
}

// counts is the named system's one device count, as the fabric commands'
// list of counts.
func (s *systemFlag) counts() []int { return []int{s.spec.Devices} }

// annotate names the system in the reports' Extra ("system"), with
// --system.
func (s *systemFlag) annotate(reports []*nccom.Report) {
	if s.spec == nil {
		return
	}
	for _, rep := range reports {
		rep.Extra["system"] = s.spec.Name
	}
}

// label names the system in a sweep's report and plot ("" without
// --system).
func (s *systemFlag) label() string {
	if s.spec == nil {
		return ""
	}
	return s.spec.Name + " (" + strconv.Itoa(s.spec.Devices) + " devices)"
}

// product is the product the fabric flags' devices are (Trn1, Inf2, Trn2,
// Trn3): --arch's when it named one, else the generation's first.
func (f *fabricFlags) product() string {
	if f.device != 0 {
		return hwarch.ProductOfDevice(f.device)
	}
	return f.gen.Product()
}
