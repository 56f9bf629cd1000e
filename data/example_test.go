package data_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/golf-ml/golf/data"
)

// Before the first step a trainer validates both splits in one pass, with a
// bar on a terminal, and keeps the token counts and the fingerprint.
func ExampleValidateShardSets() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	dataPath, _, err := data.ExtractEmbedded(dir) // a trainer passes "": the user cache directory
	if err != nil {
		panic(err)
	}

	progress, stop := data.TerminalProgress(os.Stderr, "validate")
	sets, err := data.ValidateShardSets(context.Background(), []string{
		filepath.Join(dataPath, "fineweb_train_*.bin"),
		filepath.Join(dataPath, "fineweb_val_*.bin"),
	}, 1024, data.ValidateOptions{Progress: progress, CacheDir: dir})
	stop()
	if err != nil {
		panic(err) // names the file; a bad token's id, position and VOCAB_SIZE
	}
	train, val := sets[0], sets[1]
	fmt.Println("train shards:", len(train.Shards), "tokens:", train.Tokens)
	fmt.Println("val tokens:", val.Tokens)
	fmt.Println("fingerprint:", len(train.Fingerprint()), "hex digits")
	// Output:
	// train shards: 1 tokens: 918509
	// val tokens: 55899
	// fingerprint: 64 hex digits
}

// A checkpoint stores the loader's position; a resumed run opens a new
// loader and seeks, and the batches continue as if never interrupted.
func ExampleTokenLoader_Seek() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	dataPath, _, err := data.ExtractEmbedded(dir)
	if err != nil {
		panic(err)
	}
	pattern := filepath.Join(dataPath, "fineweb_train_*.bin")

	loader, err := data.NewTokenLoader(pattern, nil, data.EmbeddedDataset)
	if err != nil {
		panic(err)
	}
	for range 3 {
		if _, _, err := loader.NextBatch(4096, 1024); err != nil {
			panic(err)
		}
	}
	saved, _ := json.Marshal(loader.Position()) // into the checkpoint
	x, _, _ := loader.NextBatch(4096, 1024)

	var pos data.StreamPosition
	if err := json.Unmarshal(saved, &pos); err != nil {
		panic(err)
	}
	resumed, err := data.NewTokenLoader(pattern, nil, data.EmbeddedDataset)
	if err != nil {
		panic(err)
	}
	if err := resumed.Seek(pos); err != nil {
		panic(err) // names what differs: shard count, file name, offset
	}
	rx, _, _ := resumed.NextBatch(4096, 1024)
	fmt.Println(string(saved))
	fmt.Println("same batch:", fmt.Sprint(x) == fmt.Sprint(rx))
	// Output:
	// {"epoch":1,"shard":0,"file":"fineweb_train_000000.bin","offset":12291}
	// same batch: true
}
