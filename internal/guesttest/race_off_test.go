//go:build !race

package guesttest

const raceEnabled = false
