//go:build race

package sweep

// raceEnabled reports that the tests run under the race detector, which
// multiplies every host time (so TestEstimates skips).
const raceEnabled = true
