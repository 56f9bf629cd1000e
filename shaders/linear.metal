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
// a and b are T (float, half, bfloat); d and c are T (host names
// gemm_<tt>_<flavour>_<T>) or float (gemm_f32_<tt>_<flavour>_<T>: the F32
// weight gradient), where <tt> is nn, nt, tn or tt: op(a), op(b) plain (n)
// or transposed (t), fixed at compile time (template parameters TA, TB).
// Products accumulate in float and each output is rounded once. Every
// output element is one simdgroup's (or thread's) fixed-order sum over k,
// the same order for every T (the staging never changes the order): the
// result is deterministic and needs no atomics.
//
// Both flavours compute a 64×64 tile of d per threadgroup, stepping k by 16
// (GEMM_BK); out-of-range rows, columns and k of the edge tiles are staged
// as zeros, and out-of-range outputs are not stored.
//   simd:     128 threads = 2×2 simdgroups, each owning a 32×32 sub-tile as
//             4×4 simdgroup_matrix<float, 8, 8> accumulators, fed by
//             simdgroup_matrix<T, 8, 8> fragments of tiles staged in T
//             (row stride padded by 16 bytes). Fast path (a tile inside
//             m×n, whole k-steps, both operands 16-byte aligned: the host's
//             args.aligned = 3): per k-step and operand one unchecked 16-byte
//             device load per thread for half and bfloat (two for float),
//             and all 16 MMAs per 8-deep half-step, unguarded. Edge path (the
//             rest, and the last k-step when k is not a multiple of 16): one
//             checked element load at a time, and an 8×8 fragment wholly
//             outside m×n (or a k half-step past k) skipped (uniform per
//             simdgroup). Epilogue: an interior tile of a float d with
//             alpha = 1 and beta = 0 (split-K partials, X·Xᵀ) is stored from
//             the accumulators straight to device memory (simdgroup_store);
//             otherwise each fragment goes through a per-simdgroup 8×8 float
//             staging block (a 16-bit matrix cannot take a float one), is
//             checked, scaled and rounded.
//   portable: 256 threads = 16×16, each accumulating a 4×4 block of outputs
//             (rows ty + 16·i, columns tx + 16·j) with scalar float multiply-adds
//             from float threadgroup tiles; no simd functions.
// Threadgroup memory: simd 2 × 1,536 T + 256 floats: 7,168 B for half and
// bfloat, 13,312 B for float (it was 10,496 B of float tiles for every T);
// portable 8,704 B (A 16×68 + B 16×68 floats); threads 128 / 256. Grid:
// (⌈n/64⌉, ⌈m/64⌉, z) threadgroups. z = batch: the z-th matrix of a batch
// (Newton–Schulz's same-shaped matrices of one optimizer step) starts
// z·stride_a, z·stride_b and z·stride_c elements into a, b and c/d, and is
// computed exactly as it would be alone (the same tiles and sums). z =
// slices of a split k (slice_k ≠ 0, host: metal/linear.go gemmSlice, for
// few output tiles and a long k, the weight gradients): slice z sums k in
// [z·slice_k, (z+1)·slice_k) into a float partial at z·stride_c (the host
// sets alpha = 1, beta = 0, ldc = n, stride_c = m·n), and gemm_reduce, a
// second dispatch, adds the slices in order z = 0, 1, … and applies alpha,
// beta·c and the one rounding.
//
// Baseline shapes m×n×k (N = 8192 tokens, bf16 operands), FLOPs = 2·m·n·k, bytes
// the compulsory traffic (operands read once, d written once, an F32
// accumulator read and written, split-K partials written and read back),
// time = max(FLOPs/3.6e12, bytes/1e11) on a base M2:
//	out = x·wᵀ  8192×512×512   (q, proj)     4.29 GFLOP  17.3 MB   1.19 ms
//	out = x·wᵀ  8192×1024×512  (fc, logits)  8.59 GFLOP  26.2 MB   2.39 ms
//	out = x·wᵀ  8192×512×1024  (mlp proj)    8.59 GFLOP  26.2 MB   2.39 ms
//	dx = dout·w 8192×512×512                 4.29 GFLOP  17.3 MB   1.19 ms
//	            (+8.4 MB read when accumulating)
//	dw += doutᵀ·x 512×512×8192 (F32 dw)      4.29 GFLOP  18.9 MB   1.19 ms
//	            split in 2 slices of 4096 (64 tiles → 128 threadgroups):
//	            + 2 MB of partials written and 2 MB read: 22.9 MB
//	dw += doutᵀ·x 1024×512×8192 (fc)         128 tiles: not split
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
#define GEMM_LD 68    // portable: row stride of the k-major staged tiles (BK × 64, padded)
#define GEMM_SIMD_THREADS 128      // 2×2 simdgroups
#define GEMM_PORTABLE_THREADS 256  // 16×16
// simd: elements of each staged tile, the largest layout (64 × (16 + 8)
// halves; floats use 64 × (16 + 4) of it)
#define GEMM_STAGE 1536

// gemm_op_a is op(a)[i, kk] in float, or 0 outside m×k.
template <typename T, bool TA>
inline float gemm_op_a(device const T* a, uint i, uint kk, uint m, uint k, uint lda) {
  if (i >= m || kk >= k) {
    return 0.0f;
  }
  return static_cast<float>(TA ? a[ulong(kk) * lda + i] : a[ulong(i) * lda + kk]);
}

// gemm_op_b is op(b)[kk, j] in float, or 0 outside k×n.
template <typename T, bool TB>
inline float gemm_op_b(device const T* b, uint kk, uint j, uint k, uint n, uint ldb) {
  if (kk >= k || j >= n) {
    return 0.0f;
  }
  return static_cast<float>(TB ? b[ulong(j) * ldb + kk] : b[ulong(kk) * ldb + j]);
}

// gemm_a_coord maps the e-th staged element of the BM × BK tile of op(a)
// to (row, kk), walking the source's contiguous dimension fastest.
template <bool TA>
inline uint2 gemm_a_coord(uint e) {
  return TA ? uint2(e % GEMM_BM, e / GEMM_BM) : uint2(e / GEMM_BK, e % GEMM_BK);
}

// gemm_b_coord maps the e-th staged element of the BK × BN tile of op(b)
// to (kk, col), walking the source's contiguous dimension fastest.
template <bool TB>
inline uint2 gemm_b_coord(uint e) {
  return TB ? uint2(e % GEMM_BK, e / GEMM_BK) : uint2(e / GEMM_BN, e % GEMM_BN);
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

// gemm_vw is the elements of T in one 16-byte vector load (4 floats, 8
// halves or bfloats); it is also the staged tiles' row padding (16 bytes,
// as MLX's BlockLoader pads), which spreads the fragment loads of
// consecutive rows over the threadgroup memory banks.
template <typename T>
constexpr uint gemm_vw() {
  return 16 / sizeof(T);
}

// A staged tile is the source's R × C block (C along the source's rows,
// contiguous in device memory) with row stride C + gemm_vw<T>():
//   op(a) BM × BK: a[row][kk] (R = BM, C = BK), transposed: a[kk][row]
//   op(b) BK × BN: b[kk][col] (R = BK, C = BN), transposed: b[col][kk]
// at most 64 × (16 + 8) elements (GEMM_STAGE).

// gemm_elem is element e of the 16 bytes w (little-endian, as Apple GPUs).
template <typename T>
inline T gemm_elem(uint4 w, uint e);
template <>
inline float gemm_elem<float>(uint4 w, uint e) {
  return as_type<float>(w[e]);
}
template <>
inline half gemm_elem<half>(uint4 w, uint e) {
  const uint x = w[e / 2];
  return as_type<half>(ushort(e % 2 != 0 ? x >> 16 : x & 0xffffu));
}
template <>
inline bfloat gemm_elem<bfloat>(uint4 w, uint e) {
  const uint x = w[e / 2];
  return as_type<bfloat>(ushort(e % 2 != 0 ? x >> 16 : x & 0xffffu));
}

// gemm_stage_vec stages the R × C block at src (rows ld elements apart,
// 16-byte aligned, wholly inside the operand) into tile with row stride
// C + vw: one unchecked 16-byte load per vw elements, 1024 / vw / 128 per
// thread (1 for half and bfloat, 2 for float). C and vw are powers of two,
// so the divisions are shifts.
template <typename T, uint R, uint C, typename Tile>
inline void gemm_stage_vec(Tile& tile, device const T* src, uint ld, uint tid) {
  constexpr uint vw = gemm_vw<T>();
  constexpr uint per_row = C / vw;
#pragma clang loop unroll(full)
  for (uint i = 0; i < R * per_row / GEMM_SIMD_THREADS; i++) {
    const uint v = tid + i * GEMM_SIMD_THREADS;
    const uint r = v / per_row, col = (v % per_row) * vw;
    const uint4 w = *reinterpret_cast<device const uint4*>(src + r * ld + col);
    const uint o = r * (C + vw) + col;
#pragma clang loop unroll(full)
    for (uint e = 0; e < vw; e++) {
      tile[o + e] = gemm_elem<T>(w, e);
    }
  }
}

// gemm_stage_edge stages the R × C block at src like gemm_stage_vec, for
// edge tiles: one checked element at a time, zeros outside the rows × cols
// that exist.
template <typename T, uint R, uint C, typename Tile>
inline void gemm_stage_edge(Tile& tile, device const T* src, uint ld, uint rows, uint cols, uint tid) {
  constexpr uint vw = gemm_vw<T>();
  for (uint e = tid; e < R * C; e += GEMM_SIMD_THREADS) {
    const uint r = e / C, col = e % C;
    tile[r * (C + vw) + col] = r < rows && col < cols ? src[ulong(r) * ld + col] : T(0);
  }
}

// gemm_step runs the MMAs of one staged k-step (kn ≤ BK valid k) on the
// simdgroup's fr × fc fragments (4 × 4 and kn = BK on interior tiles).
// Fragments are loaded in the compute dtype; the MMAs accumulate in float.
template <typename T, bool TA, bool TB, typename TileA, typename TileB>
inline void gemm_step(thread simdgroup_float8x8 (&acc)[4][4], TileA& atile, TileB& btile, uint arow,
                      uint bcol, uint kn, uint fr, uint fc) {
  constexpr uint lda = (TA ? GEMM_BM : GEMM_BK) + gemm_vw<T>();
  constexpr uint ldb = (TB ? GEMM_BK : GEMM_BN) + gemm_vw<T>();
  // Constant trip counts with uniform guards keep the fragments in
  // registers (no dynamic indexing).
#pragma clang loop unroll(full)
  for (uint kk = 0; kk < GEMM_BK; kk += 8) {
    if (kk >= kn) {
      break;
    }
    simdgroup_matrix<T, 8, 8> af[4];
    simdgroup_matrix<T, 8, 8> bf[4];
#pragma clang loop unroll(full)
    for (uint i = 0; i < 4; i++) {
      if (i < fr) {
        if (TA) {
          simdgroup_load(af[i], atile + kk * lda + arow + i * 8, lda, ulong2(0, 0), true);
        } else {
          simdgroup_load(af[i], atile + (arow + i * 8) * lda + kk, lda);
        }
      }
    }
#pragma clang loop unroll(full)
    for (uint j = 0; j < 4; j++) {
      if (j < fc) {
        if (TB) {
          simdgroup_load(bf[j], btile + (bcol + j * 8) * ldb + kk, ldb, ulong2(0, 0), true);
        } else {
          simdgroup_load(bf[j], btile + kk * ldb + bcol + j * 8, ldb);
        }
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
}

// gemm_store_direct stores the simdgroup's 32×32 accumulators straight to
// a float d (row stride ldc): the interior epilogue when alpha = 1 and
// beta = 0. A 16-bit d cannot take a float matrix: false, nothing stored.
inline bool gemm_store_direct(thread simdgroup_float8x8 (&acc)[4][4], device float* dst, uint ldc) {
#pragma clang loop unroll(full)
  for (uint i = 0; i < 4; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < 4; j++) {
      simdgroup_store(acc[i][j], dst + ulong(i * 8) * ldc + j * 8, ldc);
    }
  }
  return true;
}
template <typename TO>
inline bool gemm_store_direct(thread simdgroup_float8x8 (&)[4][4], device TO*, uint) {
  return false;
}

// gemm_simd: the simd flavour (see the file comment), op(a) = aᵀ when TA,
// op(b) = bᵀ when TB. F32 only tells the two instantiations of a float →
// float product apart.
template <typename T, typename TO, bool TA, bool TB, bool F32>
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
  threadgroup T atile[GEMM_STAGE];  // op(a) tile in T
  threadgroup T btile[GEMM_STAGE];  // op(b) tile in T
  threadgroup float ctile[4 * 64];                                   // edge epilogue: 8×8 per simdgroup
  const uint m = args.m, n = args.n;
  const uint row0 = tg.y * GEMM_BM, col0 = tg.x * GEMM_BN;
  // Matrix tg.z of a batch (0 alone), or slice tg.z of a split k.
  const uint kb = args.slice_k != 0 ? tg.z * args.slice_k : 0u;
  const uint ke = args.slice_k != 0 ? min(args.k, kb + args.slice_k) : args.k;
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
  const bool interior = row0 + GEMM_BM <= m && col0 + GEMM_BN <= n;

  simdgroup_float8x8 acc[4][4];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 4; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < 4; j++) {
      acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }
  // The fast path: whole k-steps of an interior tile of aligned operands,
  // vector loads without checks and every MMA of the tile.
  const uint kfast = interior && args.aligned == 3u ? kb + (ke - kb) / GEMM_BK * GEMM_BK : kb;
  uint k0 = kb;
  for (; k0 < kfast; k0 += GEMM_BK) {
    if (TA) {
      gemm_stage_vec<T, GEMM_BK, GEMM_BM>(atile, ab + ulong(k0) * args.lda + row0, args.lda, tid);
    } else {
      gemm_stage_vec<T, GEMM_BM, GEMM_BK>(atile, ab + ulong(row0) * args.lda + k0, args.lda, tid);
    }
    if (TB) {
      gemm_stage_vec<T, GEMM_BN, GEMM_BK>(btile, bb + ulong(col0) * args.ldb + k0, args.ldb, tid);
    } else {
      gemm_stage_vec<T, GEMM_BK, GEMM_BN>(btile, bb + ulong(k0) * args.ldb + col0, args.ldb, tid);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    gemm_step<T, TA, TB>(acc, atile, btile, arow, bcol, GEMM_BK, 4u, 4u);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  // The edge path: checked loads, zeros outside the operands, and only the
  // fragments and k half-steps that overlap them.
  for (; k0 < ke; k0 += GEMM_BK) {
    const uint kn = min(uint(GEMM_BK), ke - k0);
    if (TA) {
      gemm_stage_edge<T, GEMM_BK, GEMM_BM>(atile, ab + ulong(k0) * args.lda + row0, args.lda, kn, m - row0, tid);
    } else {
      gemm_stage_edge<T, GEMM_BM, GEMM_BK>(atile, ab + ulong(row0) * args.lda + k0, args.lda, m - row0, kn, tid);
    }
    if (TB) {
      gemm_stage_edge<T, GEMM_BN, GEMM_BK>(btile, bb + ulong(col0) * args.ldb + k0, args.ldb, n - col0, kn, tid);
    } else {
      gemm_stage_edge<T, GEMM_BK, GEMM_BN>(btile, bb + ulong(k0) * args.ldb + col0, args.ldb, kn, n - col0, tid);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    gemm_step<T, TA, TB>(acc, atile, btile, arow, bcol, kn, fr, fc);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  // Epilogue: from the registers to a float d on interior tiles with
  // alpha = 1 and beta = 0 (split-K partials, X·Xᵀ); otherwise each 8×8
  // fragment through the simdgroup's staging block, checked and scaled.
  if (interior && args.alpha == 1.0f && args.beta == 0.0f &&
      gemm_store_direct(acc, db + ulong(srow) * args.ldc + scol, args.ldc)) {
    return;
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
template <typename T, typename TO, bool TA, bool TB, bool F32>
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
  const uint m = args.m, n = args.n;
  const uint row0 = tg.y * GEMM_BM, col0 = tg.x * GEMM_BN;
  // Matrix tg.z of a batch (0 alone), or slice tg.z of a split k.
  const uint kb = args.slice_k != 0 ? tg.z * args.slice_k : 0u;
  const uint k = args.slice_k != 0 ? min(args.k, kb + args.slice_k) : args.k;
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
  for (uint k0 = kb; k0 < k; k0 += GEMM_BK) {
    for (uint e = tid; e < GEMM_BM * GEMM_BK; e += GEMM_PORTABLE_THREADS) {
      const uint2 p = gemm_a_coord<TA>(e);
      atile[p.y * GEMM_LD + p.x] = gemm_op_a<T, TA>(ab, row0 + p.x, k0 + p.y, m, k, args.lda);
      const uint2 q = gemm_b_coord<TB>(e);
      btile[q.x * GEMM_LD + q.y] = gemm_op_b<T, TB>(bb, k0 + q.x, col0 + q.y, k, n, args.ldb);
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

// gemm_reduce: split-K's second dispatch, d = alpha·Σ_s p_s + beta·c, the
// slices s = 0, 1, … of the float partials p (slice s at s·m·n, rows n
// apart) summed in that order, one output per thread, rounded once. Simd
// and F32 only tell the instantiations apart (no simd functions).
template <typename T, typename TO, bool Simd, bool F32>
[[kernel]] void gemm_reduce(
    device const float* p [[buffer(0)]],       // ⌈k / slice_k⌉ × (m, n)
    device const TO* c [[buffer(1)]],          // (m, ldc), read when beta ≠ 0
    device TO* d [[buffer(2)]],                // (m, ldc)
    constant GemmArgs& args [[buffer(3)]],
    uint gid [[thread_position_in_grid]]) {
  const uint mn = args.m * args.n;
  if (gid >= mn) {
    return;
  }
  const uint slices = (args.k + args.slice_k - 1) / args.slice_k;
  float s = p[gid];
  for (uint z = 1; z < slices; z++) {
    s += p[ulong(z) * mn + gid];
  }
  const uint r = gid / args.n, col = gid % args.n;
  const ulong idx = ulong(r) * args.ldc + col;
  d[idx] = static_cast<TO>(gemm_finish(s, c, idx, args.alpha, args.beta));
}

// The <tt> variants (op(a), op(b): n plain, t transposed) and split-K's
// reduction, in both flavours.
#define instantiate_gemm(tname, T)                                                                \
  instantiate_kernel("gemm_nn_simd_" #tname, gemm_simd, T, T, false, false, false)                \
  instantiate_kernel("gemm_nn_portable_" #tname, gemm_portable, T, T, false, false, false)        \
  instantiate_kernel("gemm_f32_nn_simd_" #tname, gemm_simd, T, float, false, false, true)         \
  instantiate_kernel("gemm_f32_nn_portable_" #tname, gemm_portable, T, float, false, false, true) \
  instantiate_kernel("gemm_nt_simd_" #tname, gemm_simd, T, T, false, true, false)                 \
  instantiate_kernel("gemm_nt_portable_" #tname, gemm_portable, T, T, false, true, false)         \
  instantiate_kernel("gemm_f32_nt_simd_" #tname, gemm_simd, T, float, false, true, true)          \
  instantiate_kernel("gemm_f32_nt_portable_" #tname, gemm_portable, T, float, false, true, true)  \
  instantiate_kernel("gemm_tn_simd_" #tname, gemm_simd, T, T, true, false, false)                 \
  instantiate_kernel("gemm_tn_portable_" #tname, gemm_portable, T, T, true, false, false)         \
  instantiate_kernel("gemm_f32_tn_simd_" #tname, gemm_simd, T, float, true, false, true)          \
  instantiate_kernel("gemm_f32_tn_portable_" #tname, gemm_portable, T, float, true, false, true)  \
  instantiate_kernel("gemm_tt_simd_" #tname, gemm_simd, T, T, true, true, false)                  \
  instantiate_kernel("gemm_tt_portable_" #tname, gemm_portable, T, T, true, true, false)          \
  instantiate_kernel("gemm_f32_tt_simd_" #tname, gemm_simd, T, float, true, true, true)           \
  instantiate_kernel("gemm_f32_tt_portable_" #tname, gemm_portable, T, float, true, true, true)   \
  instantiate_kernel("gemm_reduce_simd_" #tname, gemm_reduce, T, T, true, false)                  \
  instantiate_kernel("gemm_reduce_portable_" #tname, gemm_reduce, T, T, false, false)             \
  instantiate_kernel("gemm_f32_reduce_simd_" #tname, gemm_reduce, T, float, true, true)           \
  instantiate_kernel("gemm_f32_reduce_portable_" #tname, gemm_reduce, T, float, false, true)

instantiate_gemm(float, float)
instantiate_gemm(half, half)
instantiate_gemm(bfloat, bfloat)
