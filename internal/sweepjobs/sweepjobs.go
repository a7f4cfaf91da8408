// Package sweepjobs turns a sweep grid into jobs for a workload manager: an
// sbatch script for a Slurm job array ([Slurm]) and a Kubernetes Indexed Job
// manifest ([K8s]). Each job task runs `neuronsim sweep run` on one shard of
// the grid, reading its index from the environment the manager sets
// (SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, or JOB_COMPLETION_INDEX
// with --count), and a second job merges the results with `neuronsim sweep
// merge` once every task has ended.
//
// The package only renders text: it reads no grid and starts nothing. Every
// field is checked before anything is rendered, and a value that cannot be
// written safely (a path with a newline, a partition name a shell or sbatch
// would read differently) is refused with an error wrapping [ErrInvalid]
// that names the field; numbers out of range are refused through
// internal/units (errors wrapping units.ErrRange).
package sweepjobs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrInvalid is wrapped by the error of a field that cannot be rendered: a
// relative or empty path, a path with control characters, a name with
// characters the target does not accept.
var ErrInvalid = errors.New("cannot be written into the job")

// MaxShards is the most shards (array tasks, indexed completions) a job may
// have: Slurm's default MaxArraySize is 1001, so indices 0..999 are accepted
// by every default Slurm configuration.
const MaxShards = 1000

// invalid returns an error wrapping ErrInvalid for field.
func invalid(field, value, format string, args ...any) error {
	return fmt.Errorf("%s %s: %s: %w", field, strconv.Quote(value), fmt.Sprintf(format, args...), ErrInvalid)
}

// checkPath refuses a path that is empty, not absolute, not clean, or holds
// a control character (a newline would end a script line or a heredoc). Any
// other byte — spaces, quotes, $, backslashes — is quoted where it is used.
func checkPath(field, p string) error {
	if p == "" {
		return invalid(field, p, "empty")
	}
	if !filepath.IsAbs(p) {
		return invalid(field, p, "not an absolute path")
	}
	if filepath.Clean(p) != p {
		return invalid(field, p, "not a clean path (want %s)", filepath.Clean(p))
	}
	for i, r := range p {
		if r < 0x20 || r == 0x7f {
			return invalid(field, p, "holds the control character %q at byte %d (a job script cannot carry it)", r, i)
		}
	}
	if !utf8.ValidString(p) {
		return invalid(field, p, "not valid UTF-8")
	}
	return nil
}

// shellQuote quotes s for a POSIX shell: inside single quotes every byte is
// literal, and a single quote is written as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// safeName refuses a name that is empty, longer than max, or holds a byte
// outside [A-Za-z0-9._-] (a Slurm job or partition name written on an
// #SBATCH line, where sbatch splits words and reads quotes).
func safeName(field, s string, max int) error {
	if s == "" {
		return invalid(field, s, "empty")
	}
	if len(s) > max {
		return invalid(field, s, "longer than %d characters", max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return invalid(field, s, "holds %q at byte %d (only letters, digits, '.', '_' and '-' are accepted)", c, i)
		}
	}
	return nil
}

// JobName is the name both jobs of a sweep are given: "neuronsim-sweep-",
// the first 12 characters of the grid's hash and the first 8 hex digits of
// the SHA-256 of its output directory, so the jobs of two grids — and of one
// grid run into two folders — are told apart in squeue and kubectl, and a
// script refusing to submit beside a sweep still running refuses only the
// one writing the same folder (39 characters: a valid Kubernetes name).
func JobName(gridHash, out string) (string, error) {
	h := strings.ToLower(gridHash)
	if len(h) < 12 {
		return "", invalid("grid hash", gridHash, "shorter than 12 characters")
	}
	h = h[:12]
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return "", invalid("grid hash", gridHash, "holds %q (want letters and digits)", c)
		}
	}
	if out == "" {
		return "", invalid("--out", out, "empty")
	}
	sum := sha256.Sum256([]byte(out))
	return "neuronsim-sweep-" + h + "-" + hex.EncodeToString(sum[:4]), nil
}
