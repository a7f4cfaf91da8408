//go:build race

package scenario

// raceEnabled says the race detector is on: the shipped-scenario tests,
// which run whole systems, are left to the plain test run.
const raceEnabled = true
