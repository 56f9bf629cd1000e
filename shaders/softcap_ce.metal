// softcap_ce: softcapped cross-entropy, forward (per-row loss) and
// backward (dlogits).
//
//	th = tanh(logits[n,v]/cap);  z = cap·th                       (float32)
//	lse[n] = log Σ_v exp(z[n,v]);  loss[n] = lse[n] − z[n,targets[n]]   (forward)
//	dlogits[n,v] = scale·(p[n,v] − [v = targets[n]])·(1 − th²),  p = exp(z − lse)  (backward)
//	logits, dlogits T (N, V); targets int (N); loss float (N)
//
// One threadgroup per row (grid = N threadgroups, any threadgroup size up
// to 1024); each thread strides over the row keeping an online
// log-sum-exp (its running max m and Σ exp(z − m)), and the threadgroup
// combines them: M = max of the threads' m, S = Σ s·exp(m − M), lse =
// M + log S. Two flavours differ only in how they combine:
//   simd:     simd_max / simd_sum within each simdgroup, then every thread
//             reads the ≤ 32 simdgroup values from threadgroup memory (in
//             order);
//   portable: tree reductions in threadgroup memory.
// The forward, the backward and the fused kernel (softcap_ce_fused: both in
// one pass, loss and dlogits from one log-sum-exp) compute the log-sum-exp
// with the same functions (softcap_ce_lse_part, then softcap_ce_lse_simd or
// softcap_ce_lse_portable), so with the same threadgroup size they agree
// bit for bit.
// A target outside [0, V) gives a NaN loss; in the backward it matches no
// column.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_reduce.h"
using namespace metal;

// softcap_ce_z is cap·tanh(l/cap) in float32.
inline float softcap_ce_z(float l, float cap) {
  return cap * tanh(l / cap);
}

// softcap_ce_lse_part returns the thread's online log-sum-exp over its
// columns of the row: m = max z (−inf if it has none) and s = Σ exp(z − m).
template <typename T>
inline float2 softcap_ce_lse_part(device const T* logits, ulong base, uint vocab, float cap, uint tid, uint nthreads) {
  float m = -numeric_limits<float>::infinity();
  float s = 0.0f;
  for (uint v = tid; v < vocab; v += nthreads) {
    const float z = softcap_ce_z(static_cast<float>(logits[base + v]), cap);
    if (z > m) {
      s = s * exp(m - z) + 1.0f;
      m = z;
    } else {
      s += exp(z - m);
    }
  }
  return float2(m, s);
}

// softcap_ce_lse_simd combines the threads' (m, s) of softcap_ce_lse_part
// into the row's (M, S), returned to every thread: simd_max and the ≤ 32
// simdgroup maxima in order give M, then simd_sum of s·exp(m − M) and the
// simdgroup sums in order give S. maxes and sums are threadgroup arrays of
// 32.
template <typename P>
inline float2 softcap_ce_lse_simd(float2 ms, P maxes, P sums, uint lane, uint sg, uint nthreads) {
  const float m = simd_max(ms.x);
  if (lane == 0) {
    maxes[sg] = m;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint nsg = (nthreads + 31) / 32;
  float mx = maxes[0];
  for (uint k = 1; k < nsg; k++) {
    mx = max(mx, maxes[k]);
  }
  const float s = simd_sum(ms.y * exp(ms.x - mx));
  if (lane == 0) {
    sums[sg] = s;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float total = 0.0f;
  for (uint k = 0; k < nsg; k++) {
    total += sums[k];
  }
  return float2(mx, total);
}

// softcap_ce_lse_portable: as softcap_ce_lse_simd, with tree reductions in
// red (threadgroup, nthreads floats).
template <typename P>
inline float2 softcap_ce_lse_portable(float2 ms, P red, uint tid, uint nthreads) {
  red[tid] = ms.x;
  golf_tree_max(red, tid, nthreads);
  const float mx = red[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);  // every thread has read red[0]
  red[tid] = ms.y * exp(ms.x - mx);
  golf_tree_sum(red, tid, nthreads);
  return float2(mx, red[0]);
}

// softcap_ce_loss is the row's loss from its (M, S): (M − z[target]) +
// log S, NaN for a target outside [0, vocab).
template <typename T>
inline float softcap_ce_loss(device const T* logits, ulong base, uint vocab, int target, float cap, float2 lse) {
  float l = numeric_limits<float>::quiet_NaN();
  if (target >= 0 && uint(target) < vocab) {
    l = (lse.x - softcap_ce_z(static_cast<float>(logits[base + uint(target)]), cap)) + log(lse.y);
  }
  return l;
}

// softcap_ce_bwd_store writes the row's dlogits from M and log S.
template <typename T>
inline void softcap_ce_bwd_store(
    device const T* logits, device T* dlogits, ulong base, uint vocab, int target,
    float cap, float scale, float mx, float logs, uint tid, uint nthreads) {
  for (uint v = tid; v < vocab; v += nthreads) {
    const float th = tanh(static_cast<float>(logits[base + v]) / cap);
    float p = exp((cap * th - mx) - logs);
    if (int(v) == target) {
      p -= 1.0f;
    }
    dlogits[base + v] = static_cast<T>(scale * p * (1.0f - th * th));
  }
}

// softcap_ce_fwd_simd: the forward pass, simd flavour.
// Baseline (N = 8192, V = 1024, bf16): ≈ 30·N·V ≈ 250 MFLOP (tanh and exp
// per logit); bytes: logits read once, N·V·2 ≈ 16.8 MB, loss 32 KB; 256 B
// threadgroup memory, 256 threads; roofline max(70 µs, 168 µs) ≈ 0.17 ms
// (bandwidth).
template <typename T>
[[kernel]] void softcap_ce_fwd_simd(
    device const T* logits [[buffer(0)]],     // (N, V)
    device const int* targets [[buffer(1)]],  // (N)
    device float* loss [[buffer(2)]],         // (N)
    constant CEArgs& args [[buffer(3)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float maxes[32];  // one max per simdgroup
  threadgroup float sums[32];   // one rescaled sum per simdgroup
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.vocab;
  const float2 ms = softcap_ce_lse_part(logits, base, args.vocab, args.cap, tid, nthreads);
  const float2 lse = softcap_ce_lse_simd(ms, maxes, sums, lane, sg, nthreads);
  if (tid == 0) {
    loss[row] = softcap_ce_loss(logits, base, args.vocab, targets[row], args.cap, lse);
  }
}

// softcap_ce_fwd_portable: the forward pass, portable flavour (4 KB of
// threadgroup memory; otherwise as the simd flavour).
template <typename T>
[[kernel]] void softcap_ce_fwd_portable(
    device const T* logits [[buffer(0)]],     // (N, V)
    device const int* targets [[buffer(1)]],  // (N)
    device float* loss [[buffer(2)]],         // (N)
    constant CEArgs& args [[buffer(3)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float red[1024];  // one max, then one rescaled sum, per thread
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.vocab;
  const float2 ms = softcap_ce_lse_part(logits, base, args.vocab, args.cap, tid, nthreads);
  const float2 lse = softcap_ce_lse_portable(ms, red, tid, nthreads);
  if (tid == 0) {
    loss[row] = softcap_ce_loss(logits, base, args.vocab, targets[row], args.cap, lse);
  }
}

// softcap_ce_bwd_simd: the backward pass, simd flavour: the log-sum-exp as
// in the forward, then a second sweep over the row writing dlogits.
// Baseline (N = 8192, V = 1024, bf16): ≈ 55·N·V ≈ 460 MFLOP; bytes:
// logits read twice (the second sweep mostly from cache: a row is 2 KB)
// and dlogits written, 2·N·V·2 ≈ 33.6 MB; 256 B threadgroup memory, 256
// threads; roofline max(128 µs, 336 µs) ≈ 0.34 ms (bandwidth).
template <typename T>
[[kernel]] void softcap_ce_bwd_simd(
    device const T* logits [[buffer(0)]],     // (N, V)
    device const int* targets [[buffer(1)]],  // (N)
    device T* dlogits [[buffer(2)]],          // (N, V)
    constant CEArgs& args [[buffer(3)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float maxes[32];  // one max per simdgroup
  threadgroup float sums[32];   // one rescaled sum per simdgroup
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.vocab;
  const float2 ms = softcap_ce_lse_part(logits, base, args.vocab, args.cap, tid, nthreads);
  const float2 lse = softcap_ce_lse_simd(ms, maxes, sums, lane, sg, nthreads);
  softcap_ce_bwd_store(logits, dlogits, base, args.vocab, targets[row], args.cap, args.scale, lse.x, log(lse.y), tid,
                       nthreads);
}

// softcap_ce_bwd_portable: the backward pass, portable flavour (4 KB of
// threadgroup memory; otherwise as the simd flavour).
template <typename T>
[[kernel]] void softcap_ce_bwd_portable(
    device const T* logits [[buffer(0)]],     // (N, V)
    device const int* targets [[buffer(1)]],  // (N)
    device T* dlogits [[buffer(2)]],          // (N, V)
    constant CEArgs& args [[buffer(3)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float red[1024];  // one max, then one rescaled sum, per thread
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.vocab;
  const float2 ms = softcap_ce_lse_part(logits, base, args.vocab, args.cap, tid, nthreads);
  const float2 lse = softcap_ce_lse_portable(ms, red, tid, nthreads);
  softcap_ce_bwd_store(logits, dlogits, base, args.vocab, targets[row], args.cap, args.scale, lse.x, log(lse.y), tid,
                       nthreads);
}

// softcap_ce_fused_simd: the forward and the backward in one pass over the
// row, simd flavour: the log-sum-exp once (as both unfused kernels compute
// it), then the loss (thread 0, as softcap_ce_fwd_simd) and dlogits (as
// softcap_ce_bwd_simd) from it.
// Baseline (N = 8192, V = 1024, bf16): ≈ 55·N·V ≈ 460 MFLOP; bytes: logits
// read once (the second sweep mostly from cache) and dlogits written,
// 2·N·V·2 ≈ 33.6 MB, targets and loss 64 KB (the unfused pair: 50 MB);
// 256 B threadgroup memory, 256 threads; roofline max(128 µs, 336 µs)
// ≈ 0.34 ms (bandwidth).
template <typename T>
[[kernel]] void softcap_ce_fused_simd(
    device const T* logits [[buffer(0)]],     // (N, V)
    device const int* targets [[buffer(1)]],  // (N)
    device float* loss [[buffer(2)]],         // (N)
    device T* dlogits [[buffer(3)]],          // (N, V)
    constant CEArgs& args [[buffer(4)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float maxes[32];  // one max per simdgroup
  threadgroup float sums[32];   // one rescaled sum per simdgroup
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.vocab;
  const float2 ms = softcap_ce_lse_part(logits, base, args.vocab, args.cap, tid, nthreads);
  const float2 lse = softcap_ce_lse_simd(ms, maxes, sums, lane, sg, nthreads);
  const int t = targets[row];
  if (tid == 0) {
    loss[row] = softcap_ce_loss(logits, base, args.vocab, t, args.cap, lse);
  }
  softcap_ce_bwd_store(logits, dlogits, base, args.vocab, t, args.cap, args.scale, lse.x, log(lse.y), tid, nthreads);
}

// softcap_ce_fused_portable: as the simd flavour, with the portable
// kernels' tree reductions (4 KB of threadgroup memory).
template <typename T>
[[kernel]] void softcap_ce_fused_portable(
    device const T* logits [[buffer(0)]],     // (N, V)
    device const int* targets [[buffer(1)]],  // (N)
    device float* loss [[buffer(2)]],         // (N)
    device T* dlogits [[buffer(3)]],          // (N, V)
    constant CEArgs& args [[buffer(4)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float red[1024];  // one max, then one rescaled sum, per thread
  if (row >= args.rows) {
    return;
  }
  const ulong base = ulong(row) * args.vocab;
  const float2 ms = softcap_ce_lse_part(logits, base, args.vocab, args.cap, tid, nthreads);
  const float2 lse = softcap_ce_lse_portable(ms, red, tid, nthreads);
  const int t = targets[row];
  if (tid == 0) {
    loss[row] = softcap_ce_loss(logits, base, args.vocab, t, args.cap, lse);
  }
  softcap_ce_bwd_store(logits, dlogits, base, args.vocab, t, args.cap, args.scale, lse.x, log(lse.y), tid, nthreads);
}

#define instantiate_softcap_ce(tname, T)                                                \
  instantiate_kernel("softcap_ce_fwd_simd_" #tname, softcap_ce_fwd_simd, T)             \
  instantiate_kernel("softcap_ce_fwd_portable_" #tname, softcap_ce_fwd_portable, T)     \
  instantiate_kernel("softcap_ce_bwd_simd_" #tname, softcap_ce_bwd_simd, T)             \
  instantiate_kernel("softcap_ce_bwd_portable_" #tname, softcap_ce_bwd_portable, T)     \
  instantiate_kernel("softcap_ce_fused_simd_" #tname, softcap_ce_fused_simd, T)         \
  instantiate_kernel("softcap_ce_fused_portable_" #tname, softcap_ce_fused_portable, T)

instantiate_softcap_ce(float, float)
instantiate_softcap_ce(half, half)
instantiate_softcap_ce(bfloat, bfloat)
