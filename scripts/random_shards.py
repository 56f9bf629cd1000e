#!/usr/bin/env python3
"""random_shards.py writes token shards of uniformly random tokens in the
FineWeb format of parameter-golf: a header of 256 little-endian int32 (magic
20240520, version 1, the token count, zeros) followed by the tokens as
little-endian uint16. golf (train, eval) and the reference's train_gpt.py
read them alike, so they time both training loops on the same input where
the real shards cannot be downloaded (a GPU machine without a network).
Random tokens train to nothing: use them for timing, never for val_bpb.

    random_shards.py OUT_DIR [--train-shards 2] [--train-tokens 16777216]
                     [--val-tokens 1048577] [--vocab 1024] [--seed 1337]

writes OUT_DIR/fineweb_train_000000.bin ... and OUT_DIR/fineweb_val_000000.bin.
Only the standard library: no numpy needed.
"""
import argparse
import os
import random
import struct
import sys

MAGIC, VERSION, HEADER_INTS = 20240520, 1, 256


def random_tokens(rng: random.Random, n: int, vocab: int) -> bytes:
    """n uniform tokens in [0, vocab) as little-endian uint16 (vocab a power
    of two ≤ 65536): random bytes with the bits above vocab cleared, the low
    byte and the high byte of each token drawn separately."""
    lo = rng.randbytes(n)
    hi = rng.randbytes(n)
    if vocab < 256:
        lo = lo.translate(bytes(b & (vocab - 1) for b in range(256)))
        hi = bytes(n)
    else:
        hi = hi.translate(bytes(b & (vocab // 256 - 1) for b in range(256)))
    out = bytearray(2 * n)
    out[0::2] = lo
    out[1::2] = hi
    return bytes(out)


def write_shard(path: str, tokens: bytes) -> None:
    n = len(tokens) // 2
    header = struct.pack("<%di" % HEADER_INTS, MAGIC, VERSION, n, *([0] * (HEADER_INTS - 3)))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header)
        f.write(tokens)
    os.replace(tmp, path)


def main(argv) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--train-shards", type=int, default=2)
    p.add_argument("--train-tokens", type=int, default=16 << 20, help="tokens per training shard")
    p.add_argument("--val-tokens", type=int, default=(1 << 20) + 1)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--seed", type=int, default=1337)
    a = p.parse_args(argv)
    if a.vocab < 2 or a.vocab > 65536 or a.vocab & (a.vocab - 1):
        p.error("--vocab %d: a power of two from 2 to 65536" % a.vocab)
    if a.train_shards < 1 or a.train_tokens < 2 or a.val_tokens < 2:
        p.error("--train-shards must be ≥ 1, --train-tokens and --val-tokens ≥ 2")
    os.makedirs(a.out_dir, exist_ok=True)
    rng = random.Random(a.seed)
    for i in range(a.train_shards):
        write_shard(os.path.join(a.out_dir, "fineweb_train_%06d.bin" % i), random_tokens(rng, a.train_tokens, a.vocab))
    write_shard(os.path.join(a.out_dir, "fineweb_val_000000.bin"), random_tokens(rng, a.val_tokens, a.vocab))
    print("random_shards: %d train shards of %d tokens and %d validation tokens (vocab %d) in %s"
          % (a.train_shards, a.train_tokens, a.val_tokens, a.vocab, a.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
