// Package trace records what a simulation did as Chrome / Perfetto trace
// events: one track per NeuronCore engine and per DMA queue, each record or
// transfer a slice with its operands. The output is deterministic: the same
// run writes the same bytes.
package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/neuronsim/neuronsim/sim/simkernel"
)

// A Recorder is the kernel's Tracer: the device, its DMA engines and its
// NeuronCores send it their slices.
var _ simkernel.Tracer = (*Recorder)(nil)

// Recorder collects slices. It is safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	slices   []slice
	limit    int
	drops    int
	maxBytes uint64              // bound on WriteJSON's output
	bytes    uint64              // WriteJSON's output so far, at most (an upper bound)
	tracks   map[string]struct{} // tracks seen, each costing a thread_name event
	full     bool                // a slice was dropped for maxBytes
}

type slice struct {
	track, name string
	start, end  uint64 // ps
	args        map[string]string
}

// DefaultLimit bounds the slices a Recorder keeps; later ones are counted
// and dropped so a long run cannot exhaust memory.
const DefaultLimit = 1 << 20

// DefaultMaxBytes bounds the size of the JSON a Recorder writes when
// SetMaxBytes is not called: 64 MiB.
const DefaultMaxBytes = 64 << 20

// New returns an empty recorder keeping at most limit slices (0: DefaultLimit)
// and at most DefaultMaxBytes of JSON.
func New(limit int) *Recorder {
	if limit <= 0 {
		limit = DefaultLimit
	}
	r := &Recorder{limit: limit, maxBytes: DefaultMaxBytes, tracks: map[string]struct{}{}}
	r.bytes = fixedBytes
	return r
}

// SetMaxBytes bounds the JSON WriteJSON writes to n bytes: once the next
// slice could take it past n, that slice and every later one is dropped
// and counted (the trace stops; its metadata says so). n below the size of
// an empty trace is raised to it.
func (r *Recorder) SetMaxBytes(n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maxBytes = max(n, fixedBytes)
}

// MaxBytes returns the bound on the JSON's size.
func (r *Recorder) MaxBytes() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxBytes
}

// Full reports whether the size bound stopped the recording.
func (r *Recorder) Full() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.full
}

// Stopped says why the recording stopped dropping slices — the size bound
// ("size limit of N bytes reached") or the count of slices New was given
// ("slice limit of N slices reached") — or is "" while every slice is kept.
func (r *Recorder) Stopped() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped()
}

func (r *Recorder) stopped() string {
	switch {
	case r.full:
		return fmt.Sprintf("size limit of %d bytes reached", r.maxBytes)
	case r.drops > 0:
		return fmt.Sprintf("slice limit of %d slices reached", r.limit)
	}
	return ""
}

// Slice records that name ran on track from start to end (ps).
func (r *Recorder) Slice(track, name string, start, end uint64, args map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.full || len(r.slices) >= r.limit {
		r.drops++
		return
	}
	cost := sliceBytes(name, start, end, args)
	if _, ok := r.tracks[track]; !ok {
		cost += trackBytes(track)
	}
	if r.bytes+cost > r.maxBytes {
		r.full = true
		r.drops++
		return
	}
	r.bytes += cost
	r.tracks[track] = struct{}{}
	r.slices = append(r.slices, slice{track, name, start, end, args})
}

// The sizes below bound what WriteJSON's indented encoding takes; they are
// upper bounds (a thread id is counted as maxTidDigits digits, a character
// that JSON may escape as six bytes), so a trace never passes its bound.
const (
	maxTidDigits = 20
	// fixedBytes: the enclosing object, the process_name event, the
	// displayTimeUnit and the metadata of dropped slices (with room for
	// any count and the note).
	fixedBytes = 512
)

// jsonLen is at most the bytes s takes as a JSON string, quotes included.
func jsonLen(s string) uint64 {
	n := uint64(2)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			n += 6
		} else {
			n++
		}
	}
	return n
}

// numLen is the bytes of micros(ps): the whole microseconds' digits, a
// point and six digits.
func numLen(ps uint64) uint64 {
	n := uint64(1)
	for us := ps / 1_000_000; us >= 10; us /= 10 {
		n++
	}
	return n + 7
}

// sliceBytes bounds one "X" event's encoding.
func sliceBytes(name string, start, end uint64, args map[string]string) uint64 {
	// {"name","cat":"sim","ph":"X","ts","dur","pid":1,"tid"} with the
	// indentation of an array element (2) and its fields (3), newlines,
	// separators: 160 bytes cover the keys and punctuation.
	n := 160 + jsonLen(name) + numLen(start) + numLen(end-start) + maxTidDigits
	if len(args) > 0 {
		n += 16
		for k, v := range args {
			n += 8 + jsonLen(k) + jsonLen(v)
		}
	}
	return n
}

// trackBytes bounds a thread_name event's encoding.
func trackBytes(track string) uint64 { return 200 + jsonLen(track) + maxTidDigits }

// Len returns the slices kept and the slices dropped.
func (r *Recorder) Len() (kept, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.slices), r.drops
}

// event is one trace event of the Chrome trace-event format.
type event struct {
	Name string            `json:"name"`
	Cat  string            `json:"cat,omitempty"`
	Ph   string            `json:"ph"`
	Ts   json.Number       `json:"ts"`
	Dur  json.Number       `json:"dur,omitempty"`
	Pid  int               `json:"pid"`
	Tid  int               `json:"tid"`
	Args map[string]string `json:"args,omitempty"`
}

// micros formats ps as microseconds with full ps precision.
func micros(ps uint64) json.Number {
	return json.Number(fmt.Sprintf("%d.%06d", ps/1_000_000, ps%1_000_000))
}

// WriteJSON writes the trace-event JSON: a thread per track (named, in
// order of name), then every slice sorted by start time, track and name.
func (r *Recorder) WriteJSON(w io.Writer) error {
	r.mu.Lock()
	slices := append([]slice(nil), r.slices...)
	drops, stopped := r.drops, r.stopped()
	r.mu.Unlock()
	names := map[string]int{}
	var tracks []string
	for _, s := range slices {
		if _, ok := names[s.track]; !ok {
			names[s.track] = 0
			tracks = append(tracks, s.track)
		}
	}
	sort.Strings(tracks)
	for i, t := range tracks {
		names[t] = i + 1
	}
	sort.SliceStable(slices, func(i, j int) bool {
		a, b := slices[i], slices[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.track != b.track {
			return a.track < b.track
		}
		return a.name < b.name
	})
	events := make([]event, 0, len(slices)+len(tracks)+1)
	events = append(events, event{Name: "process_name", Ph: "M", Ts: "0", Pid: 1, Args: map[string]string{"name": "neuronsim"}})
	for _, t := range tracks {
		events = append(events, event{Name: "thread_name", Ph: "M", Ts: "0", Pid: 1, Tid: names[t], Args: map[string]string{"name": t}})
	}
	for _, s := range slices {
		events = append(events, event{Name: s.name, Cat: "sim", Ph: "X", Ts: micros(s.start), Dur: micros(s.end - s.start),
			Pid: 1, Tid: names[s.track], Args: s.args})
	}
	out := struct {
		TraceEvents     []event           `json:"traceEvents"`
		DisplayTimeUnit string            `json:"displayTimeUnit"`
		Metadata        map[string]string `json:"metadata,omitempty"`
	}{events, "ns", nil}
	if drops > 0 {
		out.Metadata = map[string]string{"dropped_slices": fmt.Sprint(drops), "stopped": stopped}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}
