#!/usr/bin/env python3
"""PyTorch CPU baseline for golf's CPU benchmark.

Trains the parameter-golf GPT (train_gpt_mlx.py's model, Muon + Adam split)
with PyTorch on the CPU and prints tokens/s and achieved GFLOP/s, counting
FLOPs exactly as golf's benchmarks do (model.StepFLOPsPerToken:
6·params + 12·L·C·(T+1)/2 per token). Run it beside

    go test -run NONE -bench 'TrainStepSmall' ./train/

to compare on the same machine. Uses Debian's python3-torch (1.13; install
libopenblas0-openmp, or torch falls back to the reference BLAS) and numpy:

    /usr/bin/python3 scripts/bench_torch.py --steps 10          # small config, fp32
    /usr/bin/python3 scripts/bench_torch.py --bf16              # bf16 autocast

Random tokens: speed does not depend on the data.
"""
import argparse
import math
import os
import time

import torch
import torch.nn.functional as F


def rms_norm(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def rope(x, base):
    # x: (B, H, T, D); non-interleaved halves.
    T, D = x.shape[-2], x.shape[-1]
    half = D // 2
    inv = base ** (-2.0 * torch.arange(half, dtype=torch.float32) / D)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class GPT(torch.nn.Module):
    def __init__(self, V, L, C, H, Hkv, mult):
        super().__init__()
        self.V, self.L, self.C, self.H, self.Hkv = V, L, C, H, Hkv
        D = C // H
        kv = Hkv * D
        P = torch.nn.Parameter
        self.tok_emb = P(torch.randn(V, C) * 0.005)
        self.E = L // 2
        self.skip_weights = P(torch.ones(min(self.E, L - self.E), C))
        lin = lambda o, i: P((torch.rand(o, i) * 2 - 1) / math.sqrt(i))
        self.blocks = torch.nn.ModuleList()
        for _ in range(L):
            b = torch.nn.Module()
            b.c_q, b.c_k, b.c_v, b.proj = lin(C, C), lin(kv, C), lin(kv, C), P(torch.zeros(C, C))
            b.q_gain = P(torch.full((H,), 1.5))
            b.attn_scale, b.mlp_scale = P(torch.ones(C)), P(torch.ones(C))
            b.resid_mix = P(torch.stack([torch.ones(C), torch.zeros(C)]))
            b.fc, b.mproj = lin(mult * C, C), P(torch.zeros(C, mult * C))
            self.blocks.append(b)

    def block(self, b, x, x0):
        B, T, C = x.shape
        H, Hkv, D = self.H, self.Hkv, C // self.H
        x = b.resid_mix[0] * x + b.resid_mix[1] * x0
        h = rms_norm(x)
        q = F.linear(h, b.c_q).view(B, T, H, D).transpose(1, 2)
        k = F.linear(h, b.c_k).view(B, T, Hkv, D).transpose(1, 2)
        v = F.linear(h, b.c_v).view(B, T, Hkv, D).transpose(1, 2)
        q = rope(rms_norm(q), 10000.0) * b.q_gain[None, :, None, None]
        k = rope(rms_norm(k), 10000.0)
        rep = H // Hkv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        y = s.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + b.attn_scale * F.linear(y, b.proj)
        u = torch.relu(F.linear(rms_norm(x), b.fc))
        return x + b.mlp_scale * F.linear(u * u, b.mproj)

    def forward(self, idx, tgt):
        x = rms_norm(F.embedding(idx, self.tok_emb))
        x0, skips = x, []
        for i in range(self.E):
            x = self.block(self.blocks[i], x, x0)
            skips.append(x)
        for i in range(self.L - self.E):
            if skips:
                x = x + self.skip_weights[i] * skips.pop()
            x = self.block(self.blocks[self.E + i], x, x0)
        x = rms_norm(x).reshape(-1, self.C)
        logits = 30.0 * torch.tanh(F.linear(x, self.tok_emb) / 30.0)
        return F.cross_entropy(logits.float(), tgt.reshape(-1))


def newton_schulz5(g, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g / (g.norm() + 1e-7)
    t = x.shape[0] > x.shape[1]
    if t:
        x = x.T
    for _ in range(steps):
        A = x @ x.T
        x = a * x + (b * A + c * (A @ A)) @ x
    return x.T if t else x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast for the forward")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="intra-op threads (default: every CPU this process may use)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    m = GPT(args.vocab, args.layers, args.dim, args.heads, args.kv_heads, 2)
    mats = [p for n, p in m.named_parameters() if p.ndim == 2 and n.startswith("blocks.")]
    others = [p for n, p in m.named_parameters() if not (p.ndim == 2 and n.startswith("blocks."))]
    adam = torch.optim.Adam(others, lr=0.04, betas=(0.9, 0.95), eps=1e-8)
    bufs = [torch.zeros_like(p) for p in mats]
    B = args.tokens // args.seq

    def step():
        idx = torch.randint(0, args.vocab, (B, args.seq))
        tgt = torch.randint(0, args.vocab, (B, args.seq))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = m(idx, tgt)
        m.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            for p, buf in zip(mats, bufs):
                buf.mul_(0.95).add_(p.grad)
                o = newton_schulz5(p.grad + 0.95 * buf)
                p.add_(o, alpha=-0.04 * max(1.0, p.shape[0] / p.shape[1]) ** 0.5)
        adam.step()
        return float(loss)

    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    sec = (time.perf_counter() - t0) / args.steps
    n_params = sum(p.numel() for p in m.parameters())
    L, C, T = args.layers, args.dim, args.seq
    flops_tok = 6 * n_params + 12 * L * C * (T + 1) / 2
    tok_s = args.tokens / sec
    print(f"torch {torch.__version__} threads:{torch.get_num_threads()} params:{n_params} "
          f"{'bf16-autocast' if args.bf16 else 'fp32'} step:{sec * 1000:.1f}ms "
          f"tokens/s:{tok_s:.0f} GFLOP/s:{flops_tok * tok_s / 1e9:.1f}")


if __name__ == "__main__":
    main()
