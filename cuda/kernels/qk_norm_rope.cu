// qk_norm_rope: RMSNorm over each head of q or k, rotary embedding, per-head
// gain; forward and backward (shaders/qk_norm_rope.metal in CUDA).
//
//	rstd[n,h] = 1/sqrt(mean_d x[n,h,d]² + eps);  u = x·rstd
//	out[i]     = g[h]·(u[i]·cos(pθ_i) − u[i+D/2]·sin(pθ_i))      (forward)
//	out[i+D/2] = g[h]·(u[i]·sin(pθ_i) + u[i+D/2]·cos(pθ_i))
//	du = g[h]·Rᵀ(dout);  dx = rstd·(du − u·mean_d(du·u))        (backward)
//	dgain[h] += Σ_{n,d} dout[n,h,d]·R(u)[n,h,d]
//	x, out, dout, dx T (N, Hx, D); rstd float (N, Hx); gain, dgain float (Hx)
//
// p = n mod seq_len. cos(pθ_i) and sin(pθ_i) come from a table the host
// computes once in float64 (rope: float (seq_len, D/2, 2): cos, sin), so no
// kernel evaluates a transcendental function. A head (n, h) is G lanes of a
// warp, G the power of two at or above its ⌈(D/2)/8⌉ chunks of pairs (at
// most 32; D = 64: G = 4, 8 heads per warp; D = 128: G = 8), 8 warps per
// block of 256 threads (grid ⌈N·Hx/(8·32/G)⌉): lane l of a head handles
// the chunks c = l, l + G, ... of pairs (i, i+D/2), i in [8c, 8c + 8),
// with 16-byte loads and stores of x and out (and of the table) where the
// halves are aligned (golf_rows.cuh's chunks), and keeps its first chunk
// in registers for the second pass. Sums over a head are float32
// butterflies over its G lanes, each lane's chunks added in order, in
// every element type.
// dgain is deterministic: the backward writes one partial Σ_d per head
// into partial (float (N, Hx)) and qk_norm_rope_dgain adds Σ_n partial[n,h]
// into dgain[h] in a fixed order (no atomics). The pair kernels
// (qk_norm_rope_pair_*) cover q and k in one launch each, their blocks
// running the same per-head code (qk_norm_rope_*_head) as the single
// kernels: the bits of the two single calls. No tensor cores here: the
// tc flavour's names resolve to these kernels (cuda.Kernel.Name).
// Baseline (q: N = 8192, H = 8, D = 64, bf16; k with Hkv = 4 is half):
// forward 16.8 MB + rstd 0.26 MB, backward 25.2 MB + 0.52 MB: 5–8 µs at
// 3.35 TB/s.
#include "golf_rows.cuh"

#define QK_NORM_ROPE_THREADS 256
#define QK_NORM_ROPE_WARPS (QK_NORM_ROPE_THREADS / 32)

// qk_lanes is G, the lanes of a head: the power of two at or above the
// head's chunks of pairs ⌈(D/2)/8⌉, at most 32 (cuda's qkLanes).
GOLF_DEV uint qk_lanes(uint head_dim) {
  const uint nch = (head_dim / 2u + GOLF_CHUNK - 1u) / GOLF_CHUNK;
  uint g = 1u;
  while (g < nch && g < 32u) {
    g <<= 1;
  }
  return g;
}

// qk_heads_per_block is the heads of a block: 32/G per warp.
GOLF_DEV uint qk_heads_per_block(uint head_dim) { return QK_NORM_ROPE_WARPS * (32u / qk_lanes(head_dim)); }

// qk_group_sum: Σ over the G lanes of the caller's head (an xor butterfly
// inside each aligned group of G lanes: every lane of the group gets the
// same bits). Every lane of the warp calls it.
GOLF_DEV float qk_group_sum(float v, uint G) {
  for (uint o = G / 2u; o > 0u; o >>= 1) {
    v += __shfl_xor_sync(GOLF_FULL_MASK, v, o);
  }
  return v;
}

// qk_rope_chunk: cos and sin of the pairs [i0, i0 + valid) from the table
// row cs (cos, sin interleaved): two chunks of float.
GOLF_DEV void qk_rope_chunk(const float* cs, uint i0, uint valid, float (&cosv)[GOLF_CHUNK],
                            float (&sinv)[GOLF_CHUNK]) {
  float lo[GOLF_CHUNK], hi[GOLF_CHUNK];
  const uint v2 = 2u * valid;
  golf_ld_f32(cs + 2u * i0, min(GOLF_CHUNK, v2), lo);
  golf_ld_f32(cs + 2u * i0 + GOLF_CHUNK, v2 > GOLF_CHUNK ? v2 - GOLF_CHUNK : 0u, hi);
#pragma unroll
  for (uint k = 0; k < GOLF_CHUNK / 2u; k++) {
    cosv[k] = lo[2u * k];
    sinv[k] = lo[2u * k + 1u];
    cosv[GOLF_CHUNK / 2u + k] = hi[2u * k];
    sinv[GOLF_CHUNK / 2u + k] = hi[2u * k + 1u];
  }
}

// qk_norm_rope_fwd_head: head `head` (n·Hx + h) of x on the G lanes of
// its group (sub = the lane's index in it); live is false for the lanes
// of a warp's last group past the heads, which still take part in the
// group sums. Lane sub owns the chunks c = sub, sub + G, ... of the pairs
// (i, i + D/2), i in [8c, 8c + 8), and keeps its first in registers.
template <typename T>
__device__ __forceinline__ void qk_norm_rope_fwd_head(const T* x, const float* rope, const float* gain, T* out,
                                                      float* rstd, const RopeArgs& args, uint head, bool live,
                                                      uint sub, uint G) {
  constexpr uint n = GOLF_CHUNK;
  const uint npairs = args.head_dim / 2u;
  const uint nch = (npairs + n - 1u) / n;
  const u64 base = (u64)head * args.head_dim;
  golf_chunk<T> first_a, first_c;
  float ss = 0.0f;
  if (live) {
    for (uint c = sub; c < nch; c += G) {
      const uint valid = min(n, npairs - c * n);
      const golf_chunk<T> xa = golf_ld_chunk<T>(x + base + c * n, valid);
      const golf_chunk<T> xc = golf_ld_chunk<T>(x + base + npairs + c * n, valid);
      float a[n], b[n];
      golf_widen<T>(xa, a);
      golf_widen<T>(xc, b);
#pragma unroll
      for (uint e = 0; e < n; e++) {
        if (e < valid) {
          ss += a[e] * a[e] + b[e] * b[e];
        }
      }
      if (c == sub) {
        first_a = xa;
        first_c = xc;
      }
    }
  }
  ss = qk_group_sum(ss, G);
  if (!live) {
    return;
  }
  const float rs = 1.0f / sqrtf(ss / (float)args.head_dim + args.eps);
  if (sub == 0) {
    rstd[head] = rs;
  }
  const uint row = head / args.heads;
  const float g = args.has_gain != 0 ? gain[head % args.heads] : 1.0f;
  const float* cs = rope + (u64)(row % args.seq_len) * npairs * 2u;
  for (uint c = sub; c < nch; c += G) {
    const uint valid = min(n, npairs - c * n);
    float xa[n], xc[n], cosv[n], sinv[n], oa[n], oc[n];
    golf_widen<T>(c == sub ? first_a : golf_ld_chunk<T>(x + base + c * n, valid), xa);
    golf_widen<T>(c == sub ? first_c : golf_ld_chunk<T>(x + base + npairs + c * n, valid), xc);
    qk_rope_chunk(cs, c * n, valid, cosv, sinv);
#pragma unroll
    for (uint e = 0; e < n; e++) {
      const float a = xa[e] * rs;
      const float b = xc[e] * rs;
      oa[e] = g * (a * cosv[e] - b * sinv[e]);
      oc[e] = g * (a * sinv[e] + b * cosv[e]);
    }
    golf_st_row<T>(out + base + c * n, valid, oa);
    golf_st_row<T>(out + base + npairs + c * n, valid, oc);
  }
}

// qk_norm_rope_bwd_head: head `head` of x on its group of lanes, as
// qk_norm_rope_fwd_head: dx and the head's dgain partial.
template <typename T>
__device__ __forceinline__ void qk_norm_rope_bwd_head(const T* dout, const T* x, const float* rstd,
                                                      const float* rope, const float* gain, T* dx, float* partial,
                                                      const RopeArgs& args, uint head, bool live, uint sub,
                                                      uint G) {
  constexpr uint n = GOLF_CHUNK;
  const uint npairs = args.head_dim / 2u;
  const uint nch = (npairs + n - 1u) / n;
  const u64 base = (u64)head * args.head_dim;
  float g = 1.0f, rs = 0.0f;
  const float* cs = rope;
  if (live) {
    g = args.has_gain != 0 ? gain[head % args.heads] : 1.0f;
    rs = rstd[head];
    cs = rope + (u64)((head / args.heads) % args.seq_len) * npairs * 2u;
  }
  golf_chunk<T> first_a, first_c, first_ga, first_gc;
  float dot = 0.0f;  // Σ_d du·u
  float dg = 0.0f;   // Σ_d dout·R(u)
  if (live) {
    for (uint c = sub; c < nch; c += G) {
      const uint valid = min(n, npairs - c * n);
      const golf_chunk<T> xa = golf_ld_chunk<T>(x + base + c * n, valid);
      const golf_chunk<T> xc = golf_ld_chunk<T>(x + base + npairs + c * n, valid);
      const golf_chunk<T> da = golf_ld_chunk<T>(dout + base + c * n, valid);
      const golf_chunk<T> dc = golf_ld_chunk<T>(dout + base + npairs + c * n, valid);
      float va[n], vc[n], ga[n], gc[n], cosv[n], sinv[n];
      golf_widen<T>(xa, va);
      golf_widen<T>(xc, vc);
      golf_widen<T>(da, ga);
      golf_widen<T>(dc, gc);
      qk_rope_chunk(cs, c * n, valid, cosv, sinv);
#pragma unroll
      for (uint e = 0; e < n; e++) {
        if (e < valid) {
          const float a = va[e] * rs;
          const float b = vc[e] * rs;
          dg += ga[e] * (a * cosv[e] - b * sinv[e]) + gc[e] * (a * sinv[e] + b * cosv[e]);
          const float dua = g * (ga[e] * cosv[e] + gc[e] * sinv[e]);
          const float duc = g * (gc[e] * cosv[e] - ga[e] * sinv[e]);
          dot += dua * a + duc * b;
        }
      }
      if (c == sub) {
        first_a = xa;
        first_c = xc;
        first_ga = da;
        first_gc = dc;
      }
    }
  }
  dot = qk_group_sum(dot, G);
  dg = qk_group_sum(dg, G);
  if (!live) {
    return;
  }
  if (sub == 0) {
    partial[head] = dg;
  }
  const float m = dot / (float)args.head_dim;
  for (uint c = sub; c < nch; c += G) {
    const uint valid = min(n, npairs - c * n);
    float va[n], vc[n], ga[n], gc[n], cosv[n], sinv[n], oa[n], oc[n];
    golf_widen<T>(c == sub ? first_a : golf_ld_chunk<T>(x + base + c * n, valid), va);
    golf_widen<T>(c == sub ? first_c : golf_ld_chunk<T>(x + base + npairs + c * n, valid), vc);
    golf_widen<T>(c == sub ? first_ga : golf_ld_chunk<T>(dout + base + c * n, valid), ga);
    golf_widen<T>(c == sub ? first_gc : golf_ld_chunk<T>(dout + base + npairs + c * n, valid), gc);
    qk_rope_chunk(cs, c * n, valid, cosv, sinv);
#pragma unroll
    for (uint e = 0; e < n; e++) {
      const float a = va[e] * rs;
      const float b = vc[e] * rs;
      const float dua = g * (ga[e] * cosv[e] + gc[e] * sinv[e]);
      const float duc = g * (gc[e] * cosv[e] - ga[e] * sinv[e]);
      oa[e] = rs * (dua - a * m);
      oc[e] = rs * (duc - b * m);
    }
    golf_st_row<T>(dx + base + c * n, valid, oa);
    golf_st_row<T>(dx + base + npairs + c * n, valid, oc);
  }
}

// qk_norm_rope_dgain_head: one block, dgain[h] += Σ_n partial[n,h]: each
// thread sums a fixed stride of n, then golf_block_sum in warp order.
__device__ __forceinline__ void qk_norm_rope_dgain_head(const float* partial, float* dgain, uint rows, uint heads,
                                                        uint h, float* scratch) {
  float s = 0.0f;
  for (uint n = threadIdx.x; n < rows; n += blockDim.x) {
    s += partial[(u64)n * heads + h];
  }
  const float total = golf_block_sum(s, scratch);
  if (threadIdx.x == 0) {
    dgain[h] += total;
  }
}

// qk_warp_heads: the warp's heads: the first of its 32/G and the lane's
// own (first + lane/G); false when the whole warp is past the heads.
GOLF_DEV bool qk_warp_heads(uint block, uint total, uint G, uint& head) {
  const uint first = (block * QK_NORM_ROPE_WARPS + threadIdx.x / 32u) * (32u / G);
  head = first + golf_lane() / G;
  return first < total;
}

template <typename T>
__device__ void qk_norm_rope_fwd(const T* x, const float* rope, const float* gain, T* out, float* rstd,
                                 RopeArgs args) {
  const uint G = qk_lanes(args.head_dim);
  const uint total = args.rows * args.heads;
  uint head;
  if (!qk_warp_heads(blockIdx.x, total, G, head)) {
    return;  // the whole warp: no shuffle is left waiting
  }
  qk_norm_rope_fwd_head<T>(x, rope, gain, out, rstd, args, head, head < total, golf_lane() % G, G);
}

// qk_norm_rope_bwd: dx and one dgain partial per head.
template <typename T>
__device__ void qk_norm_rope_bwd(const T* dout, const T* x, const float* rstd, const float* rope,
                                 const float* gain, T* dx, float* partial, RopeArgs args) {
  const uint G = qk_lanes(args.head_dim);
  const uint total = args.rows * args.heads;
  uint head;
  if (!qk_warp_heads(blockIdx.x, total, G, head)) {
    return;
  }
  qk_norm_rope_bwd_head<T>(dout, x, rstd, rope, gain, dx, partial, args, head, head < total, golf_lane() % G, G);
}

// qk_norm_rope_dgain: dgain[h] += Σ_n partial[n,h], one block of 256 per
// head h (grid Hx). T is unused.
template <typename T>
__device__ void qk_norm_rope_dgain(const float* partial, float* dgain, RopeArgs args) {
  __shared__ float scratch[32];
  const uint h = blockIdx.x;
  if (h >= args.heads) {
    return;  // the whole block
  }
  qk_norm_rope_dgain_head(partial, dgain, args.rows, args.heads, h, scratch);
}

// qk_norm_rope_pair_blocks is the blocks of the q part of a pair launch.
__device__ __forceinline__ uint qk_norm_rope_pair_blocks(const RopeArgs& qa) {
  const uint hpb = qk_heads_per_block(qa.head_dim);
  return (qa.rows * qa.heads + hpb - 1u) / hpb;
}

// qk_norm_rope_pair_fwd: qk_norm_rope_fwd of q over the first
// ⌈N·Hq/heads per block⌉ blocks and of k over the rest, in one launch (q
// and k share D, so G).
template <typename T>
__device__ void qk_norm_rope_pair_fwd(const T* q, const float* q_gain, T* q_out, float* q_rstd, const T* k,
                                      const float* k_gain, T* k_out, float* k_rstd, const float* rope, RopeArgs qa,
                                      RopeArgs ka) {
  const uint G = qk_lanes(qa.head_dim);
  const uint qb = qk_norm_rope_pair_blocks(qa);
  const bool is_q = blockIdx.x < qb;
  const RopeArgs& a = is_q ? qa : ka;
  const uint total = a.rows * a.heads;
  uint head;
  if (!qk_warp_heads(blockIdx.x - (is_q ? 0u : qb), total, G, head)) {
    return;
  }
  if (is_q) {
    qk_norm_rope_fwd_head<T>(q, rope, q_gain, q_out, q_rstd, qa, head, head < total, golf_lane() % G, G);
  } else {
    qk_norm_rope_fwd_head<T>(k, rope, k_gain, k_out, k_rstd, ka, head, head < total, golf_lane() % G, G);
  }
}

// qk_norm_rope_pair_bwd: qk_norm_rope_bwd of q, then of k, in one launch
// (blocks as qk_norm_rope_pair_fwd).
template <typename T>
__device__ void qk_norm_rope_pair_bwd(const T* q_dout, const T* q, const float* q_rstd, const float* q_gain, T* dq,
                                      float* q_partial, const T* k_dout, const T* k, const float* k_rstd,
                                      const float* k_gain, T* dk, float* k_partial, const float* rope, RopeArgs qa,
                                      RopeArgs ka) {
  const uint G = qk_lanes(qa.head_dim);
  const uint qb = qk_norm_rope_pair_blocks(qa);
  const bool is_q = blockIdx.x < qb;
  const RopeArgs& a = is_q ? qa : ka;
  const uint total = a.rows * a.heads;
  uint head;
  if (!qk_warp_heads(blockIdx.x - (is_q ? 0u : qb), total, G, head)) {
    return;
  }
  if (is_q) {
    qk_norm_rope_bwd_head<T>(q_dout, q, q_rstd, rope, q_gain, dq, q_partial, qa, head, head < total, golf_lane() % G,
                             G);
  } else {
    qk_norm_rope_bwd_head<T>(k_dout, k, k_rstd, rope, k_gain, dk, k_partial, ka, head, head < total, golf_lane() % G,
                             G);
  }
}

// qk_norm_rope_pair_dgain: qk_norm_rope_dgain of q over blocks
// [0, qa.heads) and of k over the next ka.heads (the host passes 0 heads
// for a side without dgain). T is unused.
template <typename T>
__device__ void qk_norm_rope_pair_dgain(const float* q_partial, float* dq_gain, const float* k_partial,
                                        float* dk_gain, RopeArgs qa, RopeArgs ka) {
  __shared__ float scratch[32];
  const uint b = blockIdx.x;
  if (b < qa.heads) {
    qk_norm_rope_dgain_head(q_partial, dq_gain, qa.rows, qa.heads, b, scratch);
  } else if (b - qa.heads < ka.heads) {
    qk_norm_rope_dgain_head(k_partial, dk_gain, ka.rows, ka.heads, b - qa.heads, scratch);
  }
}

#define QK_NORM_ROPE_KERNELS(fl, tname, T)                                                                  \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_fwd, fl, tname), QK_NORM_ROPE_THREADS)(                                \
      const T* x, const float* rope, const float* gain, T* out, float* rstd, RopeArgs args) {               \
    qk_norm_rope_fwd<T>(x, rope, gain, out, rstd, args);                                                    \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_bwd, fl, tname), QK_NORM_ROPE_THREADS)(                                \
      const T* dout, const T* x, const float* rstd, const float* rope, const float* gain, T* dx,            \
      float* partial, RopeArgs args) {                                                                      \
    qk_norm_rope_bwd<T>(dout, x, rstd, rope, gain, dx, partial, args);                                      \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_dgain, fl, tname), QK_NORM_ROPE_THREADS)(const float* partial,         \
                                                                              float* dgain, RopeArgs args) { \
    qk_norm_rope_dgain<T>(partial, dgain, args);                                                            \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_pair_fwd, fl, tname), QK_NORM_ROPE_THREADS)(                           \
      const T* q, const float* q_gain, T* q_out, float* q_rstd, const T* k, const float* k_gain, T* k_out,  \
      float* k_rstd, const float* rope, RopeArgs qa, RopeArgs ka) {                                         \
    qk_norm_rope_pair_fwd<T>(q, q_gain, q_out, q_rstd, k, k_gain, k_out, k_rstd, rope, qa, ka);             \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_pair_bwd, fl, tname), QK_NORM_ROPE_THREADS)(                           \
      const T* q_dout, const T* q, const float* q_rstd, const float* q_gain, T* dq, float* q_partial,       \
      const T* k_dout, const T* k, const float* k_rstd, const float* k_gain, T* dk, float* k_partial,       \
      const float* rope, RopeArgs qa, RopeArgs ka) {                                                        \
    qk_norm_rope_pair_bwd<T>(q_dout, q, q_rstd, q_gain, dq, q_partial, k_dout, k, k_rstd, k_gain, dk,      \
                             k_partial, rope, qa, ka);                                                      \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_pair_dgain, fl, tname), QK_NORM_ROPE_THREADS)(                         \
      const float* q_partial, float* dq_gain, const float* k_partial, float* dk_gain, RopeArgs qa,          \
      RopeArgs ka) {                                                                                        \
    qk_norm_rope_pair_dgain<T>(q_partial, dq_gain, k_partial, dk_gain, qa, ka);                             \
  }

#define QK_NORM_ROPE_INSTANTIATE(tname, T) QK_NORM_ROPE_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(QK_NORM_ROPE_INSTANTIATE)
