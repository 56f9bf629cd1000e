package data

import (
	"fmt"
	"strings"
)

// spaceMark is SentencePiece's whitespace symbol "▁" (U+2581).
const spaceMark = "\u2581"

// ByteLUTs are the per-token tables val_bpb counts bytes with (see the
// package doc). All three have the same length, max(tokenizer vocab,
// VOCAB_SIZE).
type ByteLUTs struct {
	BaseBytes       []int16 // (V,) UTF-8 bytes of the piece without a leading "▁"
	HasLeadingSpace []bool  // (V,) the piece starts with "▁"
	IsBoundary      []bool  // (V,) control/unknown/unused/absent: no space is owed after it
}

// BuildLUTs builds the byte tables of tok for a model vocabulary of
// vocabSize (build_sentencepiece_luts). The tables have
// max(tok.VocabSize(), vocabSize) entries; for each id t of the tokenizer:
//
//	control, unknown, unused:  base 0, no space, boundary
//	byte:                      base 1, no space
//	otherwise:                 base len(utf8(piece minus one leading "▁")),
//	                           space = piece starts with "▁"
//
// and ids past the tokenizer are base 0, no space, boundary.
func BuildLUTs(tok *Tokenizer, vocabSize int) (baseBytes []int16, hasLeadingSpace []bool, isBoundary []bool) {
	n := tok.VocabSize()
	size := max(n, vocabSize)
	baseBytes = make([]int16, size)      // (V,)
	hasLeadingSpace = make([]bool, size) // (V,)
	isBoundary = make([]bool, size)      // (V,)
	for id := range size {
		isBoundary[id] = true
	}
	for id := range n {
		if tok.IsControl(id) || tok.IsUnknown(id) || tok.IsUnused(id) {
			continue
		}
		isBoundary[id] = false
		if tok.IsByte(id) {
			baseBytes[id] = 1
			continue
		}
		piece := tok.Piece(id)
		if rest, ok := strings.CutPrefix(piece, spaceMark); ok {
			hasLeadingSpace[id] = true
			piece = rest
		}
		baseBytes[id] = int16(len(piece))
	}
	return baseBytes, hasLeadingSpace, isBoundary
}

// NewByteLUTs is BuildLUTs gathered into a ByteLUTs.
func NewByteLUTs(tok *Tokenizer, vocabSize int) ByteLUTs {
	b, s, e := BuildLUTs(tok, vocabSize)
	return ByteLUTs{BaseBytes: b, HasLeadingSpace: s, IsBoundary: e}
}

// BytesForTargets is the number of UTF-8 bytes the targets tgt stand for,
// each following the token at the same index of prev (eval_val):
//
//	Σ_i base_bytes[tgt_i] + (has_leading_space[tgt_i] ∧ ¬is_boundary[prev_i])
//
// prev and tgt are (N,) token ids; an id outside the tables panics.
func BytesForTargets(prev, tgt []int32, luts ByteLUTs) float64 {
	if len(prev) != len(tgt) {
		panic(fmt.Sprintf("data.BytesForTargets: len(prev)=%d != len(tgt)=%d", len(prev), len(tgt)))
	}
	v := int32(len(luts.BaseBytes))
	if len(luts.HasLeadingSpace) != int(v) || len(luts.IsBoundary) != int(v) {
		panic(fmt.Sprintf("data.BytesForTargets: table lengths %d, %d, %d differ",
			v, len(luts.HasLeadingSpace), len(luts.IsBoundary)))
	}
	var total int64
	for i, t := range tgt {
		p := prev[i]
		if t < 0 || t >= v || p < 0 || p >= v {
			panic(fmt.Sprintf("data.BytesForTargets: token id (prev %d, target %d) at %d outside the tables [0, %d)", p, t, i, v))
		}
		total += int64(luts.BaseBytes[t])
		if luts.HasLeadingSpace[t] && !luts.IsBoundary[p] {
			total++
		}
	}
	return float64(total)
}
