// golf_prelude.cuh: golf's own CUDA prelude, included by every kernel file
// (cuda/kernels/*.cu). No toolkit header is used (NVRTC ships none of
// cuda_bf16.h / cuda_fp16.h, and the CPU emulator has none), so the same
// sources compile under NVRTC 11.8, 12 and 13 and as C++ on the emulator.
//
// It gives:
//   - uint (golf_args.h's field type) and u64, and the argument structs of
//     shaders/golf_args.h, shared with the Metal kernels and the Go host;
//   - the storage types bf16 and fp16 (16 bits each, no arithmetic: every
//     kernel converts to float, computes in float, and rounds once on store)
//     with to_f32 / from_f32<T> conversions that round to nearest even;
//   - warp reductions over the 32 lanes, and the one tensor-core operation
//     the tc flavour uses, golf_mma16816;
//   - GOLF_KERNEL and GOLF_INSTANTIATE, the one way a kernel enters the
//     library (see the end of this file).
//
// GOLF_PTX is 1 when compiling for a GPU (__CUDA_ARCH__) without
// GOLF_NO_PTX: conversions use PTX cvt.rn (sm_80+ for bf16) and
// golf_mma16816 the mma.sync instruction (sm_80+). Otherwise (the CPU
// emulator, or -DGOLF_NO_PTX) the same operations are plain C++: integer
// round-to-nearest-even conversions, bit for bit those of the Go backend
// (backend.BF16Bits, backend.F16Bits; NaN payloads aside on the GPU), and
// a warp-shuffle implementation of the matrix product.
//
// Blocks are one-dimensional (blockDim = (threads, 1, 1)) with threads a
// multiple of 32, so a warp is 32 consecutive threadIdx.x: golf_lane() and
// the fallback of golf_mma16816 rely on it.
#ifndef GOLF_PRELUDE_CUH
#define GOLF_PRELUDE_CUH

typedef unsigned int uint;
typedef unsigned short u16;
typedef unsigned long long u64;

#include "golf_args.h"

#if defined(__CUDA_ARCH__) && !defined(GOLF_NO_PTX)
#define GOLF_PTX 1
#else
#define GOLF_PTX 0
#endif

#define GOLF_DEV __device__ __forceinline__
#define GOLF_FULL_MASK 0xffffffffu

// Stand-in for -∞ where a masked score must still give exp(m − m') = 1
// and never NaN (as in the Metal kernels).
#define GOLF_NEG_BIG (-1.0e30f)

// bf16 is bfloat16 (the top half of a binary32), fp16 IEEE binary16: the
// bits only.
struct bf16 {
  u16 bits;
};
struct fp16 {
  u16 bits;
};

GOLF_DEV float golf_bits_f32(uint u) { return __uint_as_float(u); }
GOLF_DEV uint golf_f32_bits(float f) { return __float_as_uint(f); }

// golf_is_finite: neither ±Inf nor NaN (exponent not all ones).
GOLF_DEV bool golf_is_finite(float f) { return (golf_f32_bits(f) & 0x7f800000u) != 0x7f800000u; }

// bf16_round_bits: float → bfloat16 bits, round to nearest even; NaN stays
// NaN with its sign and the quiet bit set (backend.BF16Bits).
//	bits = (u + 0x7fff + ((u >> 16) & 1)) >> 16
GOLF_DEV u16 bf16_round_bits(float f) {
#if GOLF_PTX
  u16 b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
#else
  uint u = golf_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return (u16)((u >> 16) | 0x0040u);
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  return (u16)(u >> 16);
#endif
}

// fp16_round_bits: float → binary16 bits, round to nearest even, with
// subnormals, overflow to ±Inf, and NaN as x448/float16 (sign, 0x7c00,
// quiet bit 0x0200, the top payload bits).
GOLF_DEV u16 fp16_round_bits(float f) {
#if GOLF_PTX
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  const uint u = golf_f32_bits(f);
  const uint sign = (u >> 16) & 0x8000u;
  const uint mag = u & 0x7fffffffu;
  if (mag >= 0x7f800000u) {  // Inf or NaN
    const uint coef = mag & 0x007fffffu;
    return (u16)(sign | 0x7c00u | (coef != 0 ? 0x0200u : 0u) | (coef >> 13));
  }
  if (mag >= 0x47800000u) {  // ≥ 65536: rounds to Inf (65520..65536 carry below)
    return (u16)(sign | 0x7c00u);
  }
  if (mag < 0x38800000u) {  // below 2^-14: a binary16 subnormal (or zero)
    const uint e = mag >> 23;  // biased exponent, ≤ 112
    const uint shift = 126u - e;  // value = m·2^(e−150) = (m >> shift)·2^-24
    if (shift > 24u) {
      return (u16)sign;
    }
    const uint m = (mag & 0x007fffffu) | 0x00800000u;
    uint r = m >> shift;
    const uint rem = m & ((1u << shift) - 1u);
    const uint halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u) != 0)) {
      r++;  // may become 0x400, the smallest normal: the right encoding
    }
    return (u16)(sign | r);
  }
  uint h = (mag - 0x38000000u) >> 13;  // rebias the exponent (127 → 15)
  const uint rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0)) {
    h++;  // a carry into the exponent is right, up to 0x7c00 = Inf
  }
  return (u16)(sign | h);
#endif
}

// fp16_bits_f32: binary16 bits → float (exact).
GOLF_DEV float fp16_bits_f32(u16 h) {
#if GOLF_PTX
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  const uint sign = ((uint)h & 0x8000u) << 16;
  const uint e = ((uint)h >> 10) & 0x1fu;
  uint m = (uint)h & 0x3ffu;
  if (e == 0x1fu) {
    return golf_bits_f32(sign | 0x7f800000u | (m << 13));
  }
  if (e != 0) {
    return golf_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
  }
  if (m == 0) {
    return golf_bits_f32(sign);
  }
  // Subnormal: m·2^-24, normalised.
  uint exp = 113u;
  while ((m & 0x400u) == 0) {
    m <<= 1;
    exp--;
  }
  return golf_bits_f32(sign | (exp << 23) | ((m & 0x3ffu) << 13));
#endif
}

// to_f32 widens a stored element to float (exact for every type).
GOLF_DEV float to_f32(float x) { return x; }
GOLF_DEV float to_f32(bf16 x) { return golf_bits_f32((uint)x.bits << 16); }
GOLF_DEV float to_f32(fp16 x) { return fp16_bits_f32(x.bits); }

// from_f32<T> rounds a float to T, to nearest even.
template <typename T>
GOLF_DEV T from_f32(float f);
template <>
GOLF_DEV float from_f32<float>(float f) {
  return f;
}
template <>
GOLF_DEV bf16 from_f32<bf16>(float f) {
  bf16 b;
  b.bits = bf16_round_bits(f);
  return b;
}
template <>
GOLF_DEV fp16 from_f32<fp16>(float f) {
  fp16 h;
  h.bits = fp16_round_bits(f);
  return h;
}

// golf_bits<T> returns the 16 bits of a bf16 or fp16 element.
GOLF_DEV u16 golf_bits(bf16 x) { return x.bits; }
GOLF_DEV u16 golf_bits(fp16 x) { return x.bits; }

// golf_pack2<T>(lo, hi): two floats rounded to T and packed into 32 bits,
// lo in bits 0–15 (the lower-indexed element of an mma fragment pair).
template <typename T>
GOLF_DEV uint golf_pack2(float lo, float hi) {
  return (uint)golf_bits(from_f32<T>(lo)) | ((uint)golf_bits(from_f32<T>(hi)) << 16);
}

// golf_unpack_lo/hi<T>: the elements of a packed pair, as floats.
template <typename T>
GOLF_DEV float golf_unpack_lo(uint p) {
  T x;
  x.bits = (u16)(p & 0xffffu);
  return to_f32(x);
}
template <typename T>
GOLF_DEV float golf_unpack_hi(uint p) {
  T x;
  x.bits = (u16)(p >> 16);
  return to_f32(x);
}

// golf_lane is the thread's lane in its warp (blocks are 1-D).
GOLF_DEV uint golf_lane() { return threadIdx.x & 31u; }

// golf_warp_sum: Σ over the 32 lanes, every lane gets the same value (an
// xor butterfly: at each step both partners add the same two numbers, so
// the result is bitwise identical on every lane and on every run).
GOLF_DEV float golf_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) {
    v += __shfl_xor_sync(GOLF_FULL_MASK, v, o);
  }
  return v;
}

// golf_warp_max: max over the 32 lanes, on every lane.
GOLF_DEV float golf_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(GOLF_FULL_MASK, v, o));
  }
  return v;
}

// golf_quad_sum / golf_quad_max: over the 4 lanes of a quad (lanes 4g..4g+3,
// the threads that share a row of an mma accumulator).
GOLF_DEV float golf_quad_sum(float v) {
  v += __shfl_xor_sync(GOLF_FULL_MASK, v, 1);
  v += __shfl_xor_sync(GOLF_FULL_MASK, v, 2);
  return v;
}
GOLF_DEV float golf_quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(GOLF_FULL_MASK, v, 1));
  v = fmaxf(v, __shfl_xor_sync(GOLF_FULL_MASK, v, 2));
  return v;
}

// golf_block_sum: Σ of v over the block (blockDim.x a multiple of 32, at
// most 1024), returned to every thread. Warp sums go to scratch (≥ 32
// floats of shared memory), then every thread adds the warp sums in warp
// order: a fixed order for any block size, powers of two or not. Every
// thread of the block must call it (it holds barriers). Another
// golf_block_sum may reuse scratch at once (its first barrier waits for
// every reader of this one); any other write to scratch needs a
// __syncthreads() first.
GOLF_DEV float golf_block_sum(float v, float* scratch) {
  const uint nwarps = blockDim.x / 32u;
  v = golf_warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (golf_lane() == 0) {
    scratch[threadIdx.x / 32u] = v;
  }
  __syncthreads();
  float total = 0.0f;
  for (uint w = 0; w < nwarps; w++) {
    total += scratch[w];
  }
  return total;
}

// golf_mma16816<T>: d += a·b for one warp, the m16n8k16 tensor-core product
// of PTX's mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32
// (T = bf16 or fp16; sm_80+). With g = lane/4 and q = lane%4, the
// fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16") are:
//	a[0] = A[g][2q, 2q+1]      a[1] = A[g+8][2q, 2q+1]
//	a[2] = A[g][2q+8, 2q+9]    a[3] = A[g+8][2q+8, 2q+9]       (A 16×16)
//	b[0] = B[2q, 2q+1][g]      b[1] = B[2q+8, 2q+9][g]          (B 16×8)
//	d[0..1] = D[g][2q, 2q+1]   d[2..3] = D[g+8][2q, 2q+1]       (D 16×8, float)
// each pair packed lower index in the low 16 bits. Every lane of the warp
// must call it with converged control flow.
template <typename T>
GOLF_DEV void golf_mma16816(float (&d)[4], const uint (&a)[4], const uint (&b)[2]);

#if GOLF_PTX
template <>
GOLF_DEV void golf_mma16816<bf16>(float (&d)[4], const uint (&a)[4], const uint (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
GOLF_DEV void golf_mma16816<fp16>(float (&d)[4], const uint (&a)[4], const uint (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#else
// The same product with warp shuffles, k ascending in float (the tensor
// core's own order of the additions is the hardware's): each lane
// fetches the pairs of A's rows g, g+8 and B's columns 2q, 2q+1 it needs
// from the lanes that hold them.
template <typename T>
GOLF_DEV void golf_mma16816_shfl(float (&d)[4], const uint (&a)[4], const uint (&b)[2]) {
  const uint lane = golf_lane();
  const uint g = lane >> 2, q = lane & 3u;
  for (uint k = 0; k < 16u; k += 2u) {
    const uint holder = (k % 8u) / 2u;  // the q of the lanes holding column pair k, k+1
    const uint ra = k < 8u ? 0u : 2u;
    const uint rb = k < 8u ? 0u : 1u;
    const uint a_row = __shfl_sync(GOLF_FULL_MASK, a[ra], g * 4u + holder);
    const uint a_row8 = __shfl_sync(GOLF_FULL_MASK, a[ra + 1u], g * 4u + holder);
    const uint b_col0 = __shfl_sync(GOLF_FULL_MASK, b[rb], (2u * q) * 4u + holder);
    const uint b_col1 = __shfl_sync(GOLF_FULL_MASK, b[rb], (2u * q + 1u) * 4u + holder);
    const float x0 = golf_unpack_lo<T>(a_row), x1 = golf_unpack_hi<T>(a_row);
    const float y0 = golf_unpack_lo<T>(a_row8), y1 = golf_unpack_hi<T>(a_row8);
    const float c00 = golf_unpack_lo<T>(b_col0), c01 = golf_unpack_hi<T>(b_col0);
    const float c10 = golf_unpack_lo<T>(b_col1), c11 = golf_unpack_hi<T>(b_col1);
    // One product added at a time, k ascending: the order of a scalar
    // loop (the portable kernels'), so that in the emulator a tc kernel
    // that accumulates as the portable one does gets its float bits.
    d[0] += x0 * c00;
    d[0] += x1 * c01;
    d[1] += x0 * c10;
    d[1] += x1 * c11;
    d[2] += y0 * c00;
    d[2] += y1 * c01;
    d[3] += y0 * c10;
    d[3] += y1 * c11;
  }
}
template <>
GOLF_DEV void golf_mma16816<bf16>(float (&d)[4], const uint (&a)[4], const uint (&b)[2]) {
  golf_mma16816_shfl<bf16>(d, a, b);
}
template <>
GOLF_DEV void golf_mma16816<fp16>(float (&d)[4], const uint (&a)[4], const uint (&b)[2]) {
  golf_mma16816_shfl<fp16>(d, a, b);
}
#endif

// golf_ld_pair reads two consecutive 16-bit elements p[0], p[1] as one
// packed 32-bit fragment register (p 4-byte aligned).
GOLF_DEV uint golf_ld_pair(const u16* p) { return *reinterpret_cast<const uint*>(p); }

// golf_gather_pair packs p[0] and p[stride] (a column pair of a row-major
// tile: the fragments of an operand stored the other way round).
GOLF_DEV uint golf_gather_pair(const u16* p, uint stride) { return (uint)p[0] | ((uint)p[stride] << 16); }

// golf_smem_addr is the shared-memory address of a generic pointer into
// shared memory (what ldmatrix and cp.async take).
#if GOLF_PTX
GOLF_DEV uint golf_smem_addr(const void* p) {
  uint a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
#endif

// golf_ldmatrix_x4: PTX's ldmatrix.sync.aligned.m8n8.x4.shared.b16, four
// 8×8 matrices of 16-bit elements from shared memory for one warp. Lane l
// passes the address of row l % 8 of matrix l / 8 (16 bytes, 16-byte
// aligned); with g = lane / 4 and q = lane % 4, r[i] receives elements
// (g, 2q) and (g, 2q + 1) of matrix i, the lower column in the low 16
// bits: the layout of an mma.m16n8k16 A fragment (matrices 0..3 = rows
// 0–7 and 8–15 of k 0–7, then of k 8–15, in golf_mma16816's a[] order when
// the rows are passed so) and of a B fragment stored n-major.
// golf_ldmatrix_x4_trans (.trans): r[i] receives elements (2q, g) and
// (2q + 1, g) of matrix i: the fragments of the transposed matrices (a B
// fragment from a k-major tile, V's in attention). Every lane of the warp
// calls it, with converged control flow. Off the GPU each lane fetches
// its elements through the row addresses of the lanes that hold them.
GOLF_DEV void golf_ldmatrix_x4(uint (&r)[4], const u16* row);
GOLF_DEV void golf_ldmatrix_x4_trans(uint (&r)[4], const u16* row);

#if GOLF_PTX
GOLF_DEV void golf_ldmatrix_x4(uint (&r)[4], const u16* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(golf_smem_addr(row)));
}
GOLF_DEV void golf_ldmatrix_x4_trans(uint (&r)[4], const u16* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(golf_smem_addr(row)));
}
#else
GOLF_DEV void golf_ldmatrix_x4(uint (&r)[4], const u16* row) {
  const uint lane = golf_lane(), g = lane >> 2, q = lane & 3u;
  const u64 mine = (u64)row;
  for (uint i = 0; i < 4u; i++) {
    const u16* p = (const u16*)__shfl_sync(GOLF_FULL_MASK, mine, 8u * i + g);
    r[i] = (uint)p[2u * q] | ((uint)p[2u * q + 1u] << 16);
  }
}
GOLF_DEV void golf_ldmatrix_x4_trans(uint (&r)[4], const u16* row) {
  const uint lane = golf_lane(), g = lane >> 2, q = lane & 3u;
  const u64 mine = (u64)row;
  for (uint i = 0; i < 4u; i++) {
    const u16* p0 = (const u16*)__shfl_sync(GOLF_FULL_MASK, mine, 8u * i + 2u * q);
    const u16* p1 = (const u16*)__shfl_sync(GOLF_FULL_MASK, mine, 8u * i + 2u * q + 1u);
    r[i] = (uint)p0[g] | ((uint)p1[g] << 16);
  }
}
#endif

// golf_cp_async16: PTX's cp.async.cg.shared.global, 16 bytes from global
// src to shared dst (both 16-byte aligned), asynchronous: the copy is done
// only once a golf_cp_async_wait<N> of the issuing thread covers its
// group. golf_cp_async_commit closes the thread's open group
// (cp.async.commit_group); golf_cp_async_wait<N> waits until at most the
// thread's N most recent groups are pending (cp.async.wait_group N). A
// wait covers only the issuing thread's copies: another thread reads the
// data after the issuer's wait and a __syncthreads(). On the emulator
// (cuda_emu.h) a destination read before its wait reads NaN; off the GPU
// otherwise (GOLF_NO_PTX) the copy is made at once.
GOLF_DEV void golf_cp_async16(void* dst, const void* src) {
#if GOLF_PTX
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(golf_smem_addr(dst)), "l"(src) : "memory");
#elif defined(GOLF_CUDA_EMU)
  golf_cuda::cp_async(dst, src, 16u);
#else
  for (uint i = 0; i < 4u; i++) {
    ((uint*)dst)[i] = ((const uint*)src)[i];
  }
#endif
}
GOLF_DEV void golf_cp_async_commit() {
#if GOLF_PTX
  asm volatile("cp.async.commit_group;" ::: "memory");
#elif defined(GOLF_CUDA_EMU)
  golf_cuda::cp_async_commit();
#endif
}
template <int N>
GOLF_DEV void golf_cp_async_wait() {
#if GOLF_PTX
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#elif defined(GOLF_CUDA_EMU)
  golf_cuda::cp_async_wait((unsigned)N);
#endif
}

// Kernel entry points. Every kernel exists in the portable flavour; the
// GEMM and attention kernels also in the tc flavour for half and bfloat.
// The host resolves a flavour's name for the other kernels to the portable
// one (cuda.Kernel.Name), so identical code is never compiled twice.
// GOLF_KERNEL(name, threads) declares an extern "C"
// kernel (its host name is name) whose launch bound is threads: the launch
// configuration table (cuda/launch.go) gives every kernel exactly that
// block size, and a tagged test checks the compiled bound against it.
#define GOLF_KERNEL(name, threads) extern "C" __global__ void __launch_bounds__(threads) name

// GOLF_NAME(base, flavour, elem) pastes a host name: base_flavour_elem.
#define GOLF_NAME(base, fl, tname) base##_##fl##_##tname

// GOLF_INSTANTIATE(m) expands m(tname, T) for the element types selected
// with -DGOLF_ELEM_float, -DGOLF_ELEM_half, -DGOLF_ELEM_bfloat (one per
// NVRTC program, so that a device without bf16 can still compile the
// others) or -DGOLF_ELEM_all (the emulator). tname is the host-name
// spelling shared with the Metal kernels.
#if defined(GOLF_ELEM_float) || defined(GOLF_ELEM_all)
#define GOLF_IF_FLOAT(x) x
#else
#define GOLF_IF_FLOAT(x)
#endif
#if defined(GOLF_ELEM_half) || defined(GOLF_ELEM_all)
#define GOLF_IF_HALF(x) x
#else
#define GOLF_IF_HALF(x)
#endif
#if defined(GOLF_ELEM_bfloat) || defined(GOLF_ELEM_all)
#define GOLF_IF_BFLOAT(x) x
#else
#define GOLF_IF_BFLOAT(x)
#endif
#define GOLF_INSTANTIATE(m) GOLF_IF_FLOAT(m(float, float)) GOLF_IF_HALF(m(half, fp16)) GOLF_IF_BFLOAT(m(bfloat, bf16))
// GOLF_INSTANTIATE_16 is GOLF_INSTANTIATE for the 16-bit types only: the
// tc kernels, which exist in half and bfloat (in float the tc flavour is
// the portable kernel, so that fp32 products stay exact).
#define GOLF_INSTANTIATE_16(m) GOLF_IF_HALF(m(half, fp16)) GOLF_IF_BFLOAT(m(bfloat, bf16))

#endif  // GOLF_PRELUDE_CUH
