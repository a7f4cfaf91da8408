//go:build race

package enc

// raceEnabled reports that the tests run under the race detector, which
// makes counting tens of millions of transfers ten times slower on one
// goroutine, where it finds nothing: those tests skip.
const raceEnabled = true
