package output

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNameOfADirectoryRefused: an output named with a trailing slash, or
// whose last element is . or .., names a directory; it is refused, not
// written as a file of that name once the path is cleaned.
func TestNameOfADirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"sub/", "a/b/", ".", "..", "x/.", "x/..", "/"} {
		err := CheckName(name)
		require.ErrorIs(t, err, ErrNotWritable, name)
		assert.ErrorContains(t, err, "names a directory", name)
		require.ErrorIs(t, Check(filepath.Join(dir, "sub")+"/"), ErrNotWritable)
		_, err = Create(filepath.Join(dir, "sub") + "/")
		require.ErrorIs(t, err, ErrNotWritable)
	}
	for _, name := range []string{"a.json", "sub/a.json", "./a", "../a", "/tmp/a", "a..b", ".a"} {
		assert.NoError(t, CheckName(name), name)
	}
	assert.Empty(t, names(t, dir), "nothing written")
}
