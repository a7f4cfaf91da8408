package sweepjobs

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/units"
)

// FuzzParseTimeLimit: any text is refused with a units error naming the
// flag, or read as a whole number of seconds in range that Slurm's
// D-HH:MM:SS form gives back exactly.
func FuzzParseTimeLimit(f *testing.F) {
	for _, s := range []string{"90m", "1h30m", "60", "5:30", "1:02:03", "2-0", "1-2:03", "1-02:03:04", "365-0", "0", "-1", "1.5s", "::", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTimeLimit("--time", s)
		if err != nil {
			var ue *units.Error
			if !errors.As(err, &ue) || ue.Field == "" {
				t.Fatalf("ParseTimeLimit(%q): %v is not a units error naming its field", s, err)
			}
			return
		}
		if d < time.Second || d > MaxTimeLimit || d%time.Second != 0 {
			t.Fatalf("ParseTimeLimit(%q) = %v: out of range or not whole seconds", s, d)
		}
		back, err := ParseTimeLimit("--time", slurmTime(d))
		if err != nil || back != d {
			t.Fatalf("ParseTimeLimit(%q) = %v, printed %s, read back as %v, %v", s, d, slurmTime(d), back, err)
		}
	})
}

// FuzzK8sManifest: any grid text and output path give an error or a
// manifest that decodes back into the ConfigMap holding exactly that text
// and the Job mounting the volume at exactly that path.
func FuzzK8sManifest(f *testing.F) {
	f.Add([]byte(exampleGrid), "/results/x")
	f.Add([]byte("---\n...\n: x\n"), "/a: b #c")
	f.Add([]byte("\"\\u0000\""), "/\u00e9")
	f.Fuzz(func(t *testing.T, grid []byte, out string) {
		k := exampleK8s()
		k.GridData, k.Out = grid, out
		data, err := k.Manifest()
		if err != nil {
			return
		}
		d := yaml.NewDecoder(bytes.NewReader(data))
		var cm struct {
			Data map[string]string `yaml:"data"`
		}
		var j job
		if err := d.Decode(&cm); err != nil {
			t.Fatalf("decoding the ConfigMap: %v\n%s", err, data)
		}
		if err := d.Decode(&j); err != nil {
			t.Fatalf("decoding the Job: %v\n%s", err, data)
		}
		if err := d.Decode(new(any)); !errors.Is(err, io.EOF) {
			t.Fatalf("a third document: %v\n%s", err, data)
		}
		if cm.Data[GridFileName] != string(grid) {
			t.Fatalf("the grid came back as %q, want %q", cm.Data[GridFileName], grid)
		}
		if got := j.Spec.Template.Spec.Containers[0].VolumeMounts[0].MountPath; got != out {
			t.Fatalf("the mount path came back as %q, want %q", got, out)
		}
	})
}
