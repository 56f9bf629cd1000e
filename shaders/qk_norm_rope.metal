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
// one team of 32 threads (a simdgroup); lane l handles the pairs (i, i+D/2)
// for i = l, l+32, ... < D/2, so the baseline D = 64 is one pair per lane.
// A threadgroup is nthreads/32 teams over consecutive heads (grid =
// ceil(N·Hx / teams) threadgroups). The sums over a head are float32:
//   simd:     simd_sum within the team (no threadgroup memory, no barrier);
//   portable: a 32-wide tree per team in threadgroup memory.
// dgain is deterministic: the backward writes one partial Σ_d per head into
// partial (float (N, Hx)) and qk_norm_rope_dgain adds Σ_n partial[n,h] into
// dgain[h] in a fixed order (no atomics).
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_reduce.h"
using namespace metal;

// qk_norm_rope_sumsq returns the lane's share of Σ_d x[d]² over the head at base.
template <typename T>
inline float qk_norm_rope_sumsq(device const T* x, ulong base, uint npairs, uint lane) {
  float ss = 0.0f;
  for (uint i = lane; i < npairs; i += 32) {
    const float a = static_cast<float>(x[base + i]);
    const float c = static_cast<float>(x[base + i + npairs]);
    ss += a * a + c * c;
  }
  return ss;
}

// qk_norm_rope_fwd_store writes the lane's pairs of out = g·R(x·rs).
template <typename T>
inline void qk_norm_rope_fwd_store(
    device const T* x, device const float2* cs, device T* out,
    ulong base, uint npairs, float rs, float g, uint lane) {
  for (uint i = lane; i < npairs; i += 32) {
    const float a = static_cast<float>(x[base + i]) * rs;
    const float c = static_cast<float>(x[base + i + npairs]) * rs;
    const float2 t = cs[i];
    out[base + i] = static_cast<T>(g * (a * t.x - c * t.y));
    out[base + i + npairs] = static_cast<T>(g * (a * t.y + c * t.x));
  }
}

// qk_norm_rope_bwd_sums adds the lane's shares of Σ_d du·u (dot) and
// Σ_d dout·R(u) (dg) over the head at base.
template <typename T>
inline void qk_norm_rope_bwd_sums(
    device const T* dout, device const T* x, device const float2* cs,
    ulong base, uint npairs, float rs, float g, uint lane, thread float& dot, thread float& dg) {
  for (uint i = lane; i < npairs; i += 32) {
    const float a = static_cast<float>(x[base + i]) * rs;
    const float c = static_cast<float>(x[base + i + npairs]) * rs;
    const float ga = static_cast<float>(dout[base + i]);
    const float gc = static_cast<float>(dout[base + i + npairs]);
    const float2 t = cs[i];
    dg += ga * (a * t.x - c * t.y) + gc * (a * t.y + c * t.x);
    const float dua = g * (ga * t.x + gc * t.y);
    const float duc = g * (gc * t.x - ga * t.y);
    dot += dua * a + duc * c;
  }
}

// qk_norm_rope_bwd_store writes the lane's pairs of dx = rs·(du − u·m).
template <typename T>
inline void qk_norm_rope_bwd_store(
    device const T* dout, device const T* x, device const float2* cs, device T* dx,
    ulong base, uint npairs, float rs, float g, float m, uint lane) {
  for (uint i = lane; i < npairs; i += 32) {
    const float a = static_cast<float>(x[base + i]) * rs;
    const float c = static_cast<float>(x[base + i + npairs]) * rs;
    const float ga = static_cast<float>(dout[base + i]);
    const float gc = static_cast<float>(dout[base + i + npairs]);
    const float2 t = cs[i];
    const float dua = g * (ga * t.x + gc * t.y);
    const float duc = g * (gc * t.x - ga * t.y);
    dx[base + i] = static_cast<T>(rs * (dua - a * m));
    dx[base + i + npairs] = static_cast<T>(rs * (duc - c * m));
  }
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
    uint group [[threadgroup_position_in_grid]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  const uint head = group * (nthreads / 32) + sg;  // n·Hx + h
  if (head >= args.rows * args.heads) {
    return;  // the whole simdgroup: no simd function is left waiting
  }
  const uint npairs = args.head_dim / 2;
  const ulong base = ulong(head) * args.head_dim;
  const float ss = simd_sum(qk_norm_rope_sumsq(x, base, npairs, lane));
  const float rs = 1.0f / sqrt(ss / static_cast<float>(args.head_dim) + args.eps);
  if (lane == 0) {
    rstd[head] = rs;
  }
  const uint n = head / args.heads;
  const float g = args.has_gain != 0 ? gain[head % args.heads] : 1.0f;
  qk_norm_rope_fwd_store(x, rope + ulong(n % args.seq_len) * npairs, out, base, npairs, rs, g, lane);
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
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float scratch[1024];  // one partial sum per thread
  const uint lane = tid % 32;
  const uint head = group * (nthreads / 32) + tid / 32;  // n·Hx + h
  const bool valid = head < args.rows * args.heads;
  const uint npairs = args.head_dim / 2;
  const ulong base = ulong(head) * args.head_dim;
  scratch[tid] = valid ? qk_norm_rope_sumsq(x, base, npairs, lane) : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 16; s > 0; s >>= 1) {
    if (lane < s) {
      scratch[tid] += scratch[tid + s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (!valid) {
    return;
  }
  const float rs = 1.0f / sqrt(scratch[tid - lane] / static_cast<float>(args.head_dim) + args.eps);
  if (lane == 0) {
    rstd[head] = rs;
  }
  const uint n = head / args.heads;
  const float g = args.has_gain != 0 ? gain[head % args.heads] : 1.0f;
  qk_norm_rope_fwd_store(x, rope + ulong(n % args.seq_len) * npairs, out, base, npairs, rs, g, lane);
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
    uint group [[threadgroup_position_in_grid]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  const uint head = group * (nthreads / 32) + sg;  // n·Hx + h
  if (head >= args.rows * args.heads) {
    return;  // the whole simdgroup
  }
  const uint npairs = args.head_dim / 2;
  const ulong base = ulong(head) * args.head_dim;
  const uint n = head / args.heads;
  const float g = args.has_gain != 0 ? gain[head % args.heads] : 1.0f;
  const float rs = rstd[head];
  device const float2* cs = rope + ulong(n % args.seq_len) * npairs;
  float dot = 0.0f;
  float dg = 0.0f;
  qk_norm_rope_bwd_sums(dout, x, cs, base, npairs, rs, g, lane, dot, dg);
  dot = simd_sum(dot);
  dg = simd_sum(dg);
  if (lane == 0) {
    partial[head] = dg;
  }
  qk_norm_rope_bwd_store(dout, x, cs, dx, base, npairs, rs, g, dot / static_cast<float>(args.head_dim), lane);
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
    uint group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float dots[1024];  // one partial Σ du·u per thread
  threadgroup float dgs[1024];   // one partial Σ dout·R(u) per thread
  const uint lane = tid % 32;
  const uint head = group * (nthreads / 32) + tid / 32;  // n·Hx + h
  const bool valid = head < args.rows * args.heads;
  const uint npairs = args.head_dim / 2;
  const ulong base = ulong(head) * args.head_dim;
  const uint n = head / args.heads;
  const float g = args.has_gain != 0 ? gain[head % args.heads] : 1.0f;
  const float rs = valid ? rstd[head] : 0.0f;
  device const float2* cs = rope + ulong(n % args.seq_len) * npairs;
  float dot = 0.0f;
  float dg = 0.0f;
  if (valid) {
    qk_norm_rope_bwd_sums(dout, x, cs, base, npairs, rs, g, lane, dot, dg);
  }
  dots[tid] = dot;
  dgs[tid] = dg;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 16; s > 0; s >>= 1) {
    if (lane < s) {
      dots[tid] += dots[tid + s];
      dgs[tid] += dgs[tid + s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (!valid) {
    return;
  }
  if (lane == 0) {
    partial[head] = dgs[tid];
  }
  qk_norm_rope_bwd_store(dout, x, cs, dx, base, npairs, rs, g, dots[tid - lane] / static_cast<float>(args.head_dim), lane);
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
  float s = 0.0f;
  for (uint n = tid; n < args.rows; n += nthreads) {
    s += partial[ulong(n) * args.heads + h];
  }
  s = simd_sum(s);
  if (lane == 0) {
    sums[sg] = s;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    float total = 0.0f;
    for (uint k = 0; k < (nthreads + 31) / 32; k++) {
      total += sums[k];
    }
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
  float s = 0.0f;
  for (uint n = tid; n < args.rows; n += nthreads) {
    s += partial[ulong(n) * args.heads + h];
  }
  scratch[tid] = s;
  golf_tree_sum(scratch, tid, nthreads);
  if (tid == 0) {
    dgain[h] += scratch[0];
  }
}

#define instantiate_qk_norm_rope(tname, T)                                                \
  instantiate_kernel("qk_norm_rope_fwd_simd_" #tname, qk_norm_rope_fwd_simd, T)           \
  instantiate_kernel("qk_norm_rope_fwd_portable_" #tname, qk_norm_rope_fwd_portable, T)   \
  instantiate_kernel("qk_norm_rope_bwd_simd_" #tname, qk_norm_rope_bwd_simd, T)           \
  instantiate_kernel("qk_norm_rope_bwd_portable_" #tname, qk_norm_rope_bwd_portable, T)   \
  instantiate_kernel("qk_norm_rope_dgain_simd_" #tname, qk_norm_rope_dgain_simd, T)       \
  instantiate_kernel("qk_norm_rope_dgain_portable_" #tname, qk_norm_rope_dgain_portable, T)

instantiate_qk_norm_rope(float, float)
instantiate_qk_norm_rope(half, half)
instantiate_qk_norm_rope(bfloat, bfloat)
