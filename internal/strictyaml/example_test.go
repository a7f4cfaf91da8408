package strictyaml_test

import (
	"errors"
	"fmt"

	"github.com/neuronsim/neuronsim/internal/strictyaml"
)

// A mistyped key is reported at its line and column, with the path in the
// document and the keys that are accepted there; a required key left out is
// named too.
func ExampleDecode() {
	type link struct {
		To      string `yaml:"to,required"`
		Latency string `yaml:"latency"`
	}
	type config struct {
		Name  string `yaml:"name,required"`
		Links []link `yaml:"links"`
	}
	doc := "name: ring\nlinks:\n  - {to: a, latency: 5ns}\n  - {to: b, latncy: 5ns}\n"
	var c config
	err := strictyaml.Decode("ring.yaml", []byte(doc), &c)
	fmt.Println(err)
	fmt.Println(errors.Is(err, strictyaml.ErrStrict))

	err = strictyaml.Decode("ring.yaml", []byte("links: []\n"), &c)
	fmt.Println(err)

	var ok config
	fmt.Println(strictyaml.Decode("ring.yaml", []byte("name: ring\nlinks: [{to: a}]\n"), &ok), ok.Links[0].To)
	// Output:
	// ring.yaml:4:13: links[1].latncy: unknown key "latncy"; expected one of: latency, to
	// true
	// ring.yaml:1:1: missing key "name"
	// <nil> a
}
