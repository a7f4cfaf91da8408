package sim_test

import (
	"errors"
	"fmt"

	"github.com/neuronsim/neuronsim/sim"
)

// A doorbell handler that completes a transfer 2 µs later: handlers schedule
// further events, and events at the same time run in the order scheduled.
func ExampleEngine() {
	e := sim.NewEngine()
	var done sim.HandlerID
	doorbell, _ := e.Register("doorbell", sim.HandlerFunc(func(e *sim.Engine, queue uint64) {
		fmt.Printf("%v: doorbell on queue %d\n", e.Now(), queue)
		_ = e.After(2*sim.Microsecond, done, queue)
	}))
	done, _ = e.Register("done", sim.HandlerFunc(func(e *sim.Engine, queue uint64) {
		fmt.Printf("%v: queue %d complete\n", e.Now(), queue)
	}))

	_ = e.Schedule(500*sim.Nanosecond, doorbell, 0)
	_ = e.Schedule(500*sim.Nanosecond, doorbell, 1)
	ran := e.RunUntil(sim.Microsecond)
	fmt.Printf("ran %d by %v, %d pending\n", ran, e.Now(), e.Pending())

	ran, err := e.RunAll(100)
	fmt.Printf("ran %d by %v, err %v\n", ran, e.Now(), err)

	err = e.Schedule(0, done, 9)
	fmt.Println(errors.Is(err, sim.ErrPastEvent))
	// Output:
	// 500ns: doorbell on queue 0
	// 500ns: doorbell on queue 1
	// ran 2 by 1µs, 2 pending
	// 2.5µs: queue 0 complete
	// 2.5µs: queue 1 complete
	// ran 2 by 2.5µs, err <nil>
	// true
}

// Snapshots: the engine's state is a plain struct, restored into an engine
// whose owner registered the same handlers in the same order.
func ExampleEngine_State() {
	newEngine := func() (*sim.Engine, sim.HandlerID) {
		e := sim.NewEngine()
		id, _ := e.Register("print", sim.HandlerFunc(func(e *sim.Engine, arg uint64) {
			fmt.Printf("%v: event %d\n", e.Now(), arg)
		}))
		return e, id
	}
	e, show := newEngine()
	_ = e.Schedule(10*sim.Nanosecond, show, 1)
	_ = e.Schedule(20*sim.Nanosecond, show, 2)
	saved := e.State()

	e2, _ := newEngine()
	if err := e2.Restore(saved); err != nil {
		fmt.Println(err)
	}
	e2.RunUntil(sim.Microsecond)

	saved.Queue[0].Handler = 7 // corrupt: refused, e2 unchanged
	fmt.Println(e2.Restore(saved))
	fmt.Println(e2.Now(), e2.Pending())
	// Output:
	// 10ns: event 1
	// 20ns: event 2
	// sim engine: restore: event 0 (at 10ns, seq 0): handler ID 7: unknown event handler: invalid state
	// 1µs 0
}

// Memory costs only the pages written, reads untouched memory as zeros, and
// refuses accesses past the 48-bit address space without writing anything.
func ExampleMemory() {
	var m sim.Memory
	_ = m.WriteU32(0x0000_0000_1000, 0xC0FFEE)
	_ = m.WriteU32(0x4000_0000_0000, 1) // host window, bit 46
	_ = m.WriteU32(0x8000_0000_0000, 2) // die 1, bit 47
	_ = m.Copy(0x2000, 0x1000, 4)

	v, _ := m.ReadU32(0x2000)
	zero, _ := m.ReadU32(0x5000_0000)
	fmt.Printf("%#x %d\n", v, zero)
	fmt.Println(m.PagesTouched(), "pages,", m.FootprintBytes(), "bytes")

	err := m.Write(0xFFFF_FFFF_FFFE, []byte{1, 2, 3, 4})
	fmt.Println(err)
	fmt.Println(errors.Is(err, sim.ErrAddressRange))
	// Output:
	// 0xc0ffee 0
	// 4 pages, 16384 bytes
	// sim memory: write [0xfffffffffffe, +0x4) outside the 48-bit device address space: address out of range
	// true
}

func ExampleCyclesAt() {
	fmt.Println(sim.CyclesAt(1_400_000_000, 1)) // one cycle at 1.4 GHz, rounded
	fmt.Println(sim.CyclesAt(1_400_000_000, 7))
	fmt.Println(sim.CyclesAt(2_800_000_000, 1_000_000))
	// Output:
	// 714ps
	// 5ns
	// 357.142857µs
}
