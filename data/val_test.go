package data

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
		if err != nil {
			t.Fatalf("seq %d: %v", c.seq, err)
		}
		if !slices.Equal(got, all[:c.keep]) {
			t.Errorf("seq %d: got %d tokens %v, want the first %d", c.seq, len(got), got, c.keep)
		}
	}
	for _, seq := range []int{41, 100} {
		_, err := LoadValidationTokens(pattern, seq)
		if err == nil || !strings.HasPrefix(err.Error(), "Validation split is too short for TRAIN_SEQ_LEN=") {
			t.Errorf("seq %d: error %v, want too short", seq, err)
		}
	}
	if _, err := LoadValidationTokens(filepath.Join(dir, "nothing_*.bin"), 8); err == nil || !strings.Contains(err.Error(), "No files found for pattern") {
		t.Errorf("empty glob: %v", err)
	}
	writeShardT(t, dir, "fineweb_val_000002.bin", nil)
	bad := filepath.Join(dir, "fineweb_val_000003.bin")
	writeShardT(t, dir, "fineweb_val_000003.bin", []uint16{1})
	corruptMagic(t, bad)
	if _, err := LoadValidationTokens(pattern, 8); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad shard: error %v does not name %s", err, bad)
	}
}
