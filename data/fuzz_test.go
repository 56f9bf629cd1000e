package data

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// The fuzz targets of the data package's parsers. `go test ./data/` runs
// each on its seed corpus, testdata/fuzz/<target>/ (valid inputs taken from
// real files and broken ones), plus the seeds added in code; scripts/fuzz
// runs them for longer. Each target asserts properties of the result, not
// just the absence of a panic: an accepted input satisfies the format's
// invariants and survives a round trip, and a refused one is an error
// that names the file.

// FuzzReadShard feeds arbitrary bytes to the shard reader (readShardFrom,
// the body of ReadShard) and to the streaming validator (scanShard, the
// body of ValidateShards), with an arbitrary VOCAB_SIZE, and checks them
// against each other and the format.
func FuzzReadShard(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, vocabSeed uint32) {
		const name = "fuzz/fineweb_train_000000.bin"
		vocab := int(vocabSeed%70000) + 1 // both sides of 65536
		size := int64(len(raw))
		toks, readErr := readShardFrom(bytes.NewReader(raw), name, size)
		// A small buffer so that the scan crosses buffer boundaries.
		h, maxTok, scanErr := scanShard(bytes.NewReader(raw), name, size, vocab, make([]byte, 38), nil)

		if readErr != nil {
			require.True(t, strings.HasPrefix(readErr.Error(), name+": "), "error does not name the file: %v", readErr)
			// Every format error is found by the header check both share.
			require.EqualError(t, scanErr, readErr.Error(), "ValidateShards must refuse what ReadShard refuses")
			return
		}
		// Accepted: the format holds exactly and the tokens are the bytes.
		require.Equal(t, uint32(ShardMagic), binary.LittleEndian.Uint32(raw[0:]), "accepted magic")
		require.Equal(t, uint32(ShardVersion), binary.LittleEndian.Uint32(raw[4:]), "accepted version")
		n := int(int32(binary.LittleEndian.Uint32(raw[8:])))
		require.Equal(t, n, len(toks), "header count vs returned tokens")
		require.Equal(t, int64(1024+2*n), size, "accepted %d bytes with count %d", size, n)
		for i, tk := range toks {
			if want := binary.LittleEndian.Uint16(raw[1024+2*i:]); tk != want {
				require.Equal(t, want, tk, "token %d differs from its bytes", i)
			}
		}
		// The validator agrees: same count, same largest id, and the first
		// id ≥ vocab (if any) is the one it reports.
		wantMax, firstBad := -1, -1
		for i, tk := range toks {
			wantMax = max(wantMax, int(tk))
			if firstBad < 0 && int(tk) >= vocab {
				firstBad = i
			}
		}
		if firstBad < 0 {
			require.NoError(t, scanErr, "validator")
			require.Equal(t, len(toks), int(h.NumTokens), "validator's count")
			require.Equal(t, wantMax, maxTok, "validator's largest id")
			return
		}
		want := fmt.Sprintf("%s: token id %d at position %d (byte offset %d) is outside VOCAB_SIZE=%d",
			name, toks[firstBad], firstBad, 1024+2*firstBad, vocab)
		require.EqualError(t, scanErr, want, "validator")
	})
}

// encodeModelProto serializes the fields of tok that ParseSentencePiece
// reads, written field by field with protowire (the test's own encoder).
func encodeModelProto(tok *Tokenizer) []byte {
	var b []byte
	for id := range tok.VocabSize() {
		var p []byte
		p = protowire.AppendTag(p, 1, protowire.BytesType)
		p = protowire.AppendString(p, tok.Piece(id))
		p = protowire.AppendTag(p, 2, protowire.Fixed32Type)
		p = protowire.AppendFixed32(p, math.Float32bits(tok.Score(id)))
		p = protowire.AppendTag(p, 3, protowire.VarintType)
		p = protowire.AppendVarint(p, uint64(int64(tok.Type(id))))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, p)
	}
	var ts []byte
	ts = protowire.AppendTag(ts, 3, protowire.VarintType)
	ts = protowire.AppendVarint(ts, uint64(int64(tok.ModelType)))
	ts = protowire.AppendTag(ts, 4, protowire.VarintType)
	ts = protowire.AppendVarint(ts, uint64(int64(int32(tok.TrainerVocabSize))))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, ts)
	var ns []byte
	ns = protowire.AppendTag(ns, 1, protowire.BytesType)
	ns = protowire.AppendString(ns, tok.NormalizerName)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, ns)
}

// FuzzParseSentencePiece feeds arbitrary bytes to the SentencePiece model
// parser. An accepted model has valid pieces, survives a re-encoding, and
// yields byte tables that follow the package doc's rules.
func FuzzParseSentencePiece(f *testing.F) {
	model, err := embedded.ReadFile("embedded/" + embeddedTokenizer)
	require.NoError(f, err)
	f.Add(model)
	f.Fuzz(func(t *testing.T, raw []byte) {
		const name = "fuzz/tokenizer.model"
		tok, err := parseSentencePieceFile(name, raw)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), name+": not a SentencePiece model: "), "error does not name the file: %v", err)
			return
		}
		n := tok.VocabSize()
		require.GreaterOrEqual(t, n, 1, "accepted a model without pieces")
		require.Equal(t, name, tok.Path)
		for id := range n {
			p, typ := tok.Piece(id), tok.Type(id)
			if !utf8.ValidString(p) || typ < PieceNormal || typ > PieceByte || len(p) > math.MaxInt16 {
				require.Failf(t, "accepted an invalid piece", "piece %d: %q... (%d bytes), type %d", id, p[:min(len(p), 40)], len(p), typ)
			}
		}
		again, err := ParseSentencePiece(encodeModelProto(tok))
		require.NoError(t, err, "re-encoded model refused")
		again.Path = tok.Path
		require.Equal(t, tokenizerFields(tok), tokenizerFields(again), "round trip changed the model")

		luts := NewByteLUTs(tok, n+3)
		require.Len(t, luts.BaseBytes, n+3)
		require.Len(t, luts.HasLeadingSpace, n+3)
		require.Len(t, luts.IsBoundary, n+3)
		for id := range n + 3 {
			var base int
			var space, boundary bool
			switch {
			case id >= n:
				boundary = true
			case tok.Type(id) == PieceControl || tok.Type(id) == PieceUnknown || tok.Type(id) == PieceUnused:
				boundary = true
			case tok.Type(id) == PieceByte:
				base = 1
			default:
				p := tok.Piece(id)
				space = strings.HasPrefix(p, "\u2581")
				base = len(p)
				if space {
					base -= len("\u2581")
				}
			}
			if int(luts.BaseBytes[id]) != base || luts.HasLeadingSpace[id] != space || luts.IsBoundary[id] != boundary {
				require.Failf(t, "byte tables differ from the rules", "token %d: tables (%d, %v, %v), want (%d, %v, %v)", id,
					luts.BaseBytes[id], luts.HasLeadingSpace[id], luts.IsBoundary[id], base, space, boundary)
			}
		}
	})
}

// tokenizerFields is a comparable view of a Tokenizer (scores by bits, so
// NaN round-trips compare equal).
func tokenizerFields(tok *Tokenizer) map[string]any {
	scores := make([]uint32, tok.VocabSize())
	for i := range scores {
		scores[i] = math.Float32bits(tok.Score(i))
	}
	return map[string]any{
		"pieces": tok.pieces, "scores": scores, "types": tok.types,
		"trainer_vocab": tok.TrainerVocabSize, "model_type": tok.ModelType, "normalizer": tok.NormalizerName,
	}
}

// FuzzManifest feeds arbitrary bytes to the manifest parser. An accepted
// manifest survives a JSON round trip; its counts are exact non-negative
// integers or errors; its digests are 64 lowercase hex digits under
// relative paths; and no artifact path it names maps outside the root.
func FuzzManifest(f *testing.F) {
	embeddedManifest, err := embedded.ReadFile("embedded/manifest.json")
	require.NoError(f, err)
	f.Add(embeddedManifest)
	f.Add([]byte(testManifest))
	f.Fuzz(func(t *testing.T, raw []byte) {
		const name = "fuzz/manifest.json"
		m, err := parseManifest(name, raw)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), name+": invalid manifest: "), "error does not name the file: %v", err)
			return
		}
		js, err := json.Marshal(m)
		require.NoError(t, err, "accepted manifest does not marshal")
		again, err := parseManifest(name, js)
		require.NoError(t, err, "round trip")
		require.Equal(t, m, again, "round trip")
		for k, v := range m.SHA256 {
			b, err := hex.DecodeString(v)
			require.NoError(t, err, "digest %q of %q", v, k)
			require.Len(t, b, 32, "digest %q of %q", v, k)
			require.Equal(t, strings.ToLower(v), v, "digest of %q", k)
			require.True(t, fs.ValidPath(k) && k != ".", "digest key %q", k)
		}
		for i := range m.Datasets {
			d := &m.Datasets[i]
			for _, key := range []string{"files_train", "files_val"} {
				v, ok, err := d.stat(key)
				if err != nil || !ok {
					continue
				}
				require.GreaterOrEqual(t, v, 0, "%s %s accepted", d.Name, key)
				if x, isFloat := d.Stats[key].(float64); isFloat {
					require.Equal(t, x, float64(v), "%s %s read as %d", d.Name, key, v)
				}
			}
			m.dataset(d.Name)
			m.tokenizer(d.TokenizerName)
		}
		fe := &fetcher{FetchOptions: FetchOptions{LocalRoot: "root"}, prefix: "datasets"}
		for _, tk := range m.Tokenizers {
			for _, p := range []string{tk.ModelPath, tk.VocabPath, tk.Path} {
				loc, err := fe.localPath(fe.remote(p))
				if err != nil {
					continue
				}
				rel, err := filepath.Rel("root", loc)
				require.NoError(t, err, "artifact %q maps to %q", p, loc)
				require.False(t, rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel), "artifact %q maps to %q, outside the root", p, loc)
			}
			// path.Base is the oracle, but for paths of slashes alone (or
			// none), which it names "/" or "." and pathName "".
			want := path.Base(tk.ModelPath)
			if strings.Trim(tk.ModelPath, "/") == "" {
				want = ""
			}
			require.Equal(t, want, pathName(tk.ModelPath), "file name of %q", tk.ModelPath)
		}
	})
}

// readCorpusFile decodes a seed file of the `go test fuzz v1` format for
// the argument types used here ([]byte and uint32).
func readCorpusFile(t *testing.T, path string) []any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Equal(t, "go test fuzz v1", lines[0], path)
	var args []any
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "[]byte(") && strings.HasSuffix(l, ")"):
			s, err := strconv.Unquote(l[len("[]byte(") : len(l)-1])
			require.NoError(t, err, "%s: %s", path, l)
			args = append(args, []byte(s))
		case strings.HasPrefix(l, "uint32(") && strings.HasSuffix(l, ")"):
			n, err := strconv.ParseUint(l[len("uint32("):len(l)-1], 0, 32)
			require.NoError(t, err, "%s: %s", path, l)
			args = append(args, uint32(n))
		default:
			require.Failf(t, "unexpected line in a seed file", "%s: %q", path, l)
		}
	}
	return args
}

// TestFuzzSeedCorpora keeps the seed corpora honest: a seed named valid_*
// is accepted by its parser and every other named seed is refused, so the
// corpora exercise both sides. Inputs the fuzzer found (named by their
// hash) are only run by the fuzz targets themselves.
func TestFuzzSeedCorpora(t *testing.T) {
	accepts := map[string]func(args []any) bool{
		"FuzzReadShard": func(args []any) bool {
			raw := args[0].([]byte)
			_, err := readShardFrom(bytes.NewReader(raw), "seed", int64(len(raw)))
			return err == nil
		},
		"FuzzParseSentencePiece": func(args []any) bool {
			_, err := ParseSentencePiece(args[0].([]byte))
			return err == nil
		},
		// A manifest is valid when it parses, its shard counts read, and
		// its artifact paths stay inside the root.
		"FuzzManifest": func(args []any) bool {
			m, err := parseManifest("seed", args[0].([]byte))
			if err != nil {
				return false
			}
			for i := range m.Datasets {
				for _, k := range []string{"files_train", "files_val"} {
					if _, _, err := m.Datasets[i].stat(k); err != nil {
						return false
					}
				}
			}
			fe := &fetcher{FetchOptions: FetchOptions{LocalRoot: "root"}, prefix: "datasets"}
			for _, tk := range m.Tokenizers {
				for _, p := range []string{tk.ModelPath, tk.VocabPath, tk.Path} {
					if _, err := fe.localPath(fe.remote(p)); p != "" && err != nil {
						return false
					}
				}
			}
			return true
		},
	}
	hashName := regexp.MustCompile(`^[0-9a-f]{16}$`)
	for target, accept := range accepts {
		entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", target))
		require.NoError(t, err)
		named := 0
		for _, e := range entries {
			if hashName.MatchString(e.Name()) {
				continue
			}
			named++
			args := readCorpusFile(t, filepath.Join("testdata", "fuzz", target, e.Name()))
			assert.Equal(t, strings.HasPrefix(e.Name(), "valid_"), accept(args), "%s/%s", target, e.Name())
		}
		assert.GreaterOrEqual(t, named, 8, "%s has few named seeds", target)
	}
}
