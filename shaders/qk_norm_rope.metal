// qk_norm_rope: RMSNorm over each head of q or k, rotary embedding, per-head
// gain; forward and backward.
//
//	rstd[n,h] = 1/sqrt(mean_d x[n,h,d]² + eps);  u = x·rstd
//	out[i]     = g[h]·(u[i]·cos(pθ_i) − u[i+D/2]·sin(pθ_i))      (forward)
//	out[i+D/2] = g[h]·(u[i]·sin(pθ_i) + u[i+D/2]·cos(pθ_i))
//	du = g[h]·Rᵀ(dout);  dx = rstd·(du − u·mean_d(du·u))        (backward)
//	dgain[h] += Σ_{n,d} dout[n,h,d]·R(u)[n,h,d]
//	x, out, dout, dx T (N, Hx, D); rstd float (N, Hx); gain, dgain float (Hx)
//
// p = n mod seq_len. cos(pθ_i) and sin(pθ_i) come from a table the host
// computes once in float64 (rope, float2 (seq_len, D/2): cos, sin), so no
// kernel evaluates a transcendental function. Each head (n, h) belongs to
// one team of qk_team = 8 consecutive threads (four teams a simdgroup);
// lane tl of the team handles the pairs (i, i+D/2) for chunks of four
// consecutive i = 4·tl .. 4·tl+3, then 4·tl + 32, ... < D/2, so the
// baseline D = 64 is one chunk per lane: two 4-element vector loads of x
// (and of dout) and two vector stores where every tensor starts on a
// 4-element boundary and D/2 is a multiple of 4 (the host's aligned
// argument), element by element else, with the same bits. A threadgroup is
// nthreads/8 teams over consecutive heads (grid = ceil(N·Hx / teams)
// threadgroups). The sums over a head are float32:
//   simd:     a butterfly of simd_shuffle_xor within the team (no
//             threadgroup memory, no barrier);
//   portable: an 8-wide tree per team in threadgroup memory.
// dgain is deterministic: the backward writes one partial Σ_d per head into
// partial (float (N, Hx)) and qk_norm_rope_dgain adds Σ_n partial[n,h] into
// dgain[h] in a fixed order (no atomics).
//
// The pair kernels (qk_norm_rope_pair_*) run q (Hq heads) and k (Hk heads)
// of the same rows in one launch: the heads of q, then those of k, each
// head computed by the same per-head function as the single kernels, so
// with the same bits (a head's sums depend on its own team alone, not on
// the threadgroup it is in); their dgain adds q's partial sums and then
// k's, per head as qk_norm_rope_dgain does, with the threadgroup size the
// host gives qk_norm_rope_dgain.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_reduce.h"
#include "golf_rows.h"
using namespace metal;

// qk_team is the number of lanes that compute one head: a simdgroup holds
// 32 / qk_team heads' teams, each of consecutive lanes.
constant constexpr uint qk_team = 8;

// qk_team_sum_simd is the sum of v over the caller's team, the same bits
// in every lane of it (a butterfly of simd_shuffle_xor within the team:
// each step adds two lanes' values, in either order the same float).
// Every lane of the simdgroup calls it.
inline float qk_team_sum_simd(float v) {
  for (ushort s = qk_team / 2; s > 0; s >>= 1) {
    v += simd_shuffle_xor(v, s);
  }
  return v;
}

// qk_team_sum_portable is the sum of v over the team of thread tid (tl
// its lane in the team) with a qk_team-wide tree in scratch, returned to
// the team; every thread of the threadgroup calls it (it holds barriers),
// and a caller that sums again passes a threadgroup_barrier first.
template <typename P>
inline float qk_team_sum_portable(float v, P scratch, uint tid, uint tl) {
  scratch[tid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = qk_team / 2; s > 0; s >>= 1) {
    if (tl < s) {
      scratch[tid] += scratch[tid + s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  return scratch[tid - tl];
}

// A head's pairs (i, i + D/2) go to its team in chunks of 4 consecutive i:
// lane tl takes i = 4·tl, 4·tl + 4·qk_team, ... < D/2 (the last chunk short
// when D/2 is not a multiple of 4), reading x[i..i+3] and x[i+D/2..i+D/2+3]
// as two vectors where aligned (golf_rows.h: every tensor on a 4-element
// boundary and D/2 a multiple of 4), element by element else.

// qk_norm_rope_sumsq returns the lane's share of Σ_d x[d]² over the head at base.
template <typename T>
inline float qk_norm_rope_sumsq(device const T* x, ulong base, uint npairs, uint tl, bool al) {
  float ss = 0.0f;
  for (uint i = golf_vw * tl; i < npairs; i += golf_vw * qk_team) {
    const uint n = golf_chunk_len(i, npairs);
    const float4 a = golf_loadf4(x, base + i, n, al);
    const float4 c = golf_loadf4(x, base + i + npairs, n, al);
    for (uint k = 0; k < n; k++) {
      ss += a[k] * a[k] + c[k] * c[k];
    }
  }
  return ss;
}

// qk_norm_rope_fwd_store writes the lane's pairs of out = g·R(x·rs).
template <typename T>
inline void qk_norm_rope_fwd_store(
    device const T* x, device const float2* cs, device T* out,
    ulong base, uint npairs, float rs, float g, uint tl, bool al) {
  for (uint i = golf_vw * tl; i < npairs; i += golf_vw * qk_team) {
    const uint n = golf_chunk_len(i, npairs);
    const float4 a = golf_loadf4(x, base + i, n, al) * rs;
    const float4 c = golf_loadf4(x, base + i + npairs, n, al) * rs;
    float4 lo = float4(0.0f);
    float4 hi = float4(0.0f);
    for (uint k = 0; k < n; k++) {
      const float2 t = cs[i + k];
      lo[k] = g * (a[k] * t.x - c[k] * t.y);
      hi[k] = g * (a[k] * t.y + c[k] * t.x);
    }
    golf_storef4(out, base + i, n, lo, al);
    golf_storef4(out, base + i + npairs, n, hi, al);
  }
}

// qk_norm_rope_bwd_sums adds the lane's shares of Σ_d du·u (dot) and
// Σ_d dout·R(u) (dg) over the head at base.
template <typename T>
inline void qk_norm_rope_bwd_sums(
    device const T* dout, device const T* x, device const float2* cs,
    ulong base, uint npairs, float rs, float g, uint tl, bool al, thread float& dot, thread float& dg) {
  for (uint i = golf_vw * tl; i < npairs; i += golf_vw * qk_team) {
    const uint n = golf_chunk_len(i, npairs);
    const float4 a = golf_loadf4(x, base + i, n, al) * rs;
    const float4 c = golf_loadf4(x, base + i + npairs, n, al) * rs;
    const float4 ga = golf_loadf4(dout, base + i, n, al);
    const float4 gc = golf_loadf4(dout, base + i + npairs, n, al);
    for (uint k = 0; k < n; k++) {
      const float2 t = cs[i + k];
      dg += ga[k] * (a[k] * t.x - c[k] * t.y) + gc[k] * (a[k] * t.y + c[k] * t.x);
      const float dua = g * (ga[k] * t.x + gc[k] * t.y);
      const float duc = g * (gc[k] * t.x - ga[k] * t.y);
      dot += dua * a[k] + duc * c[k];
    }
  }
}

// qk_norm_rope_bwd_store writes the lane's pairs of dx = rs·(du − u·m).
template <typename T>
inline void qk_norm_rope_bwd_store(
    device const T* dout, device const T* x, device const float2* cs, device T* dx,
    ulong base, uint npairs, float rs, float g, float m, uint tl, bool al) {
  for (uint i = golf_vw * tl; i < npairs; i += golf_vw * qk_team) {
    const uint n = golf_chunk_len(i, npairs);
    const float4 a = golf_loadf4(x, base + i, n, al) * rs;
    const float4 c = golf_loadf4(x, base + i + npairs, n, al) * rs;
    const float4 ga = golf_loadf4(dout, base + i, n, al);
    const float4 gc = golf_loadf4(dout, base + i + npairs, n, al);
    float4 lo = float4(0.0f);
    float4 hi = float4(0.0f);
    for (uint k = 0; k < n; k++) {
      const float2 t = cs[i + k];
      const float dua = g * (ga[k] * t.x + gc[k] * t.y);
      const float duc = g * (gc[k] * t.x - ga[k] * t.y);
      lo[k] = rs * (dua - a[k] * m);
      hi[k] = rs * (duc - c[k] * m);
    }
    golf_storef4(dx, base + i, n, lo, al);
    golf_storef4(dx, base + i + npairs, n, hi, al);
  }
}

// qk_norm_rope_fwd_head_simd computes head `head` (n·heads + h) of x with
// the qk_team lanes of a team (tl the caller's lane in it): rstd[head] and
// out's D elements. Every lane of the simdgroup calls it (the team sum
// shuffles); a lane whose team has no head (valid false) only takes part
// in the sum.
template <typename T>
inline void qk_norm_rope_fwd_head_simd(
    device const T* x, device const float2* rope, device const float* gain, device T* out, device float* rstd,
    uint head, uint heads, uint head_dim, uint seq_len, float eps, uint has_gain, bool valid, uint tl, bool al) {
  const uint npairs = head_dim / 2;
  const ulong base = ulong(head) * head_dim;
  const float ss = qk_team_sum_simd(valid ? qk_norm_rope_sumsq(x, base, npairs, tl, al) : 0.0f);
  if (!valid) {
    return;
  }
  const float rs = 1.0f / sqrt(ss / static_cast<float>(head_dim) + eps);
  if (tl == 0) {
    rstd[head] = rs;
  }
  const uint n = head / heads;
  const float g = has_gain != 0 ? gain[head % heads] : 1.0f;
  qk_norm_rope_fwd_store(x, rope + ulong(n % seq_len) * npairs, out, base, npairs, rs, g, tl, al);
}

// qk_norm_rope_fwd_head_portable: as qk_norm_rope_fwd_head_simd, the team
// of threads tid − tl .. tid − tl + qk_team − 1 summing with a tree in
// scratch. Every thread of the threadgroup calls it (it holds barriers).
template <typename T, typename P>
inline void qk_norm_rope_fwd_head_portable(
    device const T* x, device const float2* rope, device const float* gain, device T* out, device float* rstd,
    uint head, uint heads, uint head_dim, uint seq_len, float eps, uint has_gain, bool valid, P scratch, uint tid,
    bool al) {
  const uint tl = tid % qk_team;
  const uint npairs = head_dim / 2;
  const ulong base = ulong(head) * head_dim;
  const float ss = qk_team_sum_portable(valid ? qk_norm_rope_sumsq(x, base, npairs, tl, al) : 0.0f, scratch, tid, tl);
  if (!valid) {
    return;
  }
  const float rs = 1.0f / sqrt(ss / static_cast<float>(head_dim) + eps);
  if (tl == 0) {
    rstd[head] = rs;
  }
  const uint n = head / heads;
  const float g = has_gain != 0 ? gain[head % heads] : 1.0f;
  qk_norm_rope_fwd_store(x, rope + ulong(n % seq_len) * npairs, out, base, npairs, rs, g, tl, al);
}

// qk_norm_rope_bwd_head_simd computes head `head` of the backward with a
// team of lanes, as qk_norm_rope_fwd_head_simd: dx's D elements and
// partial[head] = Σ_d dout·R(u).
template <typename T>
inline void qk_norm_rope_bwd_head_simd(
    device const T* dout, device const T* x, device const float* rstd, device const float2* rope,
    device const float* gain, device T* dx, device float* partial,
    uint head, uint heads, uint head_dim, uint seq_len, uint has_gain, bool valid, uint tl, bool al) {
  const uint npairs = head_dim / 2;
  const ulong base = ulong(head) * head_dim;
  const uint n = head / heads;
  const float g = has_gain != 0 && valid ? gain[head % heads] : 1.0f;
  const float rs = valid ? rstd[head] : 0.0f;
  device const float2* cs = rope + ulong(n % seq_len) * npairs;
  float dot = 0.0f;
  float dg = 0.0f;
  if (valid) {
    qk_norm_rope_bwd_sums(dout, x, cs, base, npairs, rs, g, tl, al, dot, dg);
  }
  dot = qk_team_sum_simd(dot);
  dg = qk_team_sum_simd(dg);
  if (!valid) {
    return;
  }
  if (tl == 0) {
    partial[head] = dg;
  }
  qk_norm_rope_bwd_store(dout, x, cs, dx, base, npairs, rs, g, dot / static_cast<float>(head_dim), tl, al);
}

// qk_norm_rope_bwd_head_portable: as qk_norm_rope_bwd_head_simd, the team
// summing with trees in dots and dgs; every thread of the threadgroup
// calls it, as qk_norm_rope_fwd_head_portable.
template <typename T, typename P>
inline void qk_norm_rope_bwd_head_portable(
    device const T* dout, device const T* x, device const float* rstd, device const float2* rope,
    device const float* gain, device T* dx, device float* partial,
    uint head, uint heads, uint head_dim, uint seq_len, uint has_gain, bool valid, P dots, P dgs, uint tid, bool al) {
  const uint tl = tid % qk_team;
  const uint npairs = head_dim / 2;
  const ulong base = ulong(head) * head_dim;
  const uint n = head / heads;
  const float g = has_gain != 0 && valid ? gain[head % heads] : 1.0f;
  const float rs = valid ? rstd[head] : 0.0f;
  device const float2* cs = rope + ulong(n % seq_len) * npairs;
  float dot = 0.0f;
  float dg = 0.0f;
  if (valid) {
    qk_norm_rope_bwd_sums(dout, x, cs, base, npairs, rs, g, tl, al, dot, dg);
  }
  dot = qk_team_sum_portable(dot, dots, tid, tl);
  dg = qk_team_sum_portable(dg, dgs, tid, tl);
  if (!valid) {
    return;
  }
  if (tl == 0) {
    partial[head] = dg;
  }
  qk_norm_rope_bwd_store(dout, x, cs, dx, base, npairs, rs, g, dot / static_cast<float>(head_dim), tl, al);
}

// qk_norm_rope_dgain_part is thread tid's share of Σ_n partial[n·heads + h].
inline float qk_norm_rope_dgain_part(device const float* partial, uint rows, uint heads, uint h, uint tid,
                                     uint nthreads) {
  float s = 0.0f;
  for (uint n = tid; n < rows; n += nthreads) {
    s += partial[ulong(n) * heads + h];
  }
  return s;
}

// qk_norm_rope_fwd_simd: the forward pass, simd flavour.
// Baseline (N = 8192, H = 8, D = 64, T = 1024, bf16; k with Hkv = 4 is
// half of each number): 7·N·H·D ≈ 29 MFLOP; bytes: x read (twice, the
// second from cache) and out written, 2·N·H·D·2 ≈ 16.8 MB, rstd 0.26 MB,
// the rope table 0.26 MB (cached); no threadgroup memory, 256 threads;
// roofline max(8 µs, 173 µs) ≈ 0.17 ms (bandwidth).
template <typename T>
[[kernel]] void qk_norm_rope_fwd_simd(
    device const T* x [[buffer(0)]],          // (N, Hx, D)
    device const float2* rope [[buffer(1)]],  // (T, D/2): cos, sin
    device const float* gain [[buffer(2)]],   // (Hx) when has_gain
    device T* out [[buffer(3)]],              // (N, Hx, D)
    device float* rstd [[buffer(4)]],         // (N, Hx)
    constant RopeArgs& args [[buffer(5)]],
    constant uint& aligned [[buffer(6)]],     // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  const uint head = group * (nthreads / qk_team) + tid / qk_team;  // n·Hx + h
  qk_norm_rope_fwd_head_simd(x, rope, gain, out, rstd, head, args.heads, args.head_dim, args.seq_len, args.eps,
                             args.has_gain, head < args.rows * args.heads, tid % qk_team, aligned != 0);
}

// qk_norm_rope_fwd_portable: the forward pass, portable flavour (4 KB of
// threadgroup memory; otherwise as the simd flavour).
template <typename T>
[[kernel]] void qk_norm_rope_fwd_portable(
    device const T* x [[buffer(0)]],          // (N, Hx, D)
    device const float2* rope [[buffer(1)]],  // (T, D/2): cos, sin
    device const float* gain [[buffer(2)]],   // (Hx) when has_gain
    device T* out [[buffer(3)]],              // (N, Hx, D)
    device float* rstd [[buffer(4)]],         // (N, Hx)
    constant RopeArgs& args [[buffer(5)]],
    constant uint& aligned [[buffer(6)]],     // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial sum per thread
  const uint head = group * (nthreads / qk_team) + tid / qk_team;  // n·Hx + h
  qk_norm_rope_fwd_head_portable(x, rope, gain, out, rstd, head, args.heads, args.head_dim, args.seq_len, args.eps,
                                 args.has_gain, head < args.rows * args.heads, scratch, tid, aligned != 0);
}

// qk_norm_rope_bwd_simd: the backward pass, simd flavour; writes dx and one
// dgain partial per head.
// Baseline (q; k is half): ≈ 20·N·H·D ≈ 84 MFLOP; bytes: dout and x read
// (twice, the second from cache) and dx written, 3·N·H·D·2 ≈ 25.2 MB, rstd
// and partial 0.52 MB, the rope table (cached); no threadgroup memory,
// 256 threads; roofline max(23 µs, 257 µs) ≈ 0.26 ms (bandwidth).
template <typename T>
[[kernel]] void qk_norm_rope_bwd_simd(
    device const T* dout [[buffer(0)]],       // (N, Hx, D)
    device const T* x [[buffer(1)]],          // (N, Hx, D)
    device const float* rstd [[buffer(2)]],   // (N, Hx)
    device const float2* rope [[buffer(3)]],  // (T, D/2): cos, sin
    device const float* gain [[buffer(4)]],   // (Hx) when has_gain
    device T* dx [[buffer(5)]],               // (N, Hx, D)
    device float* partial [[buffer(6)]],      // (N, Hx): Σ_d dout·R(u)
    constant RopeArgs& args [[buffer(7)]],
    constant uint& aligned [[buffer(8)]],     // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  const uint head = group * (nthreads / qk_team) + tid / qk_team;  // n·Hx + h
  qk_norm_rope_bwd_head_simd(dout, x, rstd, rope, gain, dx, partial, head, args.heads, args.head_dim, args.seq_len,
                             args.has_gain, head < args.rows * args.heads, tid % qk_team, aligned != 0);
}

// qk_norm_rope_bwd_portable: the backward pass, portable flavour (8 KB of
// threadgroup memory; otherwise as the simd flavour).
template <typename T>
[[kernel]] void qk_norm_rope_bwd_portable(
    device const T* dout [[buffer(0)]],       // (N, Hx, D)
    device const T* x [[buffer(1)]],          // (N, Hx, D)
    device const float* rstd [[buffer(2)]],   // (N, Hx)
    device const float2* rope [[buffer(3)]],  // (T, D/2): cos, sin
    device const float* gain [[buffer(4)]],   // (Hx) when has_gain
    device T* dx [[buffer(5)]],               // (N, Hx, D)
    device float* partial [[buffer(6)]],      // (N, Hx): Σ_d dout·R(u)
    constant RopeArgs& args [[buffer(7)]],
    constant uint& aligned [[buffer(8)]],     // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float dots[1024];  // one partial Σ du·u per thread
  threadgroup float dgs[1024];   // one partial Σ dout·R(u) per thread
  const uint head = group * (nthreads / qk_team) + tid / qk_team;  // n·Hx + h
  qk_norm_rope_bwd_head_portable(dout, x, rstd, rope, gain, dx, partial, head, args.heads, args.head_dim,
                                 args.seq_len, args.has_gain, head < args.rows * args.heads, dots, dgs, tid,
                                 aligned != 0);
}

// qk_norm_rope_dgain_simd: dgain[h] += Σ_n partial[n,h], one threadgroup
// per head h; each thread sums a fixed stride of n, then simd_sum and the
// simdgroup sums in order: the same order on every run.
// Baseline: N·Hx·4 bytes ≈ 0.26 MB (q), 2.6 µs; 128 B threadgroup memory,
// 256 threads. T is unused (every kernel exists in every dtype).
template <typename T>
[[kernel]] void qk_norm_rope_dgain_simd(
    device const float* partial [[buffer(0)]],  // (N, Hx)
    device float* dgain [[buffer(1)]],          // (Hx)
    constant RopeArgs& args [[buffer(2)]],
    uint h [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[32];  // one sum per simdgroup
  if (h >= args.heads) {
    return;
  }
  const float s = qk_norm_rope_dgain_part(partial, args.rows, args.heads, h, tid, nthreads);
  const float total = golf_row_sum_simd(s, sums, lane, sg, nthreads);
  if (tid == 0) {
    dgain[h] += total;
  }
}

// qk_norm_rope_dgain_portable: as the simd flavour, with a tree reduction
// in threadgroup memory (4 KB).
template <typename T>
[[kernel]] void qk_norm_rope_dgain_portable(
    device const float* partial [[buffer(0)]],  // (N, Hx)
    device float* dgain [[buffer(1)]],          // (Hx)
    constant RopeArgs& args [[buffer(2)]],
    uint h [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial sum per thread
  if (h >= args.heads) {
    return;
  }
  const float s = qk_norm_rope_dgain_part(partial, args.rows, args.heads, h, tid, nthreads);
  const float total = golf_row_sum_portable(s, scratch, tid, nthreads);
  if (tid == 0) {
    dgain[h] += total;
  }
}

// qk_norm_rope_pair_fwd_simd: the forward of q and of k in one launch,
// simd flavour. Simdgroup g of the grid (group·teams + sg) computes head g
// of q when g < N·Hq, else head g − N·Hq of k, as qk_norm_rope_fwd_simd.
// Baseline (N = 8192, Hq = 8, Hk = 4, D = 64, T = 1024, bf16): 7·N·12·D
// ≈ 44 MFLOP; bytes: q and k read, out written, 2·N·12·D·2 ≈ 25.2 MB,
// rstd 0.39 MB, the rope table (cached); no threadgroup memory, 256
// threads; roofline max(12 µs, 256 µs) ≈ 0.26 ms (bandwidth), one launch
// instead of two.
template <typename T>
[[kernel]] void qk_norm_rope_pair_fwd_simd(
    device const T* xq [[buffer(0)]],         // (N, Hq, D)
    device const T* xk [[buffer(1)]],         // (N, Hk, D)
    device const float2* rope [[buffer(2)]],  // (T, D/2): cos, sin
    device const float* gq [[buffer(3)]],     // (Hq) when q_has_gain
    device const float* gk [[buffer(4)]],     // (Hk) when k_has_gain
    device T* outq [[buffer(5)]],             // (N, Hq, D)
    device T* outk [[buffer(6)]],             // (N, Hk, D)
    device float* rstdq [[buffer(7)]],        // (N, Hq)
    device float* rstdk [[buffer(8)]],        // (N, Hk)
    constant RopePairArgs& args [[buffer(9)]],
    constant uint& aligned [[buffer(10)]],    // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  const uint head = group * (nthreads / qk_team) + tid / qk_team;
  const uint nq = args.rows * args.q_heads;
  const bool isq = head < nq;
  qk_norm_rope_fwd_head_simd(isq ? xq : xk, rope, isq ? gq : gk, isq ? outq : outk, isq ? rstdq : rstdk,
                             isq ? head : head - nq, isq ? args.q_heads : args.k_heads, args.head_dim, args.seq_len,
                             args.eps, isq ? args.q_has_gain : args.k_has_gain, head < nq + args.rows * args.k_heads,
                             tid % qk_team, aligned != 0);
}

// qk_norm_rope_pair_fwd_portable: as the simd flavour, each team as
// qk_norm_rope_fwd_portable's (4 KB of threadgroup memory).
template <typename T>
[[kernel]] void qk_norm_rope_pair_fwd_portable(
    device const T* xq [[buffer(0)]],         // (N, Hq, D)
    device const T* xk [[buffer(1)]],         // (N, Hk, D)
    device const float2* rope [[buffer(2)]],  // (T, D/2): cos, sin
    device const float* gq [[buffer(3)]],     // (Hq) when q_has_gain
    device const float* gk [[buffer(4)]],     // (Hk) when k_has_gain
    device T* outq [[buffer(5)]],             // (N, Hq, D)
    device T* outk [[buffer(6)]],             // (N, Hk, D)
    device float* rstdq [[buffer(7)]],        // (N, Hq)
    device float* rstdk [[buffer(8)]],        // (N, Hk)
    constant RopePairArgs& args [[buffer(9)]],
    constant uint& aligned [[buffer(10)]],    // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial sum per thread
  const uint head = group * (nthreads / qk_team) + tid / qk_team;
  const uint nq = args.rows * args.q_heads;
  const bool isq = head < nq;
  qk_norm_rope_fwd_head_portable(isq ? xq : xk, rope, isq ? gq : gk, isq ? outq : outk, isq ? rstdq : rstdk,
                                 isq ? head : head - nq, isq ? args.q_heads : args.k_heads, args.head_dim,
                                 args.seq_len, args.eps, isq ? args.q_has_gain : args.k_has_gain,
                                 head < nq + args.rows * args.k_heads, scratch, tid, aligned != 0);
}

// qk_norm_rope_pair_bwd_simd: the backward of q and of k in one launch,
// simd flavour, heads as qk_norm_rope_pair_fwd_simd; q's dgain partials go
// to partial[0, N·Hq), k's to partial[N·Hq, N·(Hq + Hk)).
// Baseline (as the forward): ≈ 20·N·12·D ≈ 126 MFLOP; bytes: dout and x
// read, dx written, 3·N·12·D·2 ≈ 37.7 MB, rstd and partial 0.79 MB; no
// threadgroup memory, 256 threads; roofline max(35 µs, 385 µs) ≈ 0.39 ms
// (bandwidth), one launch instead of two.
template <typename T>
[[kernel]] void qk_norm_rope_pair_bwd_simd(
    device const T* doutq [[buffer(0)]],      // (N, Hq, D)
    device const T* doutk [[buffer(1)]],      // (N, Hk, D)
    device const T* xq [[buffer(2)]],         // (N, Hq, D)
    device const T* xk [[buffer(3)]],         // (N, Hk, D)
    device const float* rstdq [[buffer(4)]],  // (N, Hq)
    device const float* rstdk [[buffer(5)]],  // (N, Hk)
    device const float2* rope [[buffer(6)]],  // (T, D/2): cos, sin
    device const float* gq [[buffer(7)]],     // (Hq) when q_has_gain
    device const float* gk [[buffer(8)]],     // (Hk) when k_has_gain
    device T* dxq [[buffer(9)]],              // (N, Hq, D)
    device T* dxk [[buffer(10)]],             // (N, Hk, D)
    device float* partial [[buffer(11)]],     // (N·(Hq + Hk)): Σ_d dout·R(u)
    constant RopePairArgs& args [[buffer(12)]],
    constant uint& aligned [[buffer(13)]],    // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  const uint head = group * (nthreads / qk_team) + tid / qk_team;
  const uint nq = args.rows * args.q_heads;
  const bool isq = head < nq;
  qk_norm_rope_bwd_head_simd(isq ? doutq : doutk, isq ? xq : xk, isq ? rstdq : rstdk, rope, isq ? gq : gk,
                             isq ? dxq : dxk, isq ? partial : partial + nq, isq ? head : head - nq,
                             isq ? args.q_heads : args.k_heads, args.head_dim, args.seq_len,
                             isq ? args.q_has_gain : args.k_has_gain, head < nq + args.rows * args.k_heads,
                             tid % qk_team, aligned != 0);
}

// qk_norm_rope_pair_bwd_portable: as the simd flavour, each team as
// qk_norm_rope_bwd_portable's (8 KB of threadgroup memory).
template <typename T>
[[kernel]] void qk_norm_rope_pair_bwd_portable(
    device const T* doutq [[buffer(0)]],      // (N, Hq, D)
    device const T* doutk [[buffer(1)]],      // (N, Hk, D)
    device const T* xq [[buffer(2)]],         // (N, Hq, D)
    device const T* xk [[buffer(3)]],         // (N, Hk, D)
    device const float* rstdq [[buffer(4)]],  // (N, Hq)
    device const float* rstdk [[buffer(5)]],  // (N, Hk)
    device const float2* rope [[buffer(6)]],  // (T, D/2): cos, sin
    device const float* gq [[buffer(7)]],     // (Hq) when q_has_gain
    device const float* gk [[buffer(8)]],     // (Hk) when k_has_gain
    device T* dxq [[buffer(9)]],              // (N, Hq, D)
    device T* dxk [[buffer(10)]],             // (N, Hk, D)
    device float* partial [[buffer(11)]],     // (N·(Hq + Hk)): Σ_d dout·R(u)
    constant RopePairArgs& args [[buffer(12)]],
    constant uint& aligned [[buffer(13)]],    // 1: every chunk moves as one vector
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float dots[1024];  // one partial Σ du·u per thread
  threadgroup float dgs[1024];   // one partial Σ dout·R(u) per thread
  const uint head = group * (nthreads / qk_team) + tid / qk_team;
  const uint nq = args.rows * args.q_heads;
  const bool isq = head < nq;
  qk_norm_rope_bwd_head_portable(isq ? doutq : doutk, isq ? xq : xk, isq ? rstdq : rstdk, rope, isq ? gq : gk,
                                 isq ? dxq : dxk, isq ? partial : partial + nq, isq ? head : head - nq,
                                 isq ? args.q_heads : args.k_heads, args.head_dim, args.seq_len,
                                 isq ? args.q_has_gain : args.k_has_gain, head < nq + args.rows * args.k_heads, dots,
                                 dgs, tid, aligned != 0);
}

// qk_norm_rope_pair_dgain_simd: dgain[h] += Σ_n partial[n,h] for q's heads
// (when q_has_dgain) and then k's (when k_has_dgain), one threadgroup per
// head, each as qk_norm_rope_dgain_simd sums it.
// Baseline: N·(Hq + Hk)·4 bytes ≈ 0.39 MB, 3.9 µs; 128 B threadgroup
// memory, 256 threads. T is unused.
template <typename T>
[[kernel]] void qk_norm_rope_pair_dgain_simd(
    device const float* partial [[buffer(0)]],  // (N·(Hq + Hk))
    device float* dgq [[buffer(1)]],            // (Hq) when q_has_dgain
    device float* dgk [[buffer(2)]],            // (Hk) when k_has_dgain
    constant RopePairArgs& args [[buffer(3)]],
    uint h [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[32];  // one sum per simdgroup
  const uint nq = args.q_has_dgain != 0 ? args.q_heads : 0;
  if (h >= nq + (args.k_has_dgain != 0 ? args.k_heads : 0)) {
    return;
  }
  const bool isq = h < nq;
  const uint hh = isq ? h : h - nq;
  const uint heads = isq ? args.q_heads : args.k_heads;
  const float s =
      qk_norm_rope_dgain_part(isq ? partial : partial + args.rows * args.q_heads, args.rows, heads, hh, tid, nthreads);
  const float total = golf_row_sum_simd(s, sums, lane, sg, nthreads);
  if (tid == 0) {
    (isq ? dgq : dgk)[hh] += total;
  }
}

// qk_norm_rope_pair_dgain_portable: as the simd flavour, with
// qk_norm_rope_dgain_portable's tree (4 KB of threadgroup memory).
template <typename T>
[[kernel]] void qk_norm_rope_pair_dgain_portable(
    device const float* partial [[buffer(0)]],  // (N·(Hq + Hk))
    device float* dgq [[buffer(1)]],            // (Hq) when q_has_dgain
    device float* dgk [[buffer(2)]],            // (Hk) when k_has_dgain
    constant RopePairArgs& args [[buffer(3)]],
    uint h [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial sum per thread
  const uint nq = args.q_has_dgain != 0 ? args.q_heads : 0;
  if (h >= nq + (args.k_has_dgain != 0 ? args.k_heads : 0)) {
    return;
  }
  const bool isq = h < nq;
  const uint hh = isq ? h : h - nq;
  const uint heads = isq ? args.q_heads : args.k_heads;
  const float s =
      qk_norm_rope_dgain_part(isq ? partial : partial + args.rows * args.q_heads, args.rows, heads, hh, tid, nthreads);
  const float total = golf_row_sum_portable(s, scratch, tid, nthreads);
  if (tid == 0) {
    (isq ? dgq : dgk)[hh] += total;
  }
}

#define instantiate_qk_norm_rope(tname, T)                                                            \
  instantiate_kernel("qk_norm_rope_fwd_simd_" #tname, qk_norm_rope_fwd_simd, T)                       \
  instantiate_kernel("qk_norm_rope_fwd_portable_" #tname, qk_norm_rope_fwd_portable, T)               \
  instantiate_kernel("qk_norm_rope_bwd_simd_" #tname, qk_norm_rope_bwd_simd, T)                       \
  instantiate_kernel("qk_norm_rope_bwd_portable_" #tname, qk_norm_rope_bwd_portable, T)               \
  instantiate_kernel("qk_norm_rope_dgain_simd_" #tname, qk_norm_rope_dgain_simd, T)                   \
  instantiate_kernel("qk_norm_rope_dgain_portable_" #tname, qk_norm_rope_dgain_portable, T)           \
  instantiate_kernel("qk_norm_rope_pair_fwd_simd_" #tname, qk_norm_rope_pair_fwd_simd, T)             \
  instantiate_kernel("qk_norm_rope_pair_fwd_portable_" #tname, qk_norm_rope_pair_fwd_portable, T)     \
  instantiate_kernel("qk_norm_rope_pair_bwd_simd_" #tname, qk_norm_rope_pair_bwd_simd, T)             \
  instantiate_kernel("qk_norm_rope_pair_bwd_portable_" #tname, qk_norm_rope_pair_bwd_portable, T)     \
  instantiate_kernel("qk_norm_rope_pair_dgain_simd_" #tname, qk_norm_rope_pair_dgain_simd, T)         \
  instantiate_kernel("qk_norm_rope_pair_dgain_portable_" #tname, qk_norm_rope_pair_dgain_portable, T)

instantiate_qk_norm_rope(float, float)
instantiate_qk_norm_rope(half, half)
instantiate_qk_norm_rope(bfloat, bfloat)
