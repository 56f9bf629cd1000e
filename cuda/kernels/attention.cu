// attention: causal grouped-query flash attention, forward and backward
// (shaders/attention.metal in CUDA, extended to head dims up to 128).
//
//	s[t,u]   = scale·q[t,h]·k[u,hk] for u ≤ t (same sequence), scale = 1/sqrt(D)
//	lse[t,h] = log Σu exp(s[t,u]);  out[t,h] = Σu exp(s[t,u] − lse)·v[u,hk]
//	P = exp(s − lse), δ[t,h] = Σd dout·out
//	dv[u] = Σt P[t,u]·dout[t];  dP = dout·vᵀ;  dS = P·(dP − δ)
//	dq[t] = scale·Σu dS[t,u]·k[u];  dk[u] = scale·Σt dS[t,u]·q[t]
//	q, out, dout, dq T (N, H, D); k, v, dk, dv T (N, Hkv, D); lse, δ float (N, H)
//
// N = B·T rows (B sequences of T = seq_len rows); query head h reads
// key/value head hk = h/(H/Hkv); dk and dv sum over the G = H/Hkv query
// heads of their group. D is even (RoPE needs it). The kernels without a
// suffix take D ≤ 64 (as the Metal library's); the _d128 ones take
// 64 < D ≤ 128 (their tiles are sized for 128, so they would also run
// smaller D, at half the speed). Four kernels per head-dim range:
//   attention_fwd:   out and lse, online softmax (running max and sum in
//                    float) over the key tiles of one query tile;
//   attention_delta: δ = rowsum(dout⊙out), the backward's pre-pass into a
//                    float (N, H) scratch (one kernel for every D);
//   attention_dq:    dq of one query tile, one pass over its key tiles
//                    (P recomputed from lse);
//   attention_dkv:   dk and dv of one key tile, one pass over the query
//                    tiles of every query head of the group, in a fixed
//                    order.
// No score matrix larger than one tile exists anywhere, and the backward is
// deterministic: every output element is one thread's sum in a fixed order
// (no atomics, float or otherwise). Masked probabilities are exactly 0; a
// masked score never reaches exp (GOLF_NEG_BIG stands in for −∞ in maxima).
//
// portable flavour (also the tc flavour's kernel in float): float tiles in shared memory, 128
// threads, 4 per tile row (thread part p takes the tile's columns p, p+4,
// ...), row reductions through shared memory; float multiply-adds.
//	fwd  BQ = 32 query rows, BK = 16 keys          grid (⌈T/32⌉, H, B)
//	dq   BQ = 32, BK = 16 (D ≤ 64) or 8 (d128)     grid (⌈T/32⌉, H, B)
//	dkv  BK = 32 key rows, BQ = 16 or 8 (d128)     grid (⌈T/32⌉, Hkv, B)
// tc flavour (half, bfloat; sm_80+): FlashAttention-2's warp layout on
// mma.sync m16n8k16 with float accumulators. 128 threads = 4 warps, each
// owning 16 rows of the block's 64 (query rows in fwd and dq, key rows in
// dkv); the warp's operand rows are mma A fragments in registers (or, in
// dkv, read from shared memory), the other operand is staged as 16-bit in
// shared memory with rows padded by 8 elements. Softmax statistics stay in
// registers: an accumulator row belongs to the quad of 4 lanes that shares
// it, so row max and sum are two xor shuffles. P and dS are rounded to T to
// enter the second product (as FlashAttention-2 does); l, lse and all
// accumulators are float.
//	fwd  BQ = 64, BK = 64 (D ≤ 64) or 32 (d128)    grid (⌈T/64⌉, H, B)
//	dq   BQ = 64, BK = 64 or 32                    grid (⌈T/64⌉, H, B)
//	dkv  BK = 64 key rows, BQ = 16                 grid (⌈T/64⌉, Hkv, B)
//
// Baseline: B = 64, T = 1024, H = 8, Hkv = 4, D = 64 (N = 65536 rows at
// 524,288 tokens per step), bf16. Causal pairs B·H·T(T+1)/2 = 269M; FLOPs
// count the useful products: forward 4·D per pair = 68.8 GFLOP, backward
// (dq 6·D, dkv 8·D) 241 GFLOP; compulsory bytes q, k, v, out ≈ 200 MB
// forward. At an H100 SXM's 989 TFLOP/s dense bf16: forward ≥ 70 µs,
// backward ≥ 0.24 ms (compute-bound; FlashAttention-2 reaches 50–70% of
// that peak on H100 at D = 64).
#include "golf_prelude.cuh"

#define ATTENTION_THREADS 128
#define ATTENTION_DELTA_THREADS 256

// ---------------------------------------------------------------------------
// Shared helpers.

// attention_elem is x[(row0 + t)·stride + hx·D + d] as float, or 0 past
// seq_len or D.
template <typename T>
__device__ __forceinline__ float attention_elem(const T* x, u64 row0, uint t, uint seq, uint stride, uint hx,
                                                uint D, uint d) {
  if (t >= seq || d >= D) {
    return 0.0f;
  }
  return to_f32(x[(row0 + t) * stride + (u64)hx * D + d]);
}

// attention_pair is the packed 16-bit pair x[.., d], x[.., d+1] (d even, D
// even), or 0 past seq_len or D.
template <typename T>
__device__ __forceinline__ uint attention_pair(const T* x, u64 row0, uint t, uint seq, uint stride, uint hx,
                                               uint D, uint d) {
  if (t >= seq || d >= D) {
    return 0u;
  }
  const T* p = x + (row0 + t) * stride + (u64)hx * D + d;
  return (uint)golf_bits(p[0]) | ((uint)golf_bits(p[1]) << 16);
}

// attention_stage copies rows [r0, r0 + rows) of head hx of x (·, Hx, D),
// counted from sequence row row0, into dst as a (rows, D) float tile, zeros
// past seq_len. Threads tid of nthreads share the work.
template <typename T>
__device__ __forceinline__ void attention_stage(float* dst, const T* x, u64 row0, uint r0, uint rows, uint seq,
                                                uint stride, uint hx, uint D, uint tid, uint nthreads) {
  for (uint i = tid; i < rows * D; i += nthreads) {
    const uint r = i / D;
    const uint d = i - r * D;
    dst[i] = attention_elem(x, row0, r0 + r, seq, stride, hx, D, d);
  }
}

// attention_stage16 copies the same rows as 16-bit pairs into dst, a
// (rows, ld) tile of u16 (ld even), zeros past seq_len and in the columns
// D .. dmax.
template <typename T>
__device__ __forceinline__ void attention_stage16(u16* dst, uint ld, uint dmax, const T* x, u64 row0, uint r0,
                                                  uint rows, uint seq, uint stride, uint hx, uint D, uint tid,
                                                  uint nthreads) {
  const uint pairs = dmax / 2u;
  for (uint i = tid; i < rows * pairs; i += nthreads) {
    const uint r = i / pairs;
    const uint d = (i - r * pairs) * 2u;
    *reinterpret_cast<uint*>(dst + r * ld + d) = attention_pair(x, row0, r0 + r, seq, stride, hx, D, d);
  }
}

// ---------------------------------------------------------------------------
// attention_delta: δ[n,h] = Σd dout[n,h,d]·out[n,h,d] in float, one thread
// per (row, head): grid ⌈N·H/256⌉ × 256. Baseline: 2·N·H·D·2 B = 134 MB
// read, 40 µs at 3.35 TB/s.
template <typename T>
__device__ void attention_delta(const T* dout, const T* out, float* delta, AttentionArgs args) {
  const uint rows = args.batch * args.seq_len * args.heads;
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) {
    return;
  }
  const uint D = args.head_dim;
  const u64 base = (u64)i * D;
  float acc = 0.0f;
  #pragma unroll 1
  for (uint d = 0; d < D; d++) {
    acc += to_f32(dout[base + d]) * to_f32(out[base + d]);
  }
  delta[i] = acc;
}

// ---------------------------------------------------------------------------
// Portable flavour.

// attention_fwd_portable: one block per (query tile of 32 rows, h, b).
// Shared memory: Q 32·D, K and V 2·16·D, P 32·16 floats, and 2·128 floats of
// partial maxima and sums: 19 KB at D = 64, 35 KB at D = 128.
template <typename T, uint DMAX>
__device__ void attention_fwd_portable(const T* q, const T* k, const T* v, T* out, float* lse,
                                       AttentionArgs args) {
  constexpr uint BQ = 32, BK = 16, NT = ATTENTION_THREADS;
  __shared__ float qbuf[BQ * DMAX];    // Q (BQ, D)
  __shared__ float kv[2 * BK * DMAX];  // K (BK, D), V (BK, D)
  __shared__ float pbuf[BQ * BK];      // P (BQ, BK)
  __shared__ float redmax[NT];
  __shared__ float redsum[NT];

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint q0 = blockIdx.x * BQ, h = blockIdx.y, hk = h / G;
  const u64 row0 = (u64)blockIdx.z * seq;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint tid = threadIdx.x, row = tid / 4u, part = tid % 4u;
  const uint t = q0 + row;

  attention_stage(qbuf, q, row0, q0, BQ, seq, qs, h, D, tid, NT);
  float o[DMAX / 4];
#pragma unroll
  for (uint i = 0; i < DMAX / 4u; i++) {
    o[i] = 0.0f;
  }
  float m = GOLF_NEG_BIG, l = 0.0f;
  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, seq, ks, hk, D, tid, NT);
    attention_stage(kv + BK * D, v, row0, k0, BK, seq, ks, hk, D, tid, NT);
    __syncthreads();
    float s[BK / 4];
    float mx = GOLF_NEG_BIG;
#pragma unroll
    for (uint i = 0; i < BK / 4u; i++) {
      const uint c = part + 4u * i;
      float dot = 0.0f;
      #pragma unroll 1
      for (uint d = 0; d < D; d++) {
        dot += qbuf[row * D + d] * kv[c * D + d];
      }
      s[i] = dot * scale;
      const uint u = k0 + c;
      if (u <= t && u < seq) {
        mx = fmaxf(mx, s[i]);
      }
    }
    redmax[tid] = mx;
    __syncthreads();
    mx = fmaxf(fmaxf(fmaxf(redmax[row * 4u], redmax[row * 4u + 1u]), redmax[row * 4u + 2u]), redmax[row * 4u + 3u]);
    const float mnew = fmaxf(m, mx);
    const float alpha = expf(m - mnew);
    float ps = 0.0f;
#pragma unroll
    for (uint i = 0; i < BK / 4u; i++) {
      const uint c = part + 4u * i;
      const uint u = k0 + c;
      float p = 0.0f;
      if (u <= t && u < seq) {
        p = expf(s[i] - mnew);
      }
      pbuf[row * BK + c] = p;
      ps += p;
    }
    redsum[tid] = ps;
    __syncthreads();
    ps = ((redsum[row * 4u] + redsum[row * 4u + 1u]) + redsum[row * 4u + 2u]) + redsum[row * 4u + 3u];
    l = l * alpha + ps;
    m = mnew;
#pragma unroll
    for (uint i = 0; i < DMAX / 4u; i++) {
      const uint d = part + 4u * i;
      if (d < D) {
        float acc = o[i] * alpha;
        for (uint c = 0; c < BK; c++) {
          acc += pbuf[row * BK + c] * kv[BK * D + c * D + d];
        }
        o[i] = acc;
      }
    }
    __syncthreads();
  }
  if (t < seq) {
    const u64 ob = (row0 + t) * qs + (u64)h * D;
#pragma unroll
    for (uint i = 0; i < DMAX / 4u; i++) {
      const uint d = part + 4u * i;
      if (d < D) {
        out[ob + d] = from_f32<T>(o[i] / l);
      }
    }
    if (part == 0) {
      lse[(row0 + t) * H + h] = m + logf(l);
    }
  }
}

// attention_dq_portable: one block per (query tile of 32 rows, h, b); per
// key tile of BK keys the row's scores and dP as dot products, dS into
// shared memory, then dQ += dS·K in registers. Shared memory: Q and dout
// 2·32·D, K and V 2·BK·D, dS 32·BK floats: 26 KB (D = 64, BK = 16), 41 KB
// (D = 128, BK = 8).
template <typename T, uint DMAX, uint BK>
__device__ void attention_dq_portable(const T* q, const T* k, const T* v, const T* dout, const float* lse,
                                      const float* delta, T* dq, AttentionArgs args) {
  constexpr uint BQ = 32, NT = ATTENTION_THREADS;
  __shared__ float qg[2 * BQ * DMAX];  // Q (BQ, D), dout (BQ, D)
  __shared__ float kv[2 * BK * DMAX];  // K (BK, D), V (BK, D)
  __shared__ float dsbuf[BQ * BK];     // dS (BQ, BK)

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint q0 = blockIdx.x * BQ, h = blockIdx.y, hk = h / G;
  const u64 row0 = (u64)blockIdx.z * seq;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint tid = threadIdx.x, row = tid / 4u, part = tid % 4u;
  const uint t = q0 + row;

  attention_stage(qg, q, row0, q0, BQ, seq, qs, h, D, tid, NT);
  attention_stage(qg + BQ * D, dout, row0, q0, BQ, seq, qs, h, D, tid, NT);
  float lse_t = 0.0f, delta_t = 0.0f;
  if (t < seq) {
    lse_t = lse[(row0 + t) * H + h];
    delta_t = delta[(row0 + t) * H + h];
  }
  float acc[DMAX / 4];
#pragma unroll
  for (uint i = 0; i < DMAX / 4u; i++) {
    acc[i] = 0.0f;
  }
  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, seq, ks, hk, D, tid, NT);
    attention_stage(kv + BK * D, v, row0, k0, BK, seq, ks, hk, D, tid, NT);
    __syncthreads();
#pragma unroll
    for (uint i = 0; i < BK / 4u; i++) {
      const uint c = part + 4u * i;
      const uint u = k0 + c;
      float ds = 0.0f;
      if (u <= t && u < seq) {
        float s = 0.0f, dp = 0.0f;
        #pragma unroll 1
        for (uint d = 0; d < D; d++) {
          s += qg[row * D + d] * kv[c * D + d];
          dp += qg[BQ * D + row * D + d] * kv[BK * D + c * D + d];
        }
        const float p = expf(s * scale - lse_t);
        ds = p * (dp - delta_t);
      }
      dsbuf[row * BK + c] = ds;
    }
    __syncthreads();
#pragma unroll
    for (uint i = 0; i < DMAX / 4u; i++) {
      const uint d = part + 4u * i;
      if (d < D) {
        float a = acc[i];
        for (uint c = 0; c < BK; c++) {
          a += dsbuf[row * BK + c] * kv[c * D + d];
        }
        acc[i] = a;
      }
    }
    __syncthreads();
  }
  if (t < seq) {
    const u64 o = (row0 + t) * qs + (u64)h * D;
#pragma unroll
    for (uint i = 0; i < DMAX / 4u; i++) {
      const uint d = part + 4u * i;
      if (d < D) {
        dq[o + d] = from_f32<T>(scale * acc[i]);
      }
    }
  }
}

// attention_dkv_portable: one block per (key tile of 32 rows, hk, b); for
// each query head of the group and each query tile of BQ rows at or after
// the key tile: P and dS of the row's keys against the tile's queries into
// shared memory, then dV += Pᵀ·dout and dK += dSᵀ·Q in registers. Shared
// memory: K and V 2·32·D, Q and dout 2·BQ·D, Pᵀ and dSᵀ 2·32·BQ floats:
// 28 KB (D = 64, BQ = 16), 42 KB (D = 128, BQ = 8).
template <typename T, uint DMAX, uint BQ>
__device__ void attention_dkv_portable(const T* q, const T* k, const T* v, const T* dout, const float* lse,
                                       const float* delta, T* dk, T* dv, AttentionArgs args) {
  constexpr uint BK = 32, NT = ATTENTION_THREADS;
  __shared__ float kv[2 * BK * DMAX];  // K (BK, D), V (BK, D)
  __shared__ float qg[2 * BQ * DMAX];  // Q (BQ, D), dout (BQ, D)
  __shared__ float pbuf[BK * BQ];      // Pᵀ (BK, BQ)
  __shared__ float dsbuf[BK * BQ];     // dSᵀ (BK, BQ)
  __shared__ float lse_tile[BQ];
  __shared__ float delta_tile[BQ];

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint k0 = blockIdx.x * BK, hk = blockIdx.y;
  const u64 row0 = (u64)blockIdx.z * seq;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint tid = threadIdx.x, row = tid / 4u, part = tid % 4u;
  const uint u = k0 + row;

  attention_stage(kv, k, row0, k0, BK, seq, ks, hk, D, tid, NT);
  attention_stage(kv + BK * D, v, row0, k0, BK, seq, ks, hk, D, tid, NT);
  float dka[DMAX / 4];
  float dva[DMAX / 4];
#pragma unroll
  for (uint i = 0; i < DMAX / 4u; i++) {
    dka[i] = 0.0f;
    dva[i] = 0.0f;
  }
  for (uint g = 0; g < G; g++) {
    const uint h = hk * G + g;
    for (uint q0 = k0 - k0 % BQ; q0 < seq; q0 += BQ) {
      attention_stage(qg, q, row0, q0, BQ, seq, qs, h, D, tid, NT);
      attention_stage(qg + BQ * D, dout, row0, q0, BQ, seq, qs, h, D, tid, NT);
      for (uint i = tid; i < BQ; i += NT) {
        const uint t = q0 + i;
        lse_tile[i] = t < seq ? lse[(row0 + t) * H + h] : 0.0f;
        delta_tile[i] = t < seq ? delta[(row0 + t) * H + h] : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (uint i = 0; i < BQ / 4u; i++) {
        const uint c = part + 4u * i;
        const uint t = q0 + c;
        float p = 0.0f, ds = 0.0f;
        if (u <= t && t < seq) {
          float s = 0.0f, dp = 0.0f;
          #pragma unroll 1
          for (uint d = 0; d < D; d++) {
            s += kv[row * D + d] * qg[c * D + d];
            dp += kv[BK * D + row * D + d] * qg[BQ * D + c * D + d];
          }
          p = expf(s * scale - lse_tile[c]);
          ds = p * (dp - delta_tile[c]);
        }
        pbuf[row * BQ + c] = p;
        dsbuf[row * BQ + c] = ds;
      }
      __syncthreads();
#pragma unroll
      for (uint i = 0; i < DMAX / 4u; i++) {
        const uint d = part + 4u * i;
        if (d < D) {
          float a = dva[i], b = dka[i];
          for (uint c = 0; c < BQ; c++) {
            a += pbuf[row * BQ + c] * qg[BQ * D + c * D + d];
            b += dsbuf[row * BQ + c] * qg[c * D + d];
          }
          dva[i] = a;
          dka[i] = b;
        }
      }
      __syncthreads();
    }
  }
  if (u < seq) {
    const u64 o = (row0 + u) * ks + (u64)hk * D;
#pragma unroll
    for (uint i = 0; i < DMAX / 4u; i++) {
      const uint d = part + 4u * i;
      if (d < D) {
        dk[o + d] = from_f32<T>(scale * dka[i]);
        dv[o + d] = from_f32<T>(dva[i]);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Tensor-core flavour (T = bf16 or fp16).
//
// Fragment coordinates (golf_mma16816): lane = 4g + qd; an accumulator
// d[nb][e] of a warp's 16-row strip holds row g (e < 2) or g + 8 (e ≥ 2),
// column nb·8 + 2qd + (e & 1).

// attention_qfrags loads A fragments of the 16-row strip starting at r0
// of head hx of x: f[kc] covers head-dim columns kc·16 .. kc·16+15.
template <typename T, uint DMAX>
__device__ __forceinline__ void attention_afrags(uint (&f)[DMAX / 16][4], const T* x, u64 row0, uint r0, uint seq,
                                                 uint stride, uint hx, uint D) {
  const uint lane = golf_lane(), g = lane >> 2, qd = lane & 3u;
#pragma unroll
  for (uint kc = 0; kc < DMAX / 16u; kc++) {
    const uint d0 = kc * 16u + 2u * qd;
    f[kc][0] = attention_pair(x, row0, r0 + g, seq, stride, hx, D, d0);
    f[kc][1] = attention_pair(x, row0, r0 + g + 8u, seq, stride, hx, D, d0);
    f[kc][2] = attention_pair(x, row0, r0 + g, seq, stride, hx, D, d0 + 8u);
    f[kc][3] = attention_pair(x, row0, r0 + g + 8u, seq, stride, hx, D, d0 + 8u);
  }
}

// attention_smem_afrag is the A fragment of rows r0.. r0+15, head-dim
// columns kc·16.., of a 16-bit tile in shared memory (row stride ld).
__device__ __forceinline__ void attention_smem_afrag(uint (&f)[4], const u16* tile, uint ld, uint r0, uint kc) {
  const uint lane = golf_lane(), g = lane >> 2, qd = lane & 3u;
  const u16* p = tile + (r0 + g) * ld + kc * 16u + 2u * qd;
  f[0] = golf_ld_pair(p);
  f[1] = golf_ld_pair(p + 8u * ld);
  f[2] = golf_ld_pair(p + 8u);
  f[3] = golf_ld_pair(p + 8u * ld + 8u);
}

// attention_bfrag_rows is the B fragment (k16 × n8) whose column j is row
// n0 + j of a shared tile and whose k runs along that row from column kc·16
// (S = X·Yᵀ with Y's rows in the tile): contiguous pairs.
__device__ __forceinline__ void attention_bfrag_rows(uint (&f)[2], const u16* tile, uint ld, uint n0, uint kc) {
  const uint lane = golf_lane(), g = lane >> 2, qd = lane & 3u;
  const u16* p = tile + (n0 + g) * ld + kc * 16u + 2u * qd;
  f[0] = golf_ld_pair(p);
  f[1] = golf_ld_pair(p + 8u);
}

// attention_bfrag_cols is the B fragment whose k runs down the tile's rows
// k0 .. k0+15 and whose column j is tile column c0 + j (O = P·V with V's
// rows in the tile): pairs gathered from two rows.
__device__ __forceinline__ void attention_bfrag_cols(uint (&f)[2], const u16* tile, uint ld, uint k0, uint c0) {
  const uint lane = golf_lane(), g = lane >> 2, qd = lane & 3u;
  const u16* p = tile + (k0 + 2u * qd) * ld + c0 + g;
  f[0] = golf_gather_pair(p, ld);
  f[1] = golf_gather_pair(p + 8u * ld, ld);
}

// attention_pfrag packs accumulators s[2c], s[2c+1] (16 rows × 16 columns)
// into an A fragment in T.
template <typename T, uint NB>
__device__ __forceinline__ void attention_pfrag(uint (&f)[4], const float (&s)[NB][4], uint c) {
  f[0] = golf_pack2<T>(s[2u * c][0], s[2u * c][1]);
  f[1] = golf_pack2<T>(s[2u * c][2], s[2u * c][3]);
  f[2] = golf_pack2<T>(s[2u * c + 1u][0], s[2u * c + 1u][1]);
  f[3] = golf_pack2<T>(s[2u * c + 1u][2], s[2u * c + 1u][3]);
}

// attention_fwd_tc: one block per (query tile of 64 rows, h, b), 4 warps of
// 16 query rows. Per key tile: S = Q·Kᵀ (Q fragments in registers), online
// softmax on S, O = diag(α)·O + P·V. Key tiles entirely above a warp's
// rows are skipped by that warp. Shared memory (kt, vt, the caller's): K
// and V 2·BK·(DMAX+8)·2 B = 18 KB (D ≤ 64, BK = 64) or 17 KB (d128,
// BK = 32). At D = 64 the kernel runs attention_fwd_fa2 instead.
template <typename T, uint DMAX, uint BK>
__device__ void attention_fwd_tc(u16* kt, u16* vt, const T* q, const T* k, const T* v, T* out, float* lse,
                                 AttentionArgs args) {
  constexpr uint BQ = 64, LD = DMAX + 8u, NT = ATTENTION_THREADS;

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint q0 = blockIdx.x * BQ, h = blockIdx.y, hk = h / G;
  const u64 row0 = (u64)blockIdx.z * seq;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint tid = threadIdx.x, lane = golf_lane(), warp = tid / 32u;
  const uint g = lane >> 2, qd = lane & 3u;
  const uint nk = (D + 15u) / 16u, nn = (D + 7u) / 8u;
  const uint wq0 = q0 + warp * 16u;
  const uint t_lo = wq0 + g, t_hi = wq0 + g + 8u;

  uint qf[DMAX / 16][4];
  attention_afrags<T, DMAX>(qf, q, row0, wq0, seq, qs, h, D);
  float o[DMAX / 8][4];
#pragma unroll
  for (uint j = 0; j < DMAX / 8u; j++) {
#pragma unroll
    for (uint e = 0; e < 4u; e++) {
      o[j][e] = 0.0f;
    }
  }
  float m_lo = GOLF_NEG_BIG, m_hi = GOLF_NEG_BIG, l_lo = 0.0f, l_hi = 0.0f;
  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage16(kt, LD, DMAX, k, row0, k0, BK, seq, ks, hk, D, tid, NT);
    attention_stage16(vt, LD, DMAX, v, row0, k0, BK, seq, ks, hk, D, tid, NT);
    __syncthreads();
    if (k0 <= wq0 + 15u) {  // some key of the tile is visible to the warp (uniform)
      float s[BK / 8][4];
#pragma unroll
      for (uint nb = 0; nb < BK / 8u; nb++) {
#pragma unroll
        for (uint e = 0; e < 4u; e++) {
          s[nb][e] = 0.0f;
        }
#pragma unroll
        for (uint kc = 0; kc < DMAX / 16u; kc++) {
          if (kc < nk) {
            uint b[2];
            attention_bfrag_rows(b, kt, LD, nb * 8u, kc);
            golf_mma16816<T>(s[nb], qf[kc], b);
          }
        }
      }
      float mx_lo = GOLF_NEG_BIG, mx_hi = GOLF_NEG_BIG;
#pragma unroll
      for (uint nb = 0; nb < BK / 8u; nb++) {
#pragma unroll
        for (uint e = 0; e < 4u; e++) {
          const uint u = k0 + nb * 8u + 2u * qd + (e & 1u);
          const uint t = e < 2u ? t_lo : t_hi;
          s[nb][e] *= scale;
          if (u <= t && u < seq) {
            if (e < 2u) {
              mx_lo = fmaxf(mx_lo, s[nb][e]);
            } else {
              mx_hi = fmaxf(mx_hi, s[nb][e]);
            }
          }
        }
      }
      const float mnew_lo = fmaxf(m_lo, golf_quad_max(mx_lo));
      const float mnew_hi = fmaxf(m_hi, golf_quad_max(mx_hi));
      const float alpha_lo = expf(m_lo - mnew_lo), alpha_hi = expf(m_hi - mnew_hi);
      float ps_lo = 0.0f, ps_hi = 0.0f;
#pragma unroll
      for (uint nb = 0; nb < BK / 8u; nb++) {
#pragma unroll
        for (uint e = 0; e < 4u; e++) {
          const uint u = k0 + nb * 8u + 2u * qd + (e & 1u);
          const uint t = e < 2u ? t_lo : t_hi;
          float p = 0.0f;
          if (u <= t && u < seq) {
            p = expf(s[nb][e] - (e < 2u ? mnew_lo : mnew_hi));
          }
          s[nb][e] = p;
          if (e < 2u) {
            ps_lo += p;
          } else {
            ps_hi += p;
          }
        }
      }
      l_lo = l_lo * alpha_lo + golf_quad_sum(ps_lo);
      l_hi = l_hi * alpha_hi + golf_quad_sum(ps_hi);
      m_lo = mnew_lo;
      m_hi = mnew_hi;
#pragma unroll
      for (uint j = 0; j < DMAX / 8u; j++) {
        o[j][0] *= alpha_lo;
        o[j][1] *= alpha_lo;
        o[j][2] *= alpha_hi;
        o[j][3] *= alpha_hi;
      }
#pragma unroll
      for (uint c = 0; c < BK / 16u; c++) {
        uint pf[4];
        attention_pfrag<T, BK / 8>(pf, s, c);
#pragma unroll
        for (uint j = 0; j < DMAX / 8u; j++) {
          if (j < nn) {
            uint b[2];
            attention_bfrag_cols(b, vt, LD, c * 16u, j * 8u);
            golf_mma16816<T>(o[j], pf, b);
          }
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (uint j = 0; j < DMAX / 8u; j++) {
#pragma unroll
    for (uint e = 0; e < 4u; e++) {
      const uint t = e < 2u ? t_lo : t_hi;
      const uint d = j * 8u + 2u * qd + (e & 1u);
      if (t < seq && d < D) {
        out[(row0 + t) * qs + (u64)h * D + d] = from_f32<T>(o[j][e] / (e < 2u ? l_lo : l_hi));
      }
    }
  }
  if (qd == 0) {
    if (t_lo < seq) {
      lse[(row0 + t_lo) * H + h] = m_lo + logf(l_lo);
    }
    if (t_hi < seq) {
      lse[(row0 + t_hi) * H + h] = m_hi + logf(l_hi);
    }
  }
}

// attention_fwd_fa2: the tc forward at D = 64 (the baseline's head dim,
// fixed at compile time), FlashAttention-2's design. One block per
// (query tile of 128 rows, h, b), the longest tiles (the latest rows,
// which see the most keys) first; 4 warps of 32 query rows, each as two
// 16-row strips whose Q fragments stay in registers, so that every K and V
// fragment feeds two mma. K/V tiles of 64 keys are staged by golf_cp_async16
// (16-byte copies, 8 per thread per matrix) into padded rows (72
// elements: 16-byte aligned and conflict-free for ldmatrix), two stages:
// tile j + 1 is in flight while tile j is computed. K's B fragments come
// from golf_ldmatrix_x4 (each call: two 8-key column blocks × 16 head-dim
// elements), V's from golf_ldmatrix_x4_trans; P stays in registers, packed
// from the S accumulators into A fragments. The softmax is in base 2 with
// the scale folded in (s·scale·log2 e, exp2f), each lane's l a partial sum
// reduced over the quad once at the end; the causal and sequence-end mask
// is applied only on tiles the diagonal or the end crosses, and a warp
// skips the tiles wholly above both its strips. Shared
// memory 2 stages × (K, V) × 64 × 72 × 2 B = 36 KB (smem, the caller's).
// Two barriers per key tile: after the copies of tile j land, and before
// tile j + 2's copies overwrite its stage.
template <typename T>
__device__ __forceinline__ void attention_fa2_stage(u16* kt, u16* vt, const T* k, const T* v, u64 row0, uint k0,
                                                    uint seq, uint ks, uint hk, uint tid) {
  constexpr uint LD = 72;
  for (uint i = tid; i < 64u * 8u; i += ATTENTION_THREADS) {
    const uint r = i >> 3, c = (i & 7u) * 8u;
    u16* dk = kt + r * LD + c;
    u16* dv = vt + r * LD + c;
    if (k0 + r < seq) {
      const u64 off = (row0 + k0 + r) * ks + (u64)hk * 64u + c;
      golf_cp_async16(dk, k + off);
      golf_cp_async16(dv, v + off);
    } else {
      for (uint w = 0; w < 4u; w++) {
        reinterpret_cast<uint*>(dk)[w] = 0u;
        reinterpret_cast<uint*>(dv)[w] = 0u;
      }
    }
  }
}

#define ATTENTION_FA2_SMEM (2u * 2u * 64u * 72u)

template <typename T>
__device__ void attention_fwd_fa2(u16* smem, const T* q, const T* k, const T* v, T* out, float* lse,
                                  AttentionArgs args) {
  constexpr uint D = 64, BQ = 128, BK = 64, MS = 2, LD = 72, TILE = BK * LD;
  const uint seq = args.seq_len, H = args.heads;
  const uint G = H / args.kv_heads;
  const uint q0 = (gridDim.x - 1u - blockIdx.x) * BQ, h = blockIdx.y, hk = h / G;
  const u64 row0 = (u64)blockIdx.z * seq;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float sl2 = args.scale * 1.44269504088896341f;  // scale·log2 e
  const uint tid = threadIdx.x, lane = golf_lane(), warp = tid / 32u;
  const uint g = lane >> 2, qd = lane & 3u;
  const uint wq0 = q0 + warp * 32u;

  uint qf[MS][D / 16][4];
  float o[MS][D / 8][4];
  float mrow[MS][2], lpart[MS][2];
#pragma unroll
  for (uint m = 0; m < MS; m++) {
    attention_afrags<T, D>(qf[m], q, row0, wq0 + 16u * m, seq, qs, h, D);
#pragma unroll
    for (uint j = 0; j < D / 8u; j++) {
#pragma unroll
      for (uint e = 0; e < 4u; e++) {
        o[m][j][e] = 0.0f;
      }
    }
    mrow[m][0] = mrow[m][1] = GOLF_NEG_BIG;
    lpart[m][0] = lpart[m][1] = 0.0f;
  }
  // ldmatrix row addresses: lane l serves matrix l / 8, row l % 8.
  const uint mi = lane >> 3, mr = lane & 7u;
  const uint kend = min(q0 + BQ, seq);
  const uint ntiles = (kend + BK - 1u) / BK;
  attention_fa2_stage(smem, smem + TILE, k, v, row0, 0u, seq, ks, hk, tid);
  golf_cp_async_commit();
  for (uint jt = 0; jt < ntiles; jt++) {
    if (jt + 1u < ntiles) {
      u16* st = smem + ((jt + 1u) & 1u) * 2u * TILE;
      attention_fa2_stage(st, st + TILE, k, v, row0, (jt + 1u) * BK, seq, ks, hk, tid);
    }
    golf_cp_async_commit();
    golf_cp_async_wait<1>();  // tile jt's copies (this thread's) have landed
    __syncthreads();          // and every thread's
    const u16* kt = smem + (jt & 1u) * 2u * TILE;
    const u16* vt = kt + TILE;
    const uint k0 = jt * BK;
    if (k0 <= wq0 + 31u) {  // some key of the tile is visible to the warp (uniform)
      float s[MS][BK / 8][4];
#pragma unroll
      for (uint m = 0; m < MS; m++) {
#pragma unroll
        for (uint nb = 0; nb < BK / 8u; nb++) {
#pragma unroll
          for (uint e = 0; e < 4u; e++) {
            s[m][nb][e] = 0.0f;
          }
        }
      }
      // S = Q·Kᵀ: each ldmatrix gives keys nb2·16 .. +15 at head-dim
      // columns kc·16 .. +15 (matrices: keys +0/+8 × columns +0/+8).
#pragma unroll
      for (uint kc = 0; kc < D / 16u; kc++) {
#pragma unroll
        for (uint nb2 = 0; nb2 < BK / 16u; nb2++) {
          uint b4[4];
          golf_ldmatrix_x4(b4, kt + (nb2 * 16u + (mi >> 1) * 8u + mr) * LD + kc * 16u + (mi & 1u) * 8u);
          const uint b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};
#pragma unroll
          for (uint m = 0; m < MS; m++) {
            golf_mma16816<T>(s[m][2u * nb2], qf[m][kc], b0);
            golf_mma16816<T>(s[m][2u * nb2 + 1u], qf[m][kc], b1);
          }
        }
      }
#pragma unroll
      for (uint m = 0; m < MS; m++) {
        const uint r0 = wq0 + 16u * m;
        const uint t_lo = r0 + g, t_hi = r0 + g + 8u;
        // Every key of the tile at or before the strip's first row and
        // inside the sequence: nothing to mask (uniform per warp).
        const bool masked = k0 + BK - 1u > r0 || k0 + BK > seq;
        float mx_lo = GOLF_NEG_BIG, mx_hi = GOLF_NEG_BIG;
#pragma unroll
        for (uint nb = 0; nb < BK / 8u; nb++) {
#pragma unroll
          for (uint e = 0; e < 4u; e++) {
            float x = s[m][nb][e] * sl2;
            if (masked) {
              const uint u = k0 + nb * 8u + 2u * qd + (e & 1u);
              if (u > (e < 2u ? t_lo : t_hi) || u >= seq) {
                x = GOLF_NEG_BIG;
              }
            }
            s[m][nb][e] = x;
            if (e < 2u) {
              mx_lo = fmaxf(mx_lo, x);
            } else {
              mx_hi = fmaxf(mx_hi, x);
            }
          }
        }
        const float mnew_lo = fmaxf(mrow[m][0], golf_quad_max(mx_lo));
        const float mnew_hi = fmaxf(mrow[m][1], golf_quad_max(mx_hi));
        const float alpha_lo = exp2f(mrow[m][0] - mnew_lo), alpha_hi = exp2f(mrow[m][1] - mnew_hi);
        mrow[m][0] = mnew_lo;
        mrow[m][1] = mnew_hi;
        float ps_lo = 0.0f, ps_hi = 0.0f;
#pragma unroll
        for (uint nb = 0; nb < BK / 8u; nb++) {
#pragma unroll
          for (uint e = 0; e < 4u; e++) {
            // A masked score is GOLF_NEG_BIG: exp2 of it, less a row
            // maximum that is a real score, is exactly 0.
            const float p = exp2f(s[m][nb][e] - (e < 2u ? mnew_lo : mnew_hi));
            s[m][nb][e] = p;
            if (e < 2u) {
              ps_lo += p;
            } else {
              ps_hi += p;
            }
          }
        }
        lpart[m][0] = lpart[m][0] * alpha_lo + ps_lo;
        lpart[m][1] = lpart[m][1] * alpha_hi + ps_hi;
#pragma unroll
        for (uint j = 0; j < D / 8u; j++) {
          o[m][j][0] *= alpha_lo;
          o[m][j][1] *= alpha_lo;
          o[m][j][2] *= alpha_hi;
          o[m][j][3] *= alpha_hi;
        }
      }
      // O += P·V, 16 keys at a time (P packed from S per chunk, so that S's
      // registers free as the chunks go): each ldmatrix.trans gives keys
      // c·16 .. +15 (k) at head-dim columns j2·16 .. +15 (n): matrices keys
      // +0/+8 × columns +0/+8.
#pragma unroll
      for (uint c = 0; c < BK / 16u; c++) {
        uint pf[MS][4];
#pragma unroll
        for (uint m = 0; m < MS; m++) {
          attention_pfrag<T, BK / 8>(pf[m], s[m], c);
        }
#pragma unroll
        for (uint j2 = 0; j2 < D / 16u; j2++) {
          uint b4[4];
          golf_ldmatrix_x4_trans(b4, vt + (c * 16u + (mi & 1u) * 8u + mr) * LD + j2 * 16u + (mi >> 1) * 8u);
          const uint b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};
#pragma unroll
          for (uint m = 0; m < MS; m++) {
            golf_mma16816<T>(o[m][2u * j2], pf[m], b0);
            golf_mma16816<T>(o[m][2u * j2 + 1u], pf[m], b1);
          }
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before tile jt + 2 is staged into it
  }
#pragma unroll
  for (uint m = 0; m < MS; m++) {
    const uint t_lo = wq0 + 16u * m + g, t_hi = t_lo + 8u;
    const float l_lo = golf_quad_sum(lpart[m][0]), l_hi = golf_quad_sum(lpart[m][1]);
    const float inv_lo = 1.0f / l_lo, inv_hi = 1.0f / l_hi;
#pragma unroll
    for (uint j = 0; j < D / 8u; j++) {
      const uint d = j * 8u + 2u * qd;
      if (t_lo < seq) {
        *reinterpret_cast<uint*>(out + (row0 + t_lo) * qs + (u64)h * D + d) =
            golf_pack2<T>(o[m][j][0] * inv_lo, o[m][j][1] * inv_lo);
      }
      if (t_hi < seq) {
        *reinterpret_cast<uint*>(out + (row0 + t_hi) * qs + (u64)h * D + d) =
            golf_pack2<T>(o[m][j][2] * inv_hi, o[m][j][3] * inv_hi);
      }
    }
    // lse in natural log: m is in units of log2 (scaled scores).
    if (qd == 0) {
      if (t_lo < seq) {
        lse[(row0 + t_lo) * H + h] = mrow[m][0] * 0.693147180559945309f + logf(l_lo);
      }
      if (t_hi < seq) {
        lse[(row0 + t_hi) * H + h] = mrow[m][1] * 0.693147180559945309f + logf(l_hi);
      }
    }
  }
}

// attention_fwd_tc_entry is the tc forward kernel's body: at DMAX = 64
// attention_fwd_fa2 when D = 64, attention_fwd_tc otherwise, in one shared
// allocation (the host's grid follows: attTileRows).
template <typename T, uint DMAX, uint BK>
__device__ void attention_fwd_tc_entry(const T* q, const T* k, const T* v, T* out, float* lse, AttentionArgs args) {
  if constexpr (DMAX == 64) {
    __shared__ __align__(16) u16 smem[ATTENTION_FA2_SMEM];
    if (args.head_dim == 64u) {
      attention_fwd_fa2<T>(smem, q, k, v, out, lse, args);
    } else {
      attention_fwd_tc<T, DMAX, BK>(smem, smem + BK * (DMAX + 8u), q, k, v, out, lse, args);
    }
  } else {
    __shared__ __align__(16) u16 smem[2u * BK * (DMAX + 8u)];
    attention_fwd_tc<T, DMAX, BK>(smem, smem + BK * (DMAX + 8u), q, k, v, out, lse, args);
  }
}

// attention_dq_tc: one block per (query tile of 64 rows, h, b), 4 warps of
// 16 query rows with their q and dout fragments in registers. Per key
// tile: S = Q·Kᵀ, dP = dout·Vᵀ, dS = P⊙(dP − δ) with P = exp(scale·S − lse),
// dQ += dS·K; finally dq = scale·dQ. Shared memory: K and V as in the
// forward.
template <typename T, uint DMAX, uint BK>
__device__ void attention_dq_tc(const T* q, const T* k, const T* v, const T* dout, const float* lse,
                                const float* delta, T* dq, AttentionArgs args) {
  constexpr uint BQ = 64, LD = DMAX + 8u, NT = ATTENTION_THREADS;
  __shared__ __align__(16) u16 kt[BK * LD];
  __shared__ __align__(16) u16 vt[BK * LD];

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint q0 = blockIdx.x * BQ, h = blockIdx.y, hk = h / G;
  const u64 row0 = (u64)blockIdx.z * seq;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint tid = threadIdx.x, lane = golf_lane(), warp = tid / 32u;
  const uint g = lane >> 2, qd = lane & 3u;
  const uint nk = (D + 15u) / 16u, nn = (D + 7u) / 8u;
  const uint wq0 = q0 + warp * 16u;
  const uint t_lo = wq0 + g, t_hi = wq0 + g + 8u;

  uint qf[DMAX / 16][4];
  uint gf[DMAX / 16][4];
  attention_afrags<T, DMAX>(qf, q, row0, wq0, seq, qs, h, D);
  attention_afrags<T, DMAX>(gf, dout, row0, wq0, seq, qs, h, D);
  const float lse_lo = t_lo < seq ? lse[(row0 + t_lo) * H + h] : 0.0f;
  const float lse_hi = t_hi < seq ? lse[(row0 + t_hi) * H + h] : 0.0f;
  const float delta_lo = t_lo < seq ? delta[(row0 + t_lo) * H + h] : 0.0f;
  const float delta_hi = t_hi < seq ? delta[(row0 + t_hi) * H + h] : 0.0f;
  float acc[DMAX / 8][4];
#pragma unroll
  for (uint j = 0; j < DMAX / 8u; j++) {
#pragma unroll
    for (uint e = 0; e < 4u; e++) {
      acc[j][e] = 0.0f;
    }
  }
  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage16(kt, LD, DMAX, k, row0, k0, BK, seq, ks, hk, D, tid, NT);
    attention_stage16(vt, LD, DMAX, v, row0, k0, BK, seq, ks, hk, D, tid, NT);
    __syncthreads();
    if (k0 <= wq0 + 15u) {
      float s[BK / 8][4];
      float dp[BK / 8][4];
#pragma unroll
      for (uint nb = 0; nb < BK / 8u; nb++) {
#pragma unroll
        for (uint e = 0; e < 4u; e++) {
          s[nb][e] = 0.0f;
          dp[nb][e] = 0.0f;
        }
#pragma unroll
        for (uint kc = 0; kc < DMAX / 16u; kc++) {
          if (kc < nk) {
            uint b[2];
            attention_bfrag_rows(b, kt, LD, nb * 8u, kc);
            golf_mma16816<T>(s[nb], qf[kc], b);
            attention_bfrag_rows(b, vt, LD, nb * 8u, kc);
            golf_mma16816<T>(dp[nb], gf[kc], b);
          }
        }
      }
#pragma unroll
      for (uint nb = 0; nb < BK / 8u; nb++) {
#pragma unroll
        for (uint e = 0; e < 4u; e++) {
          const uint u = k0 + nb * 8u + 2u * qd + (e & 1u);
          const uint t = e < 2u ? t_lo : t_hi;
          float ds = 0.0f;
          if (u <= t && u < seq) {
            const float p = expf(s[nb][e] * scale - (e < 2u ? lse_lo : lse_hi));
            ds = p * (dp[nb][e] - (e < 2u ? delta_lo : delta_hi));
          }
          s[nb][e] = ds;
        }
      }
#pragma unroll
      for (uint c = 0; c < BK / 16u; c++) {
        uint df[4];
        attention_pfrag<T, BK / 8>(df, s, c);
#pragma unroll
        for (uint j = 0; j < DMAX / 8u; j++) {
          if (j < nn) {
            uint b[2];
            attention_bfrag_cols(b, kt, LD, c * 16u, j * 8u);
            golf_mma16816<T>(acc[j], df, b);
          }
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (uint j = 0; j < DMAX / 8u; j++) {
#pragma unroll
    for (uint e = 0; e < 4u; e++) {
      const uint t = e < 2u ? t_lo : t_hi;
      const uint d = j * 8u + 2u * qd + (e & 1u);
      if (t < seq && d < D) {
        dq[(row0 + t) * qs + (u64)h * D + d] = from_f32<T>(scale * acc[j][e]);
      }
    }
  }
}

// attention_dkv_tc: one block per (key tile of 64 rows, hk, b), 4 warps of
// 16 key rows; K and V stay in shared memory for the block's life. For each
// query head of the group and each query tile of 16 rows at or after the
// key tile: Sᵀ = K·Qᵀ, dPᵀ = V·doutᵀ, Pᵀ = exp(scale·Sᵀ − lse),
// dSᵀ = Pᵀ⊙(dPᵀ − δ), dV += Pᵀ·dout, dK += dSᵀ·Q (accumulators in
// registers); finally dk = scale·dK. Shared memory: K and V 2·64·(DMAX+8)·2
// B, Q and dout 2·16·(DMAX+8)·2 B, lse and δ: 23 KB (D ≤ 64), 43 KB (d128).
template <typename T, uint DMAX>
__device__ void attention_dkv_tc(const T* q, const T* k, const T* v, const T* dout, const float* lse,
                                 const float* delta, T* dk, T* dv, AttentionArgs args) {
  constexpr uint BK = 64, BQ = 16, LD = DMAX + 8u, NT = ATTENTION_THREADS;
  __shared__ __align__(16) u16 kt[BK * LD];
  __shared__ __align__(16) u16 vt[BK * LD];
  __shared__ __align__(16) u16 qt[BQ * LD];
  __shared__ __align__(16) u16 gt[BQ * LD];
  __shared__ float lse_tile[BQ];
  __shared__ float delta_tile[BQ];

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint k0 = blockIdx.x * BK, hk = blockIdx.y;
  const u64 row0 = (u64)blockIdx.z * seq;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint tid = threadIdx.x, lane = golf_lane(), warp = tid / 32u;
  const uint g = lane >> 2, qd = lane & 3u;
  const uint nk = (D + 15u) / 16u, nn = (D + 7u) / 8u;
  const uint wr = warp * 16u;  // the warp's first key row in the tile
  const uint u_lo = k0 + wr + g, u_hi = k0 + wr + g + 8u;

  attention_stage16(kt, LD, DMAX, k, row0, k0, BK, seq, ks, hk, D, tid, NT);
  attention_stage16(vt, LD, DMAX, v, row0, k0, BK, seq, ks, hk, D, tid, NT);
  float dka[DMAX / 8][4];
  float dva[DMAX / 8][4];
#pragma unroll
  for (uint j = 0; j < DMAX / 8u; j++) {
#pragma unroll
    for (uint e = 0; e < 4u; e++) {
      dka[j][e] = 0.0f;
      dva[j][e] = 0.0f;
    }
  }
  for (uint gi = 0; gi < G; gi++) {
    const uint h = hk * G + gi;
    for (uint q0 = k0; q0 < seq; q0 += BQ) {
      attention_stage16(qt, LD, DMAX, q, row0, q0, BQ, seq, qs, h, D, tid, NT);
      attention_stage16(gt, LD, DMAX, dout, row0, q0, BQ, seq, qs, h, D, tid, NT);
      for (uint i = tid; i < BQ; i += NT) {
        const uint t = q0 + i;
        lse_tile[i] = t < seq ? lse[(row0 + t) * H + h] : 0.0f;
        delta_tile[i] = t < seq ? delta[(row0 + t) * H + h] : 0.0f;
      }
      __syncthreads();
      if (q0 + BQ - 1u >= k0 + wr) {  // some query of the tile sees a key of the warp (uniform)
        float st[2][4];
        float dpt[2][4];
#pragma unroll
        for (uint nb = 0; nb < 2u; nb++) {
#pragma unroll
          for (uint e = 0; e < 4u; e++) {
            st[nb][e] = 0.0f;
            dpt[nb][e] = 0.0f;
          }
        }
#pragma unroll
        for (uint kc = 0; kc < DMAX / 16u; kc++) {
          if (kc < nk) {
            uint ka[4];
            uint va[4];
            attention_smem_afrag(ka, kt, LD, wr, kc);
            attention_smem_afrag(va, vt, LD, wr, kc);
#pragma unroll
            for (uint nb = 0; nb < 2u; nb++) {
              uint b[2];
              attention_bfrag_rows(b, qt, LD, nb * 8u, kc);
              golf_mma16816<T>(st[nb], ka, b);
              attention_bfrag_rows(b, gt, LD, nb * 8u, kc);
              golf_mma16816<T>(dpt[nb], va, b);
            }
          }
        }
#pragma unroll
        for (uint nb = 0; nb < 2u; nb++) {
#pragma unroll
          for (uint e = 0; e < 4u; e++) {
            const uint col = nb * 8u + 2u * qd + (e & 1u);
            const uint t = q0 + col;
            const uint u = e < 2u ? u_lo : u_hi;
            float p = 0.0f, ds = 0.0f;
            if (u <= t && t < seq) {
              p = expf(st[nb][e] * scale - lse_tile[col]);
              ds = p * (dpt[nb][e] - delta_tile[col]);
            }
            st[nb][e] = p;
            dpt[nb][e] = ds;
          }
        }
        uint pf[4];
        uint df[4];
        attention_pfrag<T, 2>(pf, st, 0);
        attention_pfrag<T, 2>(df, dpt, 0);
#pragma unroll
        for (uint j = 0; j < DMAX / 8u; j++) {
          if (j < nn) {
            uint b[2];
            attention_bfrag_cols(b, gt, LD, 0, j * 8u);
            golf_mma16816<T>(dva[j], pf, b);
            attention_bfrag_cols(b, qt, LD, 0, j * 8u);
            golf_mma16816<T>(dka[j], df, b);
          }
        }
      }
      __syncthreads();  // qt, gt and the tiles of lse and δ are reused
    }
  }
#pragma unroll
  for (uint j = 0; j < DMAX / 8u; j++) {
#pragma unroll
    for (uint e = 0; e < 4u; e++) {
      const uint u = e < 2u ? u_lo : u_hi;
      const uint d = j * 8u + 2u * qd + (e & 1u);
      if (u < seq && d < D) {
        const u64 o = (row0 + u) * ks + (u64)hk * D + d;
        dk[o] = from_f32<T>(scale * dka[j][e]);
        dv[o] = from_f32<T>(dva[j][e]);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Instantiation: the portable kernels in every type, the tc ones in half
// and bfloat (in float the tc flavour is the portable kernel, so fp32 stays
// exact). DMAX 64 is the unsuffixed kernel, 128 the _d128 one; the tiles
// of each follow the file comment.

#define ATTENTION_PORTABLE_DIRS(tname, T, sfx, DMAX, SMALL)                                                    \
  GOLF_KERNEL(GOLF_NAME(attention_fwd##sfx, portable, tname), ATTENTION_THREADS)(                              \
      const T* q, const T* k, const T* v, T* out, float* lse, AttentionArgs args) {                            \
    attention_fwd_portable<T, DMAX>(q, k, v, out, lse, args);                                                  \
  }                                                                                                            \
  GOLF_KERNEL(GOLF_NAME(attention_dq##sfx, portable, tname), ATTENTION_THREADS)(                               \
      const T* q, const T* k, const T* v, const T* dout, const float* lse, const float* delta, T* dq,          \
      AttentionArgs args) {                                                                                    \
    attention_dq_portable<T, DMAX, SMALL>(q, k, v, dout, lse, delta, dq, args);                                \
  }                                                                                                            \
  GOLF_KERNEL(GOLF_NAME(attention_dkv##sfx, portable, tname), ATTENTION_THREADS)(                              \
      const T* q, const T* k, const T* v, const T* dout, const float* lse, const float* delta, T* dk, T* dv,   \
      AttentionArgs args) {                                                                                    \
    attention_dkv_portable<T, DMAX, SMALL>(q, k, v, dout, lse, delta, dk, dv, args);                           \
  }

#define ATTENTION_TC_DIRS(tname, T, sfx, DMAX, BK)                                                             \
  GOLF_KERNEL(GOLF_NAME(attention_fwd##sfx, tc, tname), ATTENTION_THREADS)(                                    \
      const T* q, const T* k, const T* v, T* out, float* lse, AttentionArgs args) {                            \
    attention_fwd_tc_entry<T, DMAX, BK>(q, k, v, out, lse, args);                                              \
  }                                                                                                            \
  GOLF_KERNEL(GOLF_NAME(attention_dq##sfx, tc, tname), ATTENTION_THREADS)(                                     \
      const T* q, const T* k, const T* v, const T* dout, const float* lse, const float* delta, T* dq,          \
      AttentionArgs args) {                                                                                    \
    attention_dq_tc<T, DMAX, BK>(q, k, v, dout, lse, delta, dq, args);                                         \
  }                                                                                                            \
  GOLF_KERNEL(GOLF_NAME(attention_dkv##sfx, tc, tname), ATTENTION_THREADS)(                                    \
      const T* q, const T* k, const T* v, const T* dout, const float* lse, const float* delta, T* dk, T* dv,   \
      AttentionArgs args) {                                                                                    \
    attention_dkv_tc<T, DMAX>(q, k, v, dout, lse, delta, dk, dv, args);                                        \
  }

#define ATTENTION_PORTABLE(tname, T)                                                                           \
  ATTENTION_PORTABLE_DIRS(tname, T, , 64, 16)                                                                  \
  ATTENTION_PORTABLE_DIRS(tname, T, _d128, 128, 8)                                                             \
  GOLF_KERNEL(GOLF_NAME(attention_delta, portable, tname), ATTENTION_DELTA_THREADS)(                           \
      const T* dout, const T* out, float* delta, AttentionArgs args) {                                         \
    attention_delta<T>(dout, out, delta, args);                                                                \
  }

#define ATTENTION_TC(tname, T)                                                                                 \
  ATTENTION_TC_DIRS(tname, T, , 64, 64)                                                                        \
  ATTENTION_TC_DIRS(tname, T, _d128, 128, 32)

GOLF_INSTANTIATE(ATTENTION_PORTABLE)
GOLF_INSTANTIATE_16(ATTENTION_TC)
