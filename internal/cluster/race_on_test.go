//go:build race

package cluster_test

// raceEnabled reports that the tests run under the race detector, which
// multiplies time and memory: the systems of hundreds and thousands of
// devices skip.
const raceEnabled = true
