#!/usr/bin/python3
"""Check golf's two artifacts against the summary golf wrote, with numpy alone.

usage: check_artifacts.py MODEL.npz MODEL.int8.ptz SUMMARY.json

MODEL.npz       the raw model (checkpoint.SaveNPZ): one .npy member per tensor
MODEL.int8.ptz  zlib of an .npz: __meta__ (JSON), quantized/<name>,
                scales/<name>, passthrough/<name> (checkpoint.SaveQuantized)
SUMMARY.json    checkpoint.WriteSummary: per tensor name, shape, dtype,
                numel, crc32 of the stored bytes, sum, sum_abs, sum_sq, and
                the first and last four values

Checks: the raw model holds exactly the summary's tensors, in order, with
the same dtype, shape and bytes (CRC-32, edge values exact, sums to float64
rounding); the quantized container holds the same names in the same order,
each entry is what train_gpt_mlx.py's quantize_state_dict_int8 makes of that
tensor (kind, dtypes, shapes, metadata), and dequantizing it as
dequantize_state_dict_int8 does gives back every tensor to within its
quantization step (passthrough tensors exactly, or exactly float16-rounded).
Exits 1 listing every failure.
"""
import io
import json
import sys
import zlib

import numpy as np

KEEP_FLOAT_MAX_NUMEL = 65_536
QUANT_FORMAT = "int8_clean_per_row_v1"
SUMMARY_FORMAT = "golf_artifact_summary_v1"
STORED_DTYPE = {"float32": "<f4", "float16": "<f2", "bfloat16": "|V2", "int32": "<i4"}
F32 = np.float32

failures = []


def fail(msg):
    failures.append(msg)


def widen(a):
    """Stored array -> float64 values (bfloat16 '|V2' bits widened exactly)."""
    if a.dtype.kind == "V":
        return (a.view(np.uint16).astype(np.uint32) << 16).view(F32).astype(np.float64)
    return a.astype(np.float64)


def round_to(dtype, w):
    """MLX's cast of float32 values to the recorded dtype, back in float32."""
    if dtype == "float16":
        return w.astype(np.float16).astype(F32)
    if dtype == "bfloat16":
        u = w.astype(F32).view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
        return (u.astype(np.uint32) << 16).view(F32)
    return w.astype(F32)


def check_raw(raw, tensors):
    values = {}
    if list(raw.files) != [t["name"] for t in tensors]:
        fail(f"raw model: members {list(raw.files)} != summary names {[t['name'] for t in tensors]}")
    for t in tensors:
        name = t["name"]
        if name not in raw.files:
            continue
        a = raw[name]
        if a.dtype.str != STORED_DTYPE.get(t["dtype"]):
            fail(f"raw {name}: dtype {a.dtype.str}, summary says {t['dtype']}")
            continue
        if list(a.shape) != t["shape"] or a.size != t["numel"]:
            fail(f"raw {name}: shape {a.shape}, summary {t['shape']}")
            continue
        crc = zlib.crc32(np.ascontiguousarray(a).tobytes())
        if crc != t["crc32"]:
            fail(f"raw {name}: crc32 {crc}, summary {t['crc32']}")
        x = widen(a).reshape(-1)
        if x[:4].tolist() != t["first"] or x[max(0, x.size - 4):].tolist() != t["last"]:
            fail(f"raw {name}: edge values {x[:4].tolist()} ... {x[-4:].tolist()} != summary {t['first']} ... {t['last']}")
        s_abs = float(np.abs(x).sum())
        for key, got, scale in (("sum", x.sum(), s_abs), ("sum_abs", s_abs, s_abs), ("sum_sq", (x * x).sum(), float((x * x).sum()))):
            if abs(float(got) - t[key]) > 1e-9 * scale + 1e-300:
                fail(f"raw {name}: {key} {float(got)!r}, summary {t[key]!r}")
        values[name] = x.reshape(a.shape)
    return values


def check_quantized(z, meta, t, x):
    """One quantized entry: metadata, shapes, and the error bound."""
    name, shape = t["name"], t["shape"]
    q, s = z["quantized/" + name], z["scales/" + name]
    if t["dtype"] not in ("float32", "float16", "bfloat16") or t["numel"] <= KEEP_FLOAT_MAX_NUMEL:
        fail(f"{name}: {t['dtype']} tensor of {t['numel']} elements should not be quantized")
        return None
    if meta["dtypes"].get(name) != t["dtype"]:
        fail(f"{name}: dtypes says {meta['dtypes'].get(name)}, tensor is {t['dtype']}")
    if q.dtype != np.int8 or list(q.shape) != shape:
        fail(f"{name}: quantized payload {q.dtype} {q.shape}, want int8 {shape}")
        return None
    if np.any(q == -128):
        fail(f"{name}: payload holds -128 (codes are clipped to ±127)")
    per_row = meta["qmeta"].get(name, {}).get("scheme") == "per_row" or s.ndim > 0
    if len(shape) == 2:
        if not per_row or s.dtype != np.float16 or s.shape != (shape[0],) or meta["qmeta"].get(name) != {"scheme": "per_row", "axis": 0}:
            fail(f"{name}: 2-D tensor needs per-row float16 scales ({shape[0]},) and qmeta, got {s.dtype} {s.shape}")
            return None
        step = s.astype(F32).reshape((-1,) + (1,) * (q.ndim - 1))
        w = q.astype(F32) * step
    else:
        if per_row or s.dtype != F32 or s.shape != ():
            fail(f"{name}: {len(shape)}-D tensor needs one float32 scale, got {s.dtype} {s.shape}")
            return None
        step = s.astype(F32)
        w = q.astype(F32) * float(s)
    w = round_to(t["dtype"], w)
    # |w - x| <= step/2, plus float16 scale rounding (per row: |q|·|s16 - s32|
    # <= 127·2^-11·s), plus what clipping at c = quantile(|x|, 0.9999984)
    # removed, plus the cast to a 16-bit dtype. Values beyond ±127·step must
    # saturate at ±127.
    eps = {"float32": 0.0, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}[t["dtype"]]
    step64 = np.broadcast_to(step.astype(np.float64), x.shape)
    if per_row:
        c = np.quantile(np.abs(x), 0.9999984, axis=1)[:, None]
    else:
        c = np.quantile(np.abs(x), 0.9999984)
    clipped = np.maximum(np.abs(x) - c, 0) + 1e-5 * c  # slack: float32 vs float64 quantile
    outlier = np.abs(x) > 127 * step64
    tol = (step64 * (0.5 + (127 * 2.0 ** -11 if per_row else 1e-4)) + clipped
           + np.abs(w.astype(np.float64)) * eps)
    err = np.abs(w.astype(np.float64) - x)
    bad = (~outlier) & (err > tol)
    if np.any(bad):
        i = np.argwhere(bad)[0]
        fail(f"{name}: {int(bad.sum())} values off by more than the step; first at {tuple(i)}: "
             f"raw {x[tuple(i)]!r}, dequantized {w[tuple(i)]!r}, step {step64[tuple(i)]!r}")
    if np.any(outlier & (np.abs(q) != 127)) or np.any(outlier & (np.sign(q) != np.sign(x))):
        fail(f"{name}: clipped values do not saturate at ±127")
    limit = 2 * (x.shape[-1] if per_row else x.size) * (1 - 0.9999984) + 2
    if per_row and np.any(outlier.sum(axis=tuple(range(1, x.ndim))) > limit) or (not per_row and outlier.sum() > limit):
        fail(f"{name}: more values beyond the clip than the 99.99984th percentile allows")
    return float(np.max(np.where(outlier, 0.0, err / np.maximum(step64, 1e-30)), initial=0.0))


def check_passthrough(z, meta, t, x):
    name = t["name"]
    p = z["passthrough/" + name]
    orig = meta["passthrough_orig_dtypes"].get(name)
    if t["dtype"] == "int32":
        if p.dtype != np.int32 or list(p.shape) != t["shape"] or not np.array_equal(p, x):
            fail(f"{name}: int32 passthrough differs from the raw tensor")
        return
    if t["numel"] > KEEP_FLOAT_MAX_NUMEL:
        fail(f"{name}: float tensor of {t['numel']} elements should be quantized, not passed through")
        return
    if list(p.shape) != t["shape"]:
        fail(f"{name}: passthrough shape {p.shape}, want {t['shape']}")
        return
    if p.dtype == F32 and orig is None:  # a control tensor, kept as float32
        if not np.array_equal(p.astype(np.float64), x):
            fail(f"{name}: float32 passthrough differs from the raw tensor")
    elif p.dtype == np.float16 and (orig == t["dtype"] or (orig is None and t["dtype"] == "float16")):
        with np.errstate(over="ignore"):
            want = x.astype(F32).astype(np.float16)
        if not np.array_equal(p.view(np.uint16), want.view(np.uint16)):
            fail(f"{name}: float16 passthrough is not the raw tensor rounded to float16")
    else:
        fail(f"{name}: passthrough {p.dtype} with passthrough_orig_dtypes {orig!r} for a {t['dtype']} tensor")


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    npz_path, ptz_path, summary_path = argv[1:]
    with open(summary_path) as f:
        summary = json.load(f)
    if summary.get("format") != SUMMARY_FORMAT:
        print(f"{summary_path}: format {summary.get('format')!r}, want {SUMMARY_FORMAT!r}", file=sys.stderr)
        return 1
    tensors = summary["tensors"]
    names = [t["name"] for t in tensors]

    values = check_raw(np.load(npz_path), tensors)

    with open(ptz_path, "rb") as f:
        z = np.load(io.BytesIO(zlib.decompress(f.read())))
    meta = json.loads(z["__meta__"].tobytes())
    if meta.get("__quant_format__") != QUANT_FORMAT:
        fail(f"quantized: format {meta.get('__quant_format__')!r}, want {QUANT_FORMAT!r}")
    if meta.get("order") != names:
        fail(f"quantized: order {meta.get('order')} != summary names {names}")
    expected = {"__meta__"}
    n_q = n_p = 0
    worst = 0.0
    for t in tensors:
        name = t["name"]
        if name not in values:
            continue
        if "quantized/" + name in z.files:
            expected |= {"quantized/" + name, "scales/" + name}
            r = check_quantized(z, meta, t, values[name])
            worst = max(worst, r or 0.0)
            n_q += 1
        elif "passthrough/" + name in z.files:
            expected.add("passthrough/" + name)
            check_passthrough(z, meta, t, values[name])
            n_p += 1
        else:
            fail(f"{name}: missing from the quantized container")
    if set(z.files) != expected:
        fail(f"quantized: unexpected members {sorted(set(z.files) - expected)}")

    if failures:
        for m in failures:
            print("FAIL " + m, file=sys.stderr)
        print(f"check_artifacts: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print(f"check_artifacts: {len(tensors)} tensors OK ({n_q} quantized, {n_p} passthrough); "
          f"max |dequantized - raw| = {worst:.3f} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
