package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/dmem"
)

func newDMACommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dma copy",
		Short: "Copy through a simulated device's DMA engines",
	}
	cmd.AddCommand(newDMACopyCommand())
	return cmd
}

func newDMACopyCommand() *cobra.Command {
	var from, to, size string
	var core int
	var timingOnly bool
	cmd := &cobra.Command{
		Use:   "copy --from host|device --to host|device --size N [--core N] [--timing-only]",
		Short: "Copy a buffer through an NC's H2T queue and report device time and bandwidth",
		Long: "copy fills a buffer with a pattern, copies it through the core's H2T engine and default\n" +
			"queue with the driver's marker completion, and prints the descriptor pairs, the device time\n" +
			"and the achieved bandwidth; in functional mode it checks the destination. --timing-only\n" +
			"runs the same descriptors without moving the payload.",
		Example: "  neuronsim dma copy --from host --to device --size 64MiB\n" +
			"  neuronsim dma copy --from device --to device --size 1MiB --arch trn2 --core 5\n" +
			"  neuronsim dma copy --from host --to device --size 4GiB --timing-only",
		Args: cobra.NoArgs,
	}
	tf := addDMATargetFlags(cmd)
	cmd.Flags().StringVar(&from, "from", "host", "source: host or device")
	cmd.Flags().StringVar(&to, "to", "device", "destination: host or device")
	cmd.Flags().StringVar(&size, "size", "1MiB", "bytes to copy, "+sizeUnits)
	cmd.Flags().IntVar(&core, "core", 0, "NeuronCore whose H2T queue copies")
	cmd.Flags().BoolVar(&timingOnly, "timing-only", false, "move no payload (sweeps larger than host memory)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sz, err := units.ParseBytesIn("--size", size, 1, maxCopyBytes)
		if err != nil {
			return err
		}
		n := uint64(sz)
		for _, side := range []string{from, to} {
			if side != "host" && side != "device" {
				return fmt.Errorf("--from/--to %q: want host or device", side)
			}
		}
		if !timingOnly && n > 1<<30 {
			return fmt.Errorf("--size %s: functional copies are limited to 1 GiB; use --timing-only", size)
		}
		sys, err := openDMASystem(tf, timingOnly)
		if err != nil {
			return err
		}
		defer sys.close()
		geo := sys.up.Geometry
		if core < 0 || core >= geo.NeuronCores {
			return fmt.Errorf("--core %d: the %s has cores 0..%d", core, geo.Generation, geo.NeuronCores-1)
		}
		host := sys.dma.Host()
		alloc := func(side string) (addr, pa uint64, err error) {
			if side == "host" {
				pa, err := host.HostAlloc(n, 4096)
				return geo.HostAddress(pa), pa, err
			}
			h, err := sys.mem.Alloc(dmem.Request{Size: n, Channel: dmem.Any, NC: core, Name: "dma copy"})
			if err != nil {
				return 0, 0, err
			}
			b, err := sys.mem.Info(h)
			return b.Addr, 0, err
		}
		src, srcPA, err := alloc(from)
		if err != nil {
			return err
		}
		dst, dstPA, err := alloc(to)
		if err != nil {
			return err
		}
		var data []byte
		if !timingOnly {
			data = make([]byte, n)
			r := rand.New(rand.NewPCG(n, 1))
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			if from == "host" {
				err = host.HostWrite(srcPA, data)
			} else {
				err = sys.dma.WriteDevice(src, data[:n&^3])
			}
			if err != nil {
				return err
			}
		}
		since, err := sys.clock()
		if err != nil {
			return err
		}
		pairs, err := sys.dma.Copy(core, dst, src, n)
		if err != nil {
			return err
		}
		took, err := since()
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		mode := "functional"
		if timingOnly {
			mode = "timing-only"
		}
		fmt.Fprintf(out, "%s %s → %s copy of %s on core %d (%s)\n", geo.Generation, from, to, units.Plural(int64(n), "byte", "bytes"), core, mode)
		fmt.Fprintf(out, "  %d descriptor pairs (with the completion marker), %v of device time, ", pairs, took)
		bandwidth(out, n, took)
		fmt.Fprintln(out)
		if timingOnly {
			return nil
		}
		got := make([]byte, n)
		if to == "host" {
			err = host.HostRead(dstPA, got)
		} else {
			got = got[:n&^3]
			err = sys.dma.ReadDevice(dst, got)
		}
		if err != nil {
			return err
		}
		if !bytes.Equal(got, data[:len(got)]) {
			return fmt.Errorf("the destination does not hold the source bytes")
		}
		fmt.Fprintln(out, "  destination verified")
		return nil
	}
	return cmd
}

// maxCopyBytes bounds dma copy --size: 256 TiB, beyond any device's memory
// (a timing-only copy moves no payload, so nothing else bounds it).
const maxCopyBytes = 1 << 48
