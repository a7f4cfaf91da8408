//go:build !race

package enc

// raceEnabled reports that the tests run under the race detector.
const raceEnabled = false
