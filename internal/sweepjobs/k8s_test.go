package sweepjobs

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/units"
)

const exampleGrid = "# a grid\naxes:\n  sizes: [1K, 1M]\n  op: [all_reduce]\n"

func exampleK8s() K8s {
	return K8s{
		Image: "registry.example.com/neuronsim:1.2", Binary: "neuronsim", GridData: []byte(exampleGrid),
		GridHash: "0123456789abcdef", Points: 48, Out: "/results/example", PVC: "sweeps",
		Shards: 6, Parallelism: 3, CPUs: 2,
	}
}

// decodeDocs decodes every YAML document of data into a generic tree.
func decodeDocs(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	d := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var m map[string]any
		err := d.Decode(&m)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("decoding the manifest: %v\n%s", err, data)
		}
		docs = append(docs, m)
	}
}

// at follows keys (strings for maps, ints for lists) into a decoded tree.
func at(t *testing.T, v any, keys ...any) any {
	t.Helper()
	for i, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map at %v", keys, keys[:i])
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no item %d at %v", keys, k, keys[:i])
			}
			v = l[k]
		}
	}
	return v
}

func TestK8sManifest(t *testing.T) {
	k := exampleK8s()
	data, err := k.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "k8s.yaml", data)
	docs := decodeDocs(t, data)
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the ConfigMap and the Job", len(docs))
	}
	cm, j := docs[0], docs[1]
	for _, c := range []struct {
		doc  map[string]any
		path []any
		want any
	}{
		{cm, []any{"kind"}, "ConfigMap"},
		{cm, []any{"metadata", "name"}, "neuronsim-sweep-0123456789ab-967f968b-grid"},
		{cm, []any{"data", GridFileName}, exampleGrid},
		{j, []any{"apiVersion"}, "batch/v1"},
		{j, []any{"kind"}, "Job"},
		{j, []any{"metadata", "name"}, "neuronsim-sweep-0123456789ab-967f968b"},
		{j, []any{"metadata", "annotations", "neuronsim/grid-hash"}, "0123456789abcdef"},
		{j, []any{"spec", "completionMode"}, "Indexed"},
		{j, []any{"spec", "completions"}, 6},
		{j, []any{"spec", "parallelism"}, 3},
		{j, []any{"spec", "template", "spec", "restartPolicy"}, "Never"},
		{j, []any{"spec", "template", "spec", "containers", 0, "image"}, "registry.example.com/neuronsim:1.2"},
		{j, []any{"spec", "template", "spec", "containers", 0, "command", 0}, "neuronsim"},
		{j, []any{"spec", "template", "spec", "containers", 0, "resources", "requests", "cpu"}, "2"},
		{j, []any{"spec", "template", "spec", "containers", 0, "volumeMounts", 0, "name"}, "results"},
		{j, []any{"spec", "template", "spec", "containers", 0, "volumeMounts", 0, "mountPath"}, "/results/example"},
		{j, []any{"spec", "template", "spec", "containers", 0, "volumeMounts", 1, "mountPath"}, GridMountDir},
		{j, []any{"spec", "template", "spec", "containers", 0, "volumeMounts", 1, "readOnly"}, true},
		{j, []any{"spec", "template", "spec", "volumes", 0, "persistentVolumeClaim", "claimName"}, "sweeps"},
		{j, []any{"spec", "template", "spec", "volumes", 1, "configMap", "name"}, "neuronsim-sweep-0123456789ab-967f968b-grid"},
	} {
		if got := at(t, c.doc, c.path...); got != c.want {
			t.Errorf("%v = %#v, want %#v", c.path, got, c.want)
		}
	}
	args := at(t, j, "spec", "template", "spec", "containers", 0, "args").([]any)
	want := []any{"sweep", "run", GridMountDir + "/" + GridFileName, "--out", "/results/example", "--count", "6", "-j", "2"}
	if len(args) != len(want) {
		t.Fatalf("args %v, want %v", args, want)
	}
	for i := range want {
		if args[i] != want[i] {
			t.Errorf("args %v, want %v", args, want)
			break
		}
	}
}

func TestK8sMergeManifest(t *testing.T) {
	k := exampleK8s()
	data, err := k.MergeManifest()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "k8s-merge.yaml", data)
	docs := decodeDocs(t, data)
	if len(docs) != 1 {
		t.Fatalf("%d documents, want the merge Job", len(docs))
	}
	j := docs[0]
	for _, c := range []struct {
		path []any
		want any
	}{
		{[]any{"kind"}, "Job"},
		{[]any{"metadata", "name"}, "neuronsim-sweep-0123456789ab-967f968b-merge"},
		{[]any{"spec", "completions"}, 1},
		{[]any{"spec", "backoffLimit"}, 0},
		{[]any{"spec", "template", "spec", "containers", 0, "args", 0}, "sweep"},
		{[]any{"spec", "template", "spec", "containers", 0, "args", 1}, "merge"},
		{[]any{"spec", "template", "spec", "containers", 0, "args", 2}, "/results/example"},
		{[]any{"spec", "template", "spec", "volumes", 0, "persistentVolumeClaim", "claimName"}, "sweeps"},
		{[]any{"spec", "template", "spec", "containers", 0, "volumeMounts", 0, "mountPath"}, "/results/example"},
	} {
		if got := at(t, j, c.path...); got != c.want {
			t.Errorf("%v = %#v, want %#v", c.path, got, c.want)
		}
	}
}

// TestK8sManifestAwkwardText checks that text YAML would read as something
// else (a grid that looks like a YAML document marker, a path with ': ' and
// '#') comes back unchanged: the manifest is encoded, not concatenated.
func TestK8sManifestAwkwardText(t *testing.T) {
	k := exampleK8s()
	k.GridData = []byte("---\naxes: {sizes: [1K]}\n... # end\n'quoted': \"x\"\n\ttab\n")
	k.Out = "/results/a: b #c"
	data, err := k.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	docs := decodeDocs(t, data)
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2:\n%s", len(docs), data)
	}
	if got := at(t, docs[0], "data", GridFileName); got != string(k.GridData) {
		t.Errorf("the grid came back as %q, want %q", got, k.GridData)
	}
	if got := at(t, docs[1], "spec", "template", "spec", "containers", 0, "volumeMounts", 0, "mountPath"); got != k.Out {
		t.Errorf("mountPath came back as %q, want %q", got, k.Out)
	}
}

func TestK8sRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*K8s)
		want   error
		says   string
	}{
		{"no image", func(k *K8s) { k.Image = "" }, ErrInvalid, "--image"},
		{"image with a space", func(k *K8s) { k.Image = "a b" }, ErrInvalid, "--image"},
		{"relative binary path", func(k *K8s) { k.Binary = "bin/neuronsim" }, ErrInvalid, "--binary"},
		{"relative out", func(k *K8s) { k.Out = "results" }, ErrInvalid, "not an absolute path"},
		{"out at the root", func(k *K8s) { k.Out = "/" }, ErrInvalid, "overlaps"},
		{"out over the grid", func(k *K8s) { k.Out = GridMountDir + "/r" }, ErrInvalid, "overlaps"},
		{"out under which the grid is", func(k *K8s) { k.Out = "/etc" }, ErrInvalid, "overlaps"},
		{"pvc upper case", func(k *K8s) { k.PVC = "Sweeps" }, ErrInvalid, "--pvc"},
		{"pvc ending in a dash", func(k *K8s) { k.PVC = "sweeps-" }, ErrInvalid, "--pvc"},
		{"pvc empty", func(k *K8s) { k.PVC = "" }, ErrInvalid, "--pvc"},
		{"grid too large", func(k *K8s) { k.GridData = make([]byte, MaxGridBytes+1) }, units.ErrRange, "ConfigMap"},
		{"grid not UTF-8", func(k *K8s) { k.GridData = []byte{0xff, 0xfe} }, ErrInvalid, "UTF-8"},
		{"no shards", func(k *K8s) { k.Shards = 0 }, units.ErrRange, "--shards"},
		{"shards past points", func(k *K8s) { k.Shards = 49 }, units.ErrRange, "--shards 49"},
		{"parallelism past shards", func(k *K8s) { k.Parallelism = 7 }, units.ErrRange, "--parallelism 7: must be in 1..6"},
		{"no cpus", func(k *K8s) { k.CPUs = 0 }, units.ErrRange, "--cpus-per-task"},
		{"bad hash", func(k *K8s) { k.GridHash = "zz" }, ErrInvalid, "grid hash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := exampleK8s()
			c.change(&k)
			for name, render := range map[string]func() ([]byte, error){"Manifest": k.Manifest, "MergeManifest": k.MergeManifest} {
				got, err := render()
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
					t.Errorf("%s: got %v (%d bytes), want an error wrapping %v saying %q", name, err, len(got), c.want, c.says)
				}
			}
		})
	}
}
