package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/runtime/bringup"
	rtdma "github.com/neuronsim/neuronsim/runtime/dma"
	"github.com/neuronsim/neuronsim/runtime/dmem"
	"github.com/neuronsim/neuronsim/runtime/ndl"
	"github.com/neuronsim/neuronsim/runtime/stack"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/bar"
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
	var from, to, size, kernel string
	core := newCoreIndex()
	var timingOnly bool
	cmd := &cobra.Command{
		Use:   "copy --from host|device --to host|device --size N [--core N] [--timing-only] | copy --kernel /dev/neuronN --size N [--core N]",
		Short: "Copy a buffer through an NC's H2T queue and report device time and bandwidth",
		Long: "copy fills a buffer with a pattern, copies it through the core's H2T engine and default\n" +
			"queue with the driver's marker completion, and prints the descriptor pairs, the device time\n" +
			"and the achieved bandwidth; in functional mode it reads every byte of the destination back,\n" +
			"compares it with the source and says how many bytes it compared. --timing-only\n" +
			"runs the same descriptors, in the same device time, on a device that moves no bytes\n" +
			"out of device memory: a copy from the device moves nothing, but one from host memory\n" +
			"still carries its bytes (the device cannot tell a payload from the staging of programs\n" +
			"and tables, which must arrive); its source is never filled, and the simulated memories\n" +
			"keep no page for zeros, so neither side takes host memory for the payload.\n\n" +
			"--size is at most 1 GiB for a functional copy; a timing-only one is bounded by what the\n" +
			"simulated device holds for its two sides, checked before anything is built: a device buffer\n" +
			"is one allocation from one HBM channel (the channel less the firmware carve-out and the small\n" +
			"pool: 35824 MiB on mariana), a host buffer lies in the simulated host memory window (1020 GiB,\n" +
			"less 1 GiB left to the runtime's buffers); two buffers on one side share it.\n\n" +
			"With --kernel the copy goes through the Neuron kernel driver instead: device memory of the\n" +
			"core is allocated (MEM_ALLOC_V2MT64), the pattern is copied into it and back into a second\n" +
			"host buffer with MEM_BUF_COPY64 (the driver moves it with its own H2T DMA), verified byte for\n" +
			"byte, and the memory freed. The throughput printed is host wall time of each ioctl.",
		Example: "  neuronsim dma copy --from host --to device --size 64MiB\n" +
			"  neuronsim dma copy --from device --to device --size 1MiB --arch trn2 --core 5\n" +
			"  neuronsim dma copy --from host --to device --size 4GiB --timing-only\n" +
			"  neuronsim dma copy --kernel /dev/neuron0 --size 1MiB",
		Args: cobra.NoArgs,
	}
	tf := addDMATargetFlags(cmd)
	cmd.Flags().StringVar(&kernel, "kernel", "", "copy host → device → host through the kernel driver's `/dev/neuronN`")
	cmd.MarkFlagsMutuallyExclusive("remote", "kernel")
	cmd.Flags().StringVar(&from, "from", "host", "source: host or device")
	cmd.Flags().StringVar(&to, "to", "device", "destination: host or device")
	cmd.Flags().StringVar(&size, "size", "1MiB", "bytes to copy"+sizeUnits+"; at most 1 GiB, or with --timing-only what the device's memory holds for the copy (see above)")
	cmd.Flags().Var(core, "core", "NeuronCore whose H2T queue copies")
	cmd.Flags().BoolVar(&timingOnly, "timing-only", false, "copy on a device that moves no bytes out of device memory, only from host memory (its source unfilled): sizes larger than host memory")
	refuseEmptyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if kernel != "" {
			return kernelCopyCommand(cmd, tf, kernel, size, core)
		}
		if err := tf.checkCore(core); err != nil {
			return err
		}
		for _, side := range [][2]string{{"--from", from}, {"--to", to}} {
			if _, ok := sides[units.Word(side[1])]; !ok {
				return fmt.Errorf("%s %q: want host or device", side[0], side[1])
			}
		}
		from, to := units.Word(from), units.Word(to) // any case, as every word flag
		n, err := copySize(tf, size, from, to, timingOnly)
		if err != nil {
			return err
		}
		sys, err := openDMASystem(tf, timingOnly)
		if err != nil {
			return err
		}
		defer sys.close()
		nc, err := sys.core(core)
		if err != nil {
			return err
		}
		res, err := sys.st.Copy(stack.CopyRequest{From: sides[from], To: sides[to], Size: n, NC: nc, Payload: !timingOnly})
		if res.Done {
			printCopy(cmd.OutOrStdout(), sys.st.Up.Geometry.Generation, res, from, to, n, nc, timingOnly)
		}
		if err != nil {
			return err
		}
		if res.Checked {
			fmt.Fprintf(cmd.OutOrStdout(), "  destination verified: %d of %d bytes read back and compared, all match the source\n", res.Verified, n)
		}
		return nil
	}
	return cmd
}

// sides are the words of --from and --to.
var sides = map[string]stack.Side{"host": stack.Host, "device": stack.Device}

// printCopy prints a copy's report: what was copied, the descriptor
// pairs, the device time and the bandwidth.
func printCopy(out io.Writer, g hwarch.Generation, res stack.CopyResult, from, to string, n uint64, core int, timingOnly bool) {
	mode := "functional"
	if timingOnly {
		mode = "timing-only"
	}
	took := sim.Time(res.TimePS)
	fmt.Fprintf(out, "%s %s → %s copy of %s on core %d (%s)\n", g, from, to, units.Plural(int64(n), "byte", "bytes"), core, mode)
	markers := rtdma.CopyBatches(n) // each batch ends in a completion marker
	marker := "with the completion marker"
	if markers > 1 {
		marker = fmt.Sprintf("with %d completion markers, one after each batch of at most %d data pairs", markers, rtdma.MaxDataPairsPerBatch)
	}
	fmt.Fprintf(out, "  %d descriptor pairs (%s), %v of device time, ", res.Pairs, marker, took)
	// Each batch's marker is polled every PollInterval: the time is known
	// to within one interval a batch, and the bandwidth to the digits that
	// allows.
	poll := sim.Time(rtdma.PollInterval.Nanoseconds()) * sim.Nanosecond
	bandwidth(out, n, took, sim.Time(markers)*poll)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "  device time: ")
	if res.QueuePS != 0 {
		fmt.Fprintf(out, "%v opening the core's H2T queue (its first use), ", sim.Time(res.QueuePS))
	}
	fmt.Fprintf(out, "%v from the first doorbell to the queue read after the last marker (doorbells, the DMA, marker polls every %v, status and head reads)\n",
		sim.Time(res.TimePS-res.QueuePS), poll)
}

// kernelCopyCommand is dma copy --kernel: its flags checked, then the copy.
func kernelCopyCommand(cmd *cobra.Command, tf *dmaTargetFlags, path, size string, core *coreIndex) error {
	if err := tf.sys.notWith("--kernel"); err != nil {
		return err
	}
	for _, f := range []string{"from", "to", "timing-only", "device"} {
		if cmd.Flags().Changed(f) {
			return fmt.Errorf("--%s: not with --kernel (the kernel copy is host → device → host on the device node given)", f)
		}
	}
	sz, err := units.ParseBytesIn("--size", size, 1, maxKernelCopyBytes)
	if err != nil {
		return err
	}
	return kernelCopy(cmd.OutOrStdout(), path, uint64(sz), core)
}

// maxFunctionalCopy bounds dma copy --size for a copy that moves its
// payload (the pattern is written and read back through host memory).
const maxFunctionalCopy = 1 << 30

// hostReserve is the part of the simulated host memory window that a
// copy's size leaves to the runtime's own host buffers (rings, completion
// markers); the copy's host buffers are bounded by the rest.
const hostReserve = 1 << 30

// copySize reads dma copy --size (text size) and checks it, before
// anything is built, against what the copy can hold: 1 GiB for a
// functional copy, and on a simulated device what its memory holds for
// the copy's two sides (copyLimit) — a timing-only copy moves no payload,
// so that is its only bound.
func copySize(tf *dmaTargetFlags, size, from, to string, timingOnly bool) (uint64, error) {
	n, err := units.ParseBytes("--size", size)
	if err != nil {
		return 0, err
	}
	limit, why := int64(maxFunctionalCopy), "functional copies are limited to 1 GiB; use --timing-only"
	if tf.remote != "" {
		why = "a served device's copies move their payload, and those are limited to 1 GiB"
	} else {
		s, err := tf.sys.spec()
		if err != nil {
			return 0, err
		}
		hold, holdWhy, err := copyLimit(s, from, to)
		if err != nil {
			return 0, err
		}
		if timingOnly || hold < limit {
			limit, why = hold, holdWhy
		}
	}
	if n < 1 || n > limit {
		reason := fmt.Sprintf("must be in 1B..%s", units.FormatBytes(limit))
		if n > limit {
			reason += ": " + why
		}
		return 0, &units.Error{Field: "--size", Value: strconv.Quote(size), Reason: reason, Err: units.ErrRange}
	}
	return uint64(n), nil
}

// copyLimit is the most bytes a copy from one side to the other (host or
// device) can hold on a fresh simulated device of spec s, and why: a device
// side is one allocation from one HBM channel's main pool (runtime/dmem:
// the channel as the driver sizes it, less the firmware carve-out and the
// small pool; two device sides, two such allocations), a host side one
// buffer of the simulated host memory window less hostReserve (two host
// sides, two buffers).
func copyLimit(s systemSpec, from, to string) (int64, string, error) {
	geo := hwarch.MustGeometry(s.Gen)
	mode := hwarch.ModeOf(s.Revision)
	channels := bringup.ChannelBytes(geo, mode, bar.DefaultSizes(geo, mode)[hwarch.BAR4])
	mem, err := dmem.New(geo, dmem.Options{ChannelBytes: channels})
	if err != nil {
		return 0, "", err
	}
	var pools []uint64 // each channel's largest block, smallest first
	for _, st := range mem.Stats() {
		pools = append(pools, st.LargestFree)
	}
	slices.Sort(pools)
	copyOf := fmt.Sprintf("a %s %s → %s copy", s.Gen, from, to)
	limit, why := uint64(math.MaxInt64), ""
	switch devices := strings.Count(from+to, "device"); devices {
	case 1:
		limit = pools[len(pools)-1]
		why = fmt.Sprintf("%s holds at most that: its device buffer is one allocation from one HBM channel (%s less the firmware carve-out and the small pool)",
			copyOf, units.FormatBytes(int64(slices.Max(channels))))
	case 2:
		limit = pools[len(pools)-1] / 2 / mem.PageSize() * mem.PageSize()
		if len(pools) > 1 {
			limit = max(limit, pools[len(pools)-2])
		}
		why = fmt.Sprintf("%s holds at most that: its two device buffers are allocations from the HBM channels (%s each, less the firmware carve-out and the small pool)",
			copyOf, units.FormatBytes(int64(slices.Max(channels))))
	}
	window := uint64(sim.HostMemoryLimit-sim.HostMemoryBase) - hostReserve
	if hosts := 2 - strings.Count(from+to, "device"); hosts > 0 {
		host := window / uint64(hosts) / 4096 * 4096 // host buffers are page aligned
		if host < limit {
			limit = host
			buffers := "its host buffer is one"
			if hosts == 2 {
				buffers = "its two host buffers are"
			}
			why = fmt.Sprintf("%s holds at most that: %s in the simulated host memory window (%s, less %s left to the runtime's own buffers)",
				copyOf, buffers, units.FormatBytes(int64(sim.HostMemoryLimit-sim.HostMemoryBase)), units.FormatBytes(hostReserve))
		}
	}
	return int64(limit), why, nil
}

// maxKernelCopyBytes bounds dma copy --kernel --size: the command holds the
// pattern and its read-back in host memory, as a functional copy does.
const maxKernelCopyBytes = 1 << 30

// openKernel opens the device node of dma copy --kernel (tests substitute a
// fake driver).
var openKernel = func(path string) (*ndl.KernelDevice, error) { return ndl.OpenKernel(path) }

// kernelCopy is dma copy --kernel: device memory of core's NC through the
// driver, the pattern in and back out with MEM_BUF_COPY64, verified, freed.
func kernelCopy(out io.Writer, path string, n uint64, c *coreIndex) (err error) {
	k, err := openKernel(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := k.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	id := k.Identity()
	gen, err := id.Generation()
	if err != nil {
		return err
	}
	geo := hwarch.MustGeometry(gen)
	core, err := c.index(geo, " at "+path)
	if err != nil {
		return err
	}
	if limit := k.MaxMemAllocBytes(false); n > limit {
		return fmt.Errorf("--size %d: more than one allocation of %s device memory holds (%s, one HBM channel)", n, gen, units.FormatBytes(int64(limit)))
	}
	h, err := k.MemAlloc(ndl.MemRequest{Size: n, NC: core})
	if err != nil {
		return err
	}
	defer func() {
		if ferr := k.MemFree(h); ferr != nil {
			err = errors.Join(err, ferr)
		}
	}()
	info, err := k.MemInfo(h)
	if err != nil {
		return err
	}
	ch, _ := geo.HBMChannelOf(info.PA)

	src := make([]byte, n)
	r := rand.New(rand.NewPCG(n, 2))
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	back := make([]byte, n)
	t0 := time.Now()
	if err := k.CopyToMem(h, 0, src); err != nil {
		return err
	}
	t1 := time.Now()
	if err := k.CopyFromMem(h, 0, back); err != nil {
		return err
	}
	t2 := time.Now()

	fmt.Fprintf(out, "kernel %s: %s (%s), %s (%s), host → device → host copy of %s on core %d\n",
		path, gen, gen.Product(), id, id.Mode(), units.Plural(int64(n), "byte", "bytes"), core)
	fmt.Fprintf(out, "  device memory: handle %d, %s at device address %#x (HBM channel %d)\n", h, units.FormatBytes(int64(info.Size)), info.PA, ch)
	for _, leg := range []struct {
		what string
		took time.Duration
	}{{"host → device", t1.Sub(t0)}, {"device → host", t2.Sub(t1)}} {
		fmt.Fprintf(out, "  %s: MEM_BUF_COPY64 in %v (%s, host wall time)\n", leg.what, leg.took, wallRate(n, leg.took))
	}
	return verifyCopy(out, src, back)
}

// wallRate formats n bytes over a host wall-clock duration as GB/s, to
// rateDigits significant digits as the device-time rates.
func wallRate(n uint64, d time.Duration) string {
	if d <= 0 {
		return "n/a GB/s"
	}
	return sigDigits(float64(n)/d.Seconds()/1e9, rateDigits) + " GB/s"
}

// verifyCopy compares the read-back with the pattern and names the first
// byte that differs.
func verifyCopy(out io.Writer, src, back []byte) error {
	if bytes.Equal(src, back) {
		fmt.Fprintf(out, "  destination verified: %s match\n", units.Plural(int64(len(src)), "byte", "bytes"))
		return nil
	}
	first, bad := -1, 0
	for i := range src {
		if src[i] != back[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	return fmt.Errorf("verify: the bytes read back differ from those written: first at offset %d of %d (wrote %#02x, read %#02x); %s differ",
		first, len(src), src[first], back[first], units.Plural(int64(bad), "byte", "bytes"))
}
