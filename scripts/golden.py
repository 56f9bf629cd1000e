"""Float64 oracle for the parameter-golf GPT and its Muon+Adam split optimizer.

Writes model/testdata/golden_tiny.json: a tiny configuration's weights,
inputs, softcapped logits, mean cross-entropy loss, parameter gradients, the
parameters after one optimizer step, and the losses of a 10-step training run.
The Go model and optimizer tests compare against these numbers.

Run from the repository root with Debian's Python (torch and numpy, nothing
else; apt-get install python3-torch, 1.13.1 wrote the committed file):

    /usr/bin/python3 scripts/golden.py

This is an independent re-implementation, in torch float64 with autograd for
the gradients, of the model and optimizers of train_gpt_mlx.py. It shares no
code with the Go implementation. Before writing it checks itself: autograd
gradients against central finite differences for a few coordinates of every
parameter, and the Newton-Schulz iteration's singular values against the
quintic's band.

The model has 5 layers: two encoder blocks, whose outputs the first two of
the three decoder blocks take back in reverse order (decoder 0 takes encoder
1, decoder 1 takes encoder 0, decoder 2 takes none), so a wrong pairing of
the U-Net skips changes every number here. With 3 layers the one skip would join the
middle, where every pairing is the same.

Weights are not the reference initialisation (its zero output projections
would zero many gradients): every parameter is drawn from a seeded numpy
PCG64 generator and rounded to float32 so an fp32-master implementation starts
from identical values.
"""

import json
import math
import os
import sys
import tempfile

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

SEED = 1234
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model", "testdata", "golden_tiny.json")

CONFIG = {
    "vocab_size": 64,
    "num_layers": 5,
    "model_dim": 32,
    "num_heads": 4,
    "num_kv_heads": 2,
    "mlp_mult": 2,
    "seq_len": 16,
    "batch": 2,
    "logit_softcap": 30.0,
    "rope_base": 10000.0,
    "qk_gain_init": 1.5,
    "tied_embed_init_std": 0.005,
}

OPTIM = {
    "matrix_lr": 0.04,
    "scalar_lr": 0.04,
    "tied_embed_lr": 0.05,
    "beta1": 0.9,
    "beta2": 0.95,
    "adam_eps": 1e-8,
    "muon_momentum": 0.95,
    "muon_backend_steps": 5,
    "muon_momentum_warmup_start": 0.85,
    "muon_momentum_warmup_steps": 500,
}

RUN_STEPS = 10

CONTROL_TENSOR_NAME_PATTERNS = (
    "attn_scale", "attn_scales", "mlp_scale", "mlp_scales", "resid_mix",
    "resid_mixes", "q_gain", "skip_weight", "skip_weights",
)

RMS_EPS = 1e-6
NS_EPS = 1e-7
NS_COEFFS = (3.4445, -4.7750, 2.0315)


# ------------------------------------------------------------------------------
# Parameters
# ------------------------------------------------------------------------------

def num_encoder_layers(cfg):
    return cfg["num_layers"] // 2


def num_skip_weights(cfg):
    enc = num_encoder_layers(cfg)
    return min(enc, cfg["num_layers"] - enc)


def init_params(cfg, rng):
    """Draws every parameter from rng in a fixed order, rounded to float32.

    Returns an ordered dict name -> float64 numpy array holding float32 values.
    """
    C = cfg["model_dim"]
    V = cfg["vocab_size"]
    H = cfg["num_heads"]
    D = C // H
    KV = cfg["num_kv_heads"] * D
    hidden = cfg["mlp_mult"] * C

    def f32(a):
        return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)

    def matrix(out_dim, in_dim):
        bound = 1.0 / math.sqrt(in_dim)
        return f32(rng.uniform(-bound, bound, size=(out_dim, in_dim)))

    p = {}
    p["tok_emb.weight"] = f32(rng.standard_normal((V, C)) * 0.5)
    p["skip_weights"] = f32(1.0 + 0.1 * rng.standard_normal((num_skip_weights(cfg), C)))
    for i in range(cfg["num_layers"]):
        b = f"blocks.{i}."
        p[b + "attn.c_q.weight"] = matrix(C, C)
        p[b + "attn.c_k.weight"] = matrix(KV, C)
        p[b + "attn.c_v.weight"] = matrix(KV, C)
        p[b + "attn.proj.weight"] = matrix(C, C)
        p[b + "attn.q_gain"] = f32(1.5 + 0.1 * rng.standard_normal(H))
        p[b + "attn_scale"] = f32(1.0 + 0.1 * rng.standard_normal(C))
        p[b + "mlp_scale"] = f32(1.0 + 0.1 * rng.standard_normal(C))
        row0 = 1.0 + 0.1 * rng.standard_normal(C)
        row1 = 0.1 * rng.standard_normal(C)
        p[b + "resid_mix"] = f32(np.stack([row0, row1]))
        p[b + "mlp.fc.weight"] = matrix(hidden, C)
        p[b + "mlp.proj.weight"] = matrix(C, hidden)
    return p


# ------------------------------------------------------------------------------
# Model
# ------------------------------------------------------------------------------

def rms_norm(x):
    """x / sqrt(mean(x^2 over the last axis) + 1e-6), no weight."""
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + RMS_EPS)


def rope(x, base):
    """Non-traditional (split-halves) rotary embedding of x (B, h, T, D).

    For pair i < D/2 at position t, angle = t * base^(-2i/D):
      out[i]       = x[i] cos - x[i+D/2] sin
      out[i+D/2]   = x[i] sin + x[i+D/2] cos
    """
    T, D = x.shape[-2], x.shape[-1]
    half = D // 2
    inv_freq = base ** (-2.0 * torch.arange(half, dtype=torch.float64) / D)  # (D/2,)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]  # (T, D/2)
    cos, sin = torch.cos(ang), torch.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def attention(x, p, b, cfg):
    """Causal GQA self-attention of x (B, T, C); query head h reads kv head h // (H/Hkv)."""
    B, T, C = x.shape
    H = cfg["num_heads"]
    Hkv = cfg["num_kv_heads"]
    D = C // H
    q = (x @ p[b + "attn.c_q.weight"].T).reshape(B, T, H, D).transpose(1, 2)    # (B, H, T, D)
    k = (x @ p[b + "attn.c_k.weight"].T).reshape(B, T, Hkv, D).transpose(1, 2)  # (B, Hkv, T, D)
    v = (x @ p[b + "attn.c_v.weight"].T).reshape(B, T, Hkv, D).transpose(1, 2)  # (B, Hkv, T, D)
    q = rope(rms_norm(q), cfg["rope_base"])
    k = rope(rms_norm(k), cfg["rope_base"])
    q = q * p[b + "attn.q_gain"][None, :, None, None]
    kv_of = torch.arange(H) // (H // Hkv)
    k = k[:, kv_of]  # (B, H, T, D)
    v = v[:, kv_of]  # (B, H, T, D)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(D)  # (B, H, T, T)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    att = torch.softmax(scores, dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C)  # (B, T, C)
    return y @ p[b + "attn.proj.weight"].T


def mlp(x, p, b):
    h = torch.relu(x @ p[b + "mlp.fc.weight"].T)
    return (h * h) @ p[b + "mlp.proj.weight"].T


def block(x, x0, p, i, cfg):
    b = f"blocks.{i}."
    mix = p[b + "resid_mix"]
    x = mix[0] * x + mix[1] * x0
    x = x + p[b + "attn_scale"] * attention(rms_norm(x), p, b, cfg)
    x = x + p[b + "mlp_scale"] * mlp(rms_norm(x), p, b)
    return x


def forward(p, idx, cfg):
    """Returns softcapped logits (B*T, V) for token ids idx (B, T)."""
    x = rms_norm(p["tok_emb.weight"][idx])  # (B, T, C)
    x0 = x
    enc = num_encoder_layers(cfg)
    dec = cfg["num_layers"] - enc
    skips = []
    for i in range(enc):
        x = block(x, x0, p, i, cfg)
        skips.append(x)
    for i in range(dec):
        if skips:
            x = x + p["skip_weights"][i] * skips.pop()
        x = block(x, x0, p, enc + i, cfg)
    x = rms_norm(x).reshape(-1, cfg["model_dim"])  # (B*T, C)
    logits = x @ p["tok_emb.weight"].T  # (B*T, V)
    c = cfg["logit_softcap"]
    return c * torch.tanh(logits / c)


def loss_fn(p, idx, tgt, cfg):
    logits = forward(p, idx, cfg)
    y = tgt.reshape(-1)
    lse = torch.logsumexp(logits, dim=-1)
    picked = logits.gather(1, y[:, None])[:, 0]
    return (lse - picked).mean(), logits


def to_torch(params):
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in params.items()}


def loss_and_grads(params, idx, tgt, cfg):
    """params: name -> numpy float64. Returns (loss, logits numpy, grads name -> numpy)."""
    tp = {k: v.clone().requires_grad_(True) for k, v in to_torch(params).items()}
    loss, logits = loss_fn(tp, torch.tensor(idx), torch.tensor(tgt), cfg)
    names = list(tp)
    gs = torch.autograd.grad(loss, [tp[k] for k in names])
    grads = {k: g.detach().numpy().copy() for k, g in zip(names, gs)}
    return float(loss.item()), logits.detach().numpy().copy(), grads


def loss_only(params, idx, tgt, cfg):
    with torch.no_grad():
        loss, _ = loss_fn(to_torch(params), torch.tensor(idx), torch.tensor(tgt), cfg)
    return float(loss.item())


# ------------------------------------------------------------------------------
# Optimizers
# ------------------------------------------------------------------------------

def newton_schulz5(g, steps):
    """Quintic Newton-Schulz orthogonalisation of a 2-D matrix (float64 numpy)."""
    a, b, c = NS_COEFFS
    x = g / (math.sqrt(float(np.sum(g * g))) + NS_EPS)
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    for _ in range(steps):
        A = x @ x.T
        Bm = b * A + c * (A @ A)
        x = a * x + Bm @ x
    if transposed:
        x = x.T
    return x


def is_matrix_key(name, arr):
    return name.startswith("blocks.") and arr.ndim == 2 and not any(s in name for s in CONTROL_TENSOR_NAME_PATTERNS)


def is_scalar_key(name, arr):
    return name == "skip_weights" or (
        name.startswith("blocks.") and (arr.ndim < 2 or any(s in name for s in CONTROL_TENSOR_NAME_PATTERNS))
    )


class Adam:
    """Adam with bias correction; the step counter is 1 on the first update."""

    def __init__(self, opt):
        self.b1 = opt["beta1"]
        self.b2 = opt["beta2"]
        self.eps = opt["adam_eps"]
        self.m = {}
        self.v = {}
        self.t = 0

    def step(self, params, grads, keys, lr):
        self.t += 1
        out = {}
        for k in keys:
            g = grads[k]
            m = self.b1 * self.m.get(k, np.zeros_like(g)) + (1.0 - self.b1) * g
            v = self.b2 * self.v.get(k, np.zeros_like(g)) + (1.0 - self.b2) * g * g
            self.m[k], self.v[k] = m, v
            mhat = m / (1.0 - self.b1 ** self.t)
            vhat = v / (1.0 - self.b2 ** self.t)
            out[k] = params[k] - lr * mhat / (np.sqrt(vhat) + self.eps)
        return out


class SplitOptimizer:
    """Muon for block matrices, Adam for tok_emb, Adam for control tensors and skip weights."""

    def __init__(self, params, opt):
        self.opt = opt
        self.embed_key = "tok_emb.weight"
        self.matrix_keys = [k for k, v in params.items() if is_matrix_key(k, v)]
        self.scalar_keys = [k for k, v in params.items() if is_scalar_key(k, v)]
        covered = set(self.matrix_keys) | set(self.scalar_keys) | {self.embed_key}
        assert covered == set(params) and len(covered) == 1 + len(self.matrix_keys) + len(self.scalar_keys)
        self.bufs = {k: np.zeros_like(params[k]) for k in self.matrix_keys}
        self.adam_embed = Adam(opt)
        self.adam_scalar = Adam(opt)

    def step(self, params, grads, step, lr_mul):
        o = self.opt
        out = dict(params)
        ws = o["muon_momentum_warmup_steps"]
        if ws:
            t = min(step / ws, 1.0)
            mom = (1.0 - t) * o["muon_momentum_warmup_start"] + t * o["muon_momentum"]
        else:
            mom = o["muon_momentum"]
        lr = o["matrix_lr"] * lr_mul
        for k in self.matrix_keys:
            g = grads[k]
            buf = mom * self.bufs[k] + g
            self.bufs[k] = buf
            g_eff = g + mom * buf
            x = newton_schulz5(g_eff, o["muon_backend_steps"])
            rows, cols = params[k].shape
            scale = math.sqrt(max(1.0, rows / cols))
            out[k] = params[k] - lr * scale * x
        out.update(self.adam_embed.step(params, grads, [self.embed_key], o["tied_embed_lr"] * lr_mul))
        out.update(self.adam_scalar.step(params, grads, self.scalar_keys, o["scalar_lr"] * lr_mul))
        return out


# ------------------------------------------------------------------------------
# Self-checks
# ------------------------------------------------------------------------------

def check_grads_fd(params, grads, idx, tgt, cfg, rng, per_param=3, h=1e-6):
    """Central finite differences vs autograd for a few coordinates of every parameter."""
    worst = 0.0
    for name, w in params.items():
        flat = w.reshape(-1)
        coords = rng.choice(flat.size, size=min(per_param, flat.size), replace=False)
        for c in coords:
            c = int(c)
            plus = dict(params)
            minus = dict(params)
            wp = w.copy().reshape(-1)
            wm = w.copy().reshape(-1)
            wp[c] += h
            wm[c] -= h
            plus[name] = wp.reshape(w.shape)
            minus[name] = wm.reshape(w.shape)
            fd = (loss_only(plus, idx, tgt, cfg) - loss_only(minus, idx, tgt, cfg)) / (2 * h)
            ad = float(grads[name].reshape(-1)[c])
            err = abs(fd - ad)
            tol = 1e-7 + 1e-5 * abs(ad)
            assert err <= tol, f"gradient check failed for {name}[{c}]: autograd {ad!r}, finite difference {fd!r}"
            worst = max(worst, err / (abs(ad) + 1e-7))
    nonzero = sum(int(np.any(g != 0)) for g in grads.values())
    assert nonzero == len(grads), "some parameter has an all-zero gradient"
    return worst


def check_newton_schulz(rng, steps):
    """Singular values of NS5(G) lie in the quintic's band for random G of both orientations."""
    lo, hi = 1.0, 0.0
    for shape in [(32, 64), (64, 32), (32, 32)]:
        g = rng.standard_normal(shape)
        x = newton_schulz5(g, steps)
        s = np.linalg.svd(x, compute_uv=False)
        if shape[0] == shape[1]:
            # A square Gaussian matrix has near-zero singular values that five
            # steps cannot lift; check only the upper bound and the bulk.
            s = s[: len(s) // 2]
        assert s.min() > 0.6 and s.max() < 1.2, f"Newton-Schulz singular values out of band for {shape}: {s.min()}..{s.max()}"
        lo, hi = min(lo, s.min()), max(hi, s.max())
        # The iteration is an odd polynomial in G: it keeps G's singular vectors.
        u, _, vt = np.linalg.svd(g, full_matrices=False)
        inner = u.T @ x @ vt.T
        off = inner - np.diag(np.diag(inner))
        assert np.abs(off).max() < 1e-9, f"Newton-Schulz changed the singular vectors for {shape}"
    return lo, hi


# ------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------

def tensor_json(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def tensors_json(d):
    return {k: tensor_json(v) for k, v in d.items()}


def main():
    cfg = CONFIG
    B, T, V = cfg["batch"], cfg["seq_len"], cfg["vocab_size"]
    rng = np.random.Generator(np.random.PCG64(SEED))

    params = init_params(cfg, rng)
    inputs = rng.integers(0, V, size=(B, T))
    targets = rng.integers(0, V, size=(B, T))
    run_inputs = rng.integers(0, V, size=(RUN_STEPS, B, T))
    run_targets = rng.integers(0, V, size=(RUN_STEPS, B, T))

    loss, logits, grads = loss_and_grads(params, inputs, targets, cfg)

    check_rng = np.random.Generator(np.random.PCG64(SEED + 1))
    worst = check_grads_fd(params, grads, inputs, targets, cfg, check_rng)
    ns_lo, ns_hi = check_newton_schulz(check_rng, OPTIM["muon_backend_steps"])

    opt = SplitOptimizer(params, OPTIM)
    after = opt.step(params, grads, step=0, lr_mul=1.0)

    run_params = dict(params)
    run_opt = SplitOptimizer(run_params, OPTIM)
    losses_run = []
    for s in range(RUN_STEPS):
        l, _, g = loss_and_grads(run_params, run_inputs[s], run_targets[s], cfg)
        losses_run.append(l)
        run_params = run_opt.step(run_params, g, step=s, lr_mul=1.0)

    doc = {
        "config": cfg,
        "optim": OPTIM,
        "params": tensors_json(params),
        "inputs": inputs.tolist(),
        "targets": targets.tolist(),
        "logits": tensor_json(logits),
        "loss": loss,
        "grads": tensors_json(grads),
        "params_after_step": tensors_json(after),
        "run_inputs": run_inputs.tolist(),
        "run_targets": run_targets.tolist(),
        "losses_run": losses_run,
    }

    out = os.path.normpath(OUT_PATH)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".golden_tiny.", suffix=".json", dir=os.path.dirname(out))
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise

    print(f"gradient check: worst relative error {worst:.3g}")
    print(f"Newton-Schulz singular values in [{ns_lo:.4f}, {ns_hi:.4f}]")
    print(f"loss {loss!r}")
    print("losses_run " + " ".join(f"{v:.6f}" for v in losses_run))
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")


if __name__ == "__main__":
    sys.exit(main())
