package dist

import "fmt"

// MicrobatchesPerRank is train_gpt.py's rule: WORLD_SIZE must divide 8, and
// each rank accumulates the gradients of 8 / WORLD_SIZE microbatches per
// step, so that one step sees 8 microbatches whatever the world size.
func MicrobatchesPerRank(worldSize int) (int, error) {
	if worldSize <= 0 {
		return 0, fmt.Errorf("dist: WORLD_SIZE=%d must be positive", worldSize)
	}
	if 8%worldSize != 0 {
		return 0, fmt.Errorf("dist: WORLD_SIZE=%d must divide 8 so grad_accum_steps stays integral", worldSize)
	}
	return 8 / worldSize, nil
}

// Span is rank's share of one call of train_gpt.py's
// DistributedTokenLoader.next_batch, as offsets into the tokens that call
// takes from the stream.
//
// globalTokens is what one call covers across all ranks: the reference's
// global_tokens // grad_accum_steps (TRAIN_BATCH_TOKENS over the
// microbatches per rank). The reference gives each rank
// L = globalTokens / size input tokens (integer division, as its
// global_tokens // (world_size * grad_accum_steps)) and a span of L + 1
// tokens, the extra one only for the shifted target: it takes a chunk of
// size * (L + 1) tokens (Chunk) from the stream, and rank r's span is
// chunk[r*(L+1) : (r+1)*(L+1)], its inputs the span's first L tokens and
// its targets its last L. So the spans are disjoint, no rank's last token
// is another's first input, and the stream moves on by Chunk per call
// (the reference then reshapes the L inputs into rows of TRAIN_SEQ_LEN, so
// L must be a multiple of it; that check is the caller's).
//
// The order of the spans is the same whatever the world size: one rank
// with 8 microbatches reads, one call after another, the very spans that 8
// ranks with one microbatch read at once (and rank r of size ranks reads,
// at its microbatch m, span m*size + r of the one-rank order), so a step
// sees the same tokens on any world size that divides 8.
func Span(globalTokens, rank, size int) (start, n int) {
	l := globalTokens / size
	return rank * (l + 1), l + 1
}

// Chunk is how many tokens one call of the loader takes from the stream
// for all size ranks together: size * (globalTokens/size + 1).
func Chunk(globalTokens, size int) int {
	return size * (globalTokens/size + 1)
}
