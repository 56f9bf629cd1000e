package data

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadValidationTokens(t *testing.T) {
	dir := t.TempDir()
	a := testTokens(30, 1)
	b := testTokens(11, 2)
	// Written out of order: the split is the sorted concatenation.
	writeShardT(t, dir, "fineweb_val_000001.bin", b)
	writeShardT(t, dir, "fineweb_val_000000.bin", a)
	writeShardT(t, dir, "fineweb_train_000000.bin", testTokens(5, 3))
	all := make([]int32, 0, 41)
	for _, v := range append(slices.Clone(a), b...) {
		all = append(all, int32(v))
	}
	pattern := filepath.Join(dir, "fineweb_val_*.bin")
	// 41 tokens: usable = ⌊40/T⌋·T, kept = usable+1.
	for _, c := range []struct{ seq, keep int }{{8, 41}, {10, 41}, {7, 36}, {13, 40}, {39, 40}, {40, 41}, {1, 41}} {
		got, err := LoadValidationTokens(pattern, c.seq)
		require.NoError(t, err, "seq %d", c.seq)
		assert.Equal(t, all[:c.keep], got, "seq %d: the first %d tokens", c.seq, c.keep)
	}
	for _, seq := range []int{41, 100} {
		_, err := LoadValidationTokens(pattern, seq)
		assert.Regexp(t, "^Validation split is too short for TRAIN_SEQ_LEN=", err, "seq %d: error", seq)
	}
	_, err := LoadValidationTokens(filepath.Join(dir, "nothing_*.bin"), 8)
	assert.ErrorContains(t, err, "No files found for pattern", "empty glob")
	writeShardT(t, dir, "fineweb_val_000002.bin", nil)
	bad := filepath.Join(dir, "fineweb_val_000003.bin")
	writeShardT(t, dir, "fineweb_val_000003.bin", []uint16{1})
	corruptMagic(t, bad)
	_, err = LoadValidationTokens(pattern, 8)
	assert.ErrorContains(t, err, bad, "bad shard: the error names it")
}
