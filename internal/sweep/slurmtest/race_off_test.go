//go:build !race

package slurmtest

const raceEnabled = false
