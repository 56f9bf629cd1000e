// cuda_emu.h: the CUDA C++ prelude of the kernel emulator. The stand-in
// driver's build includes it before each kernel file (cuda/kernels/*.cu,
// compiled as C++17 by g++), so that the CUDA sources NVRTC compiles for
// the GPU compile unchanged for the CPU, over the runtime of package kemu
// (runtime.h):
//
//   - qualifiers: __global__, __device__, __host__, __forceinline__,
//     __launch_bounds__(...) vanish; __align__(n) is the GNU aligned
//     attribute; __restrict__ is __restrict;
//   - __shared__ is thread_local (static at block scope, as C++ implies):
//     the threads of one block run as fibers on one OS thread, and each OS
//     thread runs one block at a time, so a __shared__ variable is shared by
//     exactly the threads of one block. `extern __shared__ T name[];` (the
//     dynamic shared memory) refers to a thread_local array the build
//     defines for each such name (kMaxDynamicShared bytes, 16-byte aligned;
//     two names do not alias here as they do on a GPU);
//   - threadIdx, blockIdx, blockDim, gridDim (uint3) and warpSize read the
//     running fiber's context (golf_emu::current);
//   - __syncthreads() is the runtime's barrier (every thread of the block at
//     the same call site);
//   - the warp intrinsics __shfl_sync, __shfl_up_sync, __shfl_down_sync,
//     __shfl_xor_sync, __ballot_sync, __any_sync, __all_sync and __syncwarp
//     are collectives: a rendezvous of the 32 fibers of the warp (lanes
//     32w..32w+31 of a 1-D block), computed at once when every lane that
//     has not returned has arrived at the same call site. The mask must be
//     the same on every lane and name exactly the lanes that take part: a
//     lane named in it that has returned (undefined behaviour on a GPU,
//     where the call may hang), a lane not named that calls, or a shuffle
//     from a lane outside the mask fails the launch, naming the call site.
//     width is a power of two up to 32, the same on every lane; the source
//     lane, delta and lane mask may differ per lane, as on the GPU; which
//     lane a shuffle reads is PTX's shfl.sync rule (shfl_fn below);
//   - __popc, __popcll, __ffs, __clz, __brev; __float_as_uint and friends;
//     min and max for integers and floats; the float math of <cmath>
//     (expf, logf, tanhf, ...; __expf and the other fast intrinsics are the
//     precise functions here).
//
// Floating point: no contraction of a·b + c into a fused multiply-add (every
// operation rounds once, as the Go reference does); NVRTC contracts by
// default (--fmad=true), so the GPU's results may differ in the last bits.
//
// The emulator cannot check (the GPU run does): timing, out-of-bounds
// accesses that stay inside an allocation, races between blocks, atomics
// (none in golf's kernels; a kernel using one does not compile here), the
// order in which the hardware's tensor cores add (golf_mma16816's fallback
// adds k in ascending order), and anything PTX-specific (inline asm
// compiles only for the GPU: golf_prelude.cuh's GOLF_PTX is 0 here).
#ifndef GOLF_CUDA_EMU_H
#define GOLF_CUDA_EMU_H

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "runtime.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ thread_local
#define __constant__ const
#define GOLF_CUDA_EMU 1

namespace golf_cuda {

// kMaxDynamicShared is the size of each `extern __shared__` array: the most
// dynamic shared memory a block may use on any architecture golf supports
// (227 KiB on sm_90).
constexpr unsigned kMaxDynamicShared = 227u << 10;

struct uint3 {
  unsigned int x, y, z;
};

inline uint3 make_uint3(const uint32_t (&v)[3]) { return uint3{v[0], v[1], v[2]}; }

inline const golf_emu::ThreadCtx& ctx() {
  if (golf_emu::current == nullptr) golf_emu::fail("a CUDA builtin read outside a launch");
  return *golf_emu::current;
}

}  // namespace golf_cuda

using golf_cuda::uint3;
typedef golf_cuda::uint3 dim3;

#define threadIdx (golf_cuda::make_uint3(golf_cuda::ctx().thread_position_in_threadgroup))
#define blockIdx (golf_cuda::make_uint3(golf_cuda::ctx().threadgroup_position_in_grid))
#define blockDim (golf_cuda::make_uint3(golf_cuda::ctx().threads_per_threadgroup))
#define gridDim (golf_cuda::make_uint3(golf_cuda::ctx().threadgroups_per_grid))
#define warpSize 32

// __syncthreads: every thread of the block at this call site.
#define __syncthreads() golf_emu::barrier(__FILE__, __LINE__)

namespace golf_cuda {

// The lane's own bit, and the lanes of the caller's warp.
inline unsigned lane() { return ctx().thread_index_in_simdgroup; }

// A warp operand: the value, the mask, the lane argument (source lane,
// delta or lane mask) and the width.
template <class T>
struct WarpArg {
  T value;
  unsigned mask;
  int k;
  int width;
  const char* file;  // the call site, for messages
  unsigned line;
};

enum WarpKind { kIdx, kUp, kDown, kXor, kBallot, kAny, kAll, kSync };

inline const char* warp_name(int kind) {
  switch (kind) {
    case kIdx:
      return "__shfl_sync";
    case kUp:
      return "__shfl_up_sync";
    case kDown:
      return "__shfl_down_sync";
    case kXor:
      return "__shfl_xor_sync";
    case kBallot:
      return "__ballot_sync";
    case kAny:
      return "__any_sync";
    case kAll:
      return "__all_sync";
    default:
      return "__syncwarp";
  }
}

template <class T>
inline const WarpArg<T>& in(const golf_emu::Lanes& L, unsigned l) {
  return *static_cast<const WarpArg<T>*>(L.in[l]);
}

// check_mask fails the launch unless every taking-part lane passed the
// same mask, naming exactly the lanes present (those of the warp that have
// not returned), and the same width.
template <class T>
inline void check_mask(const golf_emu::Lanes& L, int kind) {
  unsigned first = 32;
  for (unsigned l = 0; l < 32; l++) {
    if ((L.mask >> l) & 1u) {
      first = l;
      break;
    }
  }
  if (first == 32) return;
  const unsigned mask = in<T>(L, first).mask;
  const int width = in<T>(L, first).width;
  const char* file = golf_emu::base_name(in<T>(L, first).file);
  const unsigned line = in<T>(L, first).line;
  for (unsigned l = 0; l < 32; l++) {
    if (((L.mask >> l) & 1u) == 0) continue;
    if (in<T>(L, l).mask != mask)
      golf_emu::fail("%s (%s:%u): lane %u passes mask 0x%08x, lane %u 0x%08x: the mask must be the same on every lane",
                     warp_name(kind), file, line, l, in<T>(L, l).mask, first, mask);
    if (in<T>(L, l).width != width)
      golf_emu::fail("%s (%s:%u): lane %u passes width %d, lane %u %d: the width must be the same on every lane",
                     warp_name(kind), file, line, l, in<T>(L, l).width, first, width);
  }
  if (mask != L.mask) {
    const unsigned gone = mask & ~L.mask, extra = L.mask & ~mask;
    if (gone != 0)
      golf_emu::fail("%s (%s:%u) with mask 0x%08x: lane(s) 0x%08x named in the mask have returned from the kernel "
                     "(undefined behaviour on a GPU)",
                     warp_name(kind), file, line, mask, gone);
    golf_emu::fail("%s (%s:%u) with mask 0x%08x: lane(s) 0x%08x call it without being named in the mask",
                   warp_name(kind), file, line, mask, extra);
  }
  if (width < 1 || width > 32 || (width & (width - 1)) != 0)
    golf_emu::fail("%s (%s:%u): width %d is not a power of two from 1 to 32", warp_name(kind), file, line, width);
}

// shfl_fn is PTX's shfl.sync (which CUDA's __shfl*_sync compile to, with
// c = ((32 − width) << 8) | (up ? 0 : 31)): the source lane j of lane l is
//	idx:  first lane of l's segment | (k & (width − 1))
//	up:   l − k, kept if j ≥ the first lane of l's segment
//	down: l + k, kept if j ≤ the last lane of l's segment
//	bfly: l ^ k, kept if j ≤ the last lane of l's segment
// with k's low 5 bits; a source not kept is l itself (its own value).
template <class T, int Kind>
inline void shfl_fn(const golf_emu::Lanes& L) {
  check_mask<T>(L, Kind);
  for (unsigned l = 0; l < 32; l++) {
    if (((L.mask >> l) & 1u) == 0) continue;
    const WarpArg<T>& a = in<T>(L, l);
    const unsigned segmask = (32u - unsigned(a.width)) & 31u;
    const unsigned cval = Kind == kUp ? 0u : 31u;
    const unsigned max_lane = (l & segmask) | (cval & ~segmask & 31u);
    const unsigned min_lane = l & segmask;
    const unsigned b = unsigned(a.k) & 31u;
    int j = int(l);
    bool keep = true;
    switch (Kind) {
      case kIdx:
        j = int(min_lane | (b & ~segmask & 31u));
        keep = j <= int(max_lane);
        break;
      case kUp:
        j = int(l) - int(b);
        keep = j >= int(max_lane);
        break;
      case kDown:
        j = int(l + b);
        keep = j <= int(max_lane);
        break;
      case kXor:
        j = int(l ^ b);
        keep = j <= int(max_lane);
        break;
    }
    const unsigned src = keep ? unsigned(j) : l;
    if (((L.mask >> src) & 1u) == 0)
      golf_emu::fail("%s (%s:%u): lane %u reads lane %u, which is not in the mask 0x%08x (undefined value on a GPU)",
                     warp_name(Kind), golf_emu::base_name(a.file), a.line, l, src, L.mask);
    *static_cast<T*>(L.out[l]) = in<T>(L, src).value;
  }
}

template <int Kind>
inline void vote_fn(const golf_emu::Lanes& L) {
  check_mask<int>(L, Kind);
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; l++)
    if (((L.mask >> l) & 1u) != 0 && in<int>(L, l).value != 0) ballot |= 1u << l;
  unsigned result = 0;
  switch (Kind) {
    case kBallot:
      result = ballot;
      break;
    case kAny:
      result = ballot != 0;
      break;
    case kAll:
      result = ballot == L.mask;
      break;
    default:
      result = 0;
  }
  for (unsigned l = 0; l < 32; l++)
    if (((L.mask >> l) & 1u) != 0) *static_cast<unsigned*>(L.out[l]) = result;
}

template <class T, int Kind>
inline T shfl(unsigned mask, T v, int k, int width, const char* file, unsigned line) {
  static_assert(std::is_trivially_copyable<T>::value, "a shuffled value must be trivially copyable");
  const WarpArg<T> a{v, mask, k, width, file, line};
  T out{};
  golf_emu::collective(&shfl_fn<T, Kind>, warp_name(Kind), file, line, &a, &out);
  return out;
}

template <int Kind>
inline unsigned vote(unsigned mask, int pred, const char* file, unsigned line) {
  const WarpArg<int> a{pred, mask, 0, 32, file, line};
  unsigned out = 0;
  golf_emu::collective(&vote_fn<Kind>, warp_name(Kind), file, line, &a, &out);
  return out;
}

}  // namespace golf_cuda

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32, const char* file = __builtin_FILE(),
                     unsigned line = __builtin_LINE()) {
  return golf_cuda::shfl<T, golf_cuda::kIdx>(mask, v, src, width, file, line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                        const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return golf_cuda::shfl<T, golf_cuda::kUp>(mask, v, int(delta), width, file, line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                          const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return golf_cuda::shfl<T, golf_cuda::kDown>(mask, v, int(delta), width, file, line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,
                         const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return golf_cuda::shfl<T, golf_cuda::kXor>(mask, v, lane_mask, width, file, line);
}
inline unsigned __ballot_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                              unsigned line = __builtin_LINE()) {
  return golf_cuda::vote<golf_cuda::kBallot>(mask, pred, file, line);
}
inline int __any_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                      unsigned line = __builtin_LINE()) {
  return int(golf_cuda::vote<golf_cuda::kAny>(mask, pred, file, line));
}
inline int __all_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                      unsigned line = __builtin_LINE()) {
  return int(golf_cuda::vote<golf_cuda::kAll>(mask, pred, file, line));
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       unsigned line = __builtin_LINE()) {
  golf_cuda::vote<golf_cuda::kSync>(mask, 0, file, line);
}

// Integer intrinsics.
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}

// Bit casts.
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline int __float_as_int(float f) {
  int i;
  std::memcpy(&i, &f, 4);
  return i;
}

// min and max (CUDA's device overloads).
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float max(float a, float b) { return fmaxf(a, b); }

// cp.async (sm_80's asynchronous global-to-shared copies; golf_prelude.cuh's
// golf_cp_async16, golf_cp_async_commit and golf_cp_async_wait call these
// on the emulator). Each thread keeps its own pending copies, grouped as
// PTX groups them: a copy joins the thread's open group, a commit closes
// it, and a wait for n completes every copy of the groups committed before
// the thread's n most recent (copies of the open group stay pending). A
// copy is made at the wait that completes it, not at the issue, and the
// issue fills the destination with 0xff bytes (NaN in float, bf16 and
// fp16): a read of it before its wait, a wait left out, or a wait by
// another thread than the issuing one (which covers only that thread's
// copies) reads NaN, where on a GPU it reads stale data some of the time.
// A threadgroup's pending copies are dropped when it ends.
namespace golf_cuda {

struct AsyncCopy {
  void* dst;
  const void* src;
  unsigned bytes;
  unsigned group;  // the number of commits before the issue
};

struct AsyncState {
  uint64_t serial = 0;  // the threadgroup (ThreadCtx::group_serial) this state is for
  unsigned commits = 0;
  unsigned npending = 0;
  AsyncCopy pending[64];
};

inline AsyncState& async_state() {
  // The threads of a block run on one OS thread, one block at a time.
  thread_local AsyncState states[1024];
  const golf_emu::ThreadCtx& t = ctx();
  AsyncState& s = states[t.thread_index_in_threadgroup];
  if (s.serial != t.group_serial) {
    s.serial = t.group_serial;
    s.commits = 0;
    s.npending = 0;
  }
  return s;
}

inline void cp_async(void* dst, const void* src, unsigned bytes) {
  AsyncState& s = async_state();
  if (s.npending == 64) golf_emu::fail("cp.async: more than 64 copies pending in one thread (a wait left out?)");
  std::memset(dst, 0xff, bytes);
  s.pending[s.npending++] = AsyncCopy{dst, src, bytes, s.commits};
}

inline void cp_async_commit() { async_state().commits++; }

inline void cp_async_wait(unsigned n) {
  AsyncState& s = async_state();
  unsigned kept = 0;
  for (unsigned i = 0; i < s.npending; i++) {
    const AsyncCopy& c = s.pending[i];
    // Group c.group is committed when c.group < commits; it is among the
    // n most recent when c.group + n >= commits.
    if (c.group < s.commits && c.group + n < s.commits) {
      std::memcpy(c.dst, c.src, c.bytes);
    } else {
      s.pending[kept++] = c;
    }
  }
  s.npending = kept;
}

}  // namespace golf_cuda

// Fast-math intrinsics: the precise functions.
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

#endif  // GOLF_CUDA_EMU_H
