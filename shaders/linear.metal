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
//	NewtonSchulz    A = X·Xᵀ, B = c·A·A + b·A, X' = B·X + a·X (all float;
//	                the first two on the symmetric kernels, below)
//	LinearReluSqForward   h = x·wᵀ as LinearForward, and a = relu(h)² of
//	                the rounded h in the same epilogue (gemm_nt_relu_sq)
//	LinearReluSqBackward  dh = 2·max(h, 0)·da of da = dout·w rounded as
//	                LinearBackward's dx, da not stored (gemm_nn_drelu_sq);
//	                dw as LinearBackward's
//	LinearScaledAddForward  y = x·wᵀ as LinearForward, and out = res + s⊙y
//	                of the rounded y in the same epilogue (gemm_nt_scaled_add)
//	                (all three: alpha = 1, beta = 0, one matrix; a product
//	                the host would split runs the unfused sequence instead)
//
// a and b are T (float, half, bfloat); d and c are T (host names
// gemm_<tt>_<flavour>_<T>) or float (gemm_f32_<tt>_<flavour>_<T>: the F32
// weight gradient), where <tt> is nn, nt, tn or tt: op(a), op(b) plain (n)
// or transposed (t), fixed at compile time (template parameters TA, TB).
// Symmetric products (template parameter SYM; host names
// gemm_nt_sym_<flavour>_<T>, a·aᵀ, and gemm_nn_sym_<flavour>_<T>, a·a of a
// symmetric a; the host passes b = a, m = n, and c symmetric or unread):
// only the T(T+1)/2 tiles on and above the diagonal of the T×T tiles
// (T = ⌈m/64⌉) are computed, one threadgroup each (gemm_tile maps the
// grid's x to the tile, row by row), and each off-diagonal tile (I, J) is
// stored at its place and transposed at (J, I) (every element with its own
// c), the diagonal tiles once. Float products commute and the k order is
// the same, so the mirror of (i, j) has the bits a direct computation of
// (j, i) would give: the output is the full product's, bit for bit.
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
//             (row stride padded by 16 bytes), double-buffered: each k-step's
//             device loads are issued into one buffer before the MMAs of
//             the previous step run from the other, one threadgroup barrier
//             per k-step. Fast path (a tile inside m×n, whole k-steps, both
//             operands 16-byte aligned: bits 0 and 1 of the host's
//             args.aligned): per k-step and operand one unchecked 16-byte
//             device load per thread for half and bfloat (two for float),
//             and all 16 MMAs per 8-deep half-step, unguarded. Edge path (the
//             rest, and the last k-step when k is not a multiple of 16): one
//             checked element load at a time, and an 8×8 fragment wholly
//             outside m×n (or a k half-step past k) skipped (uniform per
//             simdgroup). Epilogue, from the registers (as MLX Steel's):
//             each lane takes its two elements of every accumulator,
//             (row, col) and (row, col + 1) (thread_elements(), Apple's
//             lane layout), applies alpha and beta·c (c's two elements read
//             only when beta ≠ 0), rounds each once to the output type and
//             stores the pair with one vec<T, 2> store (4 bytes for half and
//             bfloat, 8 for float) on interior tiles of a d whose start, ldc
//             and stride_c are whole pairs (the host's args.aligned bit 2);
//             otherwise element by element, an element outside m×n not
//             stored. No threadgroup memory, no barrier. A symmetric
//             product's mirrored tile: element by element (a column
//             apart).
//   portable: 256 threads = 16×16, each accumulating a 4×4 block of outputs
//             (rows ty + 16·i, columns tx + 16·j) with scalar float multiply-adds
//             from float threadgroup tiles; no simd functions.
// Threadgroup memory: simd 2 × 2 × 1,536 T, the double-buffered operand
// tiles only: 12,288 B for half and bfloat, 24,576 B for float (single
// buffers and the float staging block of the old epilogue took 7,168 B and
// 13,312 B); portable 8,704 B (A 16×68 + B 16×68 floats); threads 128 /
// 256. Grid: (⌈n/64⌉, ⌈m/64⌉, z) threadgroups, or (T(T+1)/2, 1, z) for a
// symmetric product. z = batch: the z-th matrix of a batch
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
//	h, relu(h)² 8192×1024×512 (fc, fused)    8.59 GFLOP  43.0 MB   2.39 ms
//	            (26.2 MB + 16.8 MB for a; the 0.34 ms relu_sq_fwd pass,
//	            33.6 MB, is gone)
//	dh from dout·w 8192×1024×512 (fused)     8.59 GFLOP  43.0 MB   2.39 ms
//	            (26.2 MB + 16.8 MB for h; the 0.50 ms relu_sq_bwd pass,
//	            50.3 MB, is gone)
//	y, res + s⊙y 8192×512×1024 (mlp proj, fused) 8.59 GFLOP 43.0 MB 2.39 ms
//	            (26.2 MB + 16.8 MB for res and out; the 0.25 ms
//	            scaled_add_fwd pass, 25.2 MB, is gone)
//	NS 512×512, one full product (float)     0.27 GFLOP   3.1 MB   75 µs
//	            symmetric (X·Xᵀ, A·A): 36 of 64 tiles, 0.15 GFLOP, 42 µs
//	            (5 steps: 10 symmetric + 5 full products, 2.85 GFLOP,
//	            0.79 ms; 4.03 GFLOP and 1.12 ms with all 15 full)
// All are compute-bound on the M2 (arithmetic intensity ≥ 48 FLOP/B, the
// symmetric products', ≥ 85 for the rest, against a ridge of 36 FLOP/B).
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_relu_sq.h"  // relu_sq_fwd_elem, relu_sq_bwd_elem: the fused epilogues' element code
#include "golf_rows.h"     // scaled_add_elem: the residual epilogue's
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

// The epilogues of gemm_simd_body and gemm_portable_body (template
// parameter EPI): what each output's finished float f = alpha·acc +
// beta·c becomes on its way out. The fused ones compute the element
// functions of relu_sq.metal (golf_relu_sq.h) and scaled_add.metal
// (golf_rows.h) on the value rounded to TO, so their bits are those of the
// plain product followed by relu_sq_fwd, relu_sq_bwd or scaled_add_fwd:
//   GEMM_EPI_PLAIN     d = round(f)
//   GEMM_EPI_RELU_SQ   d = round(f), and e = round(relu_sq_fwd_elem(d)):
//                      relu²(h) of the stored h (gemm_nt_relu_sq)
//   GEMM_EPI_DRELU_SQ  d = round(relu_sq_bwd_elem(x, round(f))), x read at
//                      d's place: dh = 2·max(h, 0)·da of the rounded da,
//                      which is not stored (gemm_nn_drelu_sq)
//   GEMM_EPI_SCALED_ADD d = round(f), and e = round(scaled_add_elem(x,
//                      d, s[col])): the residual add out = x + s⊙y of the
//                      stored y, s indexed by d's column, 1 where s is
//                      null (gemm_nt_scaled_add)
// e and x have d's layout (ldc) and are not offset by a batch's matrix
// (the host never batches nor splits the fused products); the plain
// kernels pass null for e, x and s.
#define GEMM_EPI_PLAIN 0
#define GEMM_EPI_RELU_SQ 1
#define GEMM_EPI_DRELU_SQ 2
#define GEMM_EPI_SCALED_ADD 3

// gemm_scale is alpha·acc + beta·cv (cv unused when beta = 0), in float.
inline float gemm_scale(float acc, float cv, float alpha, float beta) {
  float v = alpha * acc;
  if (beta != 0.0f) {
    v += beta * cv;
  }
  return v;
}

// gemm_finish is gemm_scale of c[idx] (c unread when beta = 0).
template <typename TO>
inline float gemm_finish(float acc, device const TO* c, ulong idx, float alpha, float beta) {
  return gemm_scale(acc, beta != 0.0f ? static_cast<float>(c[idx]) : 0.0f, alpha, beta);
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

// gemm_tile is the (column, row) index of the 64×64 tile of d that
// threadgroup tg computes: (tg.x, tg.y) of the full grid, or for SYM
// (a symmetric m×m product, grid (T(T+1)/2, 1, z) with T = ⌈m/64⌉) the
// tg.x-th tile on or above the diagonal, counted row by row: row I holds
// the tiles (I, I), (I, I+1), …, (I, T−1).
template <bool SYM>
inline uint2 gemm_tile(uint3 tg, uint m) {
  if (!SYM) {
    return uint2(tg.x, tg.y);
  }
  const uint tiles = (m + GEMM_BM - 1) / GEMM_BM;
  uint t = tg.x, row = 0;
  while (row < tiles && t >= tiles - row) {
    t -= tiles - row;
    row++;
  }
  return uint2(row + t, row);
}

// gemm_epi is what d stores at idx for the finished float f under
// epilogue EPI, rounded to TO: round(f), or for GEMM_EPI_DRELU_SQ
// round(relu_sq_bwd_elem(x[idx], round(f))) (relu_sq_bwd's expression on
// the rounded da, h = x[idx]).
template <typename TO, uint EPI>
inline TO gemm_epi(float f, device const TO* x, ulong idx) {
  const TO r = static_cast<TO>(f);
  if (EPI == GEMM_EPI_DRELU_SQ) {
    return static_cast<TO>(relu_sq_bwd_elem(static_cast<float>(x[idx]), static_cast<float>(r)));
  }
  return r;
}

// gemm_relu_sq is e's value for the stored d value y (GEMM_EPI_RELU_SQ):
// relu_sq_fwd's expression on the rounded h, rounded once to TO.
template <typename TO>
inline TO gemm_relu_sq(TO y) {
  return static_cast<TO>(relu_sq_fwd_elem(static_cast<float>(y)));
}

// gemm_scaled_add is e's value for the stored d value y at idx, column
// col (GEMM_EPI_SCALED_ADD): scaled_add_fwd's expression x + s·y on the
// rounded y, rounded once to TO.
template <typename TO>
inline TO gemm_scaled_add(TO y, device const TO* x, device const float* s, ulong idx, uint col) {
  const float sc = s != nullptr ? s[col] : 1.0f;
  return static_cast<TO>(scaled_add_elem(static_cast<float>(x[idx]), static_cast<float>(y), sc));
}

// gemm_store_one stores output idx (column col) of d from its finished
// float f under epilogue EPI (gemm_epi), and for GEMM_EPI_RELU_SQ and
// GEMM_EPI_SCALED_ADD e[idx] from the stored value: the element-by-element
// path of gemm_store_pair and the portable flavour's epilogue.
template <typename TO, uint EPI>
inline void gemm_store_one(device TO* d, device TO* e, device const TO* x, device const float* s, ulong idx,
                           uint col, float f) {
  const TO y = gemm_epi<TO, EPI>(f, x, idx);
  d[idx] = y;
  if (EPI == GEMM_EPI_RELU_SQ) {
    e[idx] = gemm_relu_sq<TO>(y);
  }
  if (EPI == GEMM_EPI_SCALED_ADD) {
    e[idx] = gemm_scaled_add<TO>(y, x, s, idx, col);
  }
}

// gemm_store_pair stores the calling lane's two outputs (r, col) and
// (r, col + 1), accumulated in v, to d: alpha·v + beta·c (c read only when
// beta ≠ 0), each rounded once to TO, under epilogue EPI (for
// GEMM_EPI_RELU_SQ also their squared ReLUs to e; for GEMM_EPI_DRELU_SQ
// the ReLU's backward from x, read element by element; for
// GEMM_EPI_SCALED_ADD the residual sums x + s⊙d to e, x and s read element
// by element). pair (an interior
// tile of a d, and e, whose start, ldc and stride_c are whole pairs:
// args.aligned bit 2): one vec<TO, 2> store to d (and one to e): 4 bytes
// for half and bfloat, 8 for float; otherwise element by element, an
// element outside m×n not stored (nor its c or x read).
template <typename TO, uint EPI>
inline void gemm_store_pair(device TO* d, device const TO* c, device TO* e, device const TO* x,
                            device const float* s, uint r, uint col, vec<float, 2> v, uint m, uint n, uint ldc,
                            float alpha, float beta, bool pair) {
  const ulong idx = ulong(r) * ldc + col;
  if (pair) {
    vec<TO, 2> out;
    out[0] = gemm_epi<TO, EPI>(gemm_finish(v[0], c, idx, alpha, beta), x, idx);
    out[1] = gemm_epi<TO, EPI>(gemm_finish(v[1], c, idx + 1, alpha, beta), x, idx + 1);
    *reinterpret_cast<device vec<TO, 2>*>(d + idx) = out;
    if (EPI == GEMM_EPI_RELU_SQ) {
      vec<TO, 2> sq;
      sq[0] = gemm_relu_sq<TO>(out[0]);
      sq[1] = gemm_relu_sq<TO>(out[1]);
      *reinterpret_cast<device vec<TO, 2>*>(e + idx) = sq;
    }
    if (EPI == GEMM_EPI_SCALED_ADD) {
      vec<TO, 2> sum;
      sum[0] = gemm_scaled_add<TO>(out[0], x, s, idx, col);
      sum[1] = gemm_scaled_add<TO>(out[1], x, s, idx + 1, col + 1);
      *reinterpret_cast<device vec<TO, 2>*>(e + idx) = sum;
    }
    return;
  }
  if (r >= m) {
    return;
  }
  if (col < n) {
    gemm_store_one<TO, EPI>(d, e, x, s, idx, col, gemm_finish(v[0], c, idx, alpha, beta));
  }
  if (col + 1 < n) {
    gemm_store_one<TO, EPI>(d, e, x, s, idx + 1, col + 1, gemm_finish(v[1], c, idx + 1, alpha, beta));
  }
}

// gemm_store_mirror stores the same two outputs of a symmetric product
// transposed, at (col, r) and (col + 1, r) (m = n), each with c read at
// its own place: element by element (they are a column apart), an
// element outside m×n not stored.
template <typename TO>
inline void gemm_store_mirror(device TO* d, device const TO* c, uint r, uint col, vec<float, 2> v, uint m,
                              uint n, uint ldc, float alpha, float beta) {
  if (r >= m) {
    return;
  }
#pragma clang loop unroll(full)
  for (uint e = 0; e < 2; e++) {
    if (col + e < n) {
      const ulong idx = ulong(col + e) * ldc + r;
      d[idx] = static_cast<TO>(gemm_finish(v[e], c, idx, alpha, beta));
    }
  }
}

// gemm_simd_body: the simd flavour (see the file comment), op(a) = aᵀ when
// TA, op(b) = bᵀ when TB, on the kernel's double-buffered operand tiles
// atile and btile (threadgroup T [2][GEMM_STAGE] each, declared by the
// kernel: PT is their decayed pointer type). SYM: a symmetric product (see
// the file comment), only the tiles on and above the diagonal computed,
// each off-diagonal one stored twice. EPI: the epilogue (GEMM_EPI_PLAIN
// for gemm_simd; e, x and s are the fused kernels' extra tensors, null
// otherwise).
template <typename T, typename TO, bool TA, bool TB, bool SYM, uint EPI, typename PT>
METAL_FUNC void gemm_simd_body(PT atile, PT btile, device const T* a, device const T* b, device const TO* c,
                               device TO* d, device TO* e, device const TO* x, device const float* s,
                               constant GemmArgs& args, uint3 tg, uint tid, uint lane, uint sg) {
  const uint m = args.m, n = args.n;
  const uint2 tile = gemm_tile<SYM>(tg, m);
  const uint row0 = tile.y * GEMM_BM, col0 = tile.x * GEMM_BN;
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
  // vector loads without checks and every MMA of the tile. The edge path
  // (the rest): checked loads, zeros outside the operands, and only the
  // fragments and k half-steps that overlap them.
  const uint kfast = interior && (args.aligned & 3u) == 3u ? kb + (ke - kb) / GEMM_BK * GEMM_BK : kb;
  const uint steps = ke > kb ? (ke - kb + GEMM_BK - 1) / GEMM_BK : 0u;
  const uint nfast = (kfast - kb) / GEMM_BK;
  // Double-buffered: pass s stages k-step s into buffer s % 2 (its device
  // loads issued before the MMAs) and runs the MMAs of step s − 1 from the
  // other buffer; one barrier per k-step, after each pass that staged one
  // (the next pass overwrites the buffer this one read, and reads the one
  // it wrote; the last pass only reads).
  for (uint s = 0; s <= steps; s++) {
    if (s < steps) {
      const uint k0 = kb + s * GEMM_BK, buf = s % 2;
      if (s < nfast) {
        if (TA) {
          gemm_stage_vec<T, GEMM_BK, GEMM_BM>(atile[buf], ab + ulong(k0) * args.lda + row0, args.lda, tid);
        } else {
          gemm_stage_vec<T, GEMM_BM, GEMM_BK>(atile[buf], ab + ulong(row0) * args.lda + k0, args.lda, tid);
        }
        if (TB) {
          gemm_stage_vec<T, GEMM_BN, GEMM_BK>(btile[buf], bb + ulong(col0) * args.ldb + k0, args.ldb, tid);
        } else {
          gemm_stage_vec<T, GEMM_BK, GEMM_BN>(btile[buf], bb + ulong(k0) * args.ldb + col0, args.ldb, tid);
        }
      } else {
        const uint kn = min(uint(GEMM_BK), ke - k0);
        if (TA) {
          gemm_stage_edge<T, GEMM_BK, GEMM_BM>(atile[buf], ab + ulong(k0) * args.lda + row0, args.lda, kn, m - row0,
                                               tid);
        } else {
          gemm_stage_edge<T, GEMM_BM, GEMM_BK>(atile[buf], ab + ulong(row0) * args.lda + k0, args.lda, m - row0, kn,
                                               tid);
        }
        if (TB) {
          gemm_stage_edge<T, GEMM_BN, GEMM_BK>(btile[buf], bb + ulong(col0) * args.ldb + k0, args.ldb, n - col0, kn,
                                               tid);
        } else {
          gemm_stage_edge<T, GEMM_BK, GEMM_BN>(btile[buf], bb + ulong(k0) * args.ldb + col0, args.ldb, kn, n - col0,
                                               tid);
        }
      }
    }
    if (s > 0) {
      const uint buf = (s - 1) % 2;
      if (s - 1 < nfast) {
        gemm_step<T, TA, TB>(acc, atile[buf], btile[buf], arow, bcol, GEMM_BK, 4u, 4u);
      } else {
        const uint kn = min(uint(GEMM_BK), ke - (kb + (s - 1) * GEMM_BK));
        gemm_step<T, TA, TB>(acc, atile[buf], btile[buf], arow, bcol, kn, fr, fc);
      }
    }
    if (s < steps) {
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  // Epilogue, from the registers: each lane finishes its two elements of
  // every fragment, (er, ec) and (er, ec + 1) (thread_elements(), Apple's
  // layout), and stores them; a symmetric product's off-diagonal tile
  // also at the mirrored place.
  const uint q = lane / 4;
  const uint er = (q & 4) + (lane / 2) % 4, ec = (q & 2) * 2 + (lane % 2) * 2;
  const bool pair = interior && (args.aligned & 4u) != 0;
  const bool mirror = SYM && tile.x != tile.y;
#pragma clang loop unroll(full)
  for (uint i = 0; i < 4; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < 4; j++) {
      if (i >= fr || j >= fc) {
        continue;
      }
      const vec<float, 2> v = acc[i][j].thread_elements();
      const uint r = srow + i * 8 + er, col = scol + j * 8 + ec;
      gemm_store_pair<TO, EPI>(db, cb, e, x, s, r, col, v, m, n, args.ldc, args.alpha, args.beta, pair);
      if (mirror) {
        gemm_store_mirror<TO>(db, cb, r, col, v, m, n, args.ldc, args.alpha, args.beta);
      }
    }
  }
}

// gemm_simd: the simd flavour's product (gemm_simd_body with the plain
// epilogue). F32 only tells the two instantiations of a float → float
// product apart.
template <typename T, typename TO, bool TA, bool TB, bool F32, bool SYM>
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
  threadgroup T atile[2][GEMM_STAGE];  // op(a) tiles in T (double-buffered)
  threadgroup T btile[2][GEMM_STAGE];  // op(b) tiles in T
  gemm_simd_body<T, TO, TA, TB, SYM, GEMM_EPI_PLAIN>(atile, btile, a, b, c, d, nullptr, nullptr, nullptr, args, tg,
                                                     tid, lane, sg);
}

// gemm_simd_relu_sq: the forward of the MLP's first product and its
// squared ReLU in one dispatch (host name gemm_nt_relu_sq, TA = false,
// TB = true): d = h = round(x·wᵀ) as gemm_simd stores it, and e = a =
// round(relu_sq_fwd_elem(h)) of the rounded h, in the same epilogue
// (GEMM_EPI_RELU_SQ). No batch, no split k; the host sets alpha = 1,
// beta = 0 (c bound, unread).
template <typename T, bool TA, bool TB>
[[kernel]] [[max_total_threads_per_threadgroup(GEMM_SIMD_THREADS)]] void gemm_simd_relu_sq(
    device const T* a [[buffer(0)]],           // op(a) m×k
    device const T* b [[buffer(1)]],           // op(b) k×n
    device const T* c [[buffer(2)]],           // (m, ldc), read when beta ≠ 0
    device T* d [[buffer(3)]],                 // (m, ldc): h
    constant GemmArgs& args [[buffer(4)]],
    device T* e [[buffer(5)]],                 // (m, ldc): relu(h)²
    uint3 tg [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup T atile[2][GEMM_STAGE];  // op(a) tiles in T (double-buffered)
  threadgroup T btile[2][GEMM_STAGE];  // op(b) tiles in T
  gemm_simd_body<T, T, TA, TB, false, GEMM_EPI_RELU_SQ>(atile, btile, a, b, c, d, e, nullptr, nullptr, args, tg, tid,
                                                        lane, sg);
}

// gemm_simd_drelu_sq: the backward of the MLP's second product's dx
// through the squared ReLU in one dispatch (host name gemm_nn_drelu_sq,
// TA = TB = false): with da = round(dout·w) as gemm_simd would store it
// (not stored), d = dh = round(relu_sq_bwd_elem(h, da)), h read at d's
// place (GEMM_EPI_DRELU_SQ). No batch, no split k; the host sets alpha =
// 1, beta = 0 (c bound, unread).
template <typename T, bool TA, bool TB>
[[kernel]] [[max_total_threads_per_threadgroup(GEMM_SIMD_THREADS)]] void gemm_simd_drelu_sq(
    device const T* a [[buffer(0)]],           // op(a) m×k
    device const T* b [[buffer(1)]],           // op(b) k×n
    device const T* c [[buffer(2)]],           // (m, ldc), read when beta ≠ 0
    device T* d [[buffer(3)]],                 // (m, ldc): dh
    constant GemmArgs& args [[buffer(4)]],
    device const T* h [[buffer(5)]],           // (m, ldc): the pre-activation
    uint3 tg [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup T atile[2][GEMM_STAGE];  // op(a) tiles in T (double-buffered)
  threadgroup T btile[2][GEMM_STAGE];  // op(b) tiles in T
  gemm_simd_body<T, T, TA, TB, false, GEMM_EPI_DRELU_SQ>(atile, btile, a, b, c, d, nullptr, h, nullptr, args, tg,
                                                         tid, lane, sg);
}

// gemm_simd_scaled_add: the forward of the MLP's second product and the
// block's residual add in one dispatch (host name gemm_nt_scaled_add, TA =
// false, TB = true): d = y = round(x·wᵀ) as gemm_simd stores it, and e =
// out = round(res + s⊙y) of the rounded y, res read and s indexed by
// column in the same epilogue (GEMM_EPI_SCALED_ADD; has_s = 0: s unread,
// scale 1). No batch, no split k; the host sets alpha = 1, beta = 0 (c
// bound, unread). out may be res (each element read, then written, by
// one thread).
template <typename T, bool TA, bool TB>
[[kernel]] [[max_total_threads_per_threadgroup(GEMM_SIMD_THREADS)]] void gemm_simd_scaled_add(
    device const T* a [[buffer(0)]],           // op(a) m×k
    device const T* b [[buffer(1)]],           // op(b) k×n
    device const T* c [[buffer(2)]],           // (m, ldc), read when beta ≠ 0
    device T* d [[buffer(3)]],                 // (m, ldc): y
    constant GemmArgs& args [[buffer(4)]],
    device T* e [[buffer(5)]],                 // (m, ldc): out
    device const T* res [[buffer(6)]],         // (m, ldc): the residual, may be e
    device const float* s [[buffer(7)]],       // (n), read when has_s ≠ 0
    constant uint& has_s [[buffer(8)]],
    uint3 tg [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup T atile[2][GEMM_STAGE];  // op(a) tiles in T (double-buffered)
  threadgroup T btile[2][GEMM_STAGE];  // op(b) tiles in T
  gemm_simd_body<T, T, TA, TB, false, GEMM_EPI_SCALED_ADD>(atile, btile, a, b, c, d, e, res,
                                                           has_s != 0 ? s : nullptr, args, tg, tid, lane, sg);
}

// gemm_portable_body: the portable flavour (see the file comment) on the
// kernel's float tiles atile and btile (threadgroup float [GEMM_BK ·
// GEMM_LD] each, k-major; PT is their decayed pointer type); SYM and EPI
// as in gemm_simd_body.
template <typename T, typename TO, bool TA, bool TB, bool SYM, uint EPI, typename PT>
METAL_FUNC void gemm_portable_body(PT atile, PT btile, device const T* a, device const T* b, device const TO* c,
                                   device TO* d, device TO* e, device const TO* x, device const float* s,
                                   constant GemmArgs& args, uint3 tg, uint tid) {
  const uint m = args.m, n = args.n;
  const uint2 tile = gemm_tile<SYM>(tg, m);
  const uint row0 = tile.y * GEMM_BM, col0 = tile.x * GEMM_BN;
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
        gemm_store_one<TO, EPI>(db, e, x, s, idx, col, gemm_finish(acc[i][j], cb, idx, args.alpha, args.beta));
        if (SYM && tile.x != tile.y) {
          const ulong mdx = ulong(col) * args.ldc + r;
          db[mdx] = static_cast<TO>(gemm_finish(acc[i][j], cb, mdx, args.alpha, args.beta));
        }
      }
    }
  }
}

// gemm_portable: the portable flavour's product (gemm_portable_body with
// the plain epilogue); F32 as in gemm_simd.
template <typename T, typename TO, bool TA, bool TB, bool F32, bool SYM>
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
  gemm_portable_body<T, TO, TA, TB, SYM, GEMM_EPI_PLAIN>(atile, btile, a, b, c, d, nullptr, nullptr, nullptr, args, tg,
                                                         tid);
}

// gemm_portable_relu_sq: gemm_simd_relu_sq's product in the portable
// flavour (host name gemm_nt_relu_sq).
template <typename T, bool TA, bool TB>
[[kernel]] [[max_total_threads_per_threadgroup(GEMM_PORTABLE_THREADS)]] void gemm_portable_relu_sq(
    device const T* a [[buffer(0)]],           // op(a) m×k
    device const T* b [[buffer(1)]],           // op(b) k×n
    device const T* c [[buffer(2)]],           // (m, ldc), read when beta ≠ 0
    device T* d [[buffer(3)]],                 // (m, ldc): h
    constant GemmArgs& args [[buffer(4)]],
    device T* e [[buffer(5)]],                 // (m, ldc): relu(h)²
    uint3 tg [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float atile[GEMM_BK * GEMM_LD];  // op(a) tile, k-major: [kk][row]
  threadgroup float btile[GEMM_BK * GEMM_LD];  // op(b) tile, [kk][col]
  gemm_portable_body<T, T, TA, TB, false, GEMM_EPI_RELU_SQ>(atile, btile, a, b, c, d, e, nullptr, nullptr, args, tg,
                                                            tid);
}

// gemm_portable_drelu_sq: gemm_simd_drelu_sq's product in the portable
// flavour (host name gemm_nn_drelu_sq).
template <typename T, bool TA, bool TB>
[[kernel]] [[max_total_threads_per_threadgroup(GEMM_PORTABLE_THREADS)]] void gemm_portable_drelu_sq(
    device const T* a [[buffer(0)]],           // op(a) m×k
    device const T* b [[buffer(1)]],           // op(b) k×n
    device const T* c [[buffer(2)]],           // (m, ldc), read when beta ≠ 0
    device T* d [[buffer(3)]],                 // (m, ldc): dh
    constant GemmArgs& args [[buffer(4)]],
    device const T* h [[buffer(5)]],           // (m, ldc): the pre-activation
    uint3 tg [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float atile[GEMM_BK * GEMM_LD];  // op(a) tile, k-major: [kk][row]
  threadgroup float btile[GEMM_BK * GEMM_LD];  // op(b) tile, [kk][col]
  gemm_portable_body<T, T, TA, TB, false, GEMM_EPI_DRELU_SQ>(atile, btile, a, b, c, d, nullptr, h, nullptr, args, tg,
                                                             tid);
}

// gemm_portable_scaled_add: gemm_simd_scaled_add's product in the
// portable flavour (host name gemm_nt_scaled_add).
template <typename T, bool TA, bool TB>
[[kernel]] [[max_total_threads_per_threadgroup(GEMM_PORTABLE_THREADS)]] void gemm_portable_scaled_add(
    device const T* a [[buffer(0)]],           // op(a) m×k
    device const T* b [[buffer(1)]],           // op(b) k×n
    device const T* c [[buffer(2)]],           // (m, ldc), read when beta ≠ 0
    device T* d [[buffer(3)]],                 // (m, ldc): y
    constant GemmArgs& args [[buffer(4)]],
    device T* e [[buffer(5)]],                 // (m, ldc): out
    device const T* res [[buffer(6)]],         // (m, ldc): the residual, may be e
    device const float* s [[buffer(7)]],       // (n), read when has_s ≠ 0
    constant uint& has_s [[buffer(8)]],
    uint3 tg [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float atile[GEMM_BK * GEMM_LD];  // op(a) tile, k-major: [kk][row]
  threadgroup float btile[GEMM_BK * GEMM_LD];  // op(b) tile, [kk][col]
  gemm_portable_body<T, T, TA, TB, false, GEMM_EPI_SCALED_ADD>(atile, btile, a, b, c, d, e, res,
                                                               has_s != 0 ? s : nullptr, args, tg, tid);
}

// gemm_reduce: split-K's second dispatch, d = alpha·Σ_s p_s + beta·c, the
// slices s = 0, 1, … of the float partials p (slice s at s·m·n, rows n
// apart) summed in that order, rounded once. Four consecutive outputs per
// thread (outputs 4t .. 4t+3 of the m×n, the last chunk possibly short):
// where bit 3 of aligned is set (n, ldc and the offsets of p, c and d
// multiples of 4: a chunk is four columns of one row on 16-byte
// boundaries) each slice's chunk, c's and d's move as one vector each,
// else element by element, with the same sums and the same bits. Simd and
// F32 only tell the instantiations apart (no simd functions).
template <typename T, typename TO, bool Simd, bool F32>
[[kernel]] void gemm_reduce(
    device const float* p [[buffer(0)]],       // ⌈k / slice_k⌉ × (m, n)
    device const TO* c [[buffer(1)]],          // (m, ldc), read when beta ≠ 0
    device TO* d [[buffer(2)]],                // (m, ldc)
    constant GemmArgs& args [[buffer(3)]],
    uint t [[thread_position_in_grid]]) {
  const uint mn = args.m * args.n;
  const uint g0 = 4 * t;
  if (g0 >= mn) {
    return;
  }
  const uint slices = (args.k + args.slice_k - 1) / args.slice_k;
  if ((args.aligned & 8) != 0 && g0 + 4 <= mn) {
    float4 s = *reinterpret_cast<device const float4*>(p + g0);
    for (uint z = 1; z < slices; z++) {
      s += *reinterpret_cast<device const float4*>(p + ulong(z) * mn + g0);
    }
    const uint r = g0 / args.n, col = g0 % args.n;
    const ulong idx = ulong(r) * args.ldc + col;
    vec<TO, 4> cv(static_cast<TO>(0.0f));
    if (args.beta != 0.0f) {
      cv = *reinterpret_cast<device const vec<TO, 4>*>(c + idx);
    }
    vec<TO, 4> out;
    for (uint e = 0; e < 4; e++) {
      out[e] = static_cast<TO>(gemm_scale(s[e], static_cast<float>(cv[e]), args.alpha, args.beta));
    }
    *reinterpret_cast<device vec<TO, 4>*>(d + idx) = out;
    return;
  }
  for (uint gid = g0; gid < min(g0 + 4, mn); gid++) {
    float s = p[gid];
    for (uint z = 1; z < slices; z++) {
      s += p[ulong(z) * mn + gid];
    }
    const uint r = gid / args.n, col = gid % args.n;
    const ulong idx = ulong(r) * args.ldc + col;
    d[idx] = static_cast<TO>(gemm_finish(s, c, idx, args.alpha, args.beta));
  }
}

// The <tt> variants (op(a), op(b): n plain, t transposed), the symmetric
// products gemm_nt_sym (a·aᵀ) and gemm_nn_sym (a·a of a symmetric a),
// split-K's reduction, and the MLP's fused epilogues gemm_nt_relu_sq
// (h = x·wᵀ and relu(h)²), gemm_nn_drelu_sq (dh from dout·w and h) and
// gemm_nt_scaled_add (y = x·wᵀ and out = res + s⊙y), in both flavours.
#define instantiate_gemm(tname, T)                                                                       \
  instantiate_kernel("gemm_nn_simd_" #tname, gemm_simd, T, T, false, false, false, false)                \
  instantiate_kernel("gemm_nn_portable_" #tname, gemm_portable, T, T, false, false, false, false)        \
  instantiate_kernel("gemm_f32_nn_simd_" #tname, gemm_simd, T, float, false, false, true, false)         \
  instantiate_kernel("gemm_f32_nn_portable_" #tname, gemm_portable, T, float, false, false, true, false) \
  instantiate_kernel("gemm_nt_simd_" #tname, gemm_simd, T, T, false, true, false, false)                 \
  instantiate_kernel("gemm_nt_portable_" #tname, gemm_portable, T, T, false, true, false, false)         \
  instantiate_kernel("gemm_f32_nt_simd_" #tname, gemm_simd, T, float, false, true, true, false)          \
  instantiate_kernel("gemm_f32_nt_portable_" #tname, gemm_portable, T, float, false, true, true, false)  \
  instantiate_kernel("gemm_tn_simd_" #tname, gemm_simd, T, T, true, false, false, false)                 \
  instantiate_kernel("gemm_tn_portable_" #tname, gemm_portable, T, T, true, false, false, false)         \
  instantiate_kernel("gemm_f32_tn_simd_" #tname, gemm_simd, T, float, true, false, true, false)          \
  instantiate_kernel("gemm_f32_tn_portable_" #tname, gemm_portable, T, float, true, false, true, false)  \
  instantiate_kernel("gemm_tt_simd_" #tname, gemm_simd, T, T, true, true, false, false)                  \
  instantiate_kernel("gemm_tt_portable_" #tname, gemm_portable, T, T, true, true, false, false)          \
  instantiate_kernel("gemm_f32_tt_simd_" #tname, gemm_simd, T, float, true, true, true, false)           \
  instantiate_kernel("gemm_f32_tt_portable_" #tname, gemm_portable, T, float, true, true, true, false)   \
  instantiate_kernel("gemm_nt_sym_simd_" #tname, gemm_simd, T, T, false, true, false, true)              \
  instantiate_kernel("gemm_nt_sym_portable_" #tname, gemm_portable, T, T, false, true, false, true)      \
  instantiate_kernel("gemm_nn_sym_simd_" #tname, gemm_simd, T, T, false, false, false, true)             \
  instantiate_kernel("gemm_nn_sym_portable_" #tname, gemm_portable, T, T, false, false, false, true)     \
  instantiate_kernel("gemm_reduce_simd_" #tname, gemm_reduce, T, T, true, false)                         \
  instantiate_kernel("gemm_reduce_portable_" #tname, gemm_reduce, T, T, false, false)                    \
  instantiate_kernel("gemm_f32_reduce_simd_" #tname, gemm_reduce, T, float, true, true)                  \
  instantiate_kernel("gemm_f32_reduce_portable_" #tname, gemm_reduce, T, float, false, true)             \
  instantiate_kernel("gemm_nt_relu_sq_simd_" #tname, gemm_simd_relu_sq, T, false, true)                  \
  instantiate_kernel("gemm_nt_relu_sq_portable_" #tname, gemm_portable_relu_sq, T, false, true)          \
  instantiate_kernel("gemm_nn_drelu_sq_simd_" #tname, gemm_simd_drelu_sq, T, false, false)               \
  instantiate_kernel("gemm_nn_drelu_sq_portable_" #tname, gemm_portable_drelu_sq, T, false, false)       \
  instantiate_kernel("gemm_nt_scaled_add_simd_" #tname, gemm_simd_scaled_add, T, false, true)            \
  instantiate_kernel("gemm_nt_scaled_add_portable_" #tname, gemm_portable_scaled_add, T, false, true)

instantiate_gemm(float, float)
instantiate_gemm(half, half)
instantiate_gemm(bfloat, bfloat)
