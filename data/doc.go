// Package data reads and fetches what training consumes: token shards, the
// training token stream and its batch loader, the validation tokens, the
// dataset manifest, the SentencePiece tokenizer and the byte lookup tables
// behind val_bpb. It mirrors the SHARD FORMAT and TOKEN STREAMING sections
// of train_gpt_mlx.py and the downloader data/cached_challenge_fineweb.py.
//
// # Shard format (.bin)
//
// A shard is a little-endian file of a 256-int32 header followed by the
// tokens as uint16:
//
//	offset  size        field
//	0       4           int32 magic   = 20240520
//	4       4           int32 version = 1
//	8       4           int32 token count N
//	12      1012        int32 × 253, reserved (zero)
//	1024    2·N         uint16 × N, the tokens
//
// The file size must be exactly 1024 + 2·N bytes. Shards are named
// fineweb_train_%06d.bin and fineweb_val_%06d.bin; globs are sorted by name,
// so shard order is the order of the numbers.
//
// # Token stream
//
// Training reads the sorted train shards one after another as one endless
// stream; after the last shard it wraps to the first and logs
//
//	WARNING: starting epoch:{epoch} dataset:{name} train_shards:{n}
//
// A batch of B·T tokens takes B·T+1 tokens from the stream: inputs are the
// first B·T, targets the last B·T (shifted by one), both (B, T) row-major.
// Consecutive batches do not overlap: the extra token is consumed.
//
// The validation set is every fineweb_val_* shard concatenated and trimmed to
// ⌊(len−1)/T⌋·T + 1 tokens.
//
// # Local layout and manifest
//
//	<root>/manifest.json
//	<root>/datasets/<dataset>/fineweb_{val,train}_%06d.bin
//	<root>/tokenizers/<tokenizer files>
//
// where <dataset> is fineweb10B_<variant> (fineweb10B_sp1024,
// fineweb10B_byte260, ...). manifest.json is JSON of the form
//
//	{
//	  "datasets": [{"name": "fineweb10B_sp1024", "tokenizer_name": "sp_bpe_1024",
//	                "stats": {"files_train": 195, "files_val": 1, ...}, ...}],
//	  "tokenizers": [{"name": "sp_bpe_1024", "model_path": "tokenizers/fineweb_1024_bpe.model",
//	                  "vocab_path": "tokenizers/fineweb_1024_bpe.vocab", ...}]
//	}
//
// Training finds the manifest two directories above the dataset directory
// and refuses a tokenizer whose file name differs from the dataset's
// tokenizer entry (model_path, else path), or more train shards than
// files_train.
//
// The manifest may also carry digests, an extension the reference export
// does not write (its only digest, docs_sha256 in
// docs_selected.source_manifest.json, is not defined as a digest of a file
// and is not checked):
//
//	"sha256": {"datasets/fineweb10B_sp1024/fineweb_val_000000.bin": "<64 hex>",
//	           "tokenizers/fineweb_1024_bpe.model": "<64 hex>", ...}
//
// keyed by the path under the root. `golf data fetch` checks every file it
// names: a download whose digest differs is refused, and a local file is
// kept only when its digest matches.
//
// # Validation before training
//
// ValidateShardSets reads every train and validation shard before the
// first step (header, size, every token id < VOCAB_SIZE), in parallel and
// streaming, and remembers shards that passed in CacheDir() so an
// unchanged data set is not read again (see ValidateShardSets for the
// cache key). TokenStream.Position and Seek let a resumed run continue the
// token stream exactly.
//
// # Remote layout
//
// The files are published in a Hugging Face dataset repository (default
// willdepueoai/parameter-golf, env MATCHED_FINEWEB_REPO_ID) under a root
// prefix (default "datasets", env MATCHED_FINEWEB_REMOTE_ROOT_PREFIX):
//
//	<prefix>/manifest.json
//	<prefix>/datasets/<dataset>/fineweb_{val,train}_%06d.bin
//	<prefix>/<tokenizer artifact path from the manifest>
//	<prefix>/docs_selected.jsonl, <prefix>/docs_selected.source_manifest.json
//
// each at https://huggingface.co/datasets/<repo>/resolve/main/<remote path>.
// A remote path maps to the local root by dropping its first component when
// that component equals the prefix.
//
// Fetch never hangs on a stalled server. Each attempt of a request (and
// each redirect) must have its connection, response headers and first
// body byte within FirstByteTimeout (15 s); each attempt at manifest.json
// must be complete, redirects included, within ManifestTimeout (30 s);
// a body that receives nothing for IdleTimeout (60 s) fails. The error
// names the limit, the URL and the file:
//
//	GET <url>/manifest.json (<root>/manifest.json): no response headers within 15s (first-byte timeout) (after 6 attempts)
//
// Connection errors, these timeouts, 429 and 5xx are retried with
// exponential backoff (1 s doubling to 30 s, 5 retries); a transfer cut
// off midway is resumed from its .part with a Range request. A server
// that accepts connections and never answers therefore fails the fetch
// after about 2 minutes (FetchOptions.UnansweredLimit: 6 × 15 s + 31 s
// of backoff).
//
// # Embedded data set
//
// ExtractEmbedded unpacks the data set built into the binary into
// CacheDir()/embedded-<hash>, verifies it by SHA-256 on every start and
// replaces it whole (temporary directory, then rename) when it differs.
//
// # SentencePiece model (.model)
//
// A serialized protobuf ModelProto. The fields read here:
//
//	ModelProto       1: repeated SentencePiece pieces
//	                 2: TrainerSpec trainer_spec
//	                 3: NormalizerSpec normalizer_spec
//	SentencePiece    1: string piece   2: float score (fixed32)
//	                 3: enum type (1 NORMAL default, 2 UNKNOWN, 3 CONTROL,
//	                    4 USER_DEFINED, 5 UNUSED, 6 BYTE)
//	TrainerSpec      3: enum model_type (1 UNIGRAM default, 2 BPE, 3 WORD, 4 CHAR)
//	                 4: int32 vocab_size
//	NormalizerSpec   1: string name
//
// A piece's id is its index in pieces. Every other field is skipped.
//
// # Byte lookup tables (val_bpb)
//
// For each token id t of a table of max(pieces, VOCAB_SIZE) entries:
//
//	base_bytes[t]        UTF-8 length of the piece without a leading "▁"
//	                     (1 for byte pieces, 0 for control/unknown/unused
//	                     and ids past the tokenizer)
//	has_leading_space[t] the piece starts with "▁" (U+2581)
//	is_boundary[t]       control, unknown, unused, or past the tokenizer
//
// and the byte count of a target t following a token p is
//
//	base_bytes[t] + (has_leading_space[t] ∧ ¬is_boundary[p])
//
// val_bpb = (val_loss / ln 2) · tokens / Σ bytes.
package data
