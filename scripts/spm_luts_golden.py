#!/usr/bin/python3
"""Golden values for data/spm.go and data/luts.go from the real sentencepiece library.

Reads data/testdata/fineweb_8192_bpe.model with sentencepiece's own parser and
writes data/testdata/fineweb_8192_luts.json:

  vocab_size                          sp.vocab_size()
  pieces, scores                      sp.id_to_piece(i), sp.get_score(i)
  is_control/is_unknown/is_unused/is_byte   per-id flags (0/1)
  base_bytes, has_leading_space, is_boundary
                                      build_sentencepiece_luts of train_gpt_mlx.py
                                      with vocab_size = sp.vocab_size()
  sample                              a text encoded by sp, the byte count
                                      eval_val gives its targets:
                                      sum(base_bytes[tgt] + (has_leading_space[tgt] & ~is_boundary[prev])),
                                      and the UTF-8 length of sp.decode(ids)
  boundary_sample                     ids with control/unknown tokens between texts,
                                      and their eval_val byte count

Run from the repository root with Debian's python3 (python3-sentencepiece):
  /usr/bin/python3 scripts/spm_luts_golden.py
"""
import json
import pathlib

import numpy as np
import sentencepiece as spm

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = ROOT / "data" / "testdata" / "fineweb_8192_bpe.model"
OUT = ROOT / "data" / "testdata" / "fineweb_8192_luts.json"

SAMPLE_TEXT = (
    "The quick brown fox jumps over the lazy dog.\n"
    "  Two leading spaces, tabs\tand a trailing space \n"
    "Unicode: naïve café, Straße, 東京, Ελληνικά, emoji 🦊🚀, math ∑∫√.\n"
    "Numbers 3.14159 and 1,000,000; code `x[i] += 1`.\n"
)


def byte_luts(sp: spm.SentencePieceProcessor, vocab_size: int):
    """The three val_bpb tables, as build_sentencepiece_luts defines them."""
    n = sp.vocab_size()
    size = max(n, vocab_size)
    base = np.zeros(size, dtype=np.int16)
    space = np.zeros(size, dtype=np.bool_)
    boundary = np.ones(size, dtype=np.bool_)
    for i in range(n):
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            continue
        boundary[i] = False
        if sp.is_byte(i):
            base[i] = 1
            continue
        piece = sp.id_to_piece(i)
        if piece[:1] == "\u2581":
            space[i] = True
            piece = piece[1:]
        base[i] = len(piece.encode("utf-8"))
    return base, space, boundary


def main() -> None:
    sp = spm.SentencePieceProcessor(model_file=str(MODEL))
    n = int(sp.vocab_size())
    base, space, boundary = byte_luts(sp, n)

    ids = np.array(sp.encode(SAMPLE_TEXT), dtype=np.int32)
    prev, tgt = ids[:-1], ids[1:]
    per_token = base[tgt].astype(np.int16) + (space[tgt] & ~boundary[prev]).astype(np.int16)
    sample_bytes = float(per_token.astype(np.float64).sum())

    # Boundary tokens (</s>, <unk>) between texts: a "▁" piece right after
    # one owes no space byte.
    pid = sp.piece_to_id
    joined = (
        [sp.bos_id(), pid("\u2581the")] + sp.encode("quick brown") + [sp.eos_id(), pid("\u2581of")]
        + [sp.unk_id(), pid("\u2581and"), pid("\u2581in"), sp.pad_id(), pid("\u2581to")]
        + sp.encode("fox jumps")
    )
    joined = np.array(joined, dtype=np.int32)
    jprev, jtgt = joined[:-1], joined[1:]
    joined_bytes = float((base[jtgt].astype(np.int16)
                          + (space[jtgt] & ~boundary[jprev]).astype(np.int16)).astype(np.float64).sum())

    golden = {
        "model": MODEL.name,
        "sentencepiece_version": spm.__version__,
        "vocab_size": n,
        "pieces": [sp.id_to_piece(i) for i in range(n)],
        "scores": [float(sp.get_score(i)) for i in range(n)],
        "is_control": [int(sp.is_control(i)) for i in range(n)],
        "is_unknown": [int(sp.is_unknown(i)) for i in range(n)],
        "is_unused": [int(sp.is_unused(i)) for i in range(n)],
        "is_byte": [int(sp.is_byte(i)) for i in range(n)],
        "base_bytes": [int(x) for x in base],
        "has_leading_space": [int(x) for x in space],
        "is_boundary": [int(x) for x in boundary],
        "sample": {
            "text": SAMPLE_TEXT,
            "ids": [int(x) for x in ids],
            "target_bytes": sample_bytes,
            "text_utf8_bytes": len(SAMPLE_TEXT.encode("utf-8")),
            "decoded_utf8_bytes": len(sp.decode([int(x) for x in ids]).encode("utf-8")),
        },
        "boundary_sample": {
            "ids": [int(x) for x in joined],
            "target_bytes": joined_bytes,
        },
    }
    OUT.write_text(json.dumps(golden, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: vocab {n}, sample {len(ids)} ids, {sample_bytes:.0f} target bytes "
          f"(text {len(SAMPLE_TEXT.encode('utf-8'))} bytes)")


if __name__ == "__main__":
    main()
