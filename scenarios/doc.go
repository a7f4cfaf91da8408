// Package scenarios holds the scenario files neuronsim ships (docs/scenarios.md)
// and the programs they run, embedded so that `neuronsim run` works from any
// directory; default.yaml is what it runs without an argument.
package scenarios

import "embed"

// FS holds the shipped scenarios (*.yaml) and their programs (programs/*.s).
//
//go:embed *.yaml programs/*.s
var FS embed.FS

// Default is the name of the scenario `neuronsim run` runs by default.
const Default = "default.yaml"
