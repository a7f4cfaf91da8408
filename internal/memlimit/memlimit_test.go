package memlimit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/neuronsim/neuronsim/internal/units"
)

func TestMemTotal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"MemTotal:       24576000 kB\nMemFree: 1 kB\n", 24576000 << 10, true},
		{"MemFree: 1 kB\nMemTotal: 1024 kB\n", 1 << 20, true},
		{"MemFree: 1 kB\n", 0, false},
		{"MemTotal: 12 MB\n", 0, false},
		{"MemTotal: x kB\n", 0, false},
		{"MemTotal: 99999999999999999999 kB\n", 0, false},
	} {
		got, err := MemTotal([]byte(tc.in))
		if !tc.ok {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got)
	}
}

// TestKiBField: a /proc/PID/status field is read as MemTotal is, its
// errors naming the file and the key; a key that only begins another
// (VmRSS in VmRSSx) is not it.
func TestKiBField(t *testing.T) {
	status := "Name:\tneuronsim\nVmHWM:\t  204800 kB\nVmRSSx:\t1 kB\nVmRSS:\t  102400 kB\n"
	rss, err := KiBField([]byte(status), "/proc/self/status", "VmRSS")
	require.NoError(t, err)
	assert.Equal(t, uint64(100<<20), rss)
	hwm, err := KiBField([]byte(status), "/proc/self/status", "VmHWM")
	require.NoError(t, err)
	assert.Equal(t, uint64(200<<20), hwm)
	_, err = KiBField([]byte(status), "/proc/self/status", "VmSwap")
	assert.EqualError(t, err, "/proc/self/status: no VmSwap line")
	_, err = KiBField([]byte("VmRSS: 7 pages\n"), "/proc/1/status", "VmRSS")
	assert.EqualError(t, err, `/proc/1/status: VmRSS line "VmRSS: 7 pages": want N kB`)
}

func TestDefault(t *testing.T) {
	old := meminfo
	defer func() { meminfo = old }()
	dir := t.TempDir()
	meminfo = filepath.Join(dir, "meminfo")
	require.NoError(t, os.WriteFile(meminfo, []byte("MemTotal: 16777216 kB\n"), 0o644))
	l := Default()
	assert.Equal(t, uint64(12<<30), l.Bytes)
	assert.Contains(t, l.Source, "3/4 of this machine's 16 GiB")
	meminfo = filepath.Join(dir, "missing")
	assert.Equal(t, Fallback, Default().Bytes)
}

func TestParseAndCheck(t *testing.T) {
	l, err := Parse("--mem-limit", "2G")
	require.NoError(t, err)
	assert.Equal(t, uint64(2<<30), l.Bytes)
	require.NoError(t, l.Check("x", 2<<30))
	err = l.Check("a functional all_reduce", 3<<30)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Equal(t, "a functional all_reduce needs about 3 GiB of memory, more than the limit of 2 GiB (--mem-limit): refused before it started", err.Error())
	for _, bad := range []string{"0", "-1G", "lots", ""} { // "" is not the default: a flag not given is
		_, err := Parse("--mem-limit", bad)
		var ue *units.Error
		assert.ErrorAs(t, err, &ue, bad)
	}
	assert.Equal(t, "1.5 GiB", Human(3<<29))
	assert.Equal(t, "100 B", Human(100))
}

// FuzzMemTotal: any /proc/meminfo contents give a size or an error, never
// a panic, and a size is a whole number of KiB.
func FuzzMemTotal(f *testing.F) {
	f.Add([]byte("MemTotal:       24576000 kB\n"))
	f.Add([]byte("MemFree: 1 kB\nMemTotal: 18446744073709551615 kB\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := MemTotal(data)
		if err == nil && n%1024 != 0 {
			t.Fatalf("MemTotal %d is not whole KiB", n)
		}
	})
}
