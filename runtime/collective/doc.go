// Package collective runs collective schedules on devices: it is the
// device executor of the schedules package runtime/enc builds and proves on
// CPU buffers. Every rank is a NeuronCore of a brought-up device (Rank: its
// device index, its program.Runner, the device address of its buffers,
// LayoutOf); the Executor drives them through the runtime only —
// runtime/dma's queues and vrings, runtime/program's loader, the ndl
// device's clock — never through the simulator, so it runs the same on a
// simulated device, a remote one or hardware (docs/collectives.md §On
// devices).
//
// Executor.Run plans every rank's descriptors and SP program from the
// schedule (plan.go), stages them (stage.go), starts the ranks and times
// rank 0 on the device's clock. On devices whose backend has lazy host
// memory (ndl.LazyHostMemory: the simulated ones) the run is streamed: the
// programs and each queue's count are planned first, and the descriptors
// are planned again, a step at a time, as the engines fetch them from fed
// queues (runtime/dma.OpenFedQueue) — the same bytes at the same device
// times as a staged run, which writes every descriptor into the rings
// before the devices start (Executor.Staged; the only way on remote and
// kernel devices). Nothing is driven from the host while the
// collective runs: each rank's SP engine releases its DMA queues step by
// step with dma_trigger and waits on semaphores between steps:
//
//   - each transfer is split over the rank's DMA engines; on each engine, its
//     slice's descriptors (with the reduce word for a reducing transfer) are
//     followed by a 4-byte write that increments the destination rank's
//     arrivals semaphore — on the same queue, so on the same path, after
//     the data (a remote destination is reached through the writer's B0
//     window when it is a neighbour in the driver's table, else through the
//     fabric window);
//   - after its last slice of a step, each engine increments the rank's own
//     done semaphore (its sources have been read);
//   - a rank starts step k+1 when its arrivals and done counts cover step k
//     and it has a credit from every rank it writes to in step k+1; it
//     grants those credits to the ranks that will write into it as soon as
//     it has finished step k;
//   - rank 0 releases everyone with a go write and finishes last, once every
//     rank has told it they are done; the time measured is rank 0's, on the
//     device's clock (ndl.Clock) when it has one.
//
// Calibrated gives the executor's fitted software parameters per
// generation (engines per rank, launch cost).
//
// Errors wrap ErrRun (a run that could not complete) or ErrSemaphoreRange,
// or runtime/enc's sentinels for a schedule that does not validate. Their
// messages start with "enc:", the runtime's name for its collectives layer
// (ENC), as they did when this executor lived in runtime/enc.
package collective
