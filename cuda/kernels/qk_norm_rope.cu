// qk_norm_rope: RMSNorm over each head of q or k, rotary embedding, per-head
// gain; forward and backward (shaders/qk_norm_rope.metal in CUDA).
//
//	rstd[n,h] = 1/sqrt(mean_d x[n,h,d]² + eps);  u = x·rstd
//	out[i]     = g[h]·(u[i]·cos(pθ_i) − u[i+D/2]·sin(pθ_i))      (forward)
//	out[i+D/2] = g[h]·(u[i]·sin(pθ_i) + u[i+D/2]·cos(pθ_i))
//	du = g[h]·Rᵀ(dout);  dx = rstd·(du − u·mean_d(du·u))        (backward)
//	dgain[h] += Σ_{n,d} dout[n,h,d]·R(u)[n,h,d]
//	x, out, dout, dx T (N, Hx, D); rstd float (N, Hx); gain, dgain float (Hx)
//
// p = n mod seq_len. cos(pθ_i) and sin(pθ_i) come from a table the host
// computes once in float64 (rope: float (seq_len, D/2, 2): cos, sin), so no
// kernel evaluates a transcendental function. One warp per head (n, h),
// 8 heads per block of 256 threads (grid ⌈N·Hx/8⌉): lane l handles the
// pairs (i, i+D/2) for i = l, l+32, ... < D/2 (D = 64: one pair per lane;
// D = 128: two). Sums over a head are float32 butterflies (golf_warp_sum).
// dgain is deterministic: the backward writes one partial Σ_d per head
// into partial (float (N, Hx)) and qk_norm_rope_dgain adds Σ_n partial[n,h]
// into dgain[h] in a fixed order (no atomics). No tensor cores here: the
// tc flavour's names resolve to these kernels (cuda.Kernel.Name).
// Baseline (q: N = 8192, H = 8, D = 64, bf16; k with Hkv = 4 is half):
// forward 16.8 MB + rstd 0.26 MB, backward 25.2 MB + 0.52 MB: 5–8 µs at
// 3.35 TB/s.
#include "golf_prelude.cuh"

#define QK_NORM_ROPE_THREADS 256
#define QK_NORM_ROPE_HEADS (QK_NORM_ROPE_THREADS / 32)

template <typename T>
__device__ void qk_norm_rope_fwd(const T* x, const float* rope, const float* gain, T* out, float* rstd,
                                 RopeArgs args) {
  const uint head = blockIdx.x * QK_NORM_ROPE_HEADS + threadIdx.x / 32u;  // n·Hx + h
  const uint lane = golf_lane();
  if (head >= args.rows * args.heads) {
    return;  // the whole warp: no shuffle is left waiting
  }
  const uint npairs = args.head_dim / 2u;
  const u64 base = (u64)head * args.head_dim;
  float ss = 0.0f;
  for (uint i = lane; i < npairs; i += 32u) {
    const float a = to_f32(x[base + i]);
    const float c = to_f32(x[base + i + npairs]);
    ss += a * a + c * c;
  }
  ss = golf_warp_sum(ss);
  const float rs = 1.0f / sqrtf(ss / (float)args.head_dim + args.eps);
  if (lane == 0) {
    rstd[head] = rs;
  }
  const uint n = head / args.heads;
  const float g = args.has_gain != 0 ? gain[head % args.heads] : 1.0f;
  const float* cs = rope + (u64)(n % args.seq_len) * npairs * 2u;
  for (uint i = lane; i < npairs; i += 32u) {
    const float a = to_f32(x[base + i]) * rs;
    const float c = to_f32(x[base + i + npairs]) * rs;
    const float cosv = cs[2u * i], sinv = cs[2u * i + 1u];
    out[base + i] = from_f32<T>(g * (a * cosv - c * sinv));
    out[base + i + npairs] = from_f32<T>(g * (a * sinv + c * cosv));
  }
}

// qk_norm_rope_bwd: dx and one dgain partial per head.
template <typename T>
__device__ void qk_norm_rope_bwd(const T* dout, const T* x, const float* rstd, const float* rope,
                                 const float* gain, T* dx, float* partial, RopeArgs args) {
  const uint head = blockIdx.x * QK_NORM_ROPE_HEADS + threadIdx.x / 32u;
  const uint lane = golf_lane();
  if (head >= args.rows * args.heads) {
    return;
  }
  const uint npairs = args.head_dim / 2u;
  const u64 base = (u64)head * args.head_dim;
  const uint n = head / args.heads;
  const float g = args.has_gain != 0 ? gain[head % args.heads] : 1.0f;
  const float rs = rstd[head];
  const float* cs = rope + (u64)(n % args.seq_len) * npairs * 2u;
  float dot = 0.0f;  // Σ_d du·u
  float dg = 0.0f;   // Σ_d dout·R(u)
  for (uint i = lane; i < npairs; i += 32u) {
    const float a = to_f32(x[base + i]) * rs;
    const float c = to_f32(x[base + i + npairs]) * rs;
    const float ga = to_f32(dout[base + i]);
    const float gc = to_f32(dout[base + i + npairs]);
    const float cosv = cs[2u * i], sinv = cs[2u * i + 1u];
    dg += ga * (a * cosv - c * sinv) + gc * (a * sinv + c * cosv);
    const float dua = g * (ga * cosv + gc * sinv);
    const float duc = g * (gc * cosv - ga * sinv);
    dot += dua * a + duc * c;
  }
  dot = golf_warp_sum(dot);
  dg = golf_warp_sum(dg);
  if (lane == 0) {
    partial[head] = dg;
  }
  const float m = dot / (float)args.head_dim;
  for (uint i = lane; i < npairs; i += 32u) {
    const float a = to_f32(x[base + i]) * rs;
    const float c = to_f32(x[base + i + npairs]) * rs;
    const float ga = to_f32(dout[base + i]);
    const float gc = to_f32(dout[base + i + npairs]);
    const float cosv = cs[2u * i], sinv = cs[2u * i + 1u];
    const float dua = g * (ga * cosv + gc * sinv);
    const float duc = g * (gc * cosv - ga * sinv);
    dx[base + i] = from_f32<T>(rs * (dua - a * m));
    dx[base + i + npairs] = from_f32<T>(rs * (duc - c * m));
  }
}

// qk_norm_rope_dgain: dgain[h] += Σ_n partial[n,h], one block of 256 per
// head h (grid Hx): each thread sums a fixed stride of n, then
// golf_block_sum in warp order. T is unused.
template <typename T>
__device__ void qk_norm_rope_dgain(const float* partial, float* dgain, RopeArgs args) {
  __shared__ float scratch[32];
  const uint h = blockIdx.x;
  if (h >= args.heads) {
    return;  // the whole block
  }
  float s = 0.0f;
  for (uint n = threadIdx.x; n < args.rows; n += blockDim.x) {
    s += partial[(u64)n * args.heads + h];
  }
  const float total = golf_block_sum(s, scratch);
  if (threadIdx.x == 0) {
    dgain[h] += total;
  }
}

#define QK_NORM_ROPE_KERNELS(fl, tname, T)                                                                  \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_fwd, fl, tname), QK_NORM_ROPE_THREADS)(                                \
      const T* x, const float* rope, const float* gain, T* out, float* rstd, RopeArgs args) {               \
    qk_norm_rope_fwd<T>(x, rope, gain, out, rstd, args);                                                    \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_bwd, fl, tname), QK_NORM_ROPE_THREADS)(                                \
      const T* dout, const T* x, const float* rstd, const float* rope, const float* gain, T* dx,            \
      float* partial, RopeArgs args) {                                                                      \
    qk_norm_rope_bwd<T>(dout, x, rstd, rope, gain, dx, partial, args);                                      \
  }                                                                                                         \
  GOLF_KERNEL(GOLF_NAME(qk_norm_rope_dgain, fl, tname), QK_NORM_ROPE_THREADS)(const float* partial,         \
                                                                              float* dgain, RopeArgs args) { \
    qk_norm_rope_dgain<T>(partial, dgain, args);                                                            \
  }

#define QK_NORM_ROPE_INSTANTIATE(tname, T) QK_NORM_ROPE_KERNELS(portable, tname, T)

GOLF_INSTANTIATE(QK_NORM_ROPE_INSTANTIATE)
