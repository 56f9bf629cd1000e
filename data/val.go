package data

import "fmt"

// LoadValidationTokens concatenates the shards of sorted(glob(pattern)) and
// trims them to usable+1 tokens, usable = ⌊(len−1)/seqLen⌋·seqLen, so the
// split holds whole (input, target) sequences (load_validation_tokens).
// A split with no full sequence is an error.
func LoadValidationTokens(pattern string, seqLen int) ([]int32, error) {
	if seqLen <= 0 {
		return nil, fmt.Errorf("TRAIN_SEQ_LEN must be positive, got %d", seqLen)
	}
	files, err := globSorted(pattern)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("No files found for pattern: %s", pattern)
	}
	shards := make([][]uint16, len(files))
	total := 0
	for i, f := range files {
		if shards[i], err = ReadShard(f); err != nil {
			return nil, err
		}
		total += len(shards[i])
	}
	usable := 0
	if total > 0 {
		usable = ((total - 1) / seqLen) * seqLen
	}
	if usable <= 0 {
		return nil, fmt.Errorf("Validation split is too short for TRAIN_SEQ_LEN=%d (%s: %d tokens)", seqLen, pattern, total)
	}
	tokens := make([]int32, 0, usable+1)
	for _, shard := range shards {
		shard = shard[:min(len(shard), usable+1-len(tokens))]
		for _, t := range shard {
			tokens = append(tokens, int32(t))
		}
	}
	return tokens, nil
}
