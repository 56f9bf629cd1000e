package data

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, err)
	require.Len(t, s.Files(), 3, "shards")
	// Oracle: the stream is epoch repeated forever.
	at := 0
	for _, n := range []int{12, 3, 7, 1, 30, 22, 0, 5} {
		got, err := s.Take(n)
		require.NoError(t, err)
		want := make([]int32, n)
		for i := range want {
			want[i] = epoch[(at+i)%len(epoch)]
		}
		require.Equal(t, want, got, "Take(%d) at %d", n, at)
		at += n
	}
	// 80 tokens of a 22-token epoch: the reader moved into epoch 4, wrapping
	// three times. The wrap happens when a token past the end is needed.
	assert.Equal(t, 4, s.Epoch())
	wantLogs := []string{
		"WARNING: starting epoch:2 dataset:fineweb10B_sp1024 train_shards:3",
		"WARNING: starting epoch:3 dataset:fineweb10B_sp1024 train_shards:3",
		"WARNING: starting epoch:4 dataset:fineweb10B_sp1024 train_shards:3",
	}
	assert.Equal(t, wantLogs, logs, "log lines")
}

func TestTokenStreamExactEpochNoWrap(t *testing.T) {
	pattern, epoch := streamFixture(t, []int{4, 4})
	var logs []string
	s, err := NewTokenStream(pattern, func(m string) { logs = append(logs, m) }, "d")
	require.NoError(t, err)
	_, err = s.Take(len(epoch))
	require.NoError(t, err)
	require.Empty(t, logs, "after exactly one epoch")
	require.Equal(t, 1, s.Epoch(), "after exactly one epoch")
	got, err := s.Take(1)
	require.NoError(t, err)
	assert.Equal(t, epoch[:1], got, "first token of epoch 2")
	assert.Len(t, logs, 1, "first token of epoch 2")
	assert.Equal(t, 2, s.Epoch(), "first token of epoch 2")
}

func TestTokenStreamErrors(t *testing.T) {
	dir := t.TempDir()
	pattern := filepath.Join(dir, "fineweb_train_*.bin")
	_, err := NewTokenStream(pattern, nil, "")
	assert.EqualError(t, err, "No files found for pattern: "+pattern, "empty glob")
	writeShardT(t, dir, "fineweb_train_000000.bin", nil)
	s, err := NewTokenStream(pattern, nil, "")
	require.NoError(t, err)
	_, err = s.Take(1)
	assert.ErrorContains(t, err, "is empty", "all-empty shards")
}

func TestTokenLoaderBatches(t *testing.T) {
	pattern, epoch := streamFixture(t, []int{50, 13, 29})
	l, err := NewTokenLoader(pattern, nil, "")
	require.NoError(t, err)
	at := 0
	for _, c := range []struct{ batch, seq int }{{40, 8}, {45, 8}, {7, 7}, {100, 16}, {33, 11}} {
		x, y, err := l.NextBatch(c.batch, c.seq)
		require.NoError(t, err)
		usable := (c.batch / c.seq) * c.seq
		require.Len(t, x, usable, "NextBatch(%d, %d) inputs", c.batch, c.seq)
		require.Len(t, y, usable, "NextBatch(%d, %d) targets", c.batch, c.seq)
		for i := range usable {
			wantX, wantY := epoch[(at+i)%len(epoch)], epoch[(at+i+1)%len(epoch)]
			if x[i] != wantX || y[i] != wantY {
				require.Failf(t, "batch differs from the stream", "NextBatch(%d, %d) at %d: x[%d]=%d y[%d]=%d, want %d %d",
					c.batch, c.seq, at, i, x[i], i, y[i], wantX, wantY)
			}
		}
		x[0] = -1 // x and y do not share storage
		require.NotEqual(t, int32(-1), y[0], "x and y alias")
		at += usable + 1 // the extra target token is consumed
	}
	_, _, err = l.NextBatch(7, 8)
	assert.ErrorContains(t, err, "token budget too small for seq_len=8", "budget below one sequence")
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
		assert.NoError(t, err, "TokenChunks(%d, %d, %d)", c.total, c.seq, c.max)
		assert.Equal(t, c.want, got, "TokenChunks(%d, %d, %d)", c.total, c.seq, c.max)
	}
	for _, c := range [][3]int{{63, 64, 128}, {0, 64, 128}, {-64, 64, 128}, {100, 0, 10}} {
		got, err := TokenChunks(c[0], c[1], c[2])
		assert.Error(t, err, "TokenChunks(%v) = %v", c, got)
	}
}

func TestTokenStreamPositionResume(t *testing.T) {
	// One epoch is 10+5+7 = 22 tokens. Splits at a shard's start, inside a
	// shard, exactly at a shard's end, exactly at the epoch's end, and
	// resumes that cross shard boundaries and wrap epochs.
	pattern, epoch := streamFixture(t, []int{10, 5, 7})
	for _, c := range []struct{ n, m int }{
		{0, 30}, {3, 4}, {10, 1}, {9, 9}, {15, 40}, {22, 1}, {22, 0}, {21, 2}, {47, 30}, {66, 5}, {70, 70},
	} {
		t.Run(fmt.Sprintf("N%d_M%d", c.n, c.m), func(t *testing.T) {
			// The stream is the epoch repeated; the straight run's log lines
			// are the oracle for the resumed run's.
			var straightLogs []string
			straight, err := NewTokenStream(pattern, func(m string) { straightLogs = append(straightLogs, m) }, "d")
			require.NoError(t, err)
			first, err := straight.Take(c.n)
			require.NoError(t, err)
			logsBefore := len(straightLogs)
			want, err := straight.Take(c.m)
			require.NoError(t, err)
			for i, v := range append(first, want...) {
				require.Equal(t, epoch[i%len(epoch)], v, "straight token %d", i)
			}

			// Read N in uneven pieces, save the position through JSON.
			s, err := NewTokenStream(pattern, nil, "d")
			require.NoError(t, err)
			for left := c.n; left > 0; {
				k := min(left, 4)
				_, err := s.Take(k)
				require.NoError(t, err)
				left -= k
			}
			raw, err := json.Marshal(s.Position())
			require.NoError(t, err)
			var pos StreamPosition
			require.NoError(t, json.Unmarshal(raw, &pos))
			assert.Equal(t, 1+c.n/len(epoch)-boolInt(c.n > 0 && c.n%len(epoch) == 0), pos.Epoch, "epoch at %d", c.n)

			var resumedLogs []string
			r, err := NewTokenStream(pattern, func(m string) { resumedLogs = append(resumedLogs, m) }, "d")
			require.NoError(t, err)
			require.NoError(t, r.Seek(pos))
			got, err := r.Take(c.m)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, straight.Epoch(), r.Epoch())
			assert.Equal(t, straight.Position(), r.Position())
			assert.Equal(t, straightLogs[logsBefore:], resumedLogs)
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestTokenLoaderPositionResume(t *testing.T) {
	// Batches of 2×8 take 17 tokens: from batch 3 on they straddle shard
	// boundaries and the wrap of a 92-token epoch.
	pattern, _ := streamFixture(t, []int{50, 13, 29})
	straight, err := NewTokenLoader(pattern, nil, "")
	require.NoError(t, err)
	resumed, err := NewTokenLoader(pattern, nil, "")
	require.NoError(t, err)
	for step := range 12 {
		if step%3 == 0 {
			// Reopen at the saved position, as a resumed run does.
			pos := resumed.Position()
			resumed, err = NewTokenLoader(pattern, nil, "")
			require.NoError(t, err)
			require.NoError(t, resumed.Seek(pos))
		}
		x0, y0, err := straight.NextBatch(16, 8)
		require.NoError(t, err)
		x1, y1, err := resumed.NextBatch(16, 8)
		require.NoError(t, err)
		require.Equal(t, x0, x1, "step %d inputs", step)
		require.Equal(t, y0, y1, "step %d targets", step)
	}
	assert.Equal(t, 3, straight.Stream().Epoch(), "12 batches of 17 tokens wrap a 92-token epoch twice")
}

func TestTokenStreamSeekErrors(t *testing.T) {
	pattern, _ := streamFixture(t, []int{10, 5, 7})
	s, err := NewTokenStream(pattern, nil, "")
	require.NoError(t, err)
	_, err = s.Take(12)
	require.NoError(t, err)
	before := s.Position()
	dir := filepath.Dir(pattern)
	for _, c := range []struct {
		pos  StreamPosition
		want string
	}{
		{StreamPosition{Epoch: 0, Shard: 0, File: "fineweb_train_000000.bin"}, "data stream position: epoch 0, want ≥ 1"},
		{StreamPosition{Epoch: 1, Shard: 3, File: "fineweb_train_000003.bin"}, "data stream position: shard 3, but the stream has 3 shards (" + filepath.Join(dir, "fineweb_train_000000.bin") + " ...)"},
		{StreamPosition{Epoch: 1, Shard: -1}, "data stream position: shard -1, but the stream has 3 shards"},
		{StreamPosition{Epoch: 1, Shard: 1, File: "fineweb_train_000002.bin"}, "data stream position: shard 1 is " + filepath.Join(dir, "fineweb_train_000001.bin") + ", want fineweb_train_000002.bin"},
		{StreamPosition{Epoch: 1, Shard: 2, File: "fineweb_train_000002.bin", Offset: 8}, "data stream position: offset 8 in " + filepath.Join(dir, "fineweb_train_000002.bin") + ", which has 7 tokens"},
		{StreamPosition{Epoch: 1, Shard: 2, File: "fineweb_train_000002.bin", Offset: -1}, "data stream position: offset -1"},
	} {
		err := s.Seek(c.pos)
		require.Error(t, err, "%+v", c.pos)
		assert.Contains(t, err.Error(), c.want)
		assert.Equal(t, before, s.Position(), "a failed Seek leaves the stream where it was")
	}
	// The end of the last shard is a valid position: the next token wraps.
	require.NoError(t, s.Seek(StreamPosition{Epoch: 5, Shard: 2, File: "fineweb_train_000002.bin", Offset: 7}))
	got, err := s.Take(1)
	require.NoError(t, err)
	assert.Equal(t, []int32{1000}, got)
	assert.Equal(t, 6, s.Epoch())
}
