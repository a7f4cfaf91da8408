package main

import (
	"fmt"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
)

// The default system until scenarios land: a Trn3 NeuronSwitch-v1 system.
const (
	defaultArch   = hwarch.Mariana
	defaultSwitch = hwarch.SwitchV1
)

func newRunCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run the main job (today: the arch report of the default Trn3 NeuronSwitch-v1 system)",
		Long: "run runs the main job on the default system. Until scenario files land it selects the\n" +
			"runtime's arch tables for the default system (mariana, NeuronSwitch-v1) through the same\n" +
			"PCI-identity selection the runtime uses and prints the arch report.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dev, err := hwarch.DefaultDeviceID(defaultArch)
			if err != nil {
				return err
			}
			var d rtarch.Dispatch
			t, err := d.Select(hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: dev}, rtarch.Options{Switch: defaultSwitch})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "default system: PCI %s → %s, switch %s\n\n",
				hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: dev}, t.Generation, t.Options.Switch)
			return writeArchTable(cmd.OutOrStdout(), t)
		},
	}
}
