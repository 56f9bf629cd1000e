package data

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

const (
	testModelPath  = "testdata/fineweb_8192_bpe.model"
	testGoldenPath = "testdata/fineweb_8192_luts.json"
)

// spmGolden is what scripts/spm_luts_golden.py wrote from the real
// sentencepiece library.
type spmGolden struct {
	VocabSize       int       `json:"vocab_size"`
	Pieces          []string  `json:"pieces"`
	Scores          []float64 `json:"scores"`
	IsControl       []int     `json:"is_control"`
	IsUnknown       []int     `json:"is_unknown"`
	IsUnused        []int     `json:"is_unused"`
	IsByte          []int     `json:"is_byte"`
	BaseBytes       []int     `json:"base_bytes"`
	HasLeadingSpace []int     `json:"has_leading_space"`
	IsBoundary      []int     `json:"is_boundary"`
	Sample          struct {
		Text         string  `json:"text"`
		IDs          []int32 `json:"ids"`
		TargetBytes  float64 `json:"target_bytes"`
		DecodedBytes int     `json:"decoded_utf8_bytes"`
	} `json:"sample"`
	BoundarySample struct {
		IDs         []int32 `json:"ids"`
		TargetBytes float64 `json:"target_bytes"`
	} `json:"boundary_sample"`
}

var loadGolden = sync.OnceValues(func() (*spmGolden, error) {
	raw, err := os.ReadFile(testGoldenPath)
	if err != nil {
		return nil, err
	}
	var g spmGolden
	return &g, json.Unmarshal(raw, &g)
})

func golden(t *testing.T) *spmGolden {
	t.Helper()
	g, err := loadGolden()
	require.NoError(t, err, "%s (regenerate with /usr/bin/python3 scripts/spm_luts_golden.py)", testGoldenPath)
	return g
}

func loadTestModel(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := LoadSentencePiece(testModelPath)
	require.NoError(t, err)
	return tok
}

func TestLoadSentencePieceMatchesLibrary(t *testing.T) {
	g := golden(t)
	tok := loadTestModel(t)
	require.Equal(t, g.VocabSize, tok.VocabSize(), "VocabSize(), against sentencepiece")
	require.Len(t, g.Pieces, g.VocabSize, "the golden file's pieces")
	bad := 0
	for id := range g.VocabSize {
		got := [4]bool{tok.IsControl(id), tok.IsUnknown(id), tok.IsUnused(id), tok.IsByte(id)}
		want := [4]bool{g.IsControl[id] == 1, g.IsUnknown[id] == 1, g.IsUnused[id] == 1, g.IsByte[id] == 1}
		if tok.Piece(id) != g.Pieces[id] || tok.Score(id) != float32(g.Scores[id]) || got != want {
			if bad++; bad <= 5 {
				assert.Failf(t, "piece differs from sentencepiece", "id %d: piece %q score %v flags %v; sentencepiece: %q %v %v",
					id, tok.Piece(id), tok.Score(id), got, g.Pieces[id], g.Scores[id], want)
			}
		}
	}
	assert.Zero(t, bad, "ids that differ from sentencepiece, of %d", g.VocabSize)
	// The trainer spec agrees with the pieces; the file is a BPE model.
	assert.Equal(t, g.VocabSize, tok.TrainerVocabSize, "trainer_spec.vocab_size")
	assert.Equal(t, ModelBPE, tok.ModelType, "model_type")
	assert.NotEmpty(t, tok.NormalizerName, "normalizer_spec.name")
}

func TestLoadSentencePieceErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadSentencePiece(filepath.Join(dir, "tok.vocab"))
	if assert.Error(t, err, "wrong suffix") {
		assert.True(t, strings.HasPrefix(err.Error(), "TOKENIZER_PATH must point to a SentencePiece .model file: "), "wrong suffix: %v", err)
	}
	model, err := os.ReadFile(testModelPath)
	require.NoError(t, err)
	// A piece with a type outside the enum.
	var badType []byte
	badType = protowire.AppendTag(badType, 1, protowire.BytesType)
	var piece []byte
	piece = protowire.AppendTag(piece, 1, protowire.BytesType)
	piece = protowire.AppendString(piece, "a")
	piece = protowire.AppendTag(piece, 3, protowire.VarintType)
	piece = protowire.AppendVarint(piece, 9)
	badType = protowire.AppendBytes(badType, piece)
	cases := map[string][]byte{
		"empty":     nil,
		"json":      []byte(`{"tokenizers": []}`),
		"text":      []byte("<unk>\t0\n<s>\t0\n"),
		"truncated": model[:len(model)/2],
		"bad_type":  badType,
	}
	for name, content := range cases {
		p := filepath.Join(dir, name+".model")
		require.NoError(t, os.WriteFile(p, content, 0o644))
		_, err := LoadSentencePiece(p)
		if assert.Error(t, err, name) {
			assert.True(t, strings.HasPrefix(err.Error(), p+": not a SentencePiece model: "), "%s: error %v", name, err)
		}
	}
	missing := filepath.Join(dir, "missing.model")
	_, err = LoadSentencePiece(missing)
	assert.ErrorContains(t, err, missing, "missing file")
}

func TestParseSentencePieceSkipsUnknownFields(t *testing.T) {
	// A hand-built ModelProto: unknown fields of every wire type around and
	// inside the pieces, a piece with no type (NORMAL), a negative score.
	var p1, p2, m []byte
	p1 = protowire.AppendTag(p1, 1, protowire.BytesType)
	p1 = protowire.AppendString(p1, "<unk>")
	p1 = protowire.AppendTag(p1, 3, protowire.VarintType)
	p1 = protowire.AppendVarint(p1, uint64(PieceUnknown))
	p1 = protowire.AppendTag(p1, 99, protowire.Fixed64Type)
	p1 = protowire.AppendFixed64(p1, 7)
	p2 = protowire.AppendTag(p2, 2, protowire.Fixed32Type)
	p2 = protowire.AppendFixed32(p2, 0xc0490fdb) // -3.1415927
	p2 = protowire.AppendTag(p2, 1, protowire.BytesType)
	p2 = protowire.AppendString(p2, "\u2581héllo")
	m = protowire.AppendTag(m, 7, protowire.StartGroupType)
	m = protowire.AppendTag(m, 1, protowire.VarintType)
	m = protowire.AppendVarint(m, 5)
	m = protowire.AppendTag(m, 7, protowire.EndGroupType)
	m = protowire.AppendTag(m, 1, protowire.BytesType)
	m = protowire.AppendBytes(m, p1)
	m = protowire.AppendTag(m, 50, protowire.BytesType)
	m = protowire.AppendString(m, "ignored")
	m = protowire.AppendTag(m, 1, protowire.BytesType)
	m = protowire.AppendBytes(m, p2)
	var ts []byte
	ts = protowire.AppendTag(ts, 1, protowire.BytesType)
	ts = protowire.AppendString(ts, "input.txt")
	ts = protowire.AppendTag(ts, 4, protowire.VarintType)
	ts = protowire.AppendVarint(ts, 2)
	m = protowire.AppendTag(m, 2, protowire.BytesType)
	m = protowire.AppendBytes(m, ts)
	tok, err := ParseSentencePiece(m)
	require.NoError(t, err)
	require.Equal(t, 2, tok.VocabSize())
	assert.Equal(t, "<unk>", tok.Piece(0))
	assert.True(t, tok.IsUnknown(0), "piece 0 is UNKNOWN, type %v", tok.Type(0))
	assert.Equal(t, float32(0), tok.Score(0))
	assert.Equal(t, "\u2581héllo", tok.Piece(1))
	assert.Equal(t, PieceNormal, tok.Type(1))
	assert.Equal(t, float32(-3.1415927), tok.Score(1))
	assert.Equal(t, 2, tok.TrainerVocabSize, "trainer spec vocab")
	assert.Equal(t, ModelUnigram, tok.ModelType, "trainer spec model type")
}

func TestParseSentencePieceLongPiece(t *testing.T) {
	// The byte tables store a piece's UTF-8 length in an int16: the longest
	// piece is 32767 bytes, one more is refused naming the piece.
	enc := func(p string) []byte {
		var b []byte
		for _, text := range []string{"\u2581a", p} {
			var piece []byte
			piece = protowire.AppendTag(piece, 1, protowire.BytesType)
			piece = protowire.AppendString(piece, text)
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendBytes(b, piece)
		}
		return b
	}
	tok, err := ParseSentencePiece(enc(strings.Repeat("\u00e9", 16383) + "b"))
	require.NoError(t, err)
	luts := NewByteLUTs(tok, 2)
	assert.Equal(t, []int16{1, 32767}, luts.BaseBytes)
	_, err = ParseSentencePiece(enc(strings.Repeat("a", 32768)))
	assert.EqualError(t, err, "piece 1 is 32768 bytes long (at most 32767)")
}
