package data

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// streamFixture writes shards of the given sizes (named out of creation
// order, to test sorting) and returns the pattern and the tokens of one
// epoch in sorted-file order.
func streamFixture(t *testing.T, sizes []int) (pattern string, epoch []int32) {
	t.Helper()
	dir := t.TempDir()
	// Write in reverse so directory order differs from name order.
	shards := make([][]uint16, len(sizes))
	for i := len(sizes) - 1; i >= 0; i-- {
		shards[i] = make([]uint16, sizes[i])
		for j := range shards[i] {
			shards[i][j] = uint16(1000*(i+1) + j)
		}
		writeShardT(t, dir, fmt.Sprintf("fineweb_train_%06d.bin", i), shards[i])
	}
	writeShardT(t, dir, "fineweb_val_000000.bin", []uint16{9, 9, 9}) // must not match
	writeShardT(t, dir, ".fineweb_train_hidden.bin", []uint16{7})    // glob skips dot files
	for _, s := range shards {
		for _, v := range s {
			epoch = append(epoch, int32(v))
		}
	}
	return filepath.Join(dir, "fineweb_train_*.bin"), epoch
}

func TestTokenStreamWrap(t *testing.T) {
	pattern, epoch := streamFixture(t, []int{10, 5, 7})
	var logs []string
	s, err := NewTokenStream(pattern, func(m string) { logs = append(logs, m) }, "fineweb10B_sp1024")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Files()); n != 3 {
		t.Fatalf("Files() has %d shards, want 3: %v", n, s.Files())
	}
	// Oracle: the stream is epoch repeated forever.
	at := 0
	for _, n := range []int{12, 3, 7, 1, 30, 22, 0, 5} {
		got, err := s.Take(n)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int32, n)
		for i := range want {
			want[i] = epoch[(at+i)%len(epoch)]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Take(%d) at %d = %v, want %v", n, at, got, want)
		}
		at += n
	}
	// 80 tokens of a 22-token epoch: the reader moved into epoch 4, wrapping
	// three times. The wrap happens when a token past the end is needed.
	if s.Epoch() != 4 {
		t.Errorf("Epoch() = %d, want 4", s.Epoch())
	}
	wantLogs := []string{
		"WARNING: starting epoch:2 dataset:fineweb10B_sp1024 train_shards:3",
		"WARNING: starting epoch:3 dataset:fineweb10B_sp1024 train_shards:3",
		"WARNING: starting epoch:4 dataset:fineweb10B_sp1024 train_shards:3",
	}
	if !slices.Equal(logs, wantLogs) {
		t.Errorf("log lines %q, want %q", logs, wantLogs)
	}
}

func TestTokenStreamExactEpochNoWrap(t *testing.T) {
	pattern, epoch := streamFixture(t, []int{4, 4})
	var logs []string
	s, err := NewTokenStream(pattern, func(m string) { logs = append(logs, m) }, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(len(epoch)); err != nil {
		t.Fatal(err)
	}
	if len(logs) != 0 || s.Epoch() != 1 {
		t.Fatalf("after exactly one epoch: epoch %d, logs %q; want 1, none", s.Epoch(), logs)
	}
	got, err := s.Take(1)
	if err != nil || got[0] != epoch[0] || len(logs) != 1 || s.Epoch() != 2 {
		t.Fatalf("first token of epoch 2: %v %v, logs %q", got, err, logs)
	}
}

func TestTokenStreamErrors(t *testing.T) {
	dir := t.TempDir()
	pattern := filepath.Join(dir, "fineweb_train_*.bin")
	if _, err := NewTokenStream(pattern, nil, ""); err == nil || err.Error() != "No files found for pattern: "+pattern {
		t.Errorf("empty glob: %v", err)
	}
	writeShardT(t, dir, "fineweb_train_000000.bin", nil)
	s, err := NewTokenStream(pattern, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(1); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("all-empty shards: %v", err)
	}
}

func TestTokenLoaderBatches(t *testing.T) {
	pattern, epoch := streamFixture(t, []int{50, 13, 29})
	l, err := NewTokenLoader(pattern, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, c := range []struct{ batch, seq int }{{40, 8}, {45, 8}, {7, 7}, {100, 16}, {33, 11}} {
		x, y, err := l.NextBatch(c.batch, c.seq)
		if err != nil {
			t.Fatal(err)
		}
		usable := (c.batch / c.seq) * c.seq
		if len(x) != usable || len(y) != usable {
			t.Fatalf("NextBatch(%d, %d): len x %d, y %d, want %d", c.batch, c.seq, len(x), len(y), usable)
		}
		for i := range usable {
			if x[i] != epoch[(at+i)%len(epoch)] || y[i] != epoch[(at+i+1)%len(epoch)] {
				t.Fatalf("NextBatch(%d, %d) at %d: x[%d]=%d y[%d]=%d", c.batch, c.seq, at, i, x[i], i, y[i])
			}
		}
		x[0] = -1 // x and y do not share storage
		if y[0] == -1 {
			t.Fatal("x and y alias")
		}
		at += usable + 1 // the extra target token is consumed
	}
	if _, _, err := l.NextBatch(7, 8); err == nil || !strings.Contains(err.Error(), "token budget too small for seq_len=8") {
		t.Errorf("budget below one sequence: %v", err)
	}
}

func TestTokenChunks(t *testing.T) {
	cases := []struct {
		total, seq, max int
		want            []int
	}{
		{1000, 64, 300, []int{256, 256, 256, 192}},
		{1024, 64, 256, []int{256, 256, 256, 256}},
		{1024, 64, 0, slices.Repeat([]int{64}, 16)},    // chunk floor is one sequence
		{1024, 64, 63, slices.Repeat([]int{64}, 16)},   // below one sequence
		{1024, 64, -100, slices.Repeat([]int{64}, 16)}, // negative cap
		{524288, 1024, 8192, slices.Repeat([]int{8192}, 64)},
		{65536, 1024, 100000, []int{65536}},
		{100, 64, 1000, []int{64}},
		{64, 64, 64, []int{64}},
	}
	for _, c := range cases {
		got, err := TokenChunks(c.total, c.seq, c.max)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("TokenChunks(%d, %d, %d) = %v, %v; want %v", c.total, c.seq, c.max, got, err, c.want)
		}
	}
	for _, c := range [][3]int{{63, 64, 128}, {0, 64, 128}, {-64, 64, 128}, {100, 0, 10}} {
		if got, err := TokenChunks(c[0], c[1], c[2]); err == nil {
			t.Errorf("TokenChunks(%v) = %v, want an error", c, got)
		}
	}
}
