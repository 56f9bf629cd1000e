package data

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildLUTsMatchesReference(t *testing.T) {
	g := golden(t)
	tok := loadTestModel(t)
	base, space, boundary := BuildLUTs(tok, g.VocabSize)
	require.Equal(t, g.VocabSize, len(base), "base bytes table length")
	require.Equal(t, g.VocabSize, len(space), "leading space table length")
	require.Equal(t, g.VocabSize, len(boundary), "boundary table length")
	// A loop rather than assert.Equal on the tables: it names the pieces.
	bad := 0
	for id := range g.VocabSize {
		if int(base[id]) != g.BaseBytes[id] || space[id] != (g.HasLeadingSpace[id] == 1) || boundary[id] != (g.IsBoundary[id] == 1) {
			if bad++; bad <= 5 {
				t.Errorf("id %d (%q): base %d space %v boundary %v; reference %d %d %d", id, tok.Piece(id),
					base[id], space[id], boundary[id], g.BaseBytes[id], g.HasLeadingSpace[id], g.IsBoundary[id])
			}
		}
	}
	assert.Zero(t, bad, "ids (of %d) that differ from build_sentencepiece_luts", g.VocabSize)
}

func TestBuildLUTsPadding(t *testing.T) {
	// A model vocabulary larger than the tokenizer pads with boundary
	// entries of zero bytes; a smaller one still covers every piece.
	tok := loadTestModel(t)
	n := tok.VocabSize()
	ref, refSpace, refBoundary := BuildLUTs(tok, n)
	base, space, boundary := BuildLUTs(tok, n+13)
	require.Equal(t, n+13, len(base), "padded base bytes table length")
	require.Equal(t, n+13, len(space), "padded leading space table length")
	require.Equal(t, n+13, len(boundary), "padded boundary table length")
	assert.Equal(t, ref, base[:n], "base bytes of the tokenizer's ids, padded")
	assert.Equal(t, refSpace, space[:n], "leading spaces of the tokenizer's ids, padded")
	assert.Equal(t, refBoundary, boundary[:n], "boundaries of the tokenizer's ids, padded")
	pad := make([]bool, 13)
	for i := range pad {
		pad[i] = true
	}
	assert.Equal(t, make([]int16, 13), base[n:], "pad ids: zero bytes")
	assert.Equal(t, make([]bool, 13), space[n:], "pad ids: no leading space")
	assert.Equal(t, pad, boundary[n:], "pad ids: boundaries")
	small, _, _ := BuildLUTs(tok, 1024)
	assert.Equal(t, n, len(small), "vocabSize below the tokenizer: table length")
}

func TestBytesForTargets(t *testing.T) {
	g := golden(t)
	tok := loadTestModel(t)
	luts := NewByteLUTs(tok, g.VocabSize)
	ids := g.Sample.IDs
	assert.Equal(t, g.Sample.TargetBytes, BytesForTargets(ids[:len(ids)-1], ids[1:], luts), "sample: target bytes")
	b := g.BoundarySample.IDs
	assert.Equal(t, g.BoundarySample.TargetBytes, BytesForTargets(b[:len(b)-1], b[1:], luts), "sample with boundary tokens: target bytes")
	// Over every token (a boundary token before the first, as a BOS would
	// be), the count is exactly the UTF-8 length of the text SentencePiece
	// decodes the ids to: each space belongs to the piece it precedes, and
	// none is owed after a boundary.
	bos := int32(-1)
	for id := range tok.VocabSize() {
		if tok.IsControl(id) {
			bos = int32(id)
			break
		}
	}
	require.GreaterOrEqual(t, bos, int32(0), "the tokenizer has a control (boundary) id")
	prev := append([]int32{bos}, ids[:len(ids)-1]...)
	assert.Equal(t, float64(g.Sample.DecodedBytes), BytesForTargets(prev, ids, luts), "whole text: bytes against the UTF-8 length of sp.decode")
	assert.Panics(t, func() { BytesForTargets(ids[:2], ids[:3], luts) }, "length mismatch")
	assert.Panics(t, func() { BytesForTargets([]int32{0}, []int32{int32(g.VocabSize)}, luts) }, "id outside the tables")
}
