// linear: the general matrix product behind every linear layer (forward and
// both backward products) and Muon's Newton–Schulz iteration.
//
//	d = alpha·op(a)·op(b) + beta·c         (row-major; op(X) = X or Xᵀ)
//	op(a) m×k: a is m×k (lda ≥ k), or k×m when trans_a (lda ≥ m)
//	op(b) k×n: b is k×n (ldb ≥ n), or n×k when trans_b (ldb ≥ k)
//	c, d m×n with row stride ldc; c is read only when beta ≠ 0 (so a
//	poisoned d is never read), and may be the same buffer as d (each
//	element is read and then written by the same thread)
//
// The host (metal/linear.go) maps the ops onto it:
//
//	LinearForward   out = x·wᵀ       a = x, b = w (trans_b), beta = 0
//	LinearBackward  dx = dout·w      a = dout, b = w, beta = 0 (1: += dx)
//	                dw += doutᵀ·x    a = dout (trans_a), b = x, beta = 1, float d
//	NewtonSchulz    A = X·Xᵀ, B = c·A·A + b·A, X' = B·X + a·X (all float)
//
// a and b are T (float, half, bfloat); d and c are T (host name
// gemm_<flavour>_<T>) or float (gemm_f32_<flavour>_<T>: the F32 weight
// gradient). Operands are converted to float when staged in threadgroup
// memory, products accumulate in float, and each output is rounded once.
// Every output element is one thread's (or one simdgroup's) fixed-order sum
// over k: the result is deterministic and needs no atomics.
//
// Both flavours compute a 64×64 tile of d per threadgroup, stepping k by 16
// (GEMM_BK); out-of-range rows, columns and k of the edge tiles are staged
// as zeros, and out-of-range outputs are not stored.
//   simd:     128 threads = 2×2 simdgroups, each owning a 32×32 sub-tile as
//             4×4 simdgroup_matrix<float, 8, 8> accumulators; an 8×8
//             fragment wholly outside m×n (or a k half-step past k) is
//             skipped (the condition is uniform per simdgroup). The epilogue
//             goes through a per-simdgroup 8×8 staging buffer.
//   portable: 256 threads = 16×16, each accumulating a 4×4 block of outputs
//             (rows ty + 16·i, columns tx + 16·j) with scalar float multiply-adds
//             from the threadgroup tiles; no simd functions.
// Threadgroup memory: simd 10,496 B (A 64×20 + B 16×68 + 4×64 floats),
// portable 8,704 B (A 16×68 + B 16×68 floats); threads 128 / 256. Grid:
// (⌈n/64⌉, ⌈m/64⌉, batch) threadgroups: the z-th matrix of a batch (Newton–
// Schulz's same-shaped matrices of one optimizer step) starts z·stride_a,
// z·stride_b and z·stride_c elements into a, b and c/d, and is computed
// exactly as it would be alone (the same tiles and sums).
//
// Baseline shapes m×n×k (N = 8192 tokens, bf16 operands), FLOPs = 2·m·n·k, bytes
// the compulsory traffic (operands read once, d written once, an F32
// accumulator read and written), time = max(FLOPs/3.6e12, bytes/1e11) on a
// base M2:
//	out = x·wᵀ  8192×512×512   (q, proj)     4.29 GFLOP  17.3 MB   1.19 ms
//	out = x·wᵀ  8192×1024×512  (fc, logits)  8.59 GFLOP  26.2 MB   2.39 ms
//	out = x·wᵀ  8192×512×1024  (mlp proj)    8.59 GFLOP  26.2 MB   2.39 ms
//	dx = dout·w 8192×512×512                 4.29 GFLOP  17.3 MB   1.19 ms
//	            (+8.4 MB read when accumulating)
//	dw += doutᵀ·x 512×512×8192 (F32 dw)      4.29 GFLOP  18.9 MB   1.19 ms
//	NS 512×512, one product (float)          0.27 GFLOP   3.1 MB   75 µs
//	            (15 products for 5 steps: 4.03 GFLOP, 1.12 ms)
// All are compute-bound on the M2 (arithmetic intensity ≥ 85 FLOP/B
// against a ridge of 36 FLOP/B).
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

#define GEMM_BM 64    // rows of d per threadgroup
#define GEMM_BN 64    // columns of d per threadgroup
#define GEMM_BK 16    // k per staged step
#define GEMM_AS_LD 20 // simd: row stride of the staged A tile (BM × BK, padded)
#define GEMM_LD 68    // row stride of the k-major staged tiles (BK × 64, padded)
#define GEMM_SIMD_THREADS 128      // 2×2 simdgroups
#define GEMM_PORTABLE_THREADS 256  // 16×16

// gemm_op_a is op(a)[i, kk] in float, or 0 outside m×k.
template <typename T>
inline float gemm_op_a(device const T* a, uint i, uint kk, uint m, uint k, uint lda, uint trans) {
  if (i >= m || kk >= k) {
    return 0.0f;
  }
  return static_cast<float>(trans != 0 ? a[ulong(kk) * lda + i] : a[ulong(i) * lda + kk]);
}

// gemm_op_b is op(b)[kk, j] in float, or 0 outside k×n.
template <typename T>
inline float gemm_op_b(device const T* b, uint kk, uint j, uint k, uint n, uint ldb, uint trans) {
  if (kk >= k || j >= n) {
    return 0.0f;
  }
  return static_cast<float>(trans != 0 ? b[ulong(j) * ldb + kk] : b[ulong(kk) * ldb + j]);
}

// gemm_a_coord maps the e-th staged element of the BM × BK tile of op(a)
// to (row, kk), walking the source's contiguous dimension fastest.
inline uint2 gemm_a_coord(uint e, uint trans) {
  return trans != 0 ? uint2(e % GEMM_BM, e / GEMM_BM) : uint2(e / GEMM_BK, e % GEMM_BK);
}

// gemm_b_coord maps the e-th staged element of the BK × BN tile of op(b)
// to (kk, col), walking the source's contiguous dimension fastest.
inline uint2 gemm_b_coord(uint e, uint trans) {
  return trans != 0 ? uint2(e % GEMM_BK, e / GEMM_BK) : uint2(e / GEMM_BN, e % GEMM_BN);
}

// gemm_finish is alpha·acc + beta·c[idx] (c unread when beta = 0), in float.
template <typename TO>
inline float gemm_finish(float acc, device const TO* c, ulong idx, float alpha, float beta) {
  float v = alpha * acc;
  if (beta != 0.0f) {
    v += beta * static_cast<float>(c[idx]);
  }
  return v;
}

// gemm_simd: the simd flavour (see the file comment). Tag only tells the
// two instantiations of a float → float product apart.
template <typename T, typename TO, bool Tag>
[[kernel]] [[max_total_threads_per_threadgroup(GEMM_SIMD_THREADS)]] void gemm_simd(
    device const T* a [[buffer(0)]],           // op(a) m×k
    device const T* b [[buffer(1)]],           // op(b) k×n
    device const TO* c [[buffer(2)]],          // (m, ldc), read when beta ≠ 0
    device TO* d [[buffer(3)]],                // (m, ldc)
    constant GemmArgs& args [[buffer(4)]],
    uint3 tg [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float atile[GEMM_BM * GEMM_AS_LD];  // op(a) tile, [row][kk]
  threadgroup float btile[GEMM_BK * GEMM_LD];     // op(b) tile, [kk][col]
  threadgroup float ctile[4 * 64];                // one 8×8 staging block per simdgroup
  const uint m = args.m, n = args.n, k = args.k;
  const uint row0 = tg.y * GEMM_BM, col0 = tg.x * GEMM_BN;
  // Matrix tg.z of a batch (0 alone).
  device const T* ab = a + ulong(tg.z) * args.stride_a;
  device const T* bb = b + ulong(tg.z) * args.stride_b;
  device const TO* cb = c + ulong(tg.z) * args.stride_c;
  device TO* db = d + ulong(tg.z) * args.stride_c;
  // This simdgroup's 32×32 sub-tile and how many of its 8-row / 8-column
  // fragments overlap m×n.
  const uint srow = row0 + (sg / 2) * 32, scol = col0 + (sg % 2) * 32;
  const uint fr = srow < m ? min(4u, (m - srow + 7) / 8) : 0u;
  const uint fc = scol < n ? min(4u, (n - scol + 7) / 8) : 0u;
  const uint arow = (sg / 2) * 32, bcol = (sg % 2) * 32;

  simdgroup_float8x8 acc[4][4];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 4; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < 4; j++) {
      acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }
  for (uint k0 = 0; k0 < k; k0 += GEMM_BK) {
    for (uint e = tid; e < GEMM_BM * GEMM_BK; e += GEMM_SIMD_THREADS) {
      const uint2 p = gemm_a_coord(e, args.trans_a);
      atile[p.x * GEMM_AS_LD + p.y] = gemm_op_a(ab, row0 + p.x, k0 + p.y, m, k, args.lda, args.trans_a);
      const uint2 q = gemm_b_coord(e, args.trans_b);
      btile[q.x * GEMM_LD + q.y] = gemm_op_b(bb, k0 + q.x, col0 + q.y, k, n, args.ldb, args.trans_b);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Constant trip counts with uniform guards keep the fragments in
    // registers (no dynamic indexing).
    for (uint kk = 0; kk < GEMM_BK; kk += 8) {
      if (k0 + kk >= k) {
        break;
      }
      simdgroup_float8x8 af[4];
      simdgroup_float8x8 bf[4];
#pragma clang loop unroll(full)
      for (uint i = 0; i < 4; i++) {
        if (i < fr) {
          simdgroup_load(af[i], atile + (arow + i * 8) * GEMM_AS_LD + kk, GEMM_AS_LD);
        }
      }
#pragma clang loop unroll(full)
      for (uint j = 0; j < 4; j++) {
        if (j < fc) {
          simdgroup_load(bf[j], btile + kk * GEMM_LD + bcol + j * 8, GEMM_LD);
        }
      }
#pragma clang loop unroll(full)
      for (uint i = 0; i < 4; i++) {
#pragma clang loop unroll(full)
        for (uint j = 0; j < 4; j++) {
          if (i < fr && j < fc) {
            simdgroup_multiply_accumulate(acc[i][j], af[i], bf[j], acc[i][j]);
          }
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
#pragma clang loop unroll(full)
  for (uint i = 0; i < 4; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < 4; j++) {
      if (i >= fr || j >= fc) {
        continue;
      }
      simdgroup_store(acc[i][j], ctile + sg * 64, 8);
      simdgroup_barrier(mem_flags::mem_threadgroup);
      for (uint e = lane; e < 64; e += 32) {
        const uint r = srow + i * 8 + e / 8, col = scol + j * 8 + e % 8;
        if (r < m && col < n) {
          const ulong idx = ulong(r) * args.ldc + col;
          db[idx] = static_cast<TO>(gemm_finish(ctile[sg * 64 + e], cb, idx, args.alpha, args.beta));
        }
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
}

// gemm_portable: the portable flavour (see the file comment).
template <typename T, typename TO, bool Tag>
[[kernel]] [[max_total_threads_per_threadgroup(GEMM_PORTABLE_THREADS)]] void gemm_portable(
    device const T* a [[buffer(0)]],           // op(a) m×k
    device const T* b [[buffer(1)]],           // op(b) k×n
    device const TO* c [[buffer(2)]],          // (m, ldc), read when beta ≠ 0
    device TO* d [[buffer(3)]],                // (m, ldc)
    constant GemmArgs& args [[buffer(4)]],
    uint3 tg [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float atile[GEMM_BK * GEMM_LD];  // op(a) tile, k-major: [kk][row]
  threadgroup float btile[GEMM_BK * GEMM_LD];  // op(b) tile, [kk][col]
  const uint m = args.m, n = args.n, k = args.k;
  const uint row0 = tg.y * GEMM_BM, col0 = tg.x * GEMM_BN;
  // Matrix tg.z of a batch (0 alone).
  device const T* ab = a + ulong(tg.z) * args.stride_a;
  device const T* bb = b + ulong(tg.z) * args.stride_b;
  device const TO* cb = c + ulong(tg.z) * args.stride_c;
  device TO* db = d + ulong(tg.z) * args.stride_c;
  const uint tx = tid % 16, ty = tid / 16;

  float acc[4][4];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 4; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < 4; j++) {
      acc[i][j] = 0.0f;
    }
  }
  for (uint k0 = 0; k0 < k; k0 += GEMM_BK) {
    for (uint e = tid; e < GEMM_BM * GEMM_BK; e += GEMM_PORTABLE_THREADS) {
      const uint2 p = gemm_a_coord(e, args.trans_a);
      atile[p.y * GEMM_LD + p.x] = gemm_op_a(ab, row0 + p.x, k0 + p.y, m, k, args.lda, args.trans_a);
      const uint2 q = gemm_b_coord(e, args.trans_b);
      btile[q.x * GEMM_LD + q.y] = gemm_op_b(bb, k0 + q.x, col0 + q.y, k, n, args.ldb, args.trans_b);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const uint kn = min(uint(GEMM_BK), k - k0);
    for (uint kk = 0; kk < kn; kk++) {
      float av[4];
      float bv[4];
#pragma clang loop unroll(full)
      for (uint i = 0; i < 4; i++) {
        av[i] = atile[kk * GEMM_LD + ty + 16 * i];
        bv[i] = btile[kk * GEMM_LD + tx + 16 * i];
      }
#pragma clang loop unroll(full)
      for (uint i = 0; i < 4; i++) {
#pragma clang loop unroll(full)
        for (uint j = 0; j < 4; j++) {
          acc[i][j] += av[i] * bv[j];
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
#pragma clang loop unroll(full)
  for (uint i = 0; i < 4; i++) {
    const uint r = row0 + ty + 16 * i;
#pragma clang loop unroll(full)
    for (uint j = 0; j < 4; j++) {
      const uint col = col0 + tx + 16 * j;
      if (r < m && col < n) {
        const ulong idx = ulong(r) * args.ldc + col;
        db[idx] = static_cast<TO>(gemm_finish(acc[i][j], cb, idx, args.alpha, args.beta));
      }
    }
  }
}

#define instantiate_gemm(tname, T)                                                  \
  instantiate_kernel("gemm_simd_" #tname, gemm_simd, T, T, false)                   \
  instantiate_kernel("gemm_portable_" #tname, gemm_portable, T, T, false)           \
  instantiate_kernel("gemm_f32_simd_" #tname, gemm_simd, T, float, true)            \
  instantiate_kernel("gemm_f32_portable_" #tname, gemm_portable, T, float, true)

instantiate_gemm(float, float)
instantiate_gemm(half, half)
instantiate_gemm(bfloat, bfloat)
