package progress_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/neuronsim/neuronsim/internal/progress"
)

func TestProgressSilentWhenNotTerminal(t *testing.T) {
	tests := []struct {
		name     string
		total    int
		terminal bool
	}{
		{"not a terminal", 21, false},
		{"terminal but nothing to do", 0, true},
		{"terminal but negative total", -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := progress.New(&buf, tt.total, tt.terminal, "all_reduce")
			for range 25 {
				p.Step()
			}
			p.Done()
			p.Done()
			assert.Empty(t, buf.String())
		})
	}
}

func TestProgressDrawsOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := progress.New(&buf, 3, true, "all_reduce 32 devices")
	for range 4 { // one step too many is harmless
		p.Step()
	}
	p.Done()
	out := buf.String()
	assert.Contains(t, out, "all_reduce 32 devices")
	assert.Contains(t, out, "3/3")
	assert.True(t, len(out) > 0 && out[len(out)-1] == '\n', "Done ends the line")

	var partial bytes.Buffer
	q := progress.New(&partial, 10, true, "sweep")
	q.Step()
	q.Done()
	assert.NotContains(t, partial.String(), "10/10", "an unfinished sweep is not shown as complete")
}

func TestProgressNil(t *testing.T) {
	var p *progress.Bar
	assert.NotPanics(t, func() {
		p.Step()
		p.Done()
	})
	assert.NotPanics(t, func() {
		progress.New(nil, 5, true, "x").Step()
	})
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, progress.IsTerminal(nil))
	f, err := os.CreateTemp(t.TempDir(), "out")
	if assert.NoError(t, err) {
		defer f.Close()
		assert.False(t, progress.IsTerminal(f), "a regular file is not a terminal")
	}
}

// TestProgressWithinAPoint: Within moves the bar inside the point under way
// — never to its end, which is Step's — and clamps what it is given.
func TestProgressWithinAPoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		steps    int
		fraction float64
		want     string
	}{
		{"half of the first of two", 0, 0.5, " 24% "},
		{"half of the second of two", 1, 0.5, " 74% "},
		{"all of the first is not its end", 0, 1, " 49% "},
		{"past 1 is 1", 0, 7, " 49% "},
		{"NaN is 0", 1, math.NaN(), " 50% "},
		{"negative is 0", 1, -3, " 50% "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := progress.New(&buf, 2, true, "all_reduce")
			for range tc.steps {
				p.Step()
			}
			p.Within(0.3)                      // a value to move from: the bar redraws on a change
			time.Sleep(110 * time.Millisecond) // past the bar's redraw throttle
			buf.Reset()
			p.Within(tc.fraction)
			assert.Contains(t, buf.String(), tc.want)
			assert.Contains(t, buf.String(), fmt.Sprintf("all_reduce %d/2", tc.steps))
		})
	}
	var p *progress.Bar
	assert.NotPanics(t, func() { p.Within(0.5) })
}
