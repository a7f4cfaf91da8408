package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/internal/inputfile"
	"github.com/neuronsim/neuronsim/internal/memlimit"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/units"
	"github.com/neuronsim/neuronsim/sim"
	"github.com/neuronsim/neuronsim/sim/fabric"
)

// SnapshotStep saves the whole system to a file, or replaces it with the
// one a file holds (paths relative to the output directory). Either way the
// runtime lets go of the system and brings it up again without a reset, so
// a run that saves and continues and one that restores and continues do
// the same.
type SnapshotStep struct {
	Save    string `yaml:"save"`
	Restore string `yaml:"restore"`
}

// Kind implements Action.
func (*SnapshotStep) Kind() string { return "snapshot" }

func (st *SnapshotStep) check(c *checkContext) error {
	if (st.Save == "") == (st.Restore == "") {
		return c.d.Errorf(c.n, c.p, "give exactly one of save and restore (a file in the output directory)")
	}
	if st.Save != "" && output.CheckName(st.Save) != nil {
		return c.d.Errorf(c.n, c.p+".save", "%s: %s", st.Save, output.DirNameReason)
	}
	return nil
}

// memory is what a save holds at the least, known before anything is
// built: the system's own devices (cluster.FixedTimingMemory), every
// device's part of the state copy as an idle device's
// (fabric.IdleDeviceSnapshotBytes: 57 KiB on Trn3) and the compressor's
// buffers. The step checks the estimate of the
// live system (fabric.System.SaveFileBytes) again before it copies.
func (st *SnapshotStep) memory(r *resolved) (uint64, string, error) {
	if st.Save == "" {
		return 0, "", nil
	}
	dev, err := fabric.IdleDeviceSnapshotBytes(r.gen)
	if err != nil {
		return 0, "", err
	}
	return cluster.FixedTimingMemory(r.devices) + uint64(r.devices)*dev + fabric.SaveBuffers,
		fmt.Sprintf("saving the system of %s (at least %s of state a device)", units.Plural(int64(r.devices), "device", "devices"), memlimit.Human(dev)), nil
}

// checkSave refuses the save before anything is copied when the system
// itself (cluster.FixedTimingMemory) and what the save takes of the live
// system (fabric.System.SaveFileBytes: the state copy, its resident memory
// pages included, and the compressor's buffers) are above the run's limit.
func (run *runner) checkSave(name string) error {
	sys := run.c.System
	copyBytes := sys.SaveFileBytes()
	what := fmt.Sprintf("saving the system of %s to %s (a copy of its state and the compressor's buffers, %s, estimated before copying)",
		units.Plural(int64(run.r.devices), "device", "devices"), name, memlimit.Human(copyBytes))
	return run.limit.Check(what, cluster.FixedTimingMemory(run.r.devices)+copyBytes)
}

func (st *SnapshotStep) run(run *runner) error {
	c := run.c
	run.dve = nil // the runtime lets go of everything, DVE caches included
	if st.Save != "" {
		// The executor lets go of everything before the save, failed
		// collectives' programs included (cluster.LetGo), so that what is
		// saved and what goes on are the same: Reattach then finds
		// nothing to give back, which would spend device time after the
		// save that a restore does not.
		c.LetGo()
		if err := run.checkSave(st.Save); err != nil {
			return err
		}
		path := run.outPath(st.Save)
		if old := run.saved[path]; old != nil {
			old.Abort() // saved again: the later one is the output
		}
		f, err := run.create(path)
		if err != nil {
			return err
		}
		if err := c.System.SaveFile(f); err != nil {
			return err
		}
		if run.saved == nil {
			run.saved = map[string]*output.File{}
		}
		run.saved[path] = f
		run.savedFaults(st.Save)
		run.printf("system saved at %v to %s (%d bytes)", time.Duration(c.System.Now())/time.Duration(sim.Nanosecond)*time.Nanosecond, st.Save, f.Size())
		return c.Reattach(c.System)
	}
	sys := run.restores[run.index]
	if sys == nil {
		// Saved by an earlier step of this run: read from the output not
		// yet committed.
		path := run.outPath(st.Restore)
		from := path
		if f := run.saved[path]; f != nil {
			from = f.Temp()
		}
		var err error
		if sys, err = loadSnapshot(from, run.load, run.limit); err != nil {
			return fmt.Errorf("restore %s: %w", st.Restore, err)
		}
		if err := run.fits(st.Restore, sys); err != nil {
			return err
		}
	}
	delete(run.restores, run.index)
	// The snapshot's own time: Reattach below brings the system up again
	// on its clock, which then reads later.
	saved := time.Duration(sys.Now()) / time.Duration(sim.Nanosecond) * time.Nanosecond
	if run.pcap != nil {
		// The capture goes on with the restored system (continuing the
		// saved one's capture, if it had one); the system left behind
		// writes what has happened on it. A pcap cannot go back in time.
		if err := c.System.StopCapture(); err != nil {
			return err
		}
		if last, ok := run.pcap.LastPS(); ok && uint64(sys.Now()) < last {
			return fmt.Errorf("%s is at %v, before packets the pcap output already holds (up to %v): a capture cannot go back in time; restore before any fabric traffic, or drop outputs.pcap",
				st.Restore, saved, time.Duration(last/1000)*time.Nanosecond)
		}
		sys.SetCapture(run.pcap, 0)
	}
	if err := c.Reattach(sys); err != nil {
		return err
	}
	run.epoch = run.p.restoreEpoch(run.index)
	run.faults = nil // the restored system's faults are its snapshot's
	run.traceSystem()
	run.printf("system restored from %s, saved at %v; the runtime brought it up again by %v", st.Restore, saved, time.Duration(sys.Now())/time.Duration(sim.Nanosecond)*time.Nanosecond)
	return nil
}

// loadSnapshot reads and restores a snapshot file within the limits o and
// the memory limit: a regular file (a FIFO or a device is refused before
// it is opened).
func loadSnapshot(path string, o fabric.LoadOptions, limit memlimit.Limit) (*fabric.System, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	o, bound := loadWithin(o, limit)
	sys, err := fabric.LoadWith(f, o)
	if bound && errors.Is(err, fabric.ErrSnapshotLimit) {
		return nil, fmt.Errorf("loading within the memory limit of %s (%s), less the loader's %s of buffers (fabric.LoadBuffers): %w: %w",
			memlimit.Human(limit.Bytes), limit.Source, memlimit.Human(fabric.LoadBuffers), err, memlimit.ErrTooLarge)
	}
	return sys, err
}

// loadWithin bounds what a load may take (o.MaxBytes: its decoded state
// and the system built from it, the lengths its header declares checked
// against it before anything is decompressed) by the memory limit too
// (the zero Limit: memlimit.Default()), less fabric.LoadBuffers, which the
// loader takes besides; it reports whether the memory limit is the
// tighter.
func loadWithin(o fabric.LoadOptions, limit memlimit.Limit) (fabric.LoadOptions, bool) {
	if limit.Bytes == 0 {
		limit = memlimit.Default()
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = fabric.DefaultMaxSnapshotBytes
	}
	if o.MaxBytes < 0 {
		return o, false // refused by fabric.LoadWith
	}
	room := int64(1) // a limit below the buffers: every file is over it
	if limit.Bytes > fabric.LoadBuffers {
		room = int64(min(limit.Bytes-fabric.LoadBuffers, uint64(1)<<62))
	}
	if room < o.MaxBytes {
		o.MaxBytes = room
		return o, true
	}
	return o, false
}

// fits checks that a restored system is one this scenario's steps can run
// on: first the keys the scenario's system section gives (resolved.agree:
// each refused at the key), then what the section resolved to with the
// keys it leaves out (a name's, or the defaults), which the steps after
// the restore run with: the same generation (a generation word agrees with
// any product of it; a product word is a key given, held by agree),
// device and node counts, mode (a timing scenario does not check a
// functional system's results, a functional one would check a timing-only
// system's), topology (the rings follow the scenario's), model and
// revision.
func (run *runner) fits(name string, sys *fabric.System) error {
	if err := run.r.agree(run.r.d, sys, name); err != nil {
		return err
	}
	r, cfg := run.r, sys.Device(0).Config()
	perNode, nodes := heldShape(sys)
	mode := func(timing bool) string {
		if timing {
			return "timing"
		}
		return "functional"
	}
	for _, c := range []struct {
		what, held, runs string
	}{
		{"device count", strconv.Itoa(perNode * nodes), strconv.Itoa(r.devices)},
		{"node count", strconv.Itoa(nodes), strconv.Itoa(r.nodes)},
		{"generation", cfg.Generation.String(), r.gen.String()},
		{"mode", mode(cfg.TimingOnly), mode(r.timing)},
		{"topology", sys.Topology().Kind.String(), r.nodeKind().String()},
		{"model", sys.Params().Model.String(), r.model.String()},
		{"revision", fmt.Sprintf("%#02x", cfg.Revision), fmt.Sprintf("%#02x", r.revision)},
	} {
		if c.held != c.runs {
			return fmt.Errorf("%s holds a system whose %s is %s; this scenario's is %s (its system section, with the defaults of the keys it leaves out): give the snapshot's in the section", name, c.what, c.held, c.runs)
		}
	}
	return nil
}
