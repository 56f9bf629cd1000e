// linear: the general matrix product (shaders/linear.metal in CUDA). On a
// GPU the backend's GEMMs go through cuBLASLt; these kernels are what the
// CPU emulator runs, the fallback where cuBLASLt is missing, and the
// reference the cuBLASLt plans are compared against on a GPU.
//
//	d = alpha·op(a)·op(b) + beta·c         (row-major; op(X) = X or Xᵀ)
//	op(a) m×k: a is m×k (lda ≥ k), or k×m when trans_a (lda ≥ m)
//	op(b) k×n: b is k×n (ldb ≥ n), or n×k when trans_b (ldb ≥ k)
//	c, d m×n with row stride ldc; c is read only when beta ≠ 0 (so a
//	poisoned d is never read), and may be the same buffer as d (each
//	element is read and then written by the same thread)
//
// The host maps the ops onto it as metal/linear.go does:
//
//	LinearForward   out = x·wᵀ       a = x, b = w (trans_b), beta = 0
//	LinearBackward  dx = dout·w      a = dout, b = w, beta = 0 (1: += dx)
//	                dw += doutᵀ·x    a = dout (trans_a), b = x, beta = 1, float d
//	NewtonSchulz    A = X·Xᵀ, B = c·A·A + b·A, X' = B·X + a·X (all float)
//
// a and b are T; d and c are T (gemm_<fl>_<T>) or float (gemm_f32_<fl>_<T>:
// the F32 weight gradient). Products accumulate in float and each output is
// rounded once; every output element is one thread's fixed-order sum over
// k (the tensor core's order within a k16 step is the hardware's, but
// fixed), so results are deterministic without atomics. A 64×64 tile of d
// per block, grid (⌈n/64⌉, ⌈m/64⌉); out-of-range rows, columns and k of the
// edge tiles are staged as zeros, and out-of-range outputs are not stored.
//   portable: 256 threads = 16×16, each accumulating a 4×4 block of outputs
//             (rows ty + 16·i, columns tx + 16·j) with float multiply-adds
//             from float tiles (k step 16); shared memory 8,704 B.
//   tc:       for half and bfloat, 128 threads = 2×2 warps, each owning a
//             32×32 sub-tile as 2×4 mma.sync m16n8k16 accumulators (k step
//             32, operands staged as 16-bit in shared memory: A as [m][k],
//             B as [n][k], rows padded to 40 elements); shared memory
//             10,240 B. In float the tc flavour is the portable kernel
//             (fp32 products stay exact: no TF32).
//
// Baseline shapes m×n×k (N = 8192 tokens, bf16), FLOPs = 2·m·n·k; against an
// H100 SXM's 989 TFLOP/s dense bf16: out = x·wᵀ 8192×512×512 is 4.3 GFLOP
// (4.3 µs at peak), 8192×1024×512 8.6 GFLOP (8.7 µs); dw += doutᵀ·x
// 512×512×8192 4.3 GFLOP; Newton–Schulz 512×512×512 products 0.27 GFLOP in
// float (at the 67 TFLOP/s fp32 peak, 4 µs each).
#include "golf_prelude.cuh"

#define GEMM_BM 64    // rows of d per block
#define GEMM_BN 64    // columns of d per block
#define GEMM_BK 16    // portable: k per staged step
#define GEMM_LD 68    // portable: row stride of the k-major float tiles
#define GEMM_PORTABLE_THREADS 256
#define GEMM_TC_BK 32  // tc: k per staged step
#define GEMM_TC_LD 40  // tc: row stride (16-bit elements) of the staged tiles
#define GEMM_TC_THREADS 128

// gemm_op_a is op(a)[i, kk] in float, or 0 outside m×k.
template <typename T>
__device__ __forceinline__ float gemm_op_a(const T* a, uint i, uint kk, uint m, uint k, uint lda, uint trans) {
  if (i >= m || kk >= k) {
    return 0.0f;
  }
  return to_f32(trans != 0 ? a[(u64)kk * lda + i] : a[(u64)i * lda + kk]);
}

// gemm_op_b is op(b)[kk, j] in float, or 0 outside k×n.
template <typename T>
__device__ __forceinline__ float gemm_op_b(const T* b, uint kk, uint j, uint k, uint n, uint ldb, uint trans) {
  if (kk >= k || j >= n) {
    return 0.0f;
  }
  return to_f32(trans != 0 ? b[(u64)j * ldb + kk] : b[(u64)kk * ldb + j]);
}

// gemm_finish is alpha·acc + beta·c[idx] (c unread when beta = 0), in float.
template <typename TO>
__device__ __forceinline__ float gemm_finish(float acc, const TO* c, u64 idx, float alpha, float beta) {
  float v = alpha * acc;
  if (beta != 0.0f) {
    v += beta * to_f32(c[idx]);
  }
  return v;
}

// gemm_portable: see the file comment. The e-th staged element of a tile
// walks the source's contiguous dimension fastest.
template <typename T, typename TO>
__device__ void gemm_portable(const T* a, const T* b, const TO* c, TO* d, GemmArgs args) {
  __shared__ float atile[GEMM_BK * GEMM_LD];  // op(a) tile, k-major: [kk][row]
  __shared__ float btile[GEMM_BK * GEMM_LD];  // op(b) tile, [kk][col]
  const uint m = args.m, n = args.n, k = args.k;
  const uint row0 = blockIdx.y * GEMM_BM, col0 = blockIdx.x * GEMM_BN;
  const uint tid = threadIdx.x;
  const uint tx = tid % 16u, ty = tid / 16u;

  float acc[4][4];
  #pragma unroll
  for (uint i = 0; i < 4u; i++) {
    #pragma unroll
    for (uint j = 0; j < 4u; j++) {
      acc[i][j] = 0.0f;
    }
  }
  for (uint k0 = 0; k0 < k; k0 += GEMM_BK) {
    for (uint e = tid; e < GEMM_BM * GEMM_BK; e += GEMM_PORTABLE_THREADS) {
      const uint ar = args.trans_a != 0 ? e % GEMM_BM : e / GEMM_BK;
      const uint ak = args.trans_a != 0 ? e / GEMM_BM : e % GEMM_BK;
      atile[ak * GEMM_LD + ar] = gemm_op_a(a, row0 + ar, k0 + ak, m, k, args.lda, args.trans_a);
      const uint bk = args.trans_b != 0 ? e % GEMM_BK : e / GEMM_BN;
      const uint bc = args.trans_b != 0 ? e / GEMM_BK : e % GEMM_BN;
      btile[bk * GEMM_LD + bc] = gemm_op_b(b, k0 + bk, col0 + bc, k, n, args.ldb, args.trans_b);
    }
    __syncthreads();
    const uint kn = min((uint)GEMM_BK, k - k0);
    for (uint kk = 0; kk < kn; kk++) {
      float av[4];
      float bv[4];
      #pragma unroll
      for (uint i = 0; i < 4u; i++) {
        av[i] = atile[kk * GEMM_LD + ty + 16u * i];
        bv[i] = btile[kk * GEMM_LD + tx + 16u * i];
      }
      #pragma unroll
      for (uint i = 0; i < 4u; i++) {
        #pragma unroll
        for (uint j = 0; j < 4u; j++) {
          acc[i][j] += av[i] * bv[j];
        }
      }
    }
    __syncthreads();
  }
  #pragma unroll
  for (uint i = 0; i < 4u; i++) {
    const uint r = row0 + ty + 16u * i;
    #pragma unroll
    for (uint j = 0; j < 4u; j++) {
      const uint col = col0 + tx + 16u * j;
      if (r < m && col < n) {
        const u64 idx = (u64)r * args.ldc + col;
        d[idx] = from_f32<TO>(gemm_finish(acc[i][j], c, idx, args.alpha, args.beta));
      }
    }
  }
}

// gemm_bits_a / gemm_bits_b: the 16 bits of op(a)[i, kk] / op(b)[kk, j], or
// 0 (+0.0) outside the matrix.
template <typename T>
__device__ __forceinline__ u16 gemm_bits_a(const T* a, uint i, uint kk, uint m, uint k, uint lda, uint trans) {
  if (i >= m || kk >= k) {
    return 0;
  }
  return golf_bits(trans != 0 ? a[(u64)kk * lda + i] : a[(u64)i * lda + kk]);
}
template <typename T>
__device__ __forceinline__ u16 gemm_bits_b(const T* b, uint kk, uint j, uint k, uint n, uint ldb, uint trans) {
  if (kk >= k || j >= n) {
    return 0;
  }
  return golf_bits(trans != 0 ? b[(u64)j * ldb + kk] : b[(u64)kk * ldb + j]);
}

// gemm_tc: the tensor-core flavour for T = bf16, fp16 (see the file comment).
template <typename T, typename TO>
__device__ void gemm_tc(const T* a, const T* b, const TO* c, TO* d, GemmArgs args) {
  __shared__ __align__(16) u16 as[GEMM_BM * GEMM_TC_LD];  // op(a) tile, [row][kk]
  __shared__ __align__(16) u16 bs[GEMM_BN * GEMM_TC_LD];  // op(b) tile, [col][kk]
  const uint m = args.m, n = args.n, k = args.k;
  const uint row0 = blockIdx.y * GEMM_BM, col0 = blockIdx.x * GEMM_BN;
  const uint tid = threadIdx.x, lane = golf_lane(), warp = tid / 32u;
  const uint g = lane >> 2, q = lane & 3u;
  const uint wr = (warp / 2u) * 32u, wc = (warp % 2u) * 32u;  // the warp's 32×32 sub-tile

  float acc[2][4][4];
  #pragma unroll
  for (uint i = 0; i < 2u; i++) {
    #pragma unroll
    for (uint j = 0; j < 4u; j++) {
      #pragma unroll
      for (uint e = 0; e < 4u; e++) {
        acc[i][j][e] = 0.0f;
      }
    }
  }
  for (uint k0 = 0; k0 < k; k0 += GEMM_TC_BK) {
    for (uint e = tid; e < GEMM_BM * GEMM_TC_BK; e += GEMM_TC_THREADS) {
      const uint ar = args.trans_a != 0 ? e % GEMM_BM : e / GEMM_TC_BK;
      const uint ak = args.trans_a != 0 ? e / GEMM_BM : e % GEMM_TC_BK;
      as[ar * GEMM_TC_LD + ak] = gemm_bits_a(a, row0 + ar, k0 + ak, m, k, args.lda, args.trans_a);
      const uint bk = args.trans_b != 0 ? e % GEMM_TC_BK : e / GEMM_BN;
      const uint bc = args.trans_b != 0 ? e / GEMM_TC_BK : e % GEMM_BN;
      bs[bc * GEMM_TC_LD + bk] = gemm_bits_b(b, k0 + bk, col0 + bc, k, n, args.ldb, args.trans_b);
    }
    __syncthreads();
    #pragma unroll
    for (uint kc = 0; kc < GEMM_TC_BK; kc += 16u) {
      uint af[2][4];
      uint bf[4][2];
      #pragma unroll
      for (uint i = 0; i < 2u; i++) {
        const u16* p = as + (wr + i * 16u + g) * GEMM_TC_LD + kc + 2u * q;
        af[i][0] = golf_ld_pair(p);
        af[i][1] = golf_ld_pair(p + 8u * GEMM_TC_LD);
        af[i][2] = golf_ld_pair(p + 8u);
        af[i][3] = golf_ld_pair(p + 8u * GEMM_TC_LD + 8u);
      }
      #pragma unroll
      for (uint j = 0; j < 4u; j++) {
        const u16* p = bs + (wc + j * 8u + g) * GEMM_TC_LD + kc + 2u * q;
        bf[j][0] = golf_ld_pair(p);
        bf[j][1] = golf_ld_pair(p + 8u);
      }
      #pragma unroll
      for (uint i = 0; i < 2u; i++) {
        #pragma unroll
        for (uint j = 0; j < 4u; j++) {
          golf_mma16816<T>(acc[i][j], af[i], bf[j]);
        }
      }
    }
    __syncthreads();
  }
  #pragma unroll
  for (uint i = 0; i < 2u; i++) {
    #pragma unroll
    for (uint j = 0; j < 4u; j++) {
      #pragma unroll
      for (uint e = 0; e < 4u; e++) {
        const uint r = row0 + wr + i * 16u + g + (e >= 2u ? 8u : 0u);
        const uint col = col0 + wc + j * 8u + 2u * q + (e & 1u);
        if (r < m && col < n) {
          const u64 idx = (u64)r * args.ldc + col;
          d[idx] = from_f32<TO>(gemm_finish(acc[i][j][e], c, idx, args.alpha, args.beta));
        }
      }
    }
  }
}

#define GEMM_PORTABLE(tname, T)                                                                             \
  GOLF_KERNEL(GOLF_NAME(gemm, portable, tname), GEMM_PORTABLE_THREADS)(const T* a, const T* b, const T* c,  \
                                                                       T* d, GemmArgs args) {               \
    gemm_portable<T, T>(a, b, c, d, args);                                                                  \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(gemm_f32, portable, tname), GEMM_PORTABLE_THREADS)(                                 \
      const T* a, const T* b, const float* c, float* d, GemmArgs args) {                                    \
    gemm_portable<T, float>(a, b, c, d, args);                                                              \
  }

#define GEMM_TC(tname, T)                                                                                   \
  GOLF_KERNEL(GOLF_NAME(gemm, tc, tname), GEMM_TC_THREADS)(const T* a, const T* b, const T* c, T* d,         \
                                                          GemmArgs args) {                                  \
    gemm_tc<T, T>(a, b, c, d, args);                                                                        \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(gemm_f32, tc, tname), GEMM_TC_THREADS)(const T* a, const T* b, const float* c,       \
                                                              float* d, GemmArgs args) {                    \
    gemm_tc<T, float>(a, b, c, d, args);                                                                    \
  }

GOLF_INSTANTIATE(GEMM_PORTABLE)
GOLF_INSTANTIATE_16(GEMM_TC)
