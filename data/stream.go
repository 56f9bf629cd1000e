package data

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// globSorted is Python's sorted(glob.glob(pattern)): the matches in byte
// order of their names, where a wildcard never matches a leading "." of a
// file name unless the pattern's name starts with ".".
func globSorted(pattern string) ([]string, error) {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("bad file pattern %q: %w", pattern, err)
	}
	if !strings.HasPrefix(filepath.Base(pattern), ".") {
		matches = slices.DeleteFunc(matches, func(m string) bool {
			return strings.HasPrefix(filepath.Base(m), ".")
		})
	}
	slices.Sort(matches)
	return matches, nil
}

// TokenStream reads the shards matching a pattern, in sorted order, as one
// endless stream of tokens, wrapping to the first shard after the last.
// It holds one shard in memory at a time.
type TokenStream struct {
	files       []string
	epoch       int // 1 while the first pass over the shards lasts
	fileIdx     int
	logf        func(string)
	datasetName string
	tokens      []uint16 // the current shard
	pos         int      // next unread token of tokens
}

// NewTokenStream opens the stream over sorted(glob(pattern)) and reads the
// first shard. log receives the epoch WARNING line and may be nil;
// datasetName only appears in that line.
func NewTokenStream(pattern string, log func(string), datasetName string) (*TokenStream, error) {
	files, err := globSorted(pattern)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("No files found for pattern: %s", pattern)
	}
	tokens, err := ReadShard(files[0])
	if err != nil {
		return nil, err
	}
	return &TokenStream{files: files, epoch: 1, logf: log, datasetName: datasetName, tokens: tokens}, nil
}

// Files is the sorted list of shards the stream cycles through.
func (s *TokenStream) Files() []string { return slices.Clone(s.files) }

// Epoch is the number of the current pass over the shards, from 1.
func (s *TokenStream) Epoch() int { return s.epoch }

// nextFile moves to the next shard, starting a new epoch (and logging it)
// when it wraps to the first.
func (s *TokenStream) nextFile() error {
	s.fileIdx = (s.fileIdx + 1) % len(s.files)
	if s.fileIdx == 0 {
		s.epoch++
		if s.logf != nil {
			s.logf(fmt.Sprintf("WARNING: starting epoch:%d dataset:%s train_shards:%d",
				s.epoch, s.datasetName, len(s.files)))
		}
	}
	tokens, err := ReadShard(s.files[s.fileIdx])
	if err != nil {
		return err
	}
	s.tokens, s.pos = tokens, 0
	return nil
}

// StreamPosition is where a TokenStream stands, enough to continue the
// stream exactly: the next token is token Offset of shard Files()[Shard]
// in pass Epoch. Offset may equal the shard's length: the stream then moves
// to the next shard (and, past the last, to the next epoch, logging the
// WARNING line) when the next token is needed, as an unbroken stream does.
// It marshals to JSON for a checkpoint.
type StreamPosition struct {
	Epoch  int    `json:"epoch"`  // from 1
	Shard  int    `json:"shard"`  // index into Files()
	File   string `json:"file"`   // base name of Files()[Shard], checked by Seek
	Offset int64  `json:"offset"` // tokens of that shard already taken
}

// Position is the stream's current position; Seek(Position()) on a stream
// over the same shards continues it token for token.
func (s *TokenStream) Position() StreamPosition {
	return StreamPosition{Epoch: s.epoch, Shard: s.fileIdx, File: filepath.Base(s.files[s.fileIdx]), Offset: int64(s.pos)}
}

// Seek moves the stream to p, reading shard p.Shard. It is an error, naming
// what differs, when p does not fit the stream's shards: a shard index out
// of range, a different file name at that index, an offset past the
// shard's end, or an epoch below 1. On error the stream is unchanged.
func (s *TokenStream) Seek(p StreamPosition) error {
	if p.Epoch < 1 {
		return fmt.Errorf("data stream position: epoch %d, want ≥ 1", p.Epoch)
	}
	if p.Shard < 0 || p.Shard >= len(s.files) {
		return fmt.Errorf("data stream position: shard %d, but the stream has %d shards (%s ...)", p.Shard, len(s.files), s.files[0])
	}
	if base := filepath.Base(s.files[p.Shard]); base != p.File {
		return fmt.Errorf("data stream position: shard %d is %s, want %s", p.Shard, s.files[p.Shard], p.File)
	}
	tokens := s.tokens
	if p.Shard != s.fileIdx {
		var err error
		if tokens, err = ReadShard(s.files[p.Shard]); err != nil {
			return err
		}
	}
	if p.Offset < 0 || p.Offset > int64(len(tokens)) {
		return fmt.Errorf("data stream position: offset %d in %s, which has %d tokens", p.Offset, s.files[p.Shard], len(tokens))
	}
	s.epoch, s.fileIdx, s.tokens, s.pos = p.Epoch, p.Shard, tokens, int(p.Offset)
	return nil
}

// Take returns the next n tokens of the stream, crossing shard (and epoch)
// boundaries as needed. The result is a fresh slice.
func (s *TokenStream) Take(n int) ([]int32, error) {
	out := make([]int32, 0, max(n, 0))
	emptyShards := 0 // consecutive shards that yielded nothing
	for len(out) < n {
		if s.pos >= len(s.tokens) {
			if emptyShards > len(s.files) {
				return nil, fmt.Errorf("every shard of %s is empty", strings.Join(s.files, ", "))
			}
			if err := s.nextFile(); err != nil {
				return nil, err
			}
			emptyShards++
			continue
		}
		k := min(n-len(out), len(s.tokens)-s.pos)
		for _, t := range s.tokens[s.pos : s.pos+k] {
			out = append(out, int32(t))
		}
		s.pos += k
		emptyShards = 0
	}
	return out, nil
}

// TokenLoader cuts the token stream into (input, target) batches.
type TokenLoader struct {
	stream *TokenStream
}

// NewTokenLoader opens a TokenStream over pattern (see NewTokenStream).
func NewTokenLoader(pattern string, log func(string), datasetName string) (*TokenLoader, error) {
	s, err := NewTokenStream(pattern, log, datasetName)
	if err != nil {
		return nil, err
	}
	return &TokenLoader{stream: s}, nil
}

// Stream is the loader's token stream.
func (l *TokenLoader) Stream() *TokenStream { return l.stream }

// Position is the position of the loader's stream (TokenStream.Position).
// Batches consume whole token runs, so between NextBatch calls it is the
// start of the next batch.
func (l *TokenLoader) Position() StreamPosition { return l.stream.Position() }

// Seek moves the loader's stream to p (TokenStream.Seek): the next batch is
// the one that followed p in the run that recorded it.
func (l *TokenLoader) Seek(p StreamPosition) error { return l.stream.Seek(p) }

// NextBatch takes usable+1 tokens, usable = ⌊batchTokens/seqLen⌋·seqLen, and
// returns the inputs x = chunk[0:usable] and the targets y =
// chunk[1:usable+1], each (usable/seqLen, seqLen) row-major, in separate
// slices. A budget smaller than one sequence is an error.
func (l *TokenLoader) NextBatch(batchTokens, seqLen int) (x, y []int32, err error) {
	if seqLen <= 0 {
		return nil, nil, fmt.Errorf("seq_len must be positive, got %d", seqLen)
	}
	usable := (batchTokens / seqLen) * seqLen
	if usable <= 0 {
		return nil, nil, fmt.Errorf("token budget too small for seq_len=%d (batch tokens %d)", seqLen, batchTokens)
	}
	chunk, err := l.stream.Take(usable + 1)
	if err != nil {
		return nil, nil, err
	}
	x = chunk[:usable:usable]   // (B, T)
	y = slices.Clone(chunk[1:]) // (B, T)
	return x, y, nil
}

// TokenChunks splits a token budget into chunks of whole sequences of at
// most max(⌊maxChunkTokens/seqLen⌋·seqLen, seqLen) tokens (token_chunks):
// the budget is first cut to ⌊totalTokens/seqLen⌋·seqLen, which must be
// positive.
func TokenChunks(totalTokens, seqLen, maxChunkTokens int) ([]int, error) {
	if seqLen <= 0 {
		return nil, fmt.Errorf("seq_len must be positive, got %d", seqLen)
	}
	usableTotal := (totalTokens / seqLen) * seqLen
	if usableTotal <= 0 {
		return nil, fmt.Errorf("token budget too small for seq_len=%d (total tokens %d)", seqLen, totalTokens)
	}
	usableChunk := max((maxChunkTokens/seqLen)*seqLen, seqLen)
	var chunks []int
	for remaining := usableTotal; remaining > 0; {
		c := min(remaining, usableChunk)
		chunks = append(chunks, c)
		remaining -= c
	}
	return chunks, nil
}
