package progress_test

import (
	"bytes"
	"os"
	"testing"

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
