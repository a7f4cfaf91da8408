package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionText is what neuronsim --version prints: the module version, the
// VCS revision the binary was built from (with its time, and whether the
// work tree had uncommitted changes) and the Go toolchain, all from the
// build information the Go linker records. ok is false when the binary has
// none.
func versionText(bi *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	if !ok || bi == nil {
		fmt.Fprintf(&b, "neuronsim version unknown (no build information in the binary)\n")
		fmt.Fprintf(&b, "built with %s for %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return b.String()
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	fmt.Fprintf(&b, "neuronsim version %s\n", version)
	if bi.Main.Path != "" {
		fmt.Fprintf(&b, "module %s\n", bi.Main.Path)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "revision %s", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(", modified (uncommitted changes)")
		}
		b.WriteByte('\n')
	} else {
		b.WriteString("revision unknown (built without VCS information: go run, go test or -buildvcs=false)\n")
	}
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	arch := settings["GOOS"] + "/" + settings["GOARCH"]
	if arch == "/" {
		arch = runtime.GOOS + "/" + runtime.GOARCH
	}
	fmt.Fprintf(&b, "built with %s for %s\n", goVersion, arch)
	return b.String()
}

// buildVersion is versionText of the running binary.
func buildVersion() string {
	return versionText(debug.ReadBuildInfo())
}
