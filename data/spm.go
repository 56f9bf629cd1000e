package data

import (
	"fmt"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// PieceType is SentencePiece.Type of sentencepiece_model.proto.
type PieceType int32

// Piece types; a piece without a type field is PieceNormal.
const (
	PieceNormal      PieceType = 1
	PieceUnknown     PieceType = 2
	PieceControl     PieceType = 3
	PieceUserDefined PieceType = 4
	PieceUnused      PieceType = 5
	PieceByte        PieceType = 6
)

func (t PieceType) String() string {
	switch t {
	case PieceNormal:
		return "NORMAL"
	case PieceUnknown:
		return "UNKNOWN"
	case PieceControl:
		return "CONTROL"
	case PieceUserDefined:
		return "USER_DEFINED"
	case PieceUnused:
		return "UNUSED"
	case PieceByte:
		return "BYTE"
	}
	return fmt.Sprintf("PieceType(%d)", int32(t))
}

// ModelType is TrainerSpec.ModelType.
type ModelType int32

// Model types; a trainer spec without the field is ModelUnigram.
const (
	ModelUnigram ModelType = 1
	ModelBPE     ModelType = 2
	ModelWord    ModelType = 3
	ModelChar    ModelType = 4
)

func (t ModelType) String() string {
	switch t {
	case ModelUnigram:
		return "UNIGRAM"
	case ModelBPE:
		return "BPE"
	case ModelWord:
		return "WORD"
	case ModelChar:
		return "CHAR"
	}
	return fmt.Sprintf("ModelType(%d)", int32(t))
}

// Tokenizer is the vocabulary of a SentencePiece model: the pieces with their
// scores and types, indexed by token id, and a few trainer settings. It
// does not encode text; training only needs the pieces for the byte LUTs.
type Tokenizer struct {
	Path   string
	pieces []string
	scores []float32
	types  []PieceType

	TrainerVocabSize int       // trainer_spec.vocab_size (0 when absent)
	ModelType        ModelType // trainer_spec.model_type
	NormalizerName   string    // normalizer_spec.name
}

// Protobuf field numbers of sentencepiece_model.proto.
const (
	fieldModelPieces     = 1
	fieldModelTrainer    = 2
	fieldModelNormalizer = 3

	fieldPiecePiece = 1
	fieldPieceScore = 2
	fieldPieceType  = 3

	fieldTrainerModelType = 3
	fieldTrainerVocabSize = 4

	fieldNormalizerName = 1
)

// LoadSentencePiece reads the SentencePiece model at path, which must end in
// ".model". Anything that does not parse as a ModelProto with at least one
// piece is an error naming the file.
func LoadSentencePiece(path string) (*Tokenizer, error) {
	if !strings.HasSuffix(path, ".model") {
		return nil, fmt.Errorf("TOKENIZER_PATH must point to a SentencePiece .model file: %s", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseSentencePieceFile(path, raw)
}

// parseSentencePieceFile is LoadSentencePiece of the bytes raw read from
// path.
func parseSentencePieceFile(path string, raw []byte) (*Tokenizer, error) {
	tok, err := ParseSentencePiece(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not a SentencePiece model: %w", path, err)
	}
	tok.Path = path
	return tok, nil
}

// ParseSentencePiece parses a serialized ModelProto.
func ParseSentencePiece(raw []byte) (*Tokenizer, error) {
	tok := &Tokenizer{ModelType: ModelUnigram}
	err := walkFields(raw, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			if num <= fieldModelNormalizer {
				return fmt.Errorf("ModelProto field %d has wire type %d, want bytes", num, typ)
			}
			return nil
		}
		switch num {
		case fieldModelPieces:
			return tok.parsePiece(v)
		case fieldModelTrainer:
			return tok.parseTrainerSpec(v)
		case fieldModelNormalizer:
			return tok.parseNormalizerSpec(v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(tok.pieces) == 0 {
		return nil, fmt.Errorf("no pieces")
	}
	return tok, nil
}

// walkFields calls f for each field of the message in b. For a bytes field
// v is its payload; for a varint or fixed field x is its value. Groups and
// unknown fields are skipped.
func walkFields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var (
			v []byte
			x uint64
		)
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b)
			x = uint64(u)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

func (tok *Tokenizer) parsePiece(b []byte) error {
	id := len(tok.pieces)
	piece, score, typ := "", float32(0), PieceNormal
	err := walkFields(b, func(num protowire.Number, wt protowire.Type, v []byte, x uint64) error {
		switch {
		case num == fieldPiecePiece && wt == protowire.BytesType:
			if !utf8.Valid(v) {
				return fmt.Errorf("piece %d is not valid UTF-8", id)
			}
			// The byte tables hold a piece's length in an int16.
			if len(v) > math.MaxInt16 {
				return fmt.Errorf("piece %d is %d bytes long (at most %d)", id, len(v), math.MaxInt16)
			}
			piece = string(v)
		case num == fieldPieceScore && wt == protowire.Fixed32Type:
			score = math.Float32frombits(uint32(x))
		case num == fieldPieceType && wt == protowire.VarintType:
			typ = PieceType(int32(x))
			if typ < PieceNormal || typ > PieceByte {
				return fmt.Errorf("piece %d has invalid type %d", id, int32(x))
			}
		case num <= fieldPieceType:
			return fmt.Errorf("piece %d: field %d has wire type %d", id, num, wt)
		}
		return nil
	})
	if err != nil {
		return err
	}
	tok.pieces = append(tok.pieces, piece)
	tok.scores = append(tok.scores, score)
	tok.types = append(tok.types, typ)
	return nil
}

func (tok *Tokenizer) parseTrainerSpec(b []byte) error {
	return walkFields(b, func(num protowire.Number, wt protowire.Type, _ []byte, x uint64) error {
		if wt != protowire.VarintType {
			return nil
		}
		switch num {
		case fieldTrainerModelType:
			tok.ModelType = ModelType(int32(x))
		case fieldTrainerVocabSize:
			tok.TrainerVocabSize = int(int32(x))
		}
		return nil
	})
}

func (tok *Tokenizer) parseNormalizerSpec(b []byte) error {
	return walkFields(b, func(num protowire.Number, wt protowire.Type, v []byte, _ uint64) error {
		if num == fieldNormalizerName && wt == protowire.BytesType {
			tok.NormalizerName = string(v)
		}
		return nil
	})
}

// VocabSize is the number of pieces (sp.vocab_size()).
func (tok *Tokenizer) VocabSize() int { return len(tok.pieces) }

func (tok *Tokenizer) check(id int) {
	if id < 0 || id >= len(tok.pieces) {
		panic(fmt.Sprintf("data.Tokenizer: token id %d out of range [0, %d)", id, len(tok.pieces)))
	}
}

// Piece is the text of token id, with "▁" (U+2581) standing for a space.
func (tok *Tokenizer) Piece(id int) string { tok.check(id); return tok.pieces[id] }

// Score is the piece's score (log probability for unigram, merge rank for BPE).
func (tok *Tokenizer) Score(id int) float32 { tok.check(id); return tok.scores[id] }

// Type is the piece's type.
func (tok *Tokenizer) Type(id int) PieceType { tok.check(id); return tok.types[id] }

// IsControl reports a CONTROL piece (<s>, </s>, <pad>).
func (tok *Tokenizer) IsControl(id int) bool { return tok.Type(id) == PieceControl }

// IsUnknown reports the UNKNOWN piece (<unk>).
func (tok *Tokenizer) IsUnknown(id int) bool { return tok.Type(id) == PieceUnknown }

// IsUnused reports an UNUSED piece.
func (tok *Tokenizer) IsUnused(id int) bool { return tok.Type(id) == PieceUnused }

// IsByte reports a BYTE fallback piece (<0x00> … <0xFF>).
func (tok *Tokenizer) IsByte(id int) bool { return tok.Type(id) == PieceByte }
