package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwisa "github.com/neuronsim/neuronsim/hw/isa"
)

// TestEngineState: exec's table says done only for an engine whose done
// bit is set; one a timed-out run left behind says NOT DONE with the bits
// it holds.
func TestEngineState(t *testing.T) {
	for _, tc := range []struct {
		status uint32
		want   string
	}{
		{hwisa.StatusDone, "done"},
		{hwisa.StatusRunning | hwisa.StatusWaiting, "NOT DONE (running, waiting)"},
		{hwisa.StatusRunning | hwisa.StatusStalled, "NOT DONE (running, stalled)"},
		{0, "NOT DONE (idle)"},
	} {
		assert.Equal(t, tc.want, engineState(tc.status), "status %#x", tc.status)
	}
}

// TestExecMaxTime: a program whose records must take longer than
// --max-time is refused before it starts; one that runs past it (a wait
// that never holds) is stopped there, or at --max-host-time of the host's
// time (a stuck run with --max-time 100s took 4.7 s of host time, heavy
// records far more); both are range-checked.
func TestExecMaxTime(t *testing.T) {
	dir := t.TempDir()
	var slow strings.Builder
	slow.WriteString(".engine dve\n")
	for i := 0; i < 10; i++ { // 10 × 8·65536 cycles at 1.2 GHz: 4.369 ms on mariana
		slow.WriteString("reciprocal dst=sbuf[0:128,0]:bf16[256,256] src0=sbuf[0:128,0x20000]:bf16[256,256]")
		if i == 9 {
			slow.WriteString(" last")
		}
		slow.WriteString("\n")
	}
	slowProg := writeFile(t, dir, "slow.s", slow.String())
	stuck := writeFile(t, dir, "stuck.s", "nop engine=pe wait=sem_ge(5,1) last\n")
	tests := []struct {
		name    string
		args    []string
		want    string // error prefix; "" for a run that succeeds
		started bool
	}{
		{"must take longer", []string{slowProg, "--max-time", "4ms"}, slowProg + ": the program takes at least 4.36906667ms of device time on mariana (its records' costs), more than --max-time 4ms: it cannot finish; not run", false},
		{"fits", []string{slowProg, "--max-time", "5ms"}, "", true},
		{"stopped at the limit", []string{stuck, "--max-time", "200us"}, "program: not done 2", true},
		{"zero", []string{stuck, "--max-time", "0"}, "--max-time 0s: must be more than 0", false},
		{"negative", []string{stuck, "--max-time", "-1s"}, "--max-time -1s: negative", false},
		{"too long", []string{stuck, "--max-time", "2562047h"}, "--max-time 2562047h0m0s: too long", false},
		{"stopped at the host-time limit", []string{stuck, "--max-time", "100s", "--max-host-time", "100ms"}, "program: not done after ", true},
		{"host time zero", []string{stuck, "--max-host-time", "0s"}, "--max-host-time 0s: must be more than 0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runCLI(t, append([]string{"exec", "--arch", "mariana"}, tt.args...)...)
			if tt.want == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.True(t, strings.HasPrefix(err.Error(), tt.want), "got  %s\nwant %s", err, tt.want)
			}
			assert.Equal(t, tt.started, strings.Contains(out, "device time"), out)
		})
	}
}

// TestExecHostTimeLimitSaysTheTimeTaken: a run stopped at --max-host-time
// says how much host time it took, to a precision finer than the limit, so
// never less than the limit: with --max-host-time 1us it said "not done
// after 0s of the host's time (the limit is 1µs)", the time rounded to the
// millisecond.
func TestExecHostTimeLimitSaysTheTimeTaken(t *testing.T) {
	stuck := writeFile(t, t.TempDir(), "stuck.s", "nop engine=pe wait=sem_ge(5,1) last\n")
	re := regexp.MustCompile(`program: not done after (\S+) of the host's time \(the limit is (\S+)\)`)
	for _, limit := range []string{"1us", "50us", "2ms"} {
		_, err := runCLI(t, "exec", "--arch", "mariana", stuck, "--max-time", "100s", "--max-host-time", limit)
		require.Error(t, err, limit)
		m := re.FindStringSubmatch(err.Error())
		require.NotNil(t, m, err.Error())
		took, err := time.ParseDuration(m[1])
		require.NoError(t, err)
		lim, err := time.ParseDuration(strings.ReplaceAll(m[2], "µ", "u"))
		require.NoError(t, err)
		assert.Greater(t, took, lim, "%s: the run was stopped past its limit, and says so", limit)
	}
}
