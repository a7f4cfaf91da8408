package lograte

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimiter: a burst passes, then one line per interval; the lines
// dropped are said before the next line written, or by Flush.
func TestLimiter(t *testing.T) {
	var out strings.Builder
	l, err := New(&out, "srv: ", 3, time.Second)
	require.NoError(t, err)
	clock := time.Unix(1000, 0)
	l.now = func() time.Time { return clock }
	for i := range 10 {
		l.Logf("line %d", i)
	}
	assert.Equal(t, uint64(7), l.Dropped())
	clock = clock.Add(1500 * time.Millisecond) // 1.5 lines of rate
	assert.True(t, l.Logf("after %s", "1.5s"))
	assert.False(t, l.Logf("dropped"))
	clock = clock.Add(500 * time.Millisecond)
	assert.True(t, l.Logf("after 2s"))
	clock = clock.Add(-time.Hour) // a clock that goes back gives no lines
	assert.False(t, l.Logf("back"))
	l.Flush()
	l.Flush() // nothing more to say
	assert.Equal(t, "srv: line 0\nsrv: line 1\nsrv: line 2\n"+
		"srv: 7 log lines dropped (more than 3 at once, or one per 1s after that)\nsrv: after 1.5s\n"+
		"srv: 1 log lines dropped (more than 3 at once, or one per 1s after that)\nsrv: after 2s\n"+
		"srv: 1 log lines dropped (more than 3 at once, or one per 1s after that)\n", out.String())
}

// TestLimiterRefusesBadSettings: no burst of 0 or less, no interval of 0 or
// less (neither means "unlimited").
func TestLimiterRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		burst    int
		interval time.Duration
	}{{0, time.Second}, {-1, time.Second}, {1, 0}, {1, -time.Second}} {
		_, err := New(&strings.Builder{}, "", tc.burst, tc.interval)
		assert.Error(t, err, "burst %d interval %v", tc.burst, tc.interval)
	}
}

// TestLimiterConcurrent: lines from many goroutines are written whole and
// counted: written + dropped = sent. (The Limiter writes under its own
// lock, so a plain builder is a safe writer.)
func TestLimiterConcurrent(t *testing.T) {
	var out strings.Builder
	l, err := New(&out, "", 50, time.Hour)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var written sync.Map
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if l.Logf("g%d line %d", g, i) {
					written.Store(fmt.Sprintf("g%d line %d", g, i), true)
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Len(t, lines, 50)
	for _, ln := range lines {
		_, ok := written.Load(ln)
		assert.True(t, ok, "line %q", ln)
	}
	assert.Equal(t, uint64(800-50), l.Dropped())
}

func ExampleLimiter() {
	var out strings.Builder
	l, _ := New(&out, "serve: ", 2, time.Minute)
	for i := range 5 {
		l.Logf("connection %d refused", i)
	}
	l.Flush()
	fmt.Print(out.String())
	// Output:
	// serve: connection 0 refused
	// serve: connection 1 refused
	// serve: 3 log lines dropped (more than 2 at once, or one per 1m0s after that)
}
