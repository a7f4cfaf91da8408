package sim

import (
	"time"

	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// The simulation kernel lives in [simkernel]; the names below keep the
// device package's callers working unchanged. Each is the kernel's own
// identifier (a type alias, the same constant or the same sentinel), so
// values and errors.Is cross freely between the two names.

// Time is [simkernel.Time]: virtual time in picoseconds.
type Time = simkernel.Time

// Units of virtual time ([simkernel.Picosecond] and the rest).
const (
	Picosecond  = simkernel.Picosecond
	Nanosecond  = simkernel.Nanosecond
	Microsecond = simkernel.Microsecond
	Millisecond = simkernel.Millisecond
	Second      = simkernel.Second
)

// MaxTime is [simkernel.MaxTime], the latest time any clock may reach.
const MaxTime = simkernel.MaxTime

// CyclesAt is [simkernel.CyclesAt].
func CyclesAt(hz uint64, cycles uint64) Time { return simkernel.CyclesAt(hz, cycles) }

// FromDuration is [simkernel.FromDuration].
func FromDuration(d time.Duration) Time { return simkernel.FromDuration(d) }

// The event engine: [simkernel.Engine] and its types.
type (
	// Engine is [simkernel.Engine].
	Engine = simkernel.Engine
	// EngineState is [simkernel.EngineState].
	EngineState = simkernel.EngineState
	// Event is [simkernel.Event].
	Event = simkernel.Event
	// Handler is [simkernel.Handler].
	Handler = simkernel.Handler
	// HandlerFunc is [simkernel.HandlerFunc].
	HandlerFunc = simkernel.HandlerFunc
	// HandlerID is [simkernel.HandlerID].
	HandlerID = simkernel.HandlerID
)

// NewEngine is [simkernel.NewEngine].
func NewEngine() *Engine { return simkernel.NewEngine() }

// The engine's sentinels, the kernel's own values.
var (
	// ErrPastEvent is [simkernel.ErrPastEvent].
	ErrPastEvent = simkernel.ErrPastEvent
	// ErrUnknownHandler is [simkernel.ErrUnknownHandler].
	ErrUnknownHandler = simkernel.ErrUnknownHandler
	// ErrDuplicateHandler is [simkernel.ErrDuplicateHandler].
	ErrDuplicateHandler = simkernel.ErrDuplicateHandler
	// ErrTimeOverflow is [simkernel.ErrTimeOverflow].
	ErrTimeOverflow = simkernel.ErrTimeOverflow
	// ErrSequenceExhausted is [simkernel.ErrSequenceExhausted].
	ErrSequenceExhausted = simkernel.ErrSequenceExhausted
	// ErrEventLimit is [simkernel.ErrEventLimit].
	ErrEventLimit = simkernel.ErrEventLimit
	// ErrInvalidState is [simkernel.ErrInvalidState]: a Restore (of the
	// engine, a memory, the host memory or the device) refused its state.
	ErrInvalidState = simkernel.ErrInvalidState
)

// Sparse device memory: [simkernel.Memory] and its types.
type (
	// Memory is [simkernel.Memory].
	Memory = simkernel.Memory
	// MemoryState is [simkernel.MemoryState].
	MemoryState = simkernel.MemoryState
	// Page is [simkernel.Page].
	Page = simkernel.Page
	// PageBudget is [simkernel.PageBudget].
	PageBudget = simkernel.PageBudget
)

// The device address space ([simkernel.AddressBits] and the rest).
const (
	AddressBits  = simkernel.AddressBits
	AddressLimit = simkernel.AddressLimit
	PageSize     = simkernel.PageSize
)

// Memory sentinels, the kernel's own values.
var (
	// ErrAddressRange is [simkernel.ErrAddressRange].
	ErrAddressRange = simkernel.ErrAddressRange
	// ErrPageBudget is [simkernel.ErrPageBudget].
	ErrPageBudget = simkernel.ErrPageBudget
)

// NewMemory is [simkernel.NewMemory].
func NewMemory() *Memory { return simkernel.NewMemory() }

// NewPageBudget is [simkernel.NewPageBudget].
func NewPageBudget(pages int64) (*PageBudget, error) { return simkernel.NewPageBudget(pages) }
