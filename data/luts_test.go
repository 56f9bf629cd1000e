package data

import "testing"

func TestBuildLUTsMatchesReference(t *testing.T) {
	g := golden(t)
	tok := loadTestModel(t)
	base, space, boundary := BuildLUTs(tok, g.VocabSize)
	if len(base) != g.VocabSize || len(space) != g.VocabSize || len(boundary) != g.VocabSize {
		t.Fatalf("table lengths %d %d %d, want %d", len(base), len(space), len(boundary), g.VocabSize)
	}
	bad := 0
	for id := range g.VocabSize {
		if int(base[id]) != g.BaseBytes[id] || space[id] != (g.HasLeadingSpace[id] == 1) || boundary[id] != (g.IsBoundary[id] == 1) {
			if bad++; bad <= 5 {
				t.Errorf("id %d (%q): base %d space %v boundary %v; reference %d %d %d", id, tok.Piece(id),
					base[id], space[id], boundary[id], g.BaseBytes[id], g.HasLeadingSpace[id], g.IsBoundary[id])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d ids differ from build_sentencepiece_luts", bad, g.VocabSize)
	}
}

func TestBuildLUTsPadding(t *testing.T) {
	// A model vocabulary larger than the tokenizer pads with boundary
	// entries of zero bytes; a smaller one still covers every piece.
	tok := loadTestModel(t)
	n := tok.VocabSize()
	ref, refSpace, refBoundary := BuildLUTs(tok, n)
	base, space, boundary := BuildLUTs(tok, n+13)
	if len(base) != n+13 || len(space) != n+13 || len(boundary) != n+13 {
		t.Fatalf("padded lengths %d %d %d, want %d", len(base), len(space), len(boundary), n+13)
	}
	for id := range n + 13 {
		if id < n && (base[id] != ref[id] || space[id] != refSpace[id] || boundary[id] != refBoundary[id]) {
			t.Fatalf("id %d changed by padding", id)
		}
		if id >= n && (base[id] != 0 || space[id] || !boundary[id]) {
			t.Fatalf("pad id %d: base %d space %v boundary %v; want 0 false true", id, base[id], space[id], boundary[id])
		}
	}
	if small, _, _ := BuildLUTs(tok, 1024); len(small) != n {
		t.Errorf("vocabSize below the tokenizer: table of %d, want %d", len(small), n)
	}
}

func TestBytesForTargets(t *testing.T) {
	g := golden(t)
	tok := loadTestModel(t)
	luts := NewByteLUTs(tok, g.VocabSize)
	ids := g.Sample.IDs
	got := BytesForTargets(ids[:len(ids)-1], ids[1:], luts)
	if got != g.Sample.TargetBytes {
		t.Errorf("sample: %v target bytes, reference %v", got, g.Sample.TargetBytes)
	}
	b := g.BoundarySample.IDs
	if got := BytesForTargets(b[:len(b)-1], b[1:], luts); got != g.BoundarySample.TargetBytes {
		t.Errorf("sample with boundary tokens: %v target bytes, reference %v", got, g.BoundarySample.TargetBytes)
	}
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
	prev := append([]int32{bos}, ids[:len(ids)-1]...)
	if n := BytesForTargets(prev, ids, luts); n != float64(g.Sample.DecodedBytes) || bos < 0 {
		t.Errorf("whole text: %v bytes (boundary id %d), sp.decode gives %d", n, bos, g.Sample.DecodedBytes)
	}
	mustPanic(t, "length mismatch", func() { BytesForTargets(ids[:2], ids[:3], luts) })
	mustPanic(t, "id outside the tables", func() { BytesForTargets([]int32{0}, []int32{int32(g.VocabSize)}, luts) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}
