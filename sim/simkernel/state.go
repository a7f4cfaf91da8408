package simkernel

// Snapshots. Every model keeps its mutable state in a plain exported struct
// S and offers the same pair: State() S returns a deep copy, Restore(S)
// error checks what it is given and either takes all of it or refuses it
// and keeps its old state. A refusal wraps [ErrInvalidState], the one
// sentinel of a refused state in every model package: errors.Is(err,
// simkernel.ErrInvalidState) holds for a refused engine, memory, host
// memory, device, DMA controller, NeuronCore or system snapshot alike. A
// model whose callers also need to tell its refusals apart from the others'
// names its own sentinel with [InvalidStateOf], which wraps this one.

// Stateful is the snapshot convention every model follows: State returns
// a deep copy of its mutable state S, Restore takes all of an S or refuses
// it with an error wrapping [ErrInvalidState] and keeps its old state. The
// models assert that they implement it (var _ Stateful[EngineState] =
// (*Engine)(nil)), so the convention cannot drift.
type Stateful[S any] interface {
	State() S
	Restore(S) error
}

var (
	_ Stateful[EngineState] = (*Engine)(nil)
	_ Stateful[MemoryState] = (*Memory)(nil)
)

// InvalidStateOf returns a sentinel for the refused states of one model:
// its message is msg (the text its errors have always carried, such as
// "tpb: invalid core state") and it wraps [ErrInvalidState], so an error
// that wraps it matches both.
func InvalidStateOf(msg string) error { return &invalidState{msg: msg} }

// invalidState is a model's sentinel of a refused state.
type invalidState struct{ msg string }

func (e *invalidState) Error() string { return e.msg }

func (e *invalidState) Unwrap() error { return ErrInvalidState }
