//go:build race

package fabric

// raceEnabled reports that the tests run under the race detector, whose
// sync.Pool drops a share of what is put back, so that code built on pools
// (the zstd encoder) allocates more than it does in a normal build.
const raceEnabled = true
