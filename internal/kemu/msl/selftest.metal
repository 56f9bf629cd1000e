// selftest.metal: the emulator's own test kernels (package emu's tests run
// them against scalar models in Go). They are valid MSL, so they can also
// run on a GPU to compare the emulator's choices with the hardware's.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

// SelftestArgs: parameters of the test kernels.
struct SelftestArgs {
  uint n;          // elements
  uint delta;      // shuffle_up/down delta
  uint mask;       // shuffle_xor mask
  uint lane;       // broadcast lane
  uint skip;       // threads with tid % skip == skip - 1 return early (0: none)
  float threshold; // simd_any/simd_all compare x > threshold
};

// emu_barrier_neighbour: each thread writes threadgroup memory, and after a
// barrier reads the value of a thread shift places on (in another
// simdgroup), then overwrites its own slot and reads again after another
// barrier.
//	out[2(g·T+t)]   = g·100000 + (t+shift) mod T
//	out[2(g·T+t)+1] = 3·(g·100000 + (u+shift) mod T) + 1, u = (t+2·shift) mod T
[[kernel]] void emu_barrier_neighbour(
    device uint* out [[buffer(0)]],
    constant SelftestArgs& args [[buffer(1)]],
    uint tid [[thread_index_in_threadgroup]],
    uint n [[threads_per_threadgroup]],
    uint g [[threadgroup_position_in_grid]]) {
  threadgroup uint tile[1024];
  tile[tid] = g * 100000u + tid;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint v1 = tile[(tid + args.delta) % n];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  tile[tid] = v1 * 3u + 1u;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint v2 = tile[(tid + 2u * args.delta) % n];
  out[2u * (g * n + tid)] = v1;
  out[2u * (g * n + tid) + 1u] = v2;
}

// emu_simd_ops: every simdgroup function on x = in[gid]; result k of
// thread gid goes to out[k·n + gid]. Threads with tid % skip == skip − 1
// return first (inactive lanes).
template <typename T>
[[kernel]] void emu_simd_ops(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant SelftestArgs& args [[buffer(2)]],
    uint gid [[thread_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  if (args.skip != 0 && tid % args.skip == args.skip - 1) {
    return;
  }
  const T x = in[gid];
  const uint n = args.n;
  out[0 * n + gid] = simd_sum(x);
  out[1 * n + gid] = simd_max(x);
  out[2 * n + gid] = simd_min(x);
  out[3 * n + gid] = simd_prefix_inclusive_sum(x);
  out[4 * n + gid] = simd_prefix_exclusive_sum(x);
  out[5 * n + gid] = simd_shuffle(x, ushort((lane * 7u + 3u) % 37u));
  out[6 * n + gid] = simd_shuffle_down(x, ushort(args.delta));
  out[7 * n + gid] = simd_shuffle_up(x, ushort(args.delta));
  out[8 * n + gid] = simd_shuffle_xor(x, ushort(args.mask));
  out[9 * n + gid] = simd_broadcast(x, ushort(args.lane));
  out[10 * n + gid] = simd_broadcast_first(x);
  out[11 * n + gid] = simd_any(x > T(args.threshold)) ? T(1) : T(0);
  out[12 * n + gid] = simd_all(x > T(args.threshold)) ? T(1) : T(0);
  out[13 * n + gid] = simd_is_first() ? T(1) : T(0);
  simdgroup_barrier(mem_flags::mem_none);
}

instantiate_kernel("emu_simd_ops_float", emu_simd_ops, float)
instantiate_kernel("emu_simd_ops_half", emu_simd_ops, half)
instantiate_kernel("emu_simd_ops_int", emu_simd_ops, int)

// emu_mma: per matrix m = 2g + s (simdgroup s of threadgroup g) with
// A_m[i][k] = a[96m + 12i + 2 + k] (elements_per_row 12, matrix_origin
// (2, 0)), B_m[k][j] = b[64m + 8j + k] (staged in threadgroup memory, loaded
// transposed), C_m[i][j] = c[64m + 8i + j], at offset 64m:
//	d  = A·B + C            (float accumulator, row-major)
//	dt = (A·B + C)ᵀ         (stored transposed)
//	p  = A·B                (in T)
//	f  = A·B + 1.5          (make_filled accumulator, updated in place)
template <typename T>
[[kernel]] void emu_mma(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device const float* c [[buffer(2)]],
    device float* d [[buffer(3)]],
    device float* dt [[buffer(4)]],
    device T* p [[buffer(5)]],
    device float* f [[buffer(6)]],
    uint g [[threadgroup_position_in_grid]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup T bt[128];
  for (uint i = tid; i < 128u; i += 64u) {
    bt[i] = b[128u * g + i];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint m = 2u * g + sg;
  simdgroup_matrix<T, 8, 8> ma;
  simdgroup_matrix<T, 8, 8> mb;
  simdgroup_float8x8 mc;
  simdgroup_float8x8 md;
  simdgroup_load(ma, a + 96u * m, 12, ulong2(2, 0));
  simdgroup_load(mb, bt + 64u * sg, 8, ulong2(0, 0), true);
  simdgroup_load(mc, c + 64u * m);
  simdgroup_multiply_accumulate(md, ma, mb, mc);
  simdgroup_store(md, d + 64u * m);
  simdgroup_store(md, dt + 64u * m, 8, ulong2(0, 0), true);
  simdgroup_matrix<T, 8, 8> mp;
  simdgroup_multiply(mp, ma, mb);
  simdgroup_store(mp, p + 64u * m);
  simdgroup_float8x8 mf = make_filled_simdgroup_matrix<float, 8, 8>(1.5f);
  simdgroup_multiply_accumulate(mf, ma, mb, mf);
  simdgroup_store(mf, f + 64u * m);
}

instantiate_kernel("emu_mma_float", emu_mma, float)
instantiate_kernel("emu_mma_half", emu_mma, half)
instantiate_kernel("emu_mma_bfloat", emu_mma, bfloat)

// emu_thread_elements: per simdgroup m = 2g + s, with A_m[i][j] =
// a[64m + 8i + j] and B_m[k][j] = b[64m + 8k + j]:
//	e[64m + 2l + k] = element k of lane l's thread_elements() of A_m
//	d  = A'·B, A' = A_m with lane l's two elements multiplied by l + 1
//	     through thread_elements() (float accumulator)
//	p  = A·B with every lane writing its own (row, col) pair of the
//	     product in T into device memory from thread_elements()
//	f  = make_filled_simdgroup_matrix(float(l)) stored: each element its
//	     owner's l
template <typename T>
[[kernel]] void emu_thread_elements(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device T* e [[buffer(2)]],
    device float* d [[buffer(3)]],
    device T* p [[buffer(4)]],
    device float* f [[buffer(5)]],
    uint g [[threadgroup_position_in_grid]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  const uint m = 2u * g + sg;
  simdgroup_matrix<T, 8, 8> ma;
  simdgroup_matrix<T, 8, 8> mb;
  simdgroup_load(ma, a + 64u * m);
  simdgroup_load(mb, b + 64u * m);
  const vec<T, 2> mine = ma.thread_elements();
  e[64u * m + 2u * lane] = mine[0];
  e[64u * m + 2u * lane + 1u] = mine[1];

  simdgroup_matrix<T, 8, 8> mp;
  simdgroup_multiply(mp, ma, mb);
  const uint q = lane / 4u;
  const uint row = (q & 4u) + (lane / 2u) % 4u;
  const uint col = (q & 2u) * 2u + (lane % 2u) * 2u;
  const vec<T, 2> pv = mp.thread_elements();
  p[64u * m + 8u * row + col] = pv[0];
  p[64u * m + 8u * row + col + 1u] = pv[1];

  thread vec<T, 2>& el = ma.thread_elements();
  el = el * static_cast<T>(lane + 1u);
  simdgroup_float8x8 md;
  simdgroup_multiply(md, ma, mb);
  simdgroup_store(md, d + 64u * m);

  simdgroup_float8x8 mf = make_filled_simdgroup_matrix<float, 8, 8>(float(lane));
  simdgroup_store(mf, f + 64u * m);
}

instantiate_kernel("emu_thread_elements_float", emu_thread_elements, float)
instantiate_kernel("emu_thread_elements_half", emu_thread_elements, half)
instantiate_kernel("emu_thread_elements_bfloat", emu_thread_elements, bfloat)

// emu_convert: float -> half and bfloat (h, b), and half, bfloat -> float
// (hf, bf), for n elements, grid-stride.
[[kernel]] void emu_convert(
    device const float* x [[buffer(0)]],
    device half* h [[buffer(1)]],
    device bfloat* b [[buffer(2)]],
    device const half* hin [[buffer(3)]],
    device const bfloat* bin [[buffer(4)]],
    device float* hf [[buffer(5)]],
    device float* bf [[buffer(6)]],
    constant SelftestArgs& args [[buffer(7)]],
    uint gid [[thread_position_in_grid]],
    uint total [[threads_per_grid]]) {
  for (uint i = gid; i < args.n; i += total) {
    h[i] = static_cast<half>(x[i]);
    b[i] = static_cast<bfloat>(x[i]);
    hf[i] = static_cast<float>(hin[i]);
    bf[i] = static_cast<float>(bin[i]);
  }
}

// emu_arith: H op H in half and bfloat, rounded once per operation:
// out[4i + k] = x[i] op y[i] for op = +, −, ×, ÷.
template <typename H>
[[kernel]] void emu_arith(
    device const H* x [[buffer(0)]],
    device const H* y [[buffer(1)]],
    device H* out [[buffer(2)]],
    constant SelftestArgs& args [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.n) {
    return;
  }
  const H a = x[i];
  const H c = y[i];
  out[4 * i + 0] = a + c;
  out[4 * i + 1] = a - c;
  out[4 * i + 2] = a * c;
  out[4 * i + 3] = a / c;
}

instantiate_kernel("emu_arith_half", emu_arith, half)
instantiate_kernel("emu_arith_bfloat", emu_arith, bfloat)

// emu_builtins writes every builtin of every thread: 24 values per thread,
// at out[24·(linear grid position)].
[[kernel]] void emu_builtins(
    device uint* out [[buffer(0)]],
    uint3 tpig [[thread_position_in_grid]],
    uint3 tgpig [[threadgroup_position_in_grid]],
    ushort3 tpitg [[thread_position_in_threadgroup]],
    uint3 tptg [[threads_per_threadgroup]],
    uint3 tgpg [[threadgroups_per_grid]],
    uint3 tpg [[threads_per_grid]],
    ushort tiitg [[thread_index_in_threadgroup]],
    uint tiisg [[thread_index_in_simdgroup]],
    uint sgitg [[simdgroup_index_in_threadgroup]],
    uint tpsg [[threads_per_simdgroup]],
    uint sgptg [[simdgroups_per_threadgroup]],
    uint2 dtptg [[dispatch_threads_per_threadgroup]]) {
  const uint i = 24u * (tpig.x + tpg.x * (tpig.y + tpg.y * tpig.z));
  const uint3 v[6] = {tpig, tgpig, uint3(tpitg), tptg, tgpg, tpg};
  for (uint k = 0; k < 6; k++) {
    out[i + 3 * k + 0] = v[k].x;
    out[i + 3 * k + 1] = v[k].y;
    out[i + 3 * k + 2] = v[k].z;
  }
  out[i + 18] = tiitg;
  out[i + 19] = tiisg;
  out[i + 20] = sgitg;
  out[i + 21] = tpsg;
  out[i + 22] = sgptg;
  out[i + 23] = dtptg.x + 1000u * dtptg.y;
}

// emu_vector: vector types, swizzles and math functions. Per thread i, with
// v = in[i] and w = in[i+n] (float4):
//	out[0..3]   = v + w·2
//	out[4..7]   = v with .xy = w.zw and then .zw = v.yx (the original v)
//	out[8..11]  = float4(v.xy, w.zw) · float4(v.zyx, 1)
//	out[12..15] = select(v, w, v > w), max(v, w) − min(v, w) in .x..
//	out[16..23] = exp, log|.|, sqrt|.|, tanh, sin, cos, rsqrt|.|, pow(|v.x|, w.y)
//	out[24..27] = float4(half4(v)) (rounded through half)
//	out[28..31] = simd_sum(v) (a vector collective over the active lanes)
[[kernel]] void emu_vector(
    device const float4* in [[buffer(0)]],
    device float* out [[buffer(1)]],
    constant SelftestArgs& args [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.n) {
    return;
  }
  const float4 v = in[i];
  const float4 w = in[i + args.n];
  device float* o = out + 32u * i;
  const float4 s = v + w * 2.0f;
  for (int k = 0; k < 4; k++) {
    o[k] = s[k];
  }
  float4 u = v;
  u.xy = w.zw;
  u.zw = v.yx;
  o[4] = u.x;
  o[5] = u.y;
  o[6] = u.z;
  o[7] = u.w;
  const float4 q = float4(v.xy, w.zw) * float4(v.zyx, 1.0f);
  o[8] = q.x;
  o[9] = q.y;
  o[10] = q.z;
  o[11] = q.w;
  const float4 sel = select(v, w, v > w);
  const float4 mm = max(v, w) - min(v, w);
  o[12] = sel.x;
  o[13] = sel.w;
  o[14] = mm.x;
  o[15] = dot(v, w);
  o[16] = exp(v.x);
  o[17] = log(abs(v.y));
  o[18] = sqrt(abs(v.z));
  o[19] = tanh(v.w);
  o[20] = sin(w.x);
  o[21] = cos(w.y);
  o[22] = rsqrt(abs(w.z));
  o[23] = pow(abs(v.x), w.y);
  const float4 r = float4(half4(v));
  o[24] = r.x;
  o[25] = r.y;
  o[26] = r.z;
  o[27] = r.w;
  const float4 t = simd_sum(v);
  o[28] = t.x;
  o[29] = t.y;
  o[30] = t.z;
  o[31] = t.w;
}

// emu_atomics: every thread adds 1 to a device atomic_uint and 0.5 to a
// device atomic_float, and 1 to a threadgroup atomic_uint whose final
// value thread 0 writes to counts[g]; max and min of the thread's grid
// position go to ext[0] and ext[1].
[[kernel]] void emu_atomics(
    device atomic_uint* total [[buffer(0)]],
    device atomic_float* sum [[buffer(1)]],
    device uint* counts [[buffer(2)]],
    device atomic_uint* ext [[buffer(3)]],
    uint gid [[thread_position_in_grid]],
    uint g [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_uint local;
  if (tid == 0) {
    atomic_store_explicit(&local, 0u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(total, 1u, memory_order_relaxed);
  atomic_fetch_add_explicit(sum, 0.5f, memory_order_relaxed);
  atomic_fetch_add_explicit(&local, 1u, memory_order_relaxed);
  atomic_fetch_max_explicit(&ext[0], gid, memory_order_relaxed);
  atomic_fetch_min_explicit(&ext[1], gid, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    counts[g] = atomic_load_explicit(&local, memory_order_relaxed);
  }
}

// emu_scalar_math: the scalar shim beyond float: per thread i with
// a = x[i], b = y[i] (float), out[12i + k] =
//	0  float(numeric_limits<half>::max())    1  float(numeric_limits<bfloat>::epsilon())
//	2  as_type<float>(as_type<uint>(a))       3  float(exp(half(a)))
//	4  fma(a, b, 0.25f)                      5  clamp(a, -0.5f, 0.5f)
//	6  saturate(a) + mix(a, b, 0.25f)         7  float(half(a) * half(b) + 1.5h)
//	8  float(bfloat(a) - bfloat(b))          9  float(dot(half2(a, b), half2(b, a)))
//	10 precise::sqrt(fabs(a)) + fast::exp(b) 11 isfinite(a / b) + 2·isnan(sqrt(a)) + 4·signbit(a)
[[kernel]] void emu_scalar_math(
    device const float* x [[buffer(0)]],
    device const float* y [[buffer(1)]],
    device float* out [[buffer(2)]],
    constant SelftestArgs& args [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.n) {
    return;
  }
  const float a = x[i];
  const float b = y[i];
  device float* o = out + 12u * i;
  o[0] = float(numeric_limits<half>::max());
  o[1] = float(numeric_limits<bfloat>::epsilon());
  o[2] = as_type<float>(as_type<uint>(a));
  o[3] = float(exp(half(a)));
  o[4] = fma(a, b, 0.25f);
  o[5] = clamp(a, -0.5f, 0.5f);
  o[6] = saturate(a) + mix(a, b, 0.25f);
  o[7] = float(half(a) * half(b) + 1.5h);
  o[8] = float(bfloat(a) - bfloat(b));
  o[9] = float(dot(half2(a, b), half2(b, a)));
  o[10] = precise::sqrt(fabs(a)) + fast::exp(b);
  o[11] = float(isfinite(a / b)) + 2.0f * float(isnan(sqrt(a))) + 4.0f * float(signbit(a));
}

// emu_tg_isolation: two threadgroups running at the same time each keep
// their own threadgroup memory. Thread 0 of each group waits (bounded) for
// the other group to arrive between its write and its read;
// out[2T + g] = 1 if the two groups overlapped. out[g·T + t] = g·1000 + t.
[[kernel]] void emu_tg_isolation(
    device atomic_uint* sync [[buffer(0)]],
    device uint* out [[buffer(1)]],
    uint g [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint n [[threads_per_threadgroup]]) {
  threadgroup uint tile[64];
  tile[tid] = g * 1000u + tid;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    atomic_fetch_add_explicit(sync, 1u, memory_order_relaxed);
    uint spins = 0;
    while (atomic_load_explicit(sync, memory_order_relaxed) < 2u && spins < 400000000u) {
      spins++;
    }
    out[2u * n + g] = atomic_load_explicit(sync, memory_order_relaxed) >= 2u ? 1u : 0u;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[g * n + tid] = tile[tid];
}

// The misuses below must fail the dispatch with an error, never hang.

// emu_bad_return: thread 3 returns, the others wait at a barrier.
[[kernel]] void emu_bad_return(
    device uint* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]]) {
  if (tid == 3) {
    return;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = tid;
}

// emu_bad_sites: two halves of the threadgroup wait at different barriers.
[[kernel]] void emu_bad_sites(
    device uint* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]]) {
  if (tid < 32) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tid] = 1;
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tid] = 2;
  }
}

// emu_bad_simd: lanes 0-15 call simd_sum, lanes 16-31 simd_max.
[[kernel]] void emu_bad_simd(
    device float* out [[buffer(0)]],
    uint lane [[thread_index_in_simdgroup]]) {
  const float x = float(lane);
  out[lane] = lane < 16 ? simd_sum(x) : simd_max(x);
}

// emu_deadlock: lanes 0-15 wait in simd_sum, lanes 16-31 at a barrier.
[[kernel]] void emu_deadlock(
    device float* out [[buffer(0)]],
    uint lane [[thread_index_in_simdgroup]]) {
  float x = float(lane);
  if (lane < 16) {
    x = simd_sum(x);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[lane] = x;
}

// emu_bad_shuffle: simd_shuffle_down with a delta that differs per lane.
[[kernel]] void emu_bad_shuffle(
    device float* out [[buffer(0)]],
    uint lane [[thread_index_in_simdgroup]]) {
  out[lane] = simd_shuffle_down(float(lane), ushort(lane % 2));
}

// emu_mma_partial: simdgroup_load in a simdgroup of 16 lanes.
[[kernel]] void emu_mma_partial(
    device float* m [[buffer(0)]]) {
  simdgroup_float8x8 a;
  simdgroup_load(a, m);
  simdgroup_store(a, m);
}

// emu_fixed_threads: a kernel laid out for exactly 64 threads (the
// attribute); out[g·64 + t] = t.
[[kernel]] [[max_total_threads_per_threadgroup(64)]] void emu_fixed_threads(
    device uint* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]],
    uint g [[threadgroup_position_in_grid]]) {
  out[g * 64u + tid] = tid;
}

// emu_missing_barrier: the race detector's planted defect. Each thread
// writes its slot of threadgroup memory and reads its neighbour's without a
// barrier in between: in program order on a GPU (and in the emulator's
// in-order schedule) the neighbour may not have written yet. With
// args.n != 0 the barrier is there and the result is the same under every
// schedule: out[g·T + t] = 2·(g·T + (t + 1) mod T).
[[kernel]] void emu_missing_barrier(
    device uint* out [[buffer(0)]],
    constant SelftestArgs& args [[buffer(1)]],
    uint tid [[thread_index_in_threadgroup]],
    uint n [[threads_per_threadgroup]],
    uint g [[threadgroup_position_in_grid]]) {
  threadgroup uint tile[1024];
  tile[tid] = 2u * (g * n + tid);
  if (args.n != 0) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[g * n + tid] = tile[(tid + 1u) % n];
}

// emu_missing_simd_barrier: the same within a simdgroup: lanes exchange
// values through threadgroup memory, with simdgroup_barrier only when
// args.n != 0.
[[kernel]] void emu_missing_simd_barrier(
    device uint* out [[buffer(0)]],
    constant SelftestArgs& args [[buffer(1)]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup uint tile[1024];
  tile[tid] = 3u * tid + 1u;
  if (args.n != 0) {
    simdgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[tid] = tile[sg * 32u + (lane + 1u) % 32u];
}
