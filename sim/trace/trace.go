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
)

// Recorder collects slices. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	slices []slice
	limit  int
	drops  int
}

type slice struct {
	track, name string
	start, end  uint64 // ps
	args        map[string]string
}

// DefaultLimit bounds the slices a Recorder keeps; later ones are counted
// and dropped so a long run cannot exhaust memory.
const DefaultLimit = 1 << 20

// New returns an empty recorder keeping at most limit slices (0: DefaultLimit).
func New(limit int) *Recorder {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Recorder{limit: limit}
}

// Slice records that name ran on track from start to end (ps).
func (r *Recorder) Slice(track, name string, start, end uint64, args map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.slices) >= r.limit {
		r.drops++
		return
	}
	r.slices = append(r.slices, slice{track, name, start, end, args})
}

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
	drops := r.drops
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
		out.Metadata = map[string]string{"dropped_slices": fmt.Sprint(drops)}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}
