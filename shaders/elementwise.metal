// elementwise: Zero, Cast, Scale, Axpy and Reduce.
//
//	zero:   x = 0                                     x T (n)
//	cast:   dst = round_D(src)                        src S, dst D (n)
//	scale:  x *= alpha                                x T (n); the host uses float
//	axpy:   dst += alpha·x                            dst float, x T (n)
//	reduce: dst[0] += Σ f(x[i]), f = x, x² or [x is ±Inf or NaN]
//	                                                  dst float (1), x T (n)
//
// Zero, Cast, Scale and Axpy run four consecutive elements per thread
// (elements 4t .. 4t+3 for thread t, the last chunk possibly short),
// computed in float and rounded once on store; where the host's aligned
// argument is 1 (every tensor starts on a 4-element boundary) a whole
// chunk moves as one vector load or store (golf_rows.h), else element by
// element, with the same bits. The simd and portable flavours are the same
// code (both names exist so the host builds every kernel name one way).
// Host names (KernelName(op, dir, flavour, elem)):
//   zero_<fl>_<T>                      T the element type (I32 uses float: the
//                                      zero bit pattern is the same);
//   cast_from_<S>_<fl>_<D>             op "cast_from_<S>", dir "", elem = the
//                                      destination type D;
//   scale_<fl>_<T>, axpy_<fl>_<T>      T the type of x;
//   reduce_partial_<fl>_<T>, reduce_final_<fl>_<T>.
// Reduce is a fixed two-pass reduction, deterministic for a given dispatch
// shape (no atomics): reduce_partial runs G threadgroups, each thread
// summing a grid-stride slice of x in float, the threadgroup combining its
// threads' sums in a fixed order into partials[g]; reduce_final (one
// threadgroup) sums the G partials the same way and adds the total into
// dst[0]. The flavours differ only in how a threadgroup combines sums:
//   simd:     simd_sum within each simdgroup, then every simdgroup's sum from
//             threadgroup memory, in order;
//   portable: a tree reduction in threadgroup memory (no simd functions).
// Non-finite counts are float sums of 0 and 1: exact up to 2^24 elements.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_reduce.h"
#include "golf_rows.h"
using namespace metal;


// zero_elems: x[i] = 0 (+0: every bit clear in each type).
// Baseline: zeroing the F32 gradients of a 1024×512 weight: 0 FLOP,
// 4·524288 B ≈ 2.1 MB written; no threadgroup memory, 256 threads; roofline
// 21 µs (bandwidth).
template <typename T, bool Simd>
[[kernel]] void zero_elems(
    device T* x [[buffer(0)]],                // (n)
    constant EltwiseArgs& args [[buffer(1)]],
    constant uint& aligned [[buffer(2)]],     // 1: every chunk moves as one vector
    uint t [[thread_position_in_grid]]) {
  const ulong i = ulong(golf_vw) * t;
  if (i >= args.n) {
    return;
  }
  const uint n = uint(min(ulong(golf_vw), ulong(args.n) - i));
  golf_store4(x, i, n, vec<T, 4>(static_cast<T>(0.0f)), aligned != 0);
}

// cast_elems: dst[i] = round_D(src[i]), through float (exact for every pair:
// float holds every half and bfloat value, and the conversion to D rounds
// once, to nearest even).
// Baseline: an (N, C) activation bf16 → float: 0 FLOP, (2 + 4)·N·C ≈ 25.2 MB;
// the per-step weight copies float → bf16 (17.1 M parameters in all, 6 B
// each ≈ 102 MB over the step's casts); no threadgroup memory, 256 threads;
// roofline 0.25 ms for the activation (bandwidth).
template <typename S, typename D, bool Simd>
[[kernel]] void cast_elems(
    device const S* src [[buffer(0)]],        // (n)
    device D* dst [[buffer(1)]],              // (n)
    constant EltwiseArgs& args [[buffer(2)]],
    constant uint& aligned [[buffer(3)]],     // 1: every chunk moves as one vector
    uint t [[thread_position_in_grid]]) {
  const ulong i = ulong(golf_vw) * t;
  if (i >= args.n) {
    return;
  }
  const uint n = uint(min(ulong(golf_vw), ulong(args.n) - i));
  golf_storef4(dst, i, n, golf_loadf4(src, i, n, aligned != 0), aligned != 0);
}

// scale_elems: x[i] = x[i]·alpha (the host binds float x only).
// Baseline: a float 1024×512 gradient: 524288 FLOP, 8·524288 B ≈ 4.2 MB;
// no threadgroup memory, 256 threads; roofline max(0.15 µs, 42 µs) = 42 µs.
template <typename T, bool Simd>
[[kernel]] void scale_elems(
    device T* x [[buffer(0)]],                // (n)
    constant ScalarArgs& args [[buffer(1)]],
    constant uint& aligned [[buffer(2)]],     // 1: every chunk moves as one vector
    uint t [[thread_position_in_grid]]) {
  const ulong i = ulong(golf_vw) * t;
  if (i >= args.n) {
    return;
  }
  const uint n = uint(min(ulong(golf_vw), ulong(args.n) - i));
  const bool al = aligned != 0;
  golf_storef4(x, i, n, golf_loadf4(static_cast<device const T*>(x), i, n, al) * args.alpha, al);
}

// axpy_elems: dst[i] += alpha·x[i], dst float.
// Baseline: a 1024×512 float accumulator += α·bf16 x: 2·524288 FLOP,
// (4 + 4 + 2)·524288 B ≈ 5.2 MB; no threadgroup memory, 256 threads;
// roofline max(0.3 µs, 52 µs) = 52 µs.
template <typename T, bool Simd>
[[kernel]] void axpy_elems(
    device const T* x [[buffer(0)]],          // (n)
    device float* dst [[buffer(1)]],          // (n)
    constant ScalarArgs& args [[buffer(2)]],
    constant uint& aligned [[buffer(3)]],     // 1: every chunk moves as one vector
    uint t [[thread_position_in_grid]]) {
  const ulong i = ulong(golf_vw) * t;
  if (i >= args.n) {
    return;
  }
  const uint n = uint(min(ulong(golf_vw), ulong(args.n) - i));
  const bool al = aligned != 0;
  const float4 v = golf_loadf4(x, i, n, al);
  const float4 d = golf_load4(static_cast<device const float*>(dst), i, n, al);
  golf_store4(dst, i, n, golf_axpy4(d, v, args.alpha), al);
}

// reduce_term is what one element adds: x, x² or 1 when x is not finite
// (kind as backend.ReduceKind).
inline float reduce_term(float v, uint kind) {
  if (kind == 0) {
    return v;
  }
  if (kind == 1) {
    return v * v;
  }
  return isfinite(v) ? 0.0f : 1.0f;
}

// reduce_partial_simd: partials[g] = Σ over threadgroup g's grid-stride
// slice of x, simd flavour.
// Baseline: the sum of squares of a float 1024×512 gradient: 2·524288 FLOP,
// 4·524288 B ≈ 2.1 MB read (G ≤ 1024 partials written); 128 B threadgroup
// memory, 256 threads; roofline max(0.3 µs, 21 µs) = 21 µs.
template <typename T>
[[kernel]] void reduce_partial_simd(
    device const T* x [[buffer(0)]],          // (n)
    device float* partials [[buffer(1)]],     // (G)
    constant ReduceArgs& args [[buffer(2)]],
    uint group [[threadgroup_position_in_grid]],
    uint ngroups [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[32];  // one sum per simdgroup
  const uint stride = ngroups * nthreads;
  float acc = 0.0f;
  for (uint i = group * nthreads + tid; i < args.n; i += stride) {
    acc += reduce_term(static_cast<float>(x[i]), args.kind);
  }
  acc = simd_sum(acc);
  if (lane == 0) {
    sums[sg] = acc;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    const uint nsg = (nthreads + 31) / 32;
    float total = 0.0f;
    for (uint s = 0; s < nsg; s++) {
      total += sums[s];
    }
    partials[group] = total;
  }
}

// reduce_partial_portable: as reduce_partial_simd with a tree reduction in
// threadgroup memory (4 KB; otherwise the same cost).
template <typename T>
[[kernel]] void reduce_partial_portable(
    device const T* x [[buffer(0)]],          // (n)
    device float* partials [[buffer(1)]],     // (G)
    constant ReduceArgs& args [[buffer(2)]],
    uint group [[threadgroup_position_in_grid]],
    uint ngroups [[threadgroups_per_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float sums[1024];  // one sum per thread
  const uint stride = ngroups * nthreads;
  float acc = 0.0f;
  for (uint i = group * nthreads + tid; i < args.n; i += stride) {
    acc += reduce_term(static_cast<float>(x[i]), args.kind);
  }
  sums[tid] = acc;
  golf_tree_sum(sums, tid, nthreads);
  if (tid == 0) {
    partials[group] = sums[0];
  }
}

// reduce_final_simd: dst[0] += Σ_g partials[g] (args.n = G partials), one
// threadgroup, simd flavour. T is unused (partials are float).
// Baseline: G ≤ 1024 floats: ≤ 1024 FLOP, ≤ 4 KB; 128 B threadgroup memory,
// 256 threads; roofline < 0.1 µs (a dispatch costs more).
template <typename T>
[[kernel]] void reduce_final_simd(
    device const float* partials [[buffer(0)]],  // (G)
    device float* dst [[buffer(1)]],             // (1)
    constant ReduceArgs& args [[buffer(2)]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[32];  // one sum per simdgroup
  float acc = 0.0f;
  for (uint i = tid; i < args.n; i += nthreads) {
    acc += partials[i];
  }
  acc = simd_sum(acc);
  if (lane == 0) {
    sums[sg] = acc;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    const uint nsg = (nthreads + 31) / 32;
    float total = 0.0f;
    for (uint s = 0; s < nsg; s++) {
      total += sums[s];
    }
    dst[0] += total;
  }
}

// reduce_final_portable: as reduce_final_simd with a tree reduction in
// threadgroup memory (4 KB).
template <typename T>
[[kernel]] void reduce_final_portable(
    device const float* partials [[buffer(0)]],  // (G)
    device float* dst [[buffer(1)]],             // (1)
    constant ReduceArgs& args [[buffer(2)]],
    uint tid [[thread_index_in_threadgroup]],
    uint nthreads [[threads_per_threadgroup]]) {
  threadgroup float sums[1024];  // one sum per thread
  float acc = 0.0f;
  for (uint i = tid; i < args.n; i += nthreads) {
    acc += partials[i];
  }
  sums[tid] = acc;
  golf_tree_sum(sums, tid, nthreads);
  if (tid == 0) {
    dst[0] += sums[0];
  }
}

// instantiate_elementwise instantiates every kernel whose element type (the
// last part of the host name) is T; for cast that is the destination.
#define instantiate_elementwise(tname, T)                                                       \
  instantiate_kernel("zero_simd_" #tname, zero_elems, T, true)                                  \
  instantiate_kernel("zero_portable_" #tname, zero_elems, T, false)                             \
  instantiate_kernel("cast_from_float_simd_" #tname, cast_elems, float, T, true)                \
  instantiate_kernel("cast_from_float_portable_" #tname, cast_elems, float, T, false)           \
  instantiate_kernel("cast_from_half_simd_" #tname, cast_elems, half, T, true)                  \
  instantiate_kernel("cast_from_half_portable_" #tname, cast_elems, half, T, false)             \
  instantiate_kernel("cast_from_bfloat_simd_" #tname, cast_elems, bfloat, T, true)              \
  instantiate_kernel("cast_from_bfloat_portable_" #tname, cast_elems, bfloat, T, false)         \
  instantiate_kernel("scale_simd_" #tname, scale_elems, T, true)                                \
  instantiate_kernel("scale_portable_" #tname, scale_elems, T, false)                           \
  instantiate_kernel("axpy_simd_" #tname, axpy_elems, T, true)                                  \
  instantiate_kernel("axpy_portable_" #tname, axpy_elems, T, false)                             \
  instantiate_kernel("reduce_partial_simd_" #tname, reduce_partial_simd, T)                     \
  instantiate_kernel("reduce_partial_portable_" #tname, reduce_partial_portable, T)             \
  instantiate_kernel("reduce_final_simd_" #tname, reduce_final_simd, T)                         \
  instantiate_kernel("reduce_final_portable_" #tname, reduce_final_portable, T)

instantiate_elementwise(float, float)
instantiate_elementwise(half, half)
instantiate_elementwise(bfloat, bfloat)
