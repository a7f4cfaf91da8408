//go:build race

package guesttest

// raceEnabled: under -race the guest tests skip; they drive external
// processes (the server binary, QEMU), which the race detector does not
// see, and they run once in the plain test run.
const raceEnabled = true
