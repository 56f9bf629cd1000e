package data

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTerminalProgressOffTerminal(t *testing.T) {
	// Neither a buffer nor a regular file is a terminal: no bar.
	p, stop := TerminalProgress(&bytes.Buffer{}, "validate")
	assert.Nil(t, p)
	stop()
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	p, stop = TerminalProgress(f, "validate")
	assert.Nil(t, p)
	stop()
}

func TestProgressBarDraws(t *testing.T) {
	dir, _ := validateFixture(t, []int{1000, 2000, 3000}, 1024)
	var out bytes.Buffer
	progress, stop := progressBar(&out, "validate")
	_, err := ValidateShards(context.Background(), filepath.Join(dir, "fineweb_train_*.bin"), 1024,
		ValidateOptions{NoCache: true, Progress: progress})
	require.NoError(t, err)
	stop()
	// 3 files of 1024+2n bytes: 15 072 bytes = 14.7 KiB.
	assert.Contains(t, out.String(), "validate files 3/3")
	assert.Contains(t, out.String(), "14.7 KiB / 14.7 KiB")
}
