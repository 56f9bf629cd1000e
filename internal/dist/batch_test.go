package dist

import (
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMicrobatchesPerRank(t *testing.T) {
	for ws, want := range map[int]int{1: 8, 2: 4, 4: 2, 8: 1} {
		got, err := MicrobatchesPerRank(ws)
		require.NoError(t, err)
		assert.Equal(t, want, got, "WORLD_SIZE=%d", ws)
	}
	for _, ws := range []int{3, 5, 6, 7, 16} {
		_, err := MicrobatchesPerRank(ws)
		assert.EqualError(t, err, "dist: WORLD_SIZE="+strconv.Itoa(ws)+" must divide 8 so grad_accum_steps stays integral")
	}
	_, err := MicrobatchesPerRank(0)
	assert.EqualError(t, err, "dist: WORLD_SIZE=0 must be positive")
}

// loader is train_gpt.py's DistributedTokenLoader over a stream of the
// integers 0, 1, 2, ...: it returns what next_batch gives rank (its span,
// inputs and targets) and moves the stream on.
type loader struct{ pos int }

func (l *loader) next(globalTokens, rank, size, accum int) (x, y []int) {
	local := globalTokens / (size * accum)
	span := local + 1
	chunk := make([]int, span*size)
	for i := range chunk {
		chunk[i] = l.pos + i
	}
	l.pos += len(chunk)
	s := chunk[rank*span : rank*span+span]
	return s[:len(s)-1], s[1:]
}

func TestSpanIsTheReferenceLoaders(t *testing.T) {
	// Span and Chunk against the loader's arithmetic, call after call.
	for _, c := range []struct{ batch, size, accum int }{{64, 1, 8}, {64, 2, 4}, {64, 4, 2}, {64, 8, 1}, {100, 4, 2}} {
		for rank := range c.size {
			ref, pos := &loader{}, 0
			for call := range 3 {
				x, y := ref.next(c.batch, rank, c.size, c.accum)
				g := c.batch / c.accum
				start, n := Span(g, rank, c.size)
				require.Equal(t, len(x)+1, n)
				for i := range x {
					assert.Equal(t, x[i], pos+start+i, "input %d, call %d, %+v rank %d", i, call, c, rank)
					assert.Equal(t, y[i], pos+start+i+1)
				}
				pos += Chunk(g, c.size)
				assert.Equal(t, ref.pos, pos)
			}
		}
	}
	// 100 tokens over 4 ranks and 2 microbatches: 12 inputs each, spans of 13.
	start, n := Span(50, 3, 4)
	assert.Equal(t, 39, start)
	assert.Equal(t, 13, n)
	assert.Equal(t, 52, Chunk(50, 4))
}

func TestSpansAreTheSameTokensOnAnyWorldSize(t *testing.T) {
	// One step's tokens (inputs, in the order rank r, microbatch m reads
	// them) are the same set for every world size dividing 8.
	const batch = 8 * 16
	seen := map[int][]int{}
	for _, size := range []int{1, 2, 4, 8} {
		accum, err := MicrobatchesPerRank(size)
		require.NoError(t, err)
		var tokens []int
		for rank := range size {
			ref := &loader{}
			for range accum {
				x, _ := ref.next(batch, rank, size, accum)
				tokens = append(tokens, x...)
			}
		}
		slices.Sort(tokens)
		seen[size] = tokens
	}
	for _, size := range []int{2, 4, 8} {
		assert.Equal(t, seen[1], seen[size], "WORLD_SIZE=%d", size)
	}
}
