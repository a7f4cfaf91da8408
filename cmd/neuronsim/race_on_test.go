//go:build race

package main

// raceEnabled reports that the tests run under the race detector, which
// multiplies memory and time (so TestServeLoad, which bounds RSS, skips).
const raceEnabled = true
