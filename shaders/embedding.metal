// embedding: the token embedding gather, forward and backward.
//
//	out[n,c]       = w[ids[n],c]                          (forward)
//	dw[ids[n],c]  += dout[n,c]   for n = 0, 1, ..., N−1   (backward, in order)
//	ids int (N); w, out, dout T; dw float (V, C)
//
// An id outside [0, V) is a programmer error the host cannot see without a
// sync: the forward writes a zero row for it and the backward skips it.
//
// The forward copies one element per thread (no rounding: w and out share
// T). The backward is deterministic without atomics and adds in exactly the
// order of the CPU backend (dw[v,c] + dout[n1,c] + dout[n2,c] + ... over
// the tokens n1 < n2 < ... with id v): threadgroup (v, bc) owns vocabulary
// row v and the W columns bc·W .. bc·W+W−1, one column per thread, and
// walks the ids in chunks of W tokens. Per chunk, every thread tests one
// token (ids[n] == v), a prefix sum over the threadgroup compacts the
// matching token indices, in order, into threadgroup memory, and each
// thread adds those tokens' dout to its column's running sum, kept in a
// register from dw[v,c] until the single store at the end. The alternative,
// one thread per column walking all N tokens, has only C threads of
// N-long dependent read-modify-write chains: far too little parallelism for
// a GPU. Here the work is V·ceil(C/W)·N id tests (cheap, the ids stay in
// cache) plus one read of every dout row. The flavours differ in the prefix
// sum:
//   simd:     simd_prefix_exclusive_sum and simd_sum per simdgroup, then the
//             simdgroup totals from threadgroup memory;
//   portable: a Hillis–Steele scan in threadgroup memory.
// Host names: embedding_{fwd,bwd}_<fl>_<T>.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

// embedding_fwd: one thread per element of out.
// Baseline (N = 8192, C = 512, V = 1024, bf16): 0 FLOP; out written and w
// rows read, 2·N·C·2 + 4·N ≈ 16.8 MB (w's 1 MB mostly from cache: ≈ 9.4 MB
// from memory); no threadgroup memory, 256 threads; roofline ≈ 0.1–0.17 ms
// (bandwidth).
template <typename T, bool Simd>
[[kernel]] void embedding_fwd(
    device const int* ids [[buffer(0)]],      // (N)
    device const T* w [[buffer(1)]],          // (V, C)
    device T* out [[buffer(2)]],              // (N, C)
    constant EmbeddingArgs& args [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= args.rows * args.cols) {
    return;
  }
  const uint n = i / args.cols;
  const uint c = i - n * args.cols;
  const uint id = uint(ids[n]);
  out[i] = id < args.vocab ? w[ulong(id) * args.cols + c] : static_cast<T>(0.0f);
}

// embedding_bwd_simd: the backward, simd flavour; threadgroup (v, bc) of W
// threads (W a multiple of 32 up to 1024, the host uses W = 512 for C = 512).
// Baseline: N·C ≈ 4.2 MFLOP of additions; dout read once (N·C·2 ≈ 8.4 MB)
// and dw read and written (2·V·C·4 ≈ 4.2 MB) ≈ 12.6 MB from memory, plus
// V·ceil(C/W)·N·4 ≈ 33.6 MB of id reads from cache; threadgroup memory
// 4 KB + 128 B, 512 threads, 1024 threadgroups; roofline
// max(1.2 µs, 126 µs) ≈ 0.13 ms (bandwidth; the id scan — 16 chunks of a
// compare, a prefix sum and 3 barriers per threadgroup — should hide under
// it).
template <typename T>
[[kernel]] void embedding_bwd_simd(
    device const int* ids [[buffer(0)]],      // (N)
    device const T* dout [[buffer(1)]],       // (N, C)
    device float* dw [[buffer(2)]],           // (V, C)
    constant EmbeddingArgs& args [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint2 ntg [[threads_per_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup uint hits[1024];   // indices of the chunk's tokens with id v, in order
  threadgroup uint counts[32];   // matches per simdgroup
  const uint nthreads = ntg.x;
  const uint nsg = (nthreads + 31) / 32;
  const uint v = group.x;
  const uint c = group.y * nthreads + tid;
  const bool owns = c < args.cols;
  const ulong at = ulong(v) * args.cols + c;
  float acc = owns ? dw[at] : 0.0f;
  for (uint base = 0; base < args.rows; base += nthreads) {
    const uint n = base + tid;
    const uint hit = (n < args.rows && uint(ids[n]) == v) ? 1u : 0u;
    const uint before = simd_prefix_exclusive_sum(hit);
    const uint in_sg = simd_sum(hit);
    if (lane == 0) {
      counts[sg] = in_sg;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint offset = 0;
    uint total = 0;
    for (uint s = 0; s < nsg; s++) {
      offset += s < sg ? counts[s] : 0u;
      total += counts[s];
    }
    if (hit != 0) {
      hits[offset + before] = n;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (owns) {
      for (uint k = 0; k < total; k++) {
        acc += static_cast<float>(dout[ulong(hits[k]) * args.cols + c]);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // hits and counts are reused
  }
  if (owns) {
    dw[at] = acc;
  }
}

// embedding_bwd_portable: as embedding_bwd_simd with the prefix sum a
// Hillis–Steele scan in threadgroup memory (8 KB: the scan and the hit
// list; log2(W) more barriers per chunk).
template <typename T>
[[kernel]] void embedding_bwd_portable(
    device const int* ids [[buffer(0)]],      // (N)
    device const T* dout [[buffer(1)]],       // (N, C)
    device float* dw [[buffer(2)]],           // (V, C)
    constant EmbeddingArgs& args [[buffer(3)]],
    uint2 group [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint2 ntg [[threads_per_threadgroup]]) {
  threadgroup uint scan[1024];   // inclusive prefix sums of the hit flags
  threadgroup uint hits[1024];   // indices of the chunk's tokens with id v, in order
  const uint nthreads = ntg.x;
  const uint v = group.x;
  const uint c = group.y * nthreads + tid;
  const bool owns = c < args.cols;
  const ulong at = ulong(v) * args.cols + c;
  float acc = owns ? dw[at] : 0.0f;
  for (uint base = 0; base < args.rows; base += nthreads) {
    const uint n = base + tid;
    const uint hit = (n < args.rows && uint(ids[n]) == v) ? 1u : 0u;
    scan[tid] = hit;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint d = 1; d < nthreads; d <<= 1) {
      const uint add = tid >= d ? scan[tid - d] : 0u;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      scan[tid] += add;
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    const uint total = scan[nthreads - 1];
    if (hit != 0) {
      hits[scan[tid] - 1] = n;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (owns) {
      for (uint k = 0; k < total; k++) {
        acc += static_cast<float>(dout[ulong(hits[k]) * args.cols + c]);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // scan and hits are reused
  }
  if (owns) {
    dw[at] = acc;
  }
}

#define instantiate_embedding(tname, T)                                              \
  instantiate_kernel("embedding_fwd_simd_" #tname, embedding_fwd, T, true)           \
  instantiate_kernel("embedding_fwd_portable_" #tname, embedding_fwd, T, false)      \
  instantiate_kernel("embedding_bwd_simd_" #tname, embedding_bwd_simd, T)            \
  instantiate_kernel("embedding_bwd_portable_" #tname, embedding_bwd_portable, T)

instantiate_embedding(float, float)
instantiate_embedding(half, half)
instantiate_embedding(bfloat, bfloat)
