#!/usr/bin/python3
"""Golden values for artifact.Quantize / artifact.Dequantize.

An independent numpy implementation of train_gpt_mlx.py's
quantize_state_dict_int8 / dequantize_state_dict_int8 (QUANTIZATION section)
run on a fixed set of tensors. Writes, under artifact/testdata/:

  quant_golden_in.npz   the input tensors, in order (bfloat16 as '|V2' bits)
  quant_golden_out.npz  quantized/<name>, scales/<name>, passthrough/<name>,
                        clip_abs/<name> (the float32 clip value(s))
  quant_golden.json     order, input dtypes, keep-float32 patterns, the
                        reference's dtypes/qmeta/passthrough_orig_dtypes dicts,
                        stats, and per tensor the dequantized dtype, shape,
                        CRC-32 of its float32 (int32) bytes and its first
                        four elements' bits

Arithmetic follows numpy >= 2 for float32 data: np.quantile casts a Python
float q to float32 and interpolates in float32, and every later step stays
float32. numpy 1.x interpolated the quantile in float64; on numpy < 2 the
quantile below is implemented explicitly (sort, h = (n-1)*q, lerp exactly as
numpy's _lerp) and checked against np.quantile to within float32 rounding;
on numpy >= 2 it must equal np.quantile bit for bit.

Run: /usr/bin/python3 scripts/quant_golden.py   (from the repository root)
"""
import json
import os
import sys
import zlib

import numpy as np

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "artifact", "testdata")

# The reference's constants.
KEEP_FLOAT_MAX_NUMEL = 65_536
CLIP_PERCENTILE = 99.99984
CLIP_Q = CLIP_PERCENTILE / 100.0
KEEP_FLOAT32_PATTERNS = (
    "attn_scale,attn_scales,mlp_scale,mlp_scales,resid_mix,resid_mixes,q_gain,skip_weight,skip_weights".split(",")
)
NUMPY2 = int(np.__version__.split(".")[0]) >= 2
F32 = np.float32


def round_bf16(x):
    """float32 -> nearest bfloat16 (ties to even), widened back to float32."""
    u = np.ascontiguousarray(x, dtype=F32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    return (u.astype(np.uint32) << 16).view(F32)


def bf16_bits(x):
    return (np.ascontiguousarray(x, dtype=F32).view(np.uint32) >> 16).astype(np.uint16)


def quantile_f32(a, axis=None):
    """np.quantile(a, CLIP_Q, axis) for float32 a, as numpy >= 2 computes it."""
    q = F32(CLIP_Q)
    if axis is None:
        s = np.sort(a.reshape(-1))[None, :]
    else:
        s = np.sort(a, axis=1)
    n = s.shape[1]
    h = F32(n - 1) * q
    if h >= n - 1:
        r = s[:, -1]
    else:
        lo = np.floor(h)
        g = F32(h - lo)
        i = int(lo)
        a0, b0 = s[:, i], s[:, i + 1]
        d = b0 - a0
        r = b0 - d * (F32(1) - g) if g >= 0.5 else a0 + d * g
    assert r.dtype == F32
    if NUMPY2:
        ref = np.quantile(a, CLIP_Q, axis=axis)
        assert np.array_equal(np.asarray(ref, dtype=F32).reshape(-1), r), "explicit quantile != np.quantile"
    else:
        # numpy 1.x: h in float64 and a float64 lerp. The interpolation
        # weights differ by at most ulp(h) + (n-1)|q64 - q32|.
        ref = np.asarray(np.quantile(a, CLIP_Q, axis=axis), dtype=np.float64).reshape(-1)
        dg = float(np.spacing(F32(n - 1))) + (n - 1) * abs(CLIP_Q - float(q))
        span = (s[:, -1] - s[:, 0]).astype(np.float64)
        tol = span * dg + 2 * np.spacing(np.maximum(np.abs(r), F32(1e-30))).astype(np.float64)
        assert np.all(np.abs(ref - r.astype(np.float64)) <= tol), "explicit quantile far from np.quantile"
    return r if axis is not None else r[0]


def quantize_float(f32):
    """quantize_float_array: (q int8, scale, clip_abs float32)."""
    if f32.ndim == 2:
        clip_abs = quantile_f32(np.abs(f32), axis=1)
        clipped = np.clip(f32, -clip_abs[:, None], clip_abs[:, None])
        scale = np.maximum(clip_abs / F32(127.0), F32(1.0 / 127.0)).astype(F32)
        q = np.clip(np.round(clipped / scale[:, None]), -127, 127).astype(np.int8)
        assert clipped.dtype == F32 and scale.dtype == F32
        return q, scale.astype(np.float16), clip_abs
    clip_abs = float(quantile_f32(np.abs(f32))) if f32.size else 0.0
    scale = np.array(clip_abs / 127.0 if clip_abs > 0.0 else 1.0, dtype=F32)
    x = np.clip(f32, F32(-clip_abs), F32(clip_abs)) / scale
    assert x.dtype == F32
    q = np.clip(np.round(x), -127, 127).astype(np.int8)
    return q, scale, np.array(clip_abs, dtype=F32)


def numpy1_codes(f32):
    """int8 codes as numpy 1.x computes them (float64 quantile), for the report."""
    if f32.ndim == 2:
        clip_abs = np.quantile(np.abs(f32), CLIP_Q, axis=1)
        clipped = np.clip(f32, -clip_abs[:, None], clip_abs[:, None])
        scale = np.maximum(clip_abs / 127.0, 1.0 / 127.0).astype(F32)
        return np.clip(np.round(clipped / scale[:, None]), -127, 127).astype(np.int8)
    clip_abs = float(np.quantile(np.abs(f32).reshape(-1), CLIP_Q))
    scale = np.array(clip_abs / 127.0 if clip_abs > 0.0 else 1.0, dtype=F32)
    return np.clip(np.round(np.clip(f32, -clip_abs, clip_abs) / scale), -127, 127).astype(np.int8)


def quantize_state(tensors):
    """quantize_state_dict_int8 over [(name, dtype_name, float32-or-int32 values)]."""
    out = {"quantized": {}, "scales": {}, "dtypes": {}, "passthrough": {}, "passthrough_orig_dtypes": {},
           "qmeta": {}, "clip_abs": {}}
    stats = dict.fromkeys(("param_count", "num_tensors", "num_float_tensors", "num_nonfloat_tensors",
                           "baseline_tensor_bytes", "int8_payload_bytes"), 0)
    itemsize = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4}
    numpy1_diffs = 0
    for name, dt, arr in tensors:
        stats["param_count"] += int(arr.size)
        stats["num_tensors"] += 1
        stats["baseline_tensor_bytes"] += int(arr.size) * itemsize[dt]
        if dt == "int32":
            stats["num_nonfloat_tensors"] += 1
            out["passthrough"][name] = np.ascontiguousarray(arr)
            stats["int8_payload_bytes"] += int(arr.nbytes)
            continue
        if arr.size <= KEEP_FLOAT_MAX_NUMEL:
            if any(p in name for p in KEEP_FLOAT32_PATTERNS):
                kept = np.ascontiguousarray(arr.astype(F32))
            else:
                if dt in ("float32", "bfloat16"):
                    out["passthrough_orig_dtypes"][name] = dt
                with np.errstate(over="ignore"):  # values beyond float16 become ±inf
                    kept = np.ascontiguousarray(arr.astype(np.float16))
            out["passthrough"][name] = kept
            stats["int8_payload_bytes"] += int(kept.nbytes)
            continue
        stats["num_float_tensors"] += 1
        q, s, c = quantize_float(arr.astype(F32))
        numpy1_diffs += int(np.count_nonzero(numpy1_codes(arr.astype(F32)) != q))
        if s.ndim > 0:
            out["qmeta"][name] = {"scheme": "per_row", "axis": 0}
        out["quantized"][name], out["scales"][name], out["clip_abs"][name] = q, s, c
        out["dtypes"][name] = dt
        stats["int8_payload_bytes"] += int(q.nbytes + s.nbytes)
    return out, stats, numpy1_diffs


def dequantize_state(qs, order):
    """dequantize_state_dict_int8, with MLX's cast to the recorded dtype."""
    out = {}
    for name in order:
        if name in qs["quantized"]:
            q = np.asarray(qs["quantized"][name], dtype=np.int8)
            s = np.asarray(qs["scales"][name], dtype=F32)
            if qs["qmeta"].get(name, {}).get("scheme") == "per_row" or s.ndim > 0:
                w = q.astype(F32) * s.reshape((q.shape[0],) + (1,) * (q.ndim - 1))
            else:
                w = q.astype(F32) * float(s)
            dt = qs["dtypes"][name]
        else:
            w = np.array(qs["passthrough"][name], copy=True)
            dt = qs["passthrough_orig_dtypes"].get(name)
            if dt is None:
                dt = {"float32": "float32", "float16": "float16", "int32": "int32"}[str(w.dtype)]
        if dt == "float32":
            w = w.astype(F32)
        elif dt == "float16":
            w = w.astype(np.float16).astype(F32)
        elif dt == "bfloat16":
            w = round_bf16(w.astype(F32))
        out[name] = (dt, w)
    return out


def make_inputs():
    rng = np.random.default_rng(20240520)
    t = []

    # 2-D float32 (257, 256) > 65,536 elements: per-row.
    w = (rng.standard_normal((257, 256)) * 0.02).astype(F32)
    w[3, [5, 77, 200]] = [5.0, -20.0, 0.75]             # outliers: one is clipped
    w[7] = 0                                             # clip_abs 0 -> scale floor 1/127
    w[11] = (rng.standard_normal(256) * 1e-4).astype(F32)  # tiny row, scale floor
    # Row 13 lies under the 1/127 scale floor and is built from (k + 0.5)·s in
    # float32, so that many x/s land exactly on .5: round half to even.
    k = np.concatenate([np.arange(-100, 100), np.zeros(56)]).astype(F32)
    w[13] = rng.permutation(k + F32(0.5)) * F32(1.0 / 127.0)
    w[17] = F32(0.3)                                     # constant row
    w[19, 9] = -7.5                                      # single negative outlier
    w[23] = rng.uniform(-3, 3, 256).astype(F32)          # scale above the floor
    w[29, :2] = [1e-3, -1e-3]
    t.append(("tok_emb.weight", "float32", w))
    t.append(("blocks.0.attn_scale", "float32", rng.standard_normal(512).astype(F32)))
    # bfloat16 2-D (260, 256): per-row, dequantized back to bfloat16.
    t.append(("blocks.0.attn.c_q.weight", "bfloat16",
              round_bf16((rng.standard_normal((260, 256)) * 0.05).astype(F32))))
    t.append(("blocks.0.resid_mix", "float32", rng.standard_normal((2, 512)).astype(F32)))
    t.append(("blocks.0.attn.q_gain", "bfloat16", round_bf16(rng.uniform(1, 2, 8).astype(F32))))
    # small float32, not control: float16 storage; overflow, subnormals, ties.
    s = (rng.standard_normal((64, 64)) * 0.1).astype(F32)
    s[0, :6] = [70000.0, -1e6, 1e-6, -3e-8, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11]
    t.append(("final_norm.weight", "float32", s))
    t.append(("blocks.0.small_bf16", "bfloat16", round_bf16(rng.standard_normal(100).astype(F32))))
    t.append(("lm_head.bias", "float16", rng.standard_normal(300).astype(np.float16).astype(F32)))
    # 1-D float32 > 65,536 elements: per-tensor; sparse so the file stays small.
    v = np.zeros(65537, dtype=F32)
    idx = rng.choice(65537, 3000, replace=False)
    v[idx] = (rng.standard_normal(3000) * 0.5).astype(F32)
    v[[10, 20]] = [40.0, -55.0]
    t.append(("big_vector", "float32", v))
    # 3-D float16 (2, 130, 256): per-tensor, dequantized back to float16.
    t.append(("blocks.1.big_f16_3d", "float16", rng.standard_normal((2, 130, 256)).astype(np.float16).astype(F32)))
    t.append(("token_ids", "int32", rng.integers(-2**31, 2**31, (10, 10), dtype=np.int64).astype(np.int32)))
    t.append(("zeros_1d", "float32", np.zeros(70000, dtype=F32)))  # clip_abs 0 -> scale 1.0
    return t


def stored(dt, arr):
    """The input as saved in the .npz (bfloat16 as raw '|V2' bits)."""
    if dt == "bfloat16":
        return bf16_bits(arr).view("V2")
    if dt == "float16":
        return arr.astype(np.float16)
    return arr


def main():
    tensors = make_inputs()
    order = [n for n, _, _ in tensors]
    qs, stats, numpy1_diffs = quantize_state(tensors)
    deq = dequantize_state(qs, order)

    os.makedirs(OUT_DIR, exist_ok=True)
    np.savez_compressed(os.path.join(OUT_DIR, "quant_golden_in.npz"),
                        **{n: stored(dt, a) for n, dt, a in tensors})
    outs = {}
    for n in order:
        if n in qs["quantized"]:
            outs["quantized/" + n] = qs["quantized"][n]
            outs["scales/" + n] = qs["scales"][n]
            outs["clip_abs/" + n] = qs["clip_abs"][n]
        else:
            outs["passthrough/" + n] = qs["passthrough"][n]
    np.savez_compressed(os.path.join(OUT_DIR, "quant_golden_out.npz"), **outs)

    ties = 0
    w = tensors[0][2][13]
    c = quantile_f32(np.abs(w)[None, :], axis=1)
    x = np.clip(w, -c, c) / np.maximum(c / F32(127.0), F32(1.0 / 127.0))
    ties = int(np.count_nonzero(x - np.floor(x) == 0.5))
    golden = {
        "numpy_version": np.__version__,
        "semantics": "numpy>=2 float32 quantile and quantization",
        "clip_q_float32": float(F32(CLIP_Q)),
        "keep_float32_patterns": KEEP_FLOAT32_PATTERNS,
        "order": order,
        "input_dtypes": {n: dt for n, dt, _ in tensors},
        "dtypes": qs["dtypes"],
        "qmeta": qs["qmeta"],
        "passthrough_orig_dtypes": qs["passthrough_orig_dtypes"],
        "stats": stats,
        "exact_ties_in_row_13": ties,
        "numpy1_code_differences": numpy1_diffs,
        "dequantized": {
            n: {"dtype": dt, "shape": list(a.shape), "crc32": zlib.crc32(np.ascontiguousarray(a).tobytes()),
                "first_bits": [int(v) for v in np.ascontiguousarray(a).reshape(-1)[:4].view(np.uint32)]}
            for n, (dt, a) in deq.items()
        },
    }
    with open(os.path.join(OUT_DIR, "quant_golden.json"), "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"numpy {np.__version__}: {len(order)} tensors, stats {stats}, exact ties {ties}, "
          f"int8 codes differing under numpy 1.x semantics: {numpy1_diffs}", file=sys.stderr)


if __name__ == "__main__":
    main()
