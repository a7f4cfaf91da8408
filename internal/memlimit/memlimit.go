// Package memlimit bounds the host memory a run may plan to use. A run
// that would move real payloads (functional collectives, DMA copies)
// estimates the bytes it will hold before it builds anything and is
// refused with the estimate and the limit, instead of being stopped by the
// Go runtime's "fatal error: out of memory" or the kernel's OOM killer
// part-way through.
//
// The default limit is three quarters of the machine's physical memory
// (MemTotal in /proc/meminfo), or [Fallback] where that cannot be read; a
// command's --mem-limit overrides it.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/neuronsim/neuronsim/internal/units"
)

// ErrTooLarge is wrapped by the error of work whose estimated memory is
// above the limit.
var ErrTooLarge = errors.New("refused before it started")

// Fallback is the default limit when /proc/meminfo cannot be read: 8 GiB.
const Fallback uint64 = 8 << 30

// meminfo is the file the default is read from (a variable for tests).
var meminfo = "/proc/meminfo"

// Limit is a memory limit and where it came from, for messages.
type Limit struct {
	Bytes  uint64
	Source string // e.g. "--mem-limit", "3/4 of MemTotal (24 GiB)"
}

// Default returns the default limit: 3/4 of MemTotal, or Fallback.
func Default() Limit {
	data, err := os.ReadFile(meminfo)
	if err == nil {
		if total, err := MemTotal(data); err == nil && total > 0 {
			return Limit{Bytes: total / 4 * 3, Source: fmt.Sprintf("the default, 3/4 of this machine's %s (MemTotal)", Human(total))}
		}
	}
	return Limit{Bytes: Fallback, Source: fmt.Sprintf("the default, %s (%s unreadable)", Human(Fallback), meminfo)}
}

// Parse reads a --mem-limit value (a size: 12G, 512MiB, 1T) for field;
// empty is refused (a flag not given is Default, not "").
func Parse(field, s string) (Limit, error) {
	n, err := units.ParseBytes(field, s)
	if err != nil {
		return Limit{}, err
	}
	if n <= 0 {
		return Limit{}, &units.Error{Field: field, Value: s, Reason: "a memory limit must be positive", Err: units.ErrRange}
	}
	return Limit{Bytes: uint64(n), Source: field}, nil
}

// MemTotal returns MemTotal, in bytes, of /proc/meminfo's contents.
func MemTotal(data []byte) (uint64, error) { return KiBField(data, "meminfo", "MemTotal") }

// KiBField returns, in bytes, the field key of a /proc file in the
// "key: N kB" form of /proc/meminfo and /proc/PID/status (VmRSS, VmHWM);
// file names the file in errors. A line not of that form, or a size past
// 2^64 bytes, is an error, and so is a file without the key.
func KiBField(data []byte, file, key string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: %s line %q: want N kB", file, key, line)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb > ^uint64(0)>>10 {
			return 0, fmt.Errorf("%s: %s line %q: not a size", file, key, line)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("%s: no %s line", file, key)
}

// Check refuses work estimated to need need bytes when that is above the
// limit; what names the work ("a functional all_reduce of 1 GiB on 16
// ranks") and how the estimate was made.
func (l Limit) Check(what string, need uint64) error {
	if need <= l.Bytes {
		return nil
	}
	return fmt.Errorf("%s needs about %s of memory, more than the limit of %s (%s): %w",
		what, Human(need), Human(l.Bytes), l.Source, ErrTooLarge)
}

// Human prints a byte count for people: "24 GiB", "1.5 GiB", "300 MiB",
// "4096 B" (one decimal, powers of 1024).
func Human(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + units[i]
}
