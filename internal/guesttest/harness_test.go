package guesttest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tools are what .ci/guest-tools installed (its DIR/ready file).
type tools struct {
	dir, vmlinuz, headers, busybox, chroot, qemu string
}

// inCI reports whether the tests run in CI, where a missing tool fails
// instead of skipping.
func inCI() bool { v := os.Getenv("CI"); return v != "" && v != "0" && v != "false" }

// missing skips the test (outside CI) or fails it (in CI), saying why.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if inCI() {
		t.Fatalf("guest test cannot run in CI: %s", msg)
	}
	t.Skipf("SKIPPED (not in CI): %s", msg)
}

// needTools finds the guest tools: $NEURONSIM_GUEST_TOOLS, or the default
// folder of .ci/guest-tools.
func needTools(t *testing.T) *tools {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		missing(t, "the guest tests run on linux/amd64 only (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	if raceEnabled {
		t.Skip("SKIPPED under -race: the guests run external processes the race detector cannot see; they run in the plain test run")
	}
	if testing.Short() {
		t.Skip("SKIPPED: -short: guest boots take tens of seconds each")
	}
	if os.Geteuid() != 0 {
		missing(t, "QEMU runs in a chroot, which needs root (euid %d)", os.Geteuid())
	}
	dir := os.Getenv("NEURONSIM_GUEST_TOOLS")
	if dir == "" {
		dir = "/var/cache/neuronsim-guest"
	}
	b, err := os.ReadFile(filepath.Join(dir, "ready"))
	if err != nil {
		missing(t, "no guest tools in %s (%v): run `.ci/guest-tools %s` (Debian packages, about a minute), or set NEURONSIM_GUEST_TOOLS", dir, err, dir)
	}
	tl := &tools{dir: dir}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "vmlinuz":
			tl.vmlinuz = v
		case "headers":
			tl.headers = v
		case "busybox":
			tl.busybox = v
		case "chroot":
			tl.chroot = v
		case "qemu":
			tl.qemu = v
		}
	}
	for name, p := range map[string]string{"kernel image": tl.vmlinuz, "kernel headers": tl.headers, "busybox": tl.busybox,
		"QEMU chroot": filepath.Join(tl.chroot, "usr/bin/qemu-system-x86_64")} {
		if _, err := os.Stat(p); err != nil {
			missing(t, "%s: %v (rerun .ci/guest-tools %s)", name, err, dir)
		}
	}
	return tl
}

// repoRoot is the module's root (this package is internal/guesttest).
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// driverSource is the real driver's source, beside the project.
func driverSource(t *testing.T) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "..", "shared", "third_party", "aws-neuron-driver-2.24.7.0")
	if _, err := os.Stat(filepath.Join(p, "neuron_pci.c")); err != nil {
		missing(t, "the driver source: %v", err)
	}
	return p
}

// artifacts are built once per test process: the driver module and the
// static neuronsim binary.
var artifacts struct {
	once      sync.Once
	dir       string
	module    string
	neuronsim string
	err       error
}

// TestMain removes the built artifacts at the end.
func TestMain(m *testing.M) {
	code := m.Run()
	if artifacts.dir != "" {
		_ = os.RemoveAll(artifacts.dir)
	}
	os.Exit(code)
}

// build builds the driver module against the kernel headers (from a copy of
// the source: the kernel build writes beside it) and neuronsim with
// CGO_ENABLED=0.
func build(t *testing.T, tl *tools) (module, neuronsim string) {
	t.Helper()
	src := driverSource(t)
	root := repoRoot(t)
	artifacts.once.Do(func() {
		dir, err := os.MkdirTemp("", "neuronsim-guest-build-")
		if err != nil {
			artifacts.err = err
			return
		}
		artifacts.dir = dir
		drv := filepath.Join(dir, "driver")
		if out, err := exec.Command("cp", "-r", src, drv).CombinedOutput(); err != nil {
			artifacts.err = fmt.Errorf("copying the driver: %v: %s", err, out)
			return
		}
		start := time.Now()
		mk := exec.Command("make", "-C", tl.headers, "M="+drv, "modules", "-j2")
		if _, err := exec.LookPath("pahole"); err != nil {
			mk.Args = append(mk.Args, "CONFIG_DEBUG_INFO_BTF_MODULES=")
		}
		if out, err := mk.CombinedOutput(); err != nil {
			artifacts.err = fmt.Errorf("building the driver module: %v:\n%s", err, out)
			return
		}
		artifacts.module = filepath.Join(drv, "neuron.ko")
		fmt.Fprintf(os.Stderr, "guesttest: driver module built in %v\n", time.Since(start).Round(time.Second))
		artifacts.neuronsim = filepath.Join(dir, "neuronsim")
		gb := exec.Command("go", "build", "-trimpath", "-o", artifacts.neuronsim, "./cmd/neuronsim")
		gb.Dir = root
		gb.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := gb.CombinedOutput(); err != nil {
			artifacts.err = fmt.Errorf("building neuronsim: %v:\n%s", err, out)
		}
	})
	if artifacts.err != nil {
		t.Fatal(artifacts.err)
	}
	return artifacts.module, artifacts.neuronsim
}

// step is one command the guest's /init runs after the driver has loaded,
// its output between "@@ begin NAME" and "@@ rc NAME CODE".
type step struct {
	Name, Cmd string
}

// guestSpec is one guest: the simulated system it attaches and its plan.
type guestSpec struct {
	Arch, Revision string
	Devices        int
	Steps          []step
	// Resets is how many "reset request … completed" lines /init waits
	// for (one per device when 0) before it runs the steps.
	Resets  int
	Timeout time.Duration
}

// guest is a finished guest: its console and the server's log.
type guest struct {
	Console string
	Server  string
	Wall    time.Duration
	Killed  bool // QEMU was killed on purpose (runGuest's killOn)
}

// counters returns the server's closing account of device i
// (deviceCounters in cmd/neuronsim), or "".
func (g *guest) counters(i int) string {
	for _, line := range strings.Split(g.Server, "\n") {
		if rest, ok := strings.CutPrefix(line, fmt.Sprintf("neuronsim serve: neuron%d: phase ", i)); ok {
			return rest
		}
	}
	return ""
}

// initScript is the guest's /init: a busybox shell script.
func initScript(spec guestSpec) string {
	resets := spec.Resets
	if resets == 0 {
		resets = spec.Devices
	}
	var b strings.Builder
	b.WriteString(`#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "@@ guest up $(cat /proc/uptime)"
for d in /sys/bus/pci/devices/*; do
  echo "@@ pci ${d##*/} $(cat $d/vendor) $(cat $d/device) $(cat $d/revision) $(cat $d/class)"
done
if insmod /neuron.ko; then echo "@@ insmod ok"; else echo "@@ insmod failed $?"; fi
`)
	fmt.Fprintf(&b, `n=0
while [ $n -lt 120 ]; do
  c=$(dmesg | grep -c 'reset request .* completed')
  f=$(dmesg | grep -c 'reset request .* failed\|failed to complete\|Oops\|BUG:\|Kernel panic')
  [ "$c" -ge %d ] && break
  [ "$f" -gt 0 ] && break
  sleep 1; n=$((n+1))
done
echo "@@ waited $n s"
for d in /dev/neuron*; do echo "@@ node $d"; done
`, resets)
	for _, s := range spec.Steps {
		// the output goes to a file first, so the kernel's console lines
		// cannot interleave with it
		fmt.Fprintf(&b, "%s >/tmp/step.out 2>&1\nrc=$?\necho \"@@ begin %s\"\ncat /tmp/step.out\necho \"@@ rc %s $rc\"\n", s.Cmd, s.Name, s.Name)
	}
	b.WriteString(`echo "@@ dmesg begin"
dmesg
echo "@@ dmesg end"
echo "@@ guest done $(cat /proc/uptime)"
poweroff -f
`)
	return b.String()
}

// boot serves spec's system from neuronsim, boots a guest attached to its
// devices and returns what it printed.
func boot(t *testing.T, tl *tools, spec guestSpec) *guest {
	t.Helper()
	w := newWorkspace(t, tl, spec)
	srv := startServer(t, w, spec)
	g := runGuest(t, w, spec, "")
	srv.stop()
	g.Server = srv.log()
	return g
}

// workspace is a guest's folder inside the chroot (so QEMU there and the
// server outside see the same sockets), holding its kernel and initramfs.
type workspace struct {
	tl        *tools
	dir       string // on the host
	inChroot  string // the same folder as QEMU sees it
	neuronsim string
}

func newWorkspace(t *testing.T, tl *tools, spec guestSpec) *workspace {
	t.Helper()
	module, neuronsim := build(t, tl)
	work, err := os.MkdirTemp(filepath.Join(tl.chroot, "tmp"), "guest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	w := &workspace{tl: tl, dir: work, inChroot: "/" + strings.TrimPrefix(strings.TrimPrefix(work, tl.chroot), "/"), neuronsim: neuronsim}
	var initrd bytes.Buffer
	files := []File{
		{Path: "init", Mode: 0o755, Data: []byte(initScript(spec))},
		{Path: "bin/busybox", Mode: 0o755, Source: tl.busybox},
		{Path: "neuron.ko", Mode: 0o644, Source: module},
		{Path: "bin/neuronsim", Mode: 0o755, Source: neuronsim},
		{Path: "proc", Dir: true, Mode: 0o755}, {Path: "sys", Dir: true, Mode: 0o755},
		{Path: "dev", Dir: true, Mode: 0o755}, {Path: "tmp", Dir: true, Mode: 0o1777},
	}
	if err := WriteInitramfs(&initrd, files); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "initrd.gz"), initrd.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", tl.vmlinuz, filepath.Join(work, "vmlinuz")).CombinedOutput(); err != nil {
		t.Fatalf("copying the kernel: %v: %s", err, out)
	}
	return w
}

// server is a running `neuronsim serve --vfio-user`.
type server struct {
	first string // the line it printed when its sockets were up
	errs  *bytes.Buffer
	stop  func() // SIGTERM, wait for its closing counters (idempotent)
}

// log is what the server printed; call after stop.
func (s *server) log() string { return s.first + s.errs.String() }

// startServer serves spec's system on the workspace's sockets.
func startServer(t *testing.T, w *workspace, spec guestSpec) *server {
	t.Helper()
	srv := exec.Command(w.neuronsim, "serve", "--vfio-user", filepath.Join(w.dir, "sock"), "--arch", spec.Arch,
		"--revision", spec.Revision, "--devices", strconv.Itoa(spec.Devices))
	srvOut, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{errs: new(bytes.Buffer)}
	srv.Stderr = s.errs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			_ = srv.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = srv.Process.Kill()
				<-done
			}
		})
	}
	s.first, err = bufio.NewReader(srvOut).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, srvOut); done <- srv.Wait() }()
	t.Cleanup(s.stop)
	if err != nil {
		s.stop()
		t.Fatalf("the server did not start: %v; its log:\n%s", err, s.errs.String())
	}
	return s
}

// runGuest boots QEMU (TCG) with the workspace's kernel and initramfs and
// a vfio-user-pci device per socket, and waits for it to power off. When
// killOn is not empty, QEMU is killed with SIGKILL as soon as its console
// shows killOn (the guest is then returned with Killed set).
func runGuest(t *testing.T, w *workspace, spec guestSpec, killOn string) *guest {
	t.Helper()
	timeout := spec.Timeout
	if timeout == 0 {
		timeout = 4 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := []string{w.tl.chroot, "qemu-system-x86_64", "-machine", "q35,memory-backend=m",
		"-object", "memory-backend-memfd,id=m,size=1G,share=on", "-m", "1G", "-smp", "1",
		"-nographic", "-no-reboot", "-kernel", w.inChroot + "/vmlinuz", "-initrd", w.inChroot + "/initrd.gz",
		"-append", "console=ttyS0 panic=-1 loglevel=6"}
	for i := range spec.Devices {
		args = append(args, "-device", fmt.Sprintf(`{"driver":"vfio-user-pci","socket":{"path":"%s/sock/neuron%d.sock","type":"unix"}}`, w.inChroot, i))
	}
	q := exec.CommandContext(ctx, "chroot", args...)
	console := &watchBuffer{want: killOn, seen: make(chan struct{})}
	q.Stdout, q.Stderr = console, console
	start := time.Now()
	if err := q.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- q.Wait() }()
	g := &guest{}
	var qerr error
	select {
	case qerr = <-exited:
	case <-console.seen:
		_ = q.Process.Kill()
		<-exited
		g.Killed = true
	}
	g.Wall, g.Console = time.Since(start), console.String()
	if ctx.Err() != nil {
		t.Fatalf("the guest did not finish within %v; console:\n%s", timeout, tail(g.Console, 200))
	}
	if killOn != "" && !g.Killed {
		t.Fatalf("the guest ended before printing %q (%v); console:\n%s", killOn, qerr, tail(g.Console, 200))
	}
	if qerr != nil && !g.Killed {
		t.Fatalf("QEMU: %v; console:\n%s", qerr, tail(g.Console, 200))
	}
	return g
}

// watchBuffer collects a guest's console and closes seen the first time
// the console holds want.
type watchBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	done bool
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.want != "" && !w.done && bytes.Contains(w.buf.Bytes(), []byte(w.want)) {
		w.done = true
		close(w.seen)
	}
	return n, err
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// marks returns the "@@ KEY rest" lines of the console by key.
func (g *guest) marks(key string) []string {
	var out []string
	for _, line := range strings.Split(g.Console, "\n") {
		line = strings.TrimRight(line, "\r")
		if rest, ok := strings.CutPrefix(line, "@@ "+key+" "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// output returns what step name printed and its exit code (-1 when it never
// finished).
func (g *guest) output(name string) (string, int) {
	text := strings.ReplaceAll(g.Console, "\r", "")
	b := strings.Index(text, "@@ begin "+name+"\n")
	if b < 0 {
		return "", -1
	}
	rest := text[b+len("@@ begin "+name+"\n"):]
	e := strings.Index(rest, "@@ rc "+name+" ")
	if e < 0 {
		return rest, -1
	}
	code, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest[e+len("@@ rc "+name+" "):], "\n", 2)[0]))
	if err != nil {
		return rest[:e], -1
	}
	return rest[:e], code
}

// kernelTrouble are the kernel's own reports of a bug; any of them in the
// guest's log fails the test.
var kernelTrouble = regexp.MustCompile(`(?m)(Oops|BUG:|WARNING:|Call Trace:|general protection fault|kernel panic|Kernel panic|page fault|unable to handle)`)

// ipeWarning is the one warning the guest's kernel prints by itself when
// the driver reads a file at probe (its integrity-policy hook,
// security/ipe/hooks.c), with its call trace: it comes from the kernel's
// policy, not from the device (docs/vfio-user.md).
var ipeWarning = regexp.MustCompile(`ipe_kernel_read_file`)

// trouble returns the console lines reporting a kernel bug, leaving out the
// ipe warning and the lines of its trace.
func (g *guest) trouble() []string {
	var out []string
	lines := strings.Split(strings.ReplaceAll(g.Console, "\r", ""), "\n")
	inIPE := false
	for i, line := range lines {
		if strings.Contains(line, "WARNING:") && ipeWarning.MatchString(line) {
			inIPE = true
			continue
		}
		if inIPE {
			if strings.Contains(line, "---[ end trace") {
				inIPE = false
			}
			continue
		}
		if kernelTrouble.MatchString(line) {
			out = append(out, fmt.Sprintf("line %d: %s", i+1, line))
		}
	}
	return out
}
