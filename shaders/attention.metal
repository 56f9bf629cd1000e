// attention: causal grouped-query flash attention, forward and backward.
//
//	s[t,u]   = scale·q[t,h]·k[u,hk] for u ≤ t (same sequence), scale = 1/sqrt(D)
//	lse[t,h] = log Σu exp(s[t,u]);  out[t,h] = Σu exp(s[t,u] − lse)·v[u,hk]
//	P = exp(s − lse), δ[t,h] = Σd dout·out
//	dv[u] = Σt P[t,u]·dout[t];  dP = dout·vᵀ;  dS = P·(dP − δ)
//	dq[t] = scale·Σu dS[t,u]·k[u];  dk[u] = scale·Σt dS[t,u]·q[t]
//	q, out, dout, dq T (N, H, D); k, v, dk, dv T (N, Hkv, D); lse, δ float (N, H)
//
// N = B·T rows (B sequences of T = seq_len rows); query head h reads
// key/value head hk = h/(H/Hkv); dk and dv sum over the G = H/Hkv query
// heads of their group. D ≤ 64 (attention_dmax); tiles pad D to Dp, the
// next multiple of 8, with zeros.
//
// Flash style in both directions: K/V (or Q/dout) tiles stream through
// threadgroup memory, softmax statistics stay in registers, and no score
// matrix larger than one tile exists anywhere. Four kernels:
//   attention_fwd:   out and lse, online softmax (running max and sum in
//                    float) over the key tiles of one query tile;
//   attention_delta: δ = rowsum(dout⊙out), the backward's pre-pass into a
//                    float (N, H) scratch;
//   attention_dq:    dq of one query tile, one pass over its key tiles
//                    (P recomputed from lse);
//   attention_dkv:   dk and dv of one key tile, one pass over the query
//                    tiles of every query head of the group, in a fixed
//                    order (deterministic, no atomics).
// Everything is computed in float (tiles are staged as float) and rounded
// once on store. Rows past T and columns past D of a staged tile are zero,
// and masked probabilities are set to exactly 0.
//
// simd flavour: the products run on simdgroup_matrix<float, 8, 8> tiles
// loaded from threadgroup memory (transposed loads for Kᵀ, Vᵀ, Qᵀ, doutᵀ);
// each simdgroup owns 8 rows of the tile (query rows, or key rows in
// attention_dkv), keeps its operand rows and accumulators in registers, and
// does its softmax arithmetic itself: lane l works on row l/4, columns
// 8·(l%4)..+7, with row reductions over the 4 lanes by simd_shuffle_xor.
// Loops over the register arrays of matrices run to the constant
// attention_dmax/8 with a uniform guard j < Dp/8, so that the compiler can
// unroll them and keep the arrays in registers.
// portable flavour: plain loops over threadgroup tiles, 4 threads per row,
// row reductions through threadgroup memory.
//
// Baseline shapes: B = 8, T = 1024, H = 8, Hkv = 4, D = 64 (N = 8192), bf16.
// Causal (t, u) pairs: B·H·T(T+1)/2 = 33.6M; FLOPs below count the useful
// products of those pairs (tiles also compute the masked half of diagonal
// tiles and the zero padding of D). Roofline of a base M2:
// max(FLOPs/3.6e12, bytes/1e11). "Tile traffic" counts every re-read of a
// streamed tile (mostly served by the caches), "compulsory" each tensor once.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

// Largest head dim of the kernels, and -∞'s stand-in for masked scores.
constant constexpr uint attention_dmax = 64;
constant constexpr float attention_neg = -1.0e30f;

// Tile sizes (rows of the query tile BQ, of the key tile BK; threads).
constant constexpr uint attention_fwd_simd_bq = 64;
constant constexpr uint attention_fwd_simd_bk = 32;
constant constexpr uint attention_fwd_simd_threads = 256;  // 8 simdgroups × 8 query rows
constant constexpr uint attention_fwd_port_bq = 32;
constant constexpr uint attention_fwd_port_bk = 16;
constant constexpr uint attention_bwd_threads = 128;  // every backward tile kernel
constant constexpr uint attention_dq_simd_bq = 32;
constant constexpr uint attention_dq_simd_bk = 32;
constant constexpr uint attention_dq_port_bq = 32;
constant constexpr uint attention_dq_port_bk = 16;
constant constexpr uint attention_dkv_simd_bk = 32;
constant constexpr uint attention_dkv_simd_bq = 32;
constant constexpr uint attention_dkv_port_bk = 32;
constant constexpr uint attention_dkv_port_bq = 16;

// attention_stage copies rows [r0, r0 + rows) of head hx of x (·, Hx, D),
// counted from sequence row row0, into dst as a (rows, Dp) float tile, with
// zeros past seq_len and past D. Threads tid of nthreads share the work.
// dst is a threadgroup float pointer (P deduces its address space).
template <typename P, typename T>
METAL_FUNC void attention_stage(P dst, device const T* x, ulong row0, uint r0, uint rows,
                                uint seq_len, uint hx_stride, uint hx, uint D, uint Dp, uint tid,
                                uint nthreads) {
  for (uint i = tid; i < rows * Dp; i += nthreads) {
    const uint r = i / Dp;
    const uint d = i - r * Dp;
    const uint t = r0 + r;
    float val = 0.0f;
    if (t < seq_len && d < D) {
      val = static_cast<float>(x[(row0 + t) * hx_stride + ulong(hx) * D + d]);
    }
    dst[i] = val;
  }
}

// ---------------------------------------------------------------------------
// attention_fwd_simd: one threadgroup per (query tile of 64 rows, head h,
// sequence b); grid (ceil(T/64), H, B), 256 threads = 8 simdgroups, each
// owning 8 query rows. Per key tile of 32 keys: S = Q·Kᵀ (Q in registers),
// online softmax on S, O = diag(α)·O + P·V (O in registers; the row rescale
// α = exp(m_old − m_new) is a product with a diagonal matrix). Key tiles
// entirely above a simdgroup's rows (the causal diagonal) are skipped.
// Threadgroup memory: K and V tiles 2·32·64·4 = 16 KB (Q at the start, O at
// the end), S/P 64·32·4 = 8 KB, diagonals 8·64·4 = 2 KB: 26 KB.
// Baseline: 4·D FLOPs per pair = 8.6 GFLOP (exp on 33.6M scores);
// compulsory bytes q, out 8.4 MB each, k, v 4.2 MB each, lse 0.26 MB =
// 25.4 MB; tile traffic of K and V 143 MB. Roofline
// max(8.6e9/3.6e12, 143e6/1e11) = 2.4 ms (compute-bound; 0.25 ms of
// compulsory traffic).
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_fwd_simd_threads)]] void attention_fwd_simd(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device T* out [[buffer(3)]],                   // (N, H, D)
    device float* lse [[buffer(4)]],               // (N, H)
    constant AttentionArgs& args [[buffer(5)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  constexpr uint BQ = attention_fwd_simd_bq;
  constexpr uint BK = attention_fwd_simd_bk;
  constexpr uint NT = attention_fwd_simd_threads;
  threadgroup float kv[2 * BK * attention_dmax];  // K (BK, Dp), V (BK, Dp)
  threadgroup float sbuf[BQ * BK];                // S then P (BQ, BK)
  threadgroup float diag[BQ * 8];                 // an 8×8 diagonal per simdgroup

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / G;
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint Dp = (D + 7u) & ~7u, nd = Dp / 8u;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint r = lane / 4u, part = lane % 4u;
  const uint row = sg * 8u + r;  // this lane's query row in the tile
  const uint t = q0 + row;

  attention_stage(kv, q, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
  for (uint i = tid; i < BQ * 8u; i += NT) {
    diag[i] = 0.0f;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 qm[attention_dmax / 8];
  simdgroup_float8x8 om[attention_dmax / 8];
  for (uint j = 0; j < attention_dmax / 8u; j++) {
    if (j < nd) {
      simdgroup_load(qm[j], kv + sg * 8u * Dp + j * 8u, Dp);
      om[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  float m = attention_neg, l = 0.0f;  // row's running max and sum (same on its 4 lanes)
  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
    attention_stage(kv + BK * Dp, v, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (k0 <= q0 + sg * 8u + 7u) {  // some key of the tile is visible to the simdgroup
      for (uint c = 0; c < BK / 8u; c++) {
        simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        for (uint j = 0; j < attention_dmax / 8u; j++) {
          if (j < nd) {
            simdgroup_float8x8 km;
            simdgroup_load(km, kv + c * 8u * Dp + j * 8u, Dp, ulong2(0, 0), true);
            simdgroup_multiply_accumulate(acc, qm[j], km, acc);
          }
        }
        simdgroup_store(acc, sbuf + sg * 8u * BK + c * 8u, BK);
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      const uint sb = row * BK + part * 8u;
      float mx = attention_neg;
      for (uint i = 0; i < 8u; i++) {
        const uint u = k0 + part * 8u + i;
        if (u <= t && u < seq) {
          mx = max(mx, sbuf[sb + i] * scale);
        }
      }
      mx = max(mx, simd_shuffle_xor(mx, 1));
      mx = max(mx, simd_shuffle_xor(mx, 2));
      const float mnew = max(m, mx);
      const float alpha = exp(m - mnew);
      float ps = 0.0f;
      for (uint i = 0; i < 8u; i++) {
        const uint u = k0 + part * 8u + i;
        float p = 0.0f;
        if (u <= t && u < seq) {
          p = exp(sbuf[sb + i] * scale - mnew);
        }
        sbuf[sb + i] = p;
        ps += p;
      }
      ps += simd_shuffle_xor(ps, 1);
      ps += simd_shuffle_xor(ps, 2);
      l = l * alpha + ps;
      m = mnew;
      if (part == 0) {
        diag[sg * 64u + r * 9u] = alpha;
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      simdgroup_float8x8 dm;
      simdgroup_load(dm, diag + sg * 64u, 8);
      for (uint j = 0; j < attention_dmax / 8u; j++) {
        if (j < nd) {
          simdgroup_multiply(om[j], dm, om[j]);
        }
      }
      for (uint c = 0; c < BK / 8u; c++) {
        simdgroup_float8x8 pm;
        simdgroup_load(pm, sbuf + sg * 8u * BK + c * 8u, BK);
        for (uint j = 0; j < attention_dmax / 8u; j++) {
          if (j < nd) {
            simdgroup_float8x8 vm;
            simdgroup_load(vm, kv + BK * Dp + c * 8u * Dp + j * 8u, Dp);
            simdgroup_multiply_accumulate(om[j], pm, vm, om[j]);
          }
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  for (uint j = 0; j < attention_dmax / 8u; j++) {
    if (j < nd) {
      simdgroup_store(om[j], kv + sg * 8u * Dp + j * 8u, Dp);
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  if (t < seq) {
    const ulong o = (row0 + t) * qs + ulong(h) * D;
    for (uint d = part; d < D; d += 4u) {
      out[o + d] = static_cast<T>(kv[row * Dp + d] / l);
    }
    if (part == 0) {
      lse[(row0 + t) * H + h] = m + log(l);
    }
  }
}

// attention_fwd_portable: one threadgroup per (query tile of 32 rows, h, b);
// grid (ceil(T/32), H, B), 128 threads, 4 per query row (thread part p
// takes keys p, p+4, ... of a tile and head-dim columns p, p+4, ...). Per
// key tile of 16 keys: scores, row max and sum over the 4 threads through
// threadgroup memory, then the rescaled O += P·V in registers.
// Threadgroup memory: Q 32·64·4 = 8 KB, K and V 2·16·64·4 = 8 KB, P
// 32·16·4 = 2 KB, partial maxima and sums 2·128·4 = 1 KB: 19 KB.
// Baseline: 8.6 GFLOP as the simd flavour; tile traffic of K and V 277 MB.
// Roofline max(2.4 ms, 2.8 ms) = 2.8 ms.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_bwd_threads)]] void attention_fwd_portable(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device T* out [[buffer(3)]],                   // (N, H, D)
    device float* lse [[buffer(4)]],               // (N, H)
    constant AttentionArgs& args [[buffer(5)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  constexpr uint BQ = attention_fwd_port_bq;
  constexpr uint BK = attention_fwd_port_bk;
  constexpr uint NT = attention_bwd_threads;
  threadgroup float qbuf[BQ * attention_dmax];      // (BQ, Dp)
  threadgroup float kv[2 * BK * attention_dmax];    // K (BK, Dp), V (BK, Dp)
  threadgroup float pbuf[BQ * BK];                  // P (BQ, BK)
  threadgroup float redmax[NT];
  threadgroup float redsum[NT];

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / G;
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint Dp = (D + 7u) & ~7u;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint row = tid / 4u, part = tid % 4u;
  const uint t = q0 + row;

  attention_stage(qbuf, q, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
  float o[attention_dmax / 4];
  for (uint i = 0; i < attention_dmax / 4u; i++) {
    o[i] = 0.0f;
  }
  float m = attention_neg, l = 0.0f;
  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
    attention_stage(kv + BK * Dp, v, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s[BK / 4];
    float mx = attention_neg;
    for (uint i = 0; i < BK / 4u; i++) {
      const uint c = part + 4u * i;
      float dot = 0.0f;
      for (uint d = 0; d < D; d++) {
        dot += qbuf[row * Dp + d] * kv[c * Dp + d];
      }
      s[i] = dot * scale;
      const uint u = k0 + c;
      if (u <= t && u < seq) {
        mx = max(mx, s[i]);
      }
    }
    redmax[tid] = mx;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    mx = max(max(max(redmax[row * 4u], redmax[row * 4u + 1u]), redmax[row * 4u + 2u]), redmax[row * 4u + 3u]);
    const float mnew = max(m, mx);
    const float alpha = exp(m - mnew);
    float ps = 0.0f;
    for (uint i = 0; i < BK / 4u; i++) {
      const uint c = part + 4u * i;
      const uint u = k0 + c;
      float p = 0.0f;
      if (u <= t && u < seq) {
        p = exp(s[i] - mnew);
      }
      pbuf[row * BK + c] = p;
      ps += p;
    }
    redsum[tid] = ps;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    ps = ((redsum[row * 4u] + redsum[row * 4u + 1u]) + redsum[row * 4u + 2u]) + redsum[row * 4u + 3u];
    l = l * alpha + ps;
    m = mnew;
    for (uint i = 0; part + 4u * i < D; i++) {
      const uint d = part + 4u * i;
      float acc = o[i] * alpha;
      for (uint c = 0; c < BK; c++) {
        acc += pbuf[row * BK + c] * kv[BK * Dp + c * Dp + d];
      }
      o[i] = acc;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (t < seq) {
    const ulong ob = (row0 + t) * qs + ulong(h) * D;
    for (uint i = 0; part + 4u * i < D; i++) {
      out[ob + part + 4u * i] = static_cast<T>(o[i] / l);
    }
    if (part == 0) {
      lse[(row0 + t) * H + h] = m + log(l);
    }
  }
}

// ---------------------------------------------------------------------------
// attention_delta: δ[n,h] = Σd dout[n,h,d]·out[n,h,d] in float, one thread
// per (row, head): grid ceil(N·H/256) × 256 threads; the same code in both
// flavours. No threadgroup memory.
// Baseline: 2·N·H·D = 8.4 MFLOP; bytes dout, out 8.4 MB each, δ 0.26 MB =
// 17.0 MB. Roofline 0.17 ms (memory-bound).
template <typename T, bool Simd>
[[kernel]] void attention_delta(
    device const T* dout [[buffer(0)]],            // (N, H, D)
    device const T* out [[buffer(1)]],             // (N, H, D)
    device float* delta [[buffer(2)]],             // (N, H)
    constant AttentionArgs& args [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  const uint rows = args.batch * args.seq_len * args.heads;
  if (i >= rows) {
    return;
  }
  const uint D = args.head_dim;
  const ulong base = ulong(i) * D;
  float acc = 0.0f;
  for (uint d = 0; d < D; d++) {
    acc += static_cast<float>(dout[base + d]) * static_cast<float>(out[base + d]);
  }
  delta[i] = acc;
}

// ---------------------------------------------------------------------------
// attention_dq_simd: one threadgroup per (query tile of 32 rows, h, b); grid
// (ceil(T/32), H, B), 128 threads = 4 simdgroups × 8 query rows, q and dout
// rows and the dq accumulator in registers. Per key tile of 32 keys:
// S = Q·Kᵀ, dP = dout·Vᵀ, dS = P⊙(dP − δ) with P = exp(scale·S − lse),
// dQ += dS·K; finally dq = scale·dQ.
// Threadgroup memory: K and V 2·32·64·4 = 16 KB (Q and dout at the start,
// dQ at the end), S/dS and dP 2·32·32·4 = 8 KB: 24 KB.
// Baseline: 6·D FLOPs per pair = 12.9 GFLOP; compulsory bytes q, dout, dq
// 8.4 MB each, k, v 4.2 MB each, lse, δ 0.26 MB each = 34.1 MB; tile
// traffic of K and V 277 MB. Roofline max(3.6 ms, 2.8 ms) = 3.6 ms.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_bwd_threads)]] void attention_dq_simd(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device const T* dout [[buffer(3)]],            // (N, H, D)
    device const float* lse [[buffer(4)]],         // (N, H)
    device const float* delta [[buffer(5)]],       // (N, H)
    device T* dq [[buffer(6)]],                    // (N, H, D)
    constant AttentionArgs& args [[buffer(7)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  constexpr uint BQ = attention_dq_simd_bq;
  constexpr uint BK = attention_dq_simd_bk;
  constexpr uint NT = attention_bwd_threads;
  threadgroup float kv[2 * BK * attention_dmax];  // K (BK, Dp), V (BK, Dp)
  threadgroup float sbuf[BQ * BK];                // S, then dS (BQ, BK)
  threadgroup float dpbuf[BQ * BK];               // dP (BQ, BK)

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / G;
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint Dp = (D + 7u) & ~7u, nd = Dp / 8u;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint r = lane / 4u, part = lane % 4u;
  const uint row = sg * 8u + r;
  const uint t = q0 + row;

  attention_stage(kv, q, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
  attention_stage(kv + BQ * Dp, dout, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 qm[attention_dmax / 8];
  simdgroup_float8x8 gm[attention_dmax / 8];
  simdgroup_float8x8 dqm[attention_dmax / 8];
  for (uint j = 0; j < attention_dmax / 8u; j++) {
    if (j < nd) {
      simdgroup_load(qm[j], kv + sg * 8u * Dp + j * 8u, Dp);
      simdgroup_load(gm[j], kv + BQ * Dp + sg * 8u * Dp + j * 8u, Dp);
      dqm[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }
  float lse_t = 0.0f, delta_t = 0.0f;
  if (t < seq) {
    lse_t = lse[(row0 + t) * H + h];
    delta_t = delta[(row0 + t) * H + h];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
    attention_stage(kv + BK * Dp, v, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint c = 0; c < BK / 8u; c++) {
      simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      simdgroup_float8x8 dacc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      for (uint j = 0; j < attention_dmax / 8u; j++) {
        if (j < nd) {
          simdgroup_float8x8 km;
          simdgroup_load(km, kv + c * 8u * Dp + j * 8u, Dp, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(acc, qm[j], km, acc);
          simdgroup_float8x8 vm;
          simdgroup_load(vm, kv + BK * Dp + c * 8u * Dp + j * 8u, Dp, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(dacc, gm[j], vm, dacc);
        }
      }
      simdgroup_store(acc, sbuf + sg * 8u * BK + c * 8u, BK);
      simdgroup_store(dacc, dpbuf + sg * 8u * BK + c * 8u, BK);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    const uint sb = row * BK + part * 8u;
    for (uint i = 0; i < 8u; i++) {
      const uint u = k0 + part * 8u + i;
      float ds = 0.0f;
      if (u <= t && u < seq) {
        const float p = exp(sbuf[sb + i] * scale - lse_t);
        ds = p * (dpbuf[sb + i] - delta_t);
      }
      sbuf[sb + i] = ds;
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    for (uint c = 0; c < BK / 8u; c++) {
      simdgroup_float8x8 dsm;
      simdgroup_load(dsm, sbuf + sg * 8u * BK + c * 8u, BK);
      for (uint j = 0; j < attention_dmax / 8u; j++) {
        if (j < nd) {
          simdgroup_float8x8 km;
          simdgroup_load(km, kv + c * 8u * Dp + j * 8u, Dp);
          simdgroup_multiply_accumulate(dqm[j], dsm, km, dqm[j]);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  for (uint j = 0; j < attention_dmax / 8u; j++) {
    if (j < nd) {
      simdgroup_store(dqm[j], kv + sg * 8u * Dp + j * 8u, Dp);
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  if (t < seq) {
    const ulong o = (row0 + t) * qs + ulong(h) * D;
    for (uint d = part; d < D; d += 4u) {
      dq[o + d] = static_cast<T>(scale * kv[row * Dp + d]);
    }
  }
}

// attention_dq_portable: one threadgroup per (query tile of 32 rows, h, b);
// grid (ceil(T/32), H, B), 128 threads, 4 per query row (keys p, p+4, ...
// of a tile; head-dim columns p, p+4, ... of dq). Per key tile of 16 keys:
// the row's scores and dP as dot products, dS into threadgroup memory, then
// dQ += dS·K in registers.
// Threadgroup memory: Q and dout 2·32·64·4 = 16 KB, K and V 2·16·64·4 =
// 8 KB, dS 32·16·4 = 2 KB: 26 KB.
// Baseline: 12.9 GFLOP as the simd flavour; tile traffic of K and V 277 MB.
// Roofline max(3.6 ms, 2.8 ms) = 3.6 ms.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_bwd_threads)]] void attention_dq_portable(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device const T* dout [[buffer(3)]],            // (N, H, D)
    device const float* lse [[buffer(4)]],         // (N, H)
    device const float* delta [[buffer(5)]],       // (N, H)
    device T* dq [[buffer(6)]],                    // (N, H, D)
    constant AttentionArgs& args [[buffer(7)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  constexpr uint BQ = attention_dq_port_bq;
  constexpr uint BK = attention_dq_port_bk;
  constexpr uint NT = attention_bwd_threads;
  threadgroup float qg[2 * BQ * attention_dmax];  // Q (BQ, Dp), dout (BQ, Dp)
  threadgroup float kv[2 * BK * attention_dmax];  // K (BK, Dp), V (BK, Dp)
  threadgroup float dsbuf[BQ * BK];               // dS (BQ, BK)

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / G;
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint Dp = (D + 7u) & ~7u;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint row = tid / 4u, part = tid % 4u;
  const uint t = q0 + row;

  attention_stage(qg, q, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
  attention_stage(qg + BQ * Dp, dout, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
  float lse_t = 0.0f, delta_t = 0.0f;
  if (t < seq) {
    lse_t = lse[(row0 + t) * H + h];
    delta_t = delta[(row0 + t) * H + h];
  }
  float acc[attention_dmax / 4];
  for (uint i = 0; i < attention_dmax / 4u; i++) {
    acc[i] = 0.0f;
  }
  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
    attention_stage(kv + BK * Dp, v, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = 0; i < BK / 4u; i++) {
      const uint c = part + 4u * i;
      const uint u = k0 + c;
      float ds = 0.0f;
      if (u <= t && u < seq) {
        float s = 0.0f, dp = 0.0f;
        for (uint d = 0; d < D; d++) {
          s += qg[row * Dp + d] * kv[c * Dp + d];
          dp += qg[BQ * Dp + row * Dp + d] * kv[BK * Dp + c * Dp + d];
        }
        const float p = exp(s * scale - lse_t);
        ds = p * (dp - delta_t);
      }
      dsbuf[row * BK + c] = ds;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = 0; part + 4u * i < D; i++) {
      const uint d = part + 4u * i;
      float a = acc[i];
      for (uint c = 0; c < BK; c++) {
        a += dsbuf[row * BK + c] * kv[c * Dp + d];
      }
      acc[i] = a;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (t < seq) {
    const ulong o = (row0 + t) * qs + ulong(h) * D;
    for (uint i = 0; part + 4u * i < D; i++) {
      dq[o + part + 4u * i] = static_cast<T>(scale * acc[i]);
    }
  }
}

// ---------------------------------------------------------------------------
// attention_dkv_simd: one threadgroup per (key tile of 32 rows, kv head hk,
// sequence b); grid (ceil(T/32), Hkv, B), 128 threads = 4 simdgroups × 8
// key rows, k and v rows and the dk, dv accumulators in registers. For each
// query head of the group and each query tile of 32 rows at or after the
// key tile: Sᵀ = K·Qᵀ, dPᵀ = V·doutᵀ, Pᵀ = exp(scale·Sᵀ − lse),
// dSᵀ = Pᵀ⊙(dPᵀ − δ), dV += Pᵀ·dout, dK += dSᵀ·Q; finally dk = scale·dK.
// Threadgroup memory: Q and dout 2·32·64·4 = 16 KB (K and V at the start, dK
// and dV at the end), Pᵀ and dPᵀ/dSᵀ 2·32·32·4 = 8 KB, lse and δ 2·32·4 =
// 256 B: 24.25 KB.
// Baseline: 8·D FLOPs per pair = 17.2 GFLOP; compulsory bytes k, v, dk, dv
// 4.2 MB each, q, dout 8.4 MB each = 33.6 MB; tile traffic of Q, dout, lse
// and δ 285 MB. Roofline max(4.8 ms, 2.9 ms) = 4.8 ms.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_bwd_threads)]] void attention_dkv_simd(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device const T* dout [[buffer(3)]],            // (N, H, D)
    device const float* lse [[buffer(4)]],         // (N, H)
    device const float* delta [[buffer(5)]],       // (N, H)
    device T* dk [[buffer(6)]],                    // (N, Hkv, D)
    device T* dv [[buffer(7)]],                    // (N, Hkv, D)
    constant AttentionArgs& args [[buffer(8)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  constexpr uint BK = attention_dkv_simd_bk;
  constexpr uint BQ = attention_dkv_simd_bq;
  constexpr uint NT = attention_bwd_threads;
  threadgroup float qg[2 * BQ * attention_dmax];  // Q (BQ, Dp), dout (BQ, Dp)
  threadgroup float pbuf[BK * BQ];                // Pᵀ (BK, BQ)
  threadgroup float dsbuf[BK * BQ];               // dPᵀ, then dSᵀ (BK, BQ)
  threadgroup float lse_tile[BQ];
  threadgroup float delta_tile[BQ];

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint k0 = tgpos.x * BK, hk = tgpos.y;
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint Dp = (D + 7u) & ~7u, nd = Dp / 8u;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint r = lane / 4u, part = lane % 4u;
  const uint row = sg * 8u + r;  // this lane's key row in the tile
  const uint u = k0 + row;

  attention_stage(qg, k, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
  attention_stage(qg + BK * Dp, v, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_float8x8 km[attention_dmax / 8];
  simdgroup_float8x8 vm[attention_dmax / 8];
  simdgroup_float8x8 dkm[attention_dmax / 8];
  simdgroup_float8x8 dvm[attention_dmax / 8];
  for (uint j = 0; j < attention_dmax / 8u; j++) {
    if (j < nd) {
      simdgroup_load(km[j], qg + sg * 8u * Dp + j * 8u, Dp);
      simdgroup_load(vm[j], qg + BK * Dp + sg * 8u * Dp + j * 8u, Dp);
      dkm[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      dvm[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  for (uint g = 0; g < G; g++) {
    const uint h = hk * G + g;
    for (uint q0 = k0 - k0 % BQ; q0 < seq; q0 += BQ) {
      attention_stage(qg, q, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
      attention_stage(qg + BQ * Dp, dout, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
      for (uint i = tid; i < BQ; i += NT) {
        const uint t = q0 + i;
        lse_tile[i] = t < seq ? lse[(row0 + t) * H + h] : 0.0f;
        delta_tile[i] = t < seq ? delta[(row0 + t) * H + h] : 0.0f;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint c = 0; c < BQ / 8u; c++) {
        simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        simdgroup_float8x8 dacc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        for (uint j = 0; j < attention_dmax / 8u; j++) {
          if (j < nd) {
            simdgroup_float8x8 qt;
            simdgroup_load(qt, qg + c * 8u * Dp + j * 8u, Dp, ulong2(0, 0), true);
            simdgroup_multiply_accumulate(acc, km[j], qt, acc);
            simdgroup_float8x8 gt;
            simdgroup_load(gt, qg + BQ * Dp + c * 8u * Dp + j * 8u, Dp, ulong2(0, 0), true);
            simdgroup_multiply_accumulate(dacc, vm[j], gt, dacc);
          }
        }
        simdgroup_store(acc, pbuf + sg * 8u * BQ + c * 8u, BQ);
        simdgroup_store(dacc, dsbuf + sg * 8u * BQ + c * 8u, BQ);
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      const uint sb = row * BQ + part * 8u;
      for (uint i = 0; i < 8u; i++) {
        const uint col = part * 8u + i;
        const uint t = q0 + col;
        float p = 0.0f, ds = 0.0f;
        if (u <= t && t < seq) {
          p = exp(pbuf[sb + i] * scale - lse_tile[col]);
          ds = p * (dsbuf[sb + i] - delta_tile[col]);
        }
        pbuf[sb + i] = p;
        dsbuf[sb + i] = ds;
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      for (uint c = 0; c < BQ / 8u; c++) {
        simdgroup_float8x8 pm;
        simdgroup_float8x8 dsm;
        simdgroup_load(pm, pbuf + sg * 8u * BQ + c * 8u, BQ);
        simdgroup_load(dsm, dsbuf + sg * 8u * BQ + c * 8u, BQ);
        for (uint j = 0; j < attention_dmax / 8u; j++) {
          if (j < nd) {
            simdgroup_float8x8 gmat;
            simdgroup_load(gmat, qg + BQ * Dp + c * 8u * Dp + j * 8u, Dp);
            simdgroup_multiply_accumulate(dvm[j], pm, gmat, dvm[j]);
            simdgroup_float8x8 qmat;
            simdgroup_load(qmat, qg + c * 8u * Dp + j * 8u, Dp);
            simdgroup_multiply_accumulate(dkm[j], dsm, qmat, dkm[j]);
          }
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }

  for (uint j = 0; j < attention_dmax / 8u; j++) {
    if (j < nd) {
      simdgroup_store(dkm[j], qg + sg * 8u * Dp + j * 8u, Dp);
      simdgroup_store(dvm[j], qg + BK * Dp + sg * 8u * Dp + j * 8u, Dp);
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  if (u < seq) {
    const ulong o = (row0 + u) * ks + ulong(hk) * D;
    for (uint d = part; d < D; d += 4u) {
      dk[o + d] = static_cast<T>(scale * qg[row * Dp + d]);
      dv[o + d] = static_cast<T>(qg[BK * Dp + row * Dp + d]);
    }
  }
}

// attention_dkv_portable: one threadgroup per (key tile of 32 rows, hk, b);
// grid (ceil(T/32), Hkv, B), 128 threads, 4 per key row (queries p, p+4,
// ... of a tile; head-dim columns p, p+4, ... of dk and dv). For each query
// head of the group and each query tile of 16 rows at or after the key
// tile: P and dS of the row's keys against the tile's queries as dot
// products into threadgroup memory, then dV += Pᵀ·dout and dK += dSᵀ·Q in
// registers.
// Threadgroup memory: K and V 2·32·64·4 = 16 KB, Q and dout 2·16·64·4 =
// 8 KB, Pᵀ and dSᵀ 2·32·16·4 = 4 KB, lse and δ 2·16·4 = 128 B: 28.1 KB.
// Baseline: 17.2 GFLOP as the simd flavour; tile traffic of Q, dout, lse and
// δ 285 MB as the simd flavour (every query row at or after the key tile,
// whatever BQ). Roofline max(4.8 ms, 2.9 ms) = 4.8 ms.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_bwd_threads)]] void attention_dkv_portable(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device const T* dout [[buffer(3)]],            // (N, H, D)
    device const float* lse [[buffer(4)]],         // (N, H)
    device const float* delta [[buffer(5)]],       // (N, H)
    device T* dk [[buffer(6)]],                    // (N, Hkv, D)
    device T* dv [[buffer(7)]],                    // (N, Hkv, D)
    constant AttentionArgs& args [[buffer(8)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  constexpr uint BK = attention_dkv_port_bk;
  constexpr uint BQ = attention_dkv_port_bq;
  constexpr uint NT = attention_bwd_threads;
  threadgroup float kv[2 * BK * attention_dmax];  // K (BK, Dp), V (BK, Dp)
  threadgroup float qg[2 * BQ * attention_dmax];  // Q (BQ, Dp), dout (BQ, Dp)
  threadgroup float pbuf[BK * BQ];                // Pᵀ (BK, BQ)
  threadgroup float dsbuf[BK * BQ];               // dSᵀ (BK, BQ)
  threadgroup float lse_tile[BQ];
  threadgroup float delta_tile[BQ];

  const uint seq = args.seq_len, H = args.heads, D = args.head_dim;
  const uint G = H / args.kv_heads;
  const uint k0 = tgpos.x * BK, hk = tgpos.y;
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint Dp = (D + 7u) & ~7u;
  const uint qs = H * D, ks = args.kv_heads * D;
  const float scale = args.scale;
  const uint row = tid / 4u, part = tid % 4u;
  const uint u = k0 + row;

  attention_stage(kv, k, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
  attention_stage(kv + BK * Dp, v, row0, k0, BK, seq, ks, hk, D, Dp, tid, NT);
  float dka[attention_dmax / 4];
  float dva[attention_dmax / 4];
  for (uint i = 0; i < attention_dmax / 4u; i++) {
    dka[i] = 0.0f;
    dva[i] = 0.0f;
  }
  for (uint g = 0; g < G; g++) {
    const uint h = hk * G + g;
    for (uint q0 = k0 - k0 % BQ; q0 < seq; q0 += BQ) {
      attention_stage(qg, q, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
      attention_stage(qg + BQ * Dp, dout, row0, q0, BQ, seq, qs, h, D, Dp, tid, NT);
      for (uint i = tid; i < BQ; i += NT) {
        const uint t = q0 + i;
        lse_tile[i] = t < seq ? lse[(row0 + t) * H + h] : 0.0f;
        delta_tile[i] = t < seq ? delta[(row0 + t) * H + h] : 0.0f;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint i = 0; i < BQ / 4u; i++) {
        const uint c = part + 4u * i;
        const uint t = q0 + c;
        float p = 0.0f, ds = 0.0f;
        if (u <= t && t < seq) {
          float s = 0.0f, dp = 0.0f;
          for (uint d = 0; d < D; d++) {
            s += kv[row * Dp + d] * qg[c * Dp + d];
            dp += kv[BK * Dp + row * Dp + d] * qg[BQ * Dp + c * Dp + d];
          }
          p = exp(s * scale - lse_tile[c]);
          ds = p * (dp - delta_tile[c]);
        }
        pbuf[row * BQ + c] = p;
        dsbuf[row * BQ + c] = ds;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint i = 0; part + 4u * i < D; i++) {
        const uint d = part + 4u * i;
        float a = dva[i], b = dka[i];
        for (uint c = 0; c < BQ; c++) {
          a += pbuf[row * BQ + c] * qg[BQ * Dp + c * Dp + d];
          b += dsbuf[row * BQ + c] * qg[c * Dp + d];
        }
        dva[i] = a;
        dka[i] = b;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  if (u < seq) {
    const ulong o = (row0 + u) * ks + ulong(hk) * D;
    for (uint i = 0; part + 4u * i < D; i++) {
      dk[o + part + 4u * i] = static_cast<T>(scale * dka[i]);
      dv[o + part + 4u * i] = static_cast<T>(dva[i]);
    }
  }
}

#define instantiate_attention(tname, T)                                                    \
  instantiate_kernel("attention_fwd_simd_" #tname, attention_fwd_simd, T)                  \
  instantiate_kernel("attention_fwd_portable_" #tname, attention_fwd_portable, T)          \
  instantiate_kernel("attention_delta_simd_" #tname, attention_delta, T, true)             \
  instantiate_kernel("attention_delta_portable_" #tname, attention_delta, T, false)        \
  instantiate_kernel("attention_dq_simd_" #tname, attention_dq_simd, T)                    \
  instantiate_kernel("attention_dq_portable_" #tname, attention_dq_portable, T)            \
  instantiate_kernel("attention_dkv_simd_" #tname, attention_dkv_simd, T)                  \
  instantiate_kernel("attention_dkv_portable_" #tname, attention_dkv_portable, T)

instantiate_attention(float, float)
instantiate_attention(half, half)
instantiate_attention(bfloat, bfloat)
