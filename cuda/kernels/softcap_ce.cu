// softcap_ce: softcapped cross-entropy, forward (per-row loss), backward
// (dlogits) and both in one pass (shaders/softcap_ce.metal in CUDA).
//
//	th = tanh(logits[n,v]/cap);  z = cap·th                       (float32)
//	lse[n] = log Σ_v exp(z[n,v]);  loss[n] = lse[n] − z[n,targets[n]]   (forward)
//	dlogits[n,v] = scale·(p[n,v] − [v = targets[n]])·(1 − th²),  p = exp(z − lse)  (backward)
//	logits, dlogits T (N, V); targets int (N); loss float (N)
//
// One warp per row, 8 rows per block of 256 threads (grid ⌈N/8⌉), over
// golf_rows.cuh's warp rows (8-element chunks, lane l owning chunks l,
// l + 32, ...). All three kernels take the row's log-sum-exp from the one
// golf_ce_lse: each lane keeps an online log-sum-exp over its chunks in
// order (its running max m and Σ exp(z − m)); the warp combines them in
// fixed butterflies: M = max of the lanes' m, S = Σ s·exp(m − M),
// lse = M + log S. So softcap_ce_fused, which computes it once and writes
// both the loss and dlogits (its lanes keep their first chunks' logits in
// registers for the second pass), gives the bits of the forward and the
// backward run one after the other. A target outside [0, V) gives a NaN
// loss; in the backward it matches no column. No tensor cores here: the tc
// flavour's names resolve to these kernels.
// Baseline (N = 8192, V = 1024, bf16): forward 16.8 MB and ≈ 250 MFLOP of
// tanh and exp, backward 33.6 MB, fused 33.6 MB; 5–10 µs at 3.35 TB/s if
// the SFU keeps up.
#include "golf_rows.cuh"

#define SOFTCAP_CE_THREADS 256
#define SOFTCAP_CE_ROWS (SOFTCAP_CE_THREADS / 32)

template <typename T>
__device__ void softcap_ce_fwd(const T* logits, const int* targets, float* loss, CEArgs args) {
  const uint row = blockIdx.x * SOFTCAP_CE_ROWS + threadIdx.x / 32u;
  if (row >= args.rows) {
    return;
  }
  const T* lr = logits + (u64)row * args.vocab;
  golf_chunk<T> cache[1];
  float mx, logs;
  golf_ce_lse<T, 1>(lr, args.vocab, args.cap, cache, mx, logs);
  if (golf_lane() == 0) {
    loss[row] = golf_ce_loss<T>(lr, targets[row], args.vocab, args.cap, mx, logs);
  }
}

template <typename T>
__device__ void softcap_ce_bwd(const T* logits, const int* targets, T* dlogits, CEArgs args) {
  const uint row = blockIdx.x * SOFTCAP_CE_ROWS + threadIdx.x / 32u;
  if (row >= args.rows) {
    return;
  }
  constexpr uint K = GOLF_CE_CACHE;
  const u64 base = (u64)row * args.vocab;
  golf_chunk<T> cache[K];
  float mx, logs;
  golf_ce_lse<T, K>(logits + base, args.vocab, args.cap, cache, mx, logs);
  golf_ce_dlogits_row<T, K>(logits + base, targets[row], dlogits + base, args.vocab, args.cap, args.scale, mx, logs,
                            cache);
}

// softcap_ce_fused: the forward's loss and the backward's dlogits of a
// row from one log-sum-exp.
template <typename T>
__device__ void softcap_ce_fused(const T* logits, const int* targets, float* loss, T* dlogits, CEArgs args) {
  const uint row = blockIdx.x * SOFTCAP_CE_ROWS + threadIdx.x / 32u;
  if (row >= args.rows) {
    return;
  }
  constexpr uint K = GOLF_CE_CACHE;
  const u64 base = (u64)row * args.vocab;
  const int target = targets[row];
  golf_chunk<T> cache[K];
  float mx, logs;
  golf_ce_lse<T, K>(logits + base, args.vocab, args.cap, cache, mx, logs);
  if (golf_lane() == 0) {
    loss[row] = golf_ce_loss<T>(logits + base, target, args.vocab, args.cap, mx, logs);
  }
  golf_ce_dlogits_row<T, K>(logits + base, target, dlogits + base, args.vocab, args.cap, args.scale, mx, logs, cache);
}

#define SOFTCAP_CE_KERNELS(fl, tname, T)                                                                     \
  GOLF_KERNEL(GOLF_NAME(softcap_ce_fwd, fl, tname), SOFTCAP_CE_THREADS)(const T* logits, const int* targets, \
                                                                        float* loss, CEArgs args) {          \
    softcap_ce_fwd<T>(logits, targets, loss, args);                                                          \
  }                                                                                                          \
  GOLF_KERNEL(GOLF_NAME(softcap_ce_bwd, fl, tname), SOFTCAP_CE_THREADS)(const T* logits, const int* targets, \
                                                                        T* dlogits, CEArgs args) {           \
    softcap_ce_bwd<T>(logits, targets, dlogits, args);                                                       \
  }                                                                                                          \
  GOLF_KERNEL(GOLF_NAME(softcap_ce_fused, fl, tname), SOFTCAP_CE_THREADS)(                                   \
      const T* logits, const int* targets, float* loss, T* dlogits, CEArgs args) {                           \
    softcap_ce_fused<T>(logits, targets, loss, dlogits, args);                                               \
  }

#define SOFTCAP_CE_INSTANTIATE(tname, T) SOFTCAP_CE_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(SOFTCAP_CE_INSTANTIATE)
