// embedding: the token embedding gather, forward and backward
// (shaders/embedding.metal in CUDA).
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
// the tokens n1 < n2 < ... with id v): block (v, bc) of 256 threads owns
// vocabulary row v and the columns bc·256 .. bc·256+255, one per thread,
// and walks the ids in chunks of 256 tokens. Per chunk each thread tests
// one token (ids[n] == v); __ballot_sync and __popc give each hit its rank
// in the warp, the warp counts go through shared memory, and the matching
// token indices land in order in shared memory; then every thread adds
// those tokens' dout to its column's running sum, kept in a register from
// dw[v,c] to the single store at the end. Work: V·⌈C/256⌉·N id tests (the
// ids stay in L2) plus one read of every dout row. No tensor cores here:
// the tc flavour's names resolve to these kernels (cuda.Kernel.Name).
// Baseline (N = 8192, C = 512, V = 1024, bf16): forward 16.8 MB; backward
// 12.6 MB from memory + 67 MB of id reads from L2: ≈ 10–20 µs.
#include "golf_prelude.cuh"

#define EMBEDDING_THREADS 256

template <typename T>
__device__ void embedding_fwd(const int* ids, const T* w, T* out, EmbeddingArgs args) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= args.rows * args.cols) {
    return;
  }
  const uint n = i / args.cols;
  const uint c = i - n * args.cols;
  const uint id = (uint)ids[n];
  out[i] = id < args.vocab ? w[(u64)id * args.cols + c] : from_f32<T>(0.0f);
}

// embedding_bwd: grid (V, ⌈C/256⌉), 256 threads.
template <typename T>
__device__ void embedding_bwd(const int* ids, const T* dout, float* dw, EmbeddingArgs args) {
  __shared__ uint hits[EMBEDDING_THREADS];        // the chunk's tokens with id v, in order
  __shared__ uint counts[EMBEDDING_THREADS / 32];  // hits per warp
  const uint nwarps = EMBEDDING_THREADS / 32u;
  const uint lane = golf_lane(), warp = threadIdx.x / 32u;
  const uint v = blockIdx.x;
  const uint c = blockIdx.y * EMBEDDING_THREADS + threadIdx.x;
  const bool owns = c < args.cols;
  const u64 at = (u64)v * args.cols + c;
  float acc = owns ? dw[at] : 0.0f;
  for (uint base = 0; base < args.rows; base += EMBEDDING_THREADS) {
    const uint n = base + threadIdx.x;
    const bool hit = n < args.rows && (uint)ids[n] == v;
    const uint mask = __ballot_sync(GOLF_FULL_MASK, hit);
    const uint before = __popc(mask & ((1u << lane) - 1u));
    if (lane == 0) {
      counts[warp] = __popc(mask);
    }
    __syncthreads();
    uint offset = 0, total = 0;
    for (uint w = 0; w < nwarps; w++) {
      offset += w < warp ? counts[w] : 0u;
      total += counts[w];
    }
    if (hit) {
      hits[offset + before] = n;
    }
    __syncthreads();
    if (owns) {
      for (uint k = 0; k < total; k++) {
        acc += to_f32(dout[(u64)hits[k] * args.cols + c]);
      }
    }
    __syncthreads();  // hits and counts are reused
  }
  if (owns) {
    dw[at] = acc;
  }
}

#define EMBEDDING_KERNELS(fl, tname, T)                                                                     \
  GOLF_KERNEL(GOLF_NAME(embedding_fwd, fl, tname), EMBEDDING_THREADS)(const int* ids, const T* w, T* out,   \
                                                                      EmbeddingArgs args) {                 \
    embedding_fwd<T>(ids, w, out, args);                                                                    \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(embedding_bwd, fl, tname), EMBEDDING_THREADS)(const int* ids, const T* dout,        \
                                                                      float* dw, EmbeddingArgs args) {      \
    embedding_bwd<T>(ids, dout, dw, args);                                                                  \
  }

#define EMBEDDING_INSTANTIATE(tname, T) EMBEDDING_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(EMBEDDING_INSTANTIATE)
