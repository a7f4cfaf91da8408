package sweepjobs

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/neuronsim/neuronsim/internal/sweep"
	"github.com/neuronsim/neuronsim/internal/units"
)

// MaxGridBytes bounds the grid file a Kubernetes manifest carries: the grid
// travels in a ConfigMap, and a ConfigMap holds at most 1 MiB in all.
const MaxGridBytes = 512 << 10

// GridMountDir is where the container sees the grid's ConfigMap; the grid
// file is GridMountDir/GridFileName.
const (
	GridMountDir = "/etc/neuronsim-sweep"
	GridFileName = "grid.yaml"
)

// K8s is a sweep as a Kubernetes Indexed Job: Shards completions, at most
// Parallelism pods at once, each running the points of its shard
// (JOB_COMPLETION_INDEX of Shards), on a PersistentVolumeClaim mounted at
// Out; the grid travels in a ConfigMap. A second Job merges the results.
type K8s struct {
	Image       string // the container image holding neuronsim
	Binary      string // the neuronsim command in the image: a name on its PATH or an absolute path
	GridData    []byte // the grid file's contents, at most MaxGridBytes of UTF-8
	GridHash    string // the grid's hash ((*sweep.Grid).Hash), naming the objects
	Points      int    // the grid's point count
	Out         string // the output directory inside the containers, where the PVC is mounted
	PVC         string // the PersistentVolumeClaim shared by every pod
	Shards      int    // completions, 1..min(Points, MaxShards)
	Parallelism int    // pods running at once, 1..Shards
	CPUs        int    // CPUs each pod requests and runs its points on (-j), 1..MaxCPUsPerTask
}

// The Kubernetes objects, as far as the manifests use them. Field names and
// their order follow the Kubernetes API.
type (
	objectMeta struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels,omitempty"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	}
	configMap struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   objectMeta        `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
	}
	job struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   objectMeta `yaml:"metadata"`
		Spec       jobSpec    `yaml:"spec"`
	}
	jobSpec struct {
		CompletionMode string          `yaml:"completionMode"`
		Completions    int             `yaml:"completions"`
		Parallelism    int             `yaml:"parallelism"`
		BackoffLimit   int             `yaml:"backoffLimit"`
		Template       podTemplateSpec `yaml:"template"`
	}
	podTemplateSpec struct {
		Metadata podMeta `yaml:"metadata"`
		Spec     podSpec `yaml:"spec"`
	}
	podMeta struct {
		Labels map[string]string `yaml:"labels"`
	}
	podSpec struct {
		RestartPolicy string      `yaml:"restartPolicy"`
		Containers    []container `yaml:"containers"`
		Volumes       []volume    `yaml:"volumes"`
	}
	container struct {
		Name         string        `yaml:"name"`
		Image        string        `yaml:"image"`
		Command      []string      `yaml:"command"`
		Args         []string      `yaml:"args"`
		Resources    resources     `yaml:"resources"`
		VolumeMounts []volumeMount `yaml:"volumeMounts"`
	}
	resources struct {
		Requests map[string]string `yaml:"requests"`
	}
	volumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly,omitempty"`
	}
	volume struct {
		Name                  string                 `yaml:"name"`
		PersistentVolumeClaim *pvcSource             `yaml:"persistentVolumeClaim,omitempty"`
		ConfigMap             *configMapVolumeSource `yaml:"configMap,omitempty"`
	}
	pvcSource struct {
		ClaimName string `yaml:"claimName"`
	}
	configMapVolumeSource struct {
		Name string `yaml:"name"`
	}
)

// dnsSubdomain refuses a name Kubernetes would refuse as an object name:
// at most 253 lower-case letters, digits, '-' and '.', starting and ending
// with a letter or digit.
func dnsSubdomain(field, s string) error {
	if s == "" {
		return invalid(field, s, "empty")
	}
	if len(s) > 253 {
		return invalid(field, s, "longer than 253 characters")
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return invalid(field, s, "holds %q at byte %d (a Kubernetes name is lower-case letters, digits, '-' and '.')", c, i)
		}
	}
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return invalid(field, s, "must start and end with a lower-case letter or a digit")
	}
	return nil
}

// check refuses a K8s whose fields cannot be rendered.
func (k *K8s) check() error {
	if k.Image == "" {
		return invalid("--image", k.Image, "empty")
	}
	if strings.ContainsFunc(k.Image, func(r rune) bool { return r <= ' ' || r == 0x7f }) || !utf8.ValidString(k.Image) {
		return invalid("--image", k.Image, "holds a space or a control character")
	}
	if k.Binary == "" || strings.ContainsFunc(k.Binary, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return invalid("--binary", k.Binary, "empty or holds a control character")
	}
	if strings.Contains(k.Binary, "/") {
		if err := checkPath("--binary", k.Binary); err != nil {
			return fmt.Errorf("%w (a command in the image is a name on its PATH or an absolute path)", err)
		}
	}
	if len(k.GridData) > MaxGridBytes {
		return &units.Error{Field: "grid", Value: units.FormatBytes(int64(len(k.GridData))), Reason: fmt.Sprintf("too large for the ConfigMap that carries it (the limit is %s)", units.FormatBytes(MaxGridBytes)), Err: units.ErrRange}
	}
	if !utf8.Valid(k.GridData) {
		return invalid("grid", "", "not UTF-8 text")
	}
	if err := checkPath("--out", k.Out); err != nil {
		return err
	}
	if k.Out == "/" || k.Out == GridMountDir || strings.HasPrefix(k.Out+"/", GridMountDir+"/") || strings.HasPrefix(GridMountDir+"/", k.Out+"/") {
		return invalid("--out", k.Out, "overlaps the root or the grid's mount %s", GridMountDir)
	}
	if err := dnsSubdomain("--pvc", k.PVC); err != nil {
		return err
	}
	if _, err := units.Int("grid points", int64(k.Points), 1, sweep.MaxPoints); err != nil {
		return err
	}
	if _, err := units.Int("--shards", int64(k.Shards), 1, min(int64(k.Points), MaxShards)); err != nil {
		return fmt.Errorf("%w (at most one shard per point, and at most %d)", err, MaxShards)
	}
	if _, err := units.Int("--parallelism", int64(k.Parallelism), 1, int64(k.Shards)); err != nil {
		return fmt.Errorf("%w (at most --shards)", err)
	}
	if _, err := units.Int("--cpus-per-task", int64(k.CPUs), 1, MaxCPUsPerTask); err != nil {
		return err
	}
	_, err := JobName(k.GridHash, k.Out)
	return err
}

// names returns the Job's name and the labels every object carries.
func (k *K8s) names() (string, map[string]string) {
	name, _ := JobName(k.GridHash, k.Out)
	return name, map[string]string{"app.kubernetes.io/name": "neuronsim-sweep", "app.kubernetes.io/instance": name}
}

// Manifest renders the grid's ConfigMap and the Indexed Job, as two YAML
// documents for `kubectl apply -f`.
func (k *K8s) Manifest() ([]byte, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	name, labels := k.names()
	cm := configMap{
		APIVersion: "v1", Kind: "ConfigMap",
		Metadata: objectMeta{Name: name + "-grid", Labels: labels},
		Data:     map[string]string{GridFileName: string(k.GridData)},
	}
	grid := path.Join(GridMountDir, GridFileName)
	args := []string{"sweep", "run", grid, "--out", k.Out, "--count", strconv.Itoa(k.Shards), "-j", strconv.Itoa(k.CPUs)}
	j := k.job(name, labels, args, k.Shards, k.Parallelism, k.Shards)
	j.Spec.CompletionMode = "Indexed"
	pod := &j.Spec.Template.Spec
	pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, volumeMount{Name: "grid", MountPath: GridMountDir, ReadOnly: true})
	pod.Volumes = append(pod.Volumes, volume{Name: "grid", ConfigMap: &configMapVolumeSource{Name: cm.Metadata.Name}})
	return encode(cm, j)
}

// MergeManifest renders the Job that merges the results, to apply once the
// Indexed Job has completed.
func (k *K8s) MergeManifest() ([]byte, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	name, labels := k.names()
	j := k.job(name+"-merge", labels, []string{"sweep", "merge", k.Out}, 1, 1, 0)
	j.Spec.CompletionMode = "NonIndexed"
	return encode(j)
}

// job is a Job of completions pods running the binary with args, with the
// PVC mounted at Out.
func (k *K8s) job(name string, labels map[string]string, args []string, completions, parallelism, backoff int) job {
	return job{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: objectMeta{Name: name, Labels: labels, Annotations: map[string]string{"neuronsim/grid-hash": k.GridHash}},
		Spec: jobSpec{
			Completions: completions, Parallelism: parallelism, BackoffLimit: backoff,
			Template: podTemplateSpec{
				Metadata: podMeta{Labels: labels},
				Spec: podSpec{
					RestartPolicy: "Never",
					Containers: []container{{
						Name: "neuronsim", Image: k.Image,
						Command:      []string{k.Binary},
						Args:         args,
						Resources:    resources{Requests: map[string]string{"cpu": strconv.Itoa(k.CPUs)}},
						VolumeMounts: []volumeMount{{Name: "results", MountPath: k.Out}},
					}},
					Volumes: []volume{{Name: "results", PersistentVolumeClaim: &pvcSource{ClaimName: k.PVC}}},
				},
			},
		},
	}
}

// encode writes the objects as YAML documents.
func encode(objs ...any) ([]byte, error) {
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	for _, o := range objs {
		if err := e.Encode(o); err != nil {
			return nil, fmt.Errorf("sweepjobs: encoding the manifest: %w", err)
		}
	}
	if err := e.Close(); err != nil {
		return nil, fmt.Errorf("sweepjobs: encoding the manifest: %w", err)
	}
	return b.Bytes(), nil
}
