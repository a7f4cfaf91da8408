//go:build !race

package fabric

// raceEnabled reports that the tests run under the race detector.
const raceEnabled = false
