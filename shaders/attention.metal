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
// heads of their group. D ≤ 128 (attention_dmax).
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
// Head dims. Each tile kernel has two tile shapes, chosen at run time by D
// (uniform over the dispatch): D ≤ 64 and 64 < D ≤ 128, the larger dim with
// fewer rows per tile so that every kernel stays within 32 KiB of
// threadgroup memory; the bodies are templates over the shape
// (attention_*_tile<DMAX, ...>), so that loops over register arrays have
// constant trip counts (DMAX/8 matrices, DMAX/TPR columns) with a uniform
// guard j < Dp/8, fully unrolled: the arrays stay in registers. Staged
// tiles hold Dp = D rounded up to 8 columns with a row stride LD = Dp + 4
// (and score tiles BK + 4), so that the rows a simdgroup reads at once fall
// in different threadgroup-memory banks.
//
// Softmax in base 2: scores are scaled by scale·log2(e) once, so every
// exponential is fast::exp2 (one instruction) and lse = m·ln 2 + log(l);
// the backward uses lse·log2(e). The rounding of the folded scale (≤ 1 ulp
// of a score) is below the float32 error of the dot products themselves.
//
// simd flavour: the products run on simdgroup_matrix<float, 8, 8> tiles
// loaded from threadgroup memory (transposed loads for Kᵀ, Vᵀ, Qᵀ, doutᵀ);
// each simdgroup owns 8 rows of the tile (query rows, or key rows in
// attention_dkv), keeps its operand rows and accumulators in registers, and
// does its softmax arithmetic itself: lane l works on row l/4 and on a
// quarter of the tile's columns, with row reductions over the 4 lanes by
// simd_shuffle_xor.
// portable flavour: plain loops over threadgroup tiles, TPR threads per row
// (4, or 8 for D > 64), row reductions through threadgroup memory.
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

// The head dims of the two tile shapes (the larger is the kernels' limit),
// -∞'s stand-in for masked scores, and the constants of the base-2 softmax.
constant constexpr uint attention_dsmall = 64;
constant constexpr uint attention_dmax = 128;
constant constexpr float attention_neg = -1.0e30f;
constant constexpr float attention_log2e = 1.44269504088896341f;
constant constexpr float attention_ln2 = 0.693147180559945309f;

// Threads per threadgroup (every kernel is laid out for exactly these) and
// query rows of the simd forward tile.
constant constexpr uint attention_fwd_simd_threads = 256;  // 8 simdgroups × 8 query rows
constant constexpr uint attention_tile_threads = 128;      // every other tile kernel
constant constexpr uint attention_fwd_simd_bq = 64;

// Threadgroup memory of each kernel, in floats: the larger of its two tile
// shapes (the shapes' sizes are in the kernels' comments).
constant constexpr uint attention_fwd_simd_kv = 4352;    // K, V: 2·32·68 | 2·16·132
constant constexpr uint attention_fwd_simd_s = 2304;     // S/P: 64·36 | 64·20
constant constexpr uint attention_fwd_port_q = 4224;     // Q: 32·68 | 32·132
constant constexpr uint attention_fwd_port_kv = 2176;    // K, V: 2·16·68 | 2·8·132
constant constexpr uint attention_fwd_port_p = 640;      // P: 32·20 | 32·12
constant constexpr uint attention_dq_simd_kv = 4352;     // K, V: 2·32·68 | 2·16·132
constant constexpr uint attention_dq_simd_s = 1152;      // S/dS, dP: 32·36 | 32·20 each
constant constexpr uint attention_dq_port_q = 4352;      // Q, dout: 2·32·68 | 2·16·132
constant constexpr uint attention_dq_port_kv = 2176;     // K, V: 2·16·68 | 2·8·132
constant constexpr uint attention_dq_port_s = 640;       // dS: 32·20 | 16·12
constant constexpr uint attention_dkv_simd_q = 4352;     // Q, dout: 2·32·68 | 2·16·132
constant constexpr uint attention_dkv_simd_p = 1152;     // Pᵀ, dSᵀ: 32·36 | 32·20 each
constant constexpr uint attention_dkv_port_kv = 4352;    // K, V: 2·32·68 | 2·16·132
constant constexpr uint attention_dkv_port_q = 2176;     // Q, dout: 2·16·68 | 2·8·132
constant constexpr uint attention_dkv_port_p = 640;      // Pᵀ, dSᵀ: 32·20 | 16·12 each
constant constexpr uint attention_rows_max = 32;         // lse and δ of a query tile

// attention_stage copies rows [r0, r0 + rows) of head hx of x (·, Hx, D),
// counted from sequence row row0, into dst as a (rows, Dp) float tile of
// row stride LD, with zeros past seq_len and past D (columns Dp..LD−1 are
// padding, never read). Threads tid of nthreads share the work. dst is a
// threadgroup float pointer (P deduces its address space).
template <typename P, typename T>
METAL_FUNC void attention_stage(P dst, device const T* x, ulong row0, uint r0, uint rows, uint seq_len,
                                uint hx_stride, uint hx, uint D, uint Dp, uint LD, uint tid, uint nthreads) {
  for (uint i = tid; i < rows * Dp; i += nthreads) {
    const uint r = i / Dp;
    const uint d = i - r * Dp;
    const uint t = r0 + r;
    float val = 0.0f;
    if (t < seq_len && d < D) {
      val = static_cast<float>(x[(row0 + t) * hx_stride + ulong(hx) * D + d]);
    }
    dst[r * LD + d] = val;
  }
}

// attention_geometry is what every tile kernel derives from its arguments.
struct attention_geometry {
  uint seq, H, D, Dp, LD, nd, qs, ks, G;
  float scale2;  // scale·log2(e)
};

METAL_FUNC attention_geometry attention_geom(constant AttentionArgs& args) {
  attention_geometry g;
  g.seq = args.seq_len;
  g.H = args.heads;
  g.D = args.head_dim;
  g.Dp = (g.D + 7u) & ~7u;
  g.LD = g.Dp + 4u;
  g.nd = g.Dp / 8u;
  g.qs = g.H * g.D;
  g.ks = args.kv_heads * g.D;
  g.G = g.H / args.kv_heads;
  g.scale2 = args.scale * attention_log2e;
  return g;
}

// ---------------------------------------------------------------------------
// attention_fwd_simd: one threadgroup per (query tile of 64 rows, head h,
// sequence b); grid (ceil(T/64), H, B), 256 threads = 8 simdgroups, each
// owning 8 query rows. Per key tile of BK keys (32, or 16 for D > 64):
// S = Q·Kᵀ (Q in registers), online softmax on S, O = diag(α)·O + P·V (O in
// registers; the row rescale α = 2^(m_old − m_new) is a product with a
// diagonal matrix). Key tiles entirely above a simdgroup's rows (the causal
// diagonal) are skipped. Q is staged (and O written back) through the K/V
// buffer, in two passes of 32 rows for D > 64.
// Threadgroup memory: K and V 2·BK·LD·4 = 17 KB (D = 64: 2·32·68; D = 128:
// 2·16·132), S/P 64·(BK+4)·4 = 9 KB, diagonals 8·64·4 = 2 KB: 28 KB.
// Baseline: 4·D FLOPs per pair = 8.6 GFLOP (exp2 on 33.6M scores);
// compulsory bytes q, out 8.4 MB each, k, v 4.2 MB each, lse 0.26 MB =
// 25.4 MB; tile traffic of K and V 143 MB. Roofline
// max(8.6e9/3.6e12, 143e6/1e11) = 2.4 ms (compute-bound; 0.25 ms of
// compulsory traffic).
template <typename T, uint DMAX, uint BK, uint QPASS, typename P>
METAL_FUNC void attention_fwd_simd_tile(
    P kv, P sbuf, P diag, device const T* q, device const T* k, device const T* v, device T* out,
    device float* lse, constant AttentionArgs& args, uint3 tgpos, uint tid, uint lane, uint sg) {
  constexpr uint BQ = attention_fwd_simd_bq;
  constexpr uint NT = attention_fwd_simd_threads;
  constexpr uint ND = DMAX / 8;  // register matrices per row block
  constexpr uint CPL = BK / 4;   // score columns per lane
  constexpr uint LS = BK + 4;    // row stride of the score tile
  const attention_geometry g = attention_geom(args);
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / g.G;
  const ulong row0 = ulong(tgpos.z) * g.seq;
  const uint LD = g.LD;
  const uint r = lane / 4u, part = lane % 4u;
  const uint row = sg * 8u + r;  // this lane's query row in the tile
  const uint t = q0 + row;

  for (uint i = tid; i < 8u * 64u; i += NT) {
    diag[i] = 0.0f;
  }
  simdgroup_float8x8 qm[ND];
  simdgroup_float8x8 om[ND];
#pragma clang loop unroll(full)
  for (uint j = 0; j < ND; j++) {
    om[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  for (uint p0 = 0; p0 < BQ; p0 += QPASS) {
    attention_stage(kv, q, row0, q0 + p0, QPASS, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg * 8u >= p0 && sg * 8u < p0 + QPASS) {  // uniform per simdgroup
#pragma clang loop unroll(full)
      for (uint j = 0; j < ND; j++) {
        if (j < g.nd) {
          simdgroup_load(qm[j], kv + (sg * 8u - p0) * LD + j * 8u, LD);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  float m = attention_neg, l = 0.0f;  // row's running max (base-2 units) and sum, same on its 4 lanes
  const uint kend = min(q0 + BQ, g.seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    attention_stage(kv + BK * LD, v, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (k0 <= q0 + sg * 8u + 7u) {  // some key of the tile is visible to the simdgroup
#pragma clang loop unroll(full)
      for (uint c = 0; c < BK / 8u; c++) {
        simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
#pragma clang loop unroll(full)
        for (uint j = 0; j < ND; j++) {
          if (j < g.nd) {
            simdgroup_float8x8 km;
            simdgroup_load(km, kv + c * 8u * LD + j * 8u, LD, ulong2(0, 0), true);
            simdgroup_multiply_accumulate(acc, qm[j], km, acc);
          }
        }
        simdgroup_store(acc, sbuf + sg * 8u * LS + c * 8u, LS);
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      const uint sb = row * LS + part * CPL;
      float mx = attention_neg;
#pragma clang loop unroll(full)
      for (uint i = 0; i < CPL; i++) {
        const uint u = k0 + part * CPL + i;
        if (u <= t && u < g.seq) {
          mx = max(mx, sbuf[sb + i] * g.scale2);
        }
      }
      mx = max(mx, simd_shuffle_xor(mx, 1));
      mx = max(mx, simd_shuffle_xor(mx, 2));
      const float mnew = max(m, mx);
      const float alpha = fast::exp2(m - mnew);
      float ps = 0.0f;
#pragma clang loop unroll(full)
      for (uint i = 0; i < CPL; i++) {
        const uint u = k0 + part * CPL + i;
        float p = 0.0f;
        if (u <= t && u < g.seq) {
          p = fast::exp2(sbuf[sb + i] * g.scale2 - mnew);
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
#pragma clang loop unroll(full)
      for (uint j = 0; j < ND; j++) {
        if (j < g.nd) {
          simdgroup_multiply(om[j], dm, om[j]);
        }
      }
#pragma clang loop unroll(full)
      for (uint c = 0; c < BK / 8u; c++) {
        simdgroup_float8x8 pm;
        simdgroup_load(pm, sbuf + sg * 8u * LS + c * 8u, LS);
#pragma clang loop unroll(full)
        for (uint j = 0; j < ND; j++) {
          if (j < g.nd) {
            simdgroup_float8x8 vm;
            simdgroup_load(vm, kv + BK * LD + c * 8u * LD + j * 8u, LD);
            simdgroup_multiply_accumulate(om[j], pm, vm, om[j]);
          }
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  // O through the K/V buffer, QPASS rows at a time; out = O/l.
  const bool live = t < g.seq;
  for (uint p0 = 0; p0 < BQ; p0 += QPASS) {
    const bool mine = sg * 8u >= p0 && sg * 8u < p0 + QPASS;  // uniform per simdgroup
    if (mine) {
#pragma clang loop unroll(full)
      for (uint j = 0; j < ND; j++) {
        if (j < g.nd) {
          simdgroup_store(om[j], kv + (sg * 8u - p0) * LD + j * 8u, LD);
        }
      }
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    if (mine && live) {
      const ulong o = (row0 + t) * g.qs + ulong(h) * g.D;
      for (uint d = part; d < g.D; d += 4u) {
        out[o + d] = static_cast<T>(kv[(row - p0) * LD + d] / l);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (live && part == 0) {
    lse[(row0 + t) * g.H + h] = m * attention_ln2 + log(l);
  }
}

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
  threadgroup float kv[attention_fwd_simd_kv];  // K (BK, LD), V (BK, LD); Q and O in passes
  threadgroup float sbuf[attention_fwd_simd_s];  // S then P (64, BK + 4)
  threadgroup float diag[8 * 64];                 // an 8×8 diagonal per simdgroup
  if (args.head_dim <= attention_dsmall) {
    attention_fwd_simd_tile<T, attention_dsmall, 32, 64>(kv, sbuf, diag, q, k, v, out, lse, args, tgpos, tid, lane, sg);
  } else {
    attention_fwd_simd_tile<T, attention_dmax, 16, 32>(kv, sbuf, diag, q, k, v, out, lse, args, tgpos, tid, lane, sg);
  }
}

// attention_fwd_portable: one threadgroup per (query tile of 32 rows, h, b);
// grid (ceil(T/32), H, B), 128 threads, TPR = 4 per query row (thread part
// p takes keys p, p+4, ... of a tile and head-dim columns p, p+4, ...). Per
// key tile of BK keys (16, or 8 for D > 64): scores, row max and sum over
// the 4 threads through threadgroup memory, then the rescaled O += P·V in
// registers.
// Threadgroup memory: Q 32·LD·4 = 8.5 KB (D = 64) or 16.5 KB (D = 128), K
// and V 2·BK·LD·4 = 8.5 KB, P 32·(BK+4)·4 ≤ 2.5 KB, partial maxima and sums
// 2·128·4 = 1 KB: 28.5 KB at most.
// Baseline: 8.6 GFLOP as the simd flavour; tile traffic of K and V 277 MB.
// Roofline max(2.4 ms, 2.8 ms) = 2.8 ms.
template <typename T, uint DMAX, uint BK, typename P>
METAL_FUNC void attention_fwd_port_tile(
    P qbuf, P kv, P pbuf, P redmax, P redsum, device const T* q, device const T* k, device const T* v,
    device T* out, device float* lse, constant AttentionArgs& args, uint3 tgpos, uint tid) {
  constexpr uint BQ = 32;
  constexpr uint NT = attention_tile_threads;
  constexpr uint LP = BK + 4;  // row stride of P
  const attention_geometry g = attention_geom(args);
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / g.G;
  const ulong row0 = ulong(tgpos.z) * g.seq;
  const uint LD = g.LD;
  const uint row = tid / 4u, part = tid % 4u;
  const uint t = q0 + row;

  attention_stage(qbuf, q, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
  float o[DMAX / 4];
#pragma clang loop unroll(full)
  for (uint i = 0; i < DMAX / 4u; i++) {
    o[i] = 0.0f;
  }
  float m = attention_neg, l = 0.0f;
  const uint kend = min(q0 + BQ, g.seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    attention_stage(kv + BK * LD, v, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s[BK / 4];
    float mx = attention_neg;
#pragma clang loop unroll(full)
    for (uint i = 0; i < BK / 4u; i++) {
      const uint c = part + 4u * i;
      float dot = 0.0f;
      for (uint d = 0; d < g.D; d++) {
        dot += qbuf[row * LD + d] * kv[c * LD + d];
      }
      s[i] = dot * g.scale2;
      const uint u = k0 + c;
      if (u <= t && u < g.seq) {
        mx = max(mx, s[i]);
      }
    }
    redmax[tid] = mx;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    mx = max(max(max(redmax[row * 4u], redmax[row * 4u + 1u]), redmax[row * 4u + 2u]), redmax[row * 4u + 3u]);
    const float mnew = max(m, mx);
    const float alpha = fast::exp2(m - mnew);
    float ps = 0.0f;
#pragma clang loop unroll(full)
    for (uint i = 0; i < BK / 4u; i++) {
      const uint c = part + 4u * i;
      const uint u = k0 + c;
      float p = 0.0f;
      if (u <= t && u < g.seq) {
        p = fast::exp2(s[i] - mnew);
      }
      pbuf[row * LP + c] = p;
      ps += p;
    }
    redsum[tid] = ps;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    ps = ((redsum[row * 4u] + redsum[row * 4u + 1u]) + redsum[row * 4u + 2u]) + redsum[row * 4u + 3u];
    l = l * alpha + ps;
    m = mnew;
#pragma clang loop unroll(full)
    for (uint i = 0; i < DMAX / 4u; i++) {
      const uint d = part + 4u * i;
      if (d < g.D) {
        float acc = o[i] * alpha;
        for (uint c = 0; c < BK; c++) {
          acc += pbuf[row * LP + c] * kv[BK * LD + c * LD + d];
        }
        o[i] = acc;
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (t < g.seq) {
    const ulong ob = (row0 + t) * g.qs + ulong(h) * g.D;
#pragma clang loop unroll(full)
    for (uint i = 0; i < DMAX / 4u; i++) {
      const uint d = part + 4u * i;
      if (d < g.D) {
        out[ob + d] = static_cast<T>(o[i] / l);
      }
    }
    if (part == 0) {
      lse[(row0 + t) * g.H + h] = m * attention_ln2 + log(l);
    }
  }
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_tile_threads)]] void attention_fwd_portable(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device T* out [[buffer(3)]],                   // (N, H, D)
    device float* lse [[buffer(4)]],               // (N, H)
    constant AttentionArgs& args [[buffer(5)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float qbuf[attention_fwd_port_q];   // Q (32, LD)
  threadgroup float kv[attention_fwd_port_kv];    // K (BK, LD), V (BK, LD)
  threadgroup float pbuf[attention_fwd_port_p];   // P (32, BK + 4)
  threadgroup float redmax[attention_tile_threads];
  threadgroup float redsum[attention_tile_threads];
  if (args.head_dim <= attention_dsmall) {
    attention_fwd_port_tile<T, attention_dsmall, 16>(qbuf, kv, pbuf, redmax, redsum, q, k, v, out, lse, args, tgpos, tid);
  } else {
    attention_fwd_port_tile<T, attention_dmax, 8>(qbuf, kv, pbuf, redmax, redsum, q, k, v, out, lse, args, tgpos, tid);
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
// rows and the dq accumulator in registers. Per key tile of BK keys (32, or
// 16 for D > 64): S = Q·Kᵀ, dP = dout·Vᵀ, dS = P⊙(dP − δ) with
// P = 2^(scale₂·S − lse·log2 e), dQ += dS·K; finally dq = scale·dQ. Q, dout
// (at the start) and dQ (at the end) pass through the K/V buffer.
// Threadgroup memory: K and V 2·BK·LD·4 = 17 KB, S/dS and dP
// 2·32·(BK+4)·4 = 9 KB: 26 KB.
// Baseline: 6·D FLOPs per pair = 12.9 GFLOP; compulsory bytes q, dout, dq
// 8.4 MB each, k, v 4.2 MB each, lse, δ 0.26 MB each = 34.1 MB; tile
// traffic of K and V 277 MB. Roofline max(3.6 ms, 2.8 ms) = 3.6 ms.
template <typename T, uint DMAX, uint BK, typename P>
METAL_FUNC void attention_dq_simd_tile(
    P kv, P sbuf, P dpbuf, device const T* q, device const T* k, device const T* v, device const T* dout,
    device const float* lse, device const float* delta, device T* dq, constant AttentionArgs& args,
    uint3 tgpos, uint tid, uint lane, uint sg) {
  constexpr uint BQ = 32;
  constexpr uint NT = attention_tile_threads;
  constexpr uint ND = DMAX / 8;
  constexpr uint CPL = BK / 4;
  constexpr uint LS = BK + 4;
  const attention_geometry g = attention_geom(args);
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / g.G;
  const ulong row0 = ulong(tgpos.z) * g.seq;
  const uint LD = g.LD;
  const uint r = lane / 4u, part = lane % 4u;
  const uint row = sg * 8u + r;
  const uint t = q0 + row;

  simdgroup_float8x8 qm[ND];
  simdgroup_float8x8 gm[ND];
  simdgroup_float8x8 dqm[ND];
  attention_stage(kv, q, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
  threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
  for (uint j = 0; j < ND; j++) {
    if (j < g.nd) {
      simdgroup_load(qm[j], kv + sg * 8u * LD + j * 8u, LD);
    }
    dqm[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  attention_stage(kv, dout, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
  threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
  for (uint j = 0; j < ND; j++) {
    if (j < g.nd) {
      simdgroup_load(gm[j], kv + sg * 8u * LD + j * 8u, LD);
    }
  }
  float lse2 = 0.0f, delta_t = 0.0f;
  if (t < g.seq) {
    lse2 = lse[(row0 + t) * g.H + h] * attention_log2e;
    delta_t = delta[(row0 + t) * g.H + h];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  const uint kend = min(q0 + BQ, g.seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    attention_stage(kv + BK * LD, v, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
    for (uint c = 0; c < BK / 8u; c++) {
      simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      simdgroup_float8x8 dacc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
#pragma clang loop unroll(full)
      for (uint j = 0; j < ND; j++) {
        if (j < g.nd) {
          simdgroup_float8x8 km;
          simdgroup_load(km, kv + c * 8u * LD + j * 8u, LD, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(acc, qm[j], km, acc);
          simdgroup_float8x8 vm;
          simdgroup_load(vm, kv + BK * LD + c * 8u * LD + j * 8u, LD, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(dacc, gm[j], vm, dacc);
        }
      }
      simdgroup_store(acc, sbuf + sg * 8u * LS + c * 8u, LS);
      simdgroup_store(dacc, dpbuf + sg * 8u * LS + c * 8u, LS);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    const uint sb = row * LS + part * CPL;
#pragma clang loop unroll(full)
    for (uint i = 0; i < CPL; i++) {
      const uint u = k0 + part * CPL + i;
      float ds = 0.0f;
      if (u <= t && u < g.seq) {
        const float p = fast::exp2(sbuf[sb + i] * g.scale2 - lse2);
        ds = p * (dpbuf[sb + i] - delta_t);
      }
      sbuf[sb + i] = ds;
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
    for (uint c = 0; c < BK / 8u; c++) {
      simdgroup_float8x8 dsm;
      simdgroup_load(dsm, sbuf + sg * 8u * LS + c * 8u, LS);
#pragma clang loop unroll(full)
      for (uint j = 0; j < ND; j++) {
        if (j < g.nd) {
          simdgroup_float8x8 km;
          simdgroup_load(km, kv + c * 8u * LD + j * 8u, LD);
          simdgroup_multiply_accumulate(dqm[j], dsm, km, dqm[j]);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

#pragma clang loop unroll(full)
  for (uint j = 0; j < ND; j++) {
    if (j < g.nd) {
      simdgroup_store(dqm[j], kv + sg * 8u * LD + j * 8u, LD);
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  if (t < g.seq) {
    const ulong o = (row0 + t) * g.qs + ulong(h) * g.D;
    for (uint d = part; d < g.D; d += 4u) {
      dq[o + d] = static_cast<T>(args.scale * kv[row * LD + d]);
    }
  }
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_tile_threads)]] void attention_dq_simd(
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
  threadgroup float kv[attention_dq_simd_kv];    // K (BK, LD), V (BK, LD); Q, dout, dQ
  threadgroup float sbuf[attention_dq_simd_s];   // S, then dS (32, BK + 4)
  threadgroup float dpbuf[attention_dq_simd_s];  // dP (32, BK + 4)
  if (args.head_dim <= attention_dsmall) {
    attention_dq_simd_tile<T, attention_dsmall, 32>(kv, sbuf, dpbuf, q, k, v, dout, lse, delta, dq, args, tgpos, tid, lane, sg);
  } else {
    attention_dq_simd_tile<T, attention_dmax, 16>(kv, sbuf, dpbuf, q, k, v, dout, lse, delta, dq, args, tgpos, tid, lane, sg);
  }
}

// attention_dq_portable: one threadgroup per (query tile of BQ rows, h, b);
// grid (ceil(T/BQ), H, B), 128 threads, TPR per query row (keys p, p+TPR,
// ... of a tile; head-dim columns p, p+TPR, ... of dq): BQ = 32, TPR = 4,
// key tiles of BK = 16 for D ≤ 64; BQ = 16, TPR = 8, BK = 8 for D > 64.
// Per key tile: the row's scores and dP as dot products, dS into
// threadgroup memory, then dQ += dS·K in registers.
// Threadgroup memory: Q and dout 2·BQ·LD·4 = 17 KB, K and V 2·BK·LD·4 =
// 8.5 KB, dS BQ·(BK+4)·4 ≤ 2.5 KB: 28 KB at most.
// Baseline: 12.9 GFLOP as the simd flavour; tile traffic of K and V 277 MB.
// Roofline max(3.6 ms, 2.8 ms) = 3.6 ms.
template <typename T, uint DMAX, uint BQ, uint BK, uint TPR, typename P>
METAL_FUNC void attention_dq_port_tile(
    P qg, P kv, P dsbuf, device const T* q, device const T* k, device const T* v, device const T* dout,
    device const float* lse, device const float* delta, device T* dq, constant AttentionArgs& args,
    uint3 tgpos, uint tid) {
  constexpr uint NT = attention_tile_threads;
  constexpr uint LP = BK + 4;
  const attention_geometry g = attention_geom(args);
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / g.G;
  const ulong row0 = ulong(tgpos.z) * g.seq;
  const uint LD = g.LD;
  const uint row = tid / TPR, part = tid % TPR;
  const uint t = q0 + row;

  attention_stage(qg, q, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
  attention_stage(qg + BQ * LD, dout, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
  float lse2 = 0.0f, delta_t = 0.0f;
  if (t < g.seq) {
    lse2 = lse[(row0 + t) * g.H + h] * attention_log2e;
    delta_t = delta[(row0 + t) * g.H + h];
  }
  float acc[DMAX / TPR];
#pragma clang loop unroll(full)
  for (uint i = 0; i < DMAX / TPR; i++) {
    acc[i] = 0.0f;
  }
  const uint kend = min(q0 + BQ, g.seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    attention_stage(kv + BK * LD, v, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
    for (uint i = 0; i < BK / TPR; i++) {
      const uint c = part + TPR * i;
      const uint u = k0 + c;
      float ds = 0.0f;
      if (u <= t && u < g.seq) {
        float s = 0.0f, dp = 0.0f;
        for (uint d = 0; d < g.D; d++) {
          s += qg[row * LD + d] * kv[c * LD + d];
          dp += qg[BQ * LD + row * LD + d] * kv[BK * LD + c * LD + d];
        }
        const float p = fast::exp2(s * g.scale2 - lse2);
        ds = p * (dp - delta_t);
      }
      dsbuf[row * LP + c] = ds;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
    for (uint i = 0; i < DMAX / TPR; i++) {
      const uint d = part + TPR * i;
      if (d < g.D) {
        float a = acc[i];
        for (uint c = 0; c < BK; c++) {
          a += dsbuf[row * LP + c] * kv[c * LD + d];
        }
        acc[i] = a;
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (t < g.seq) {
    const ulong o = (row0 + t) * g.qs + ulong(h) * g.D;
#pragma clang loop unroll(full)
    for (uint i = 0; i < DMAX / TPR; i++) {
      const uint d = part + TPR * i;
      if (d < g.D) {
        dq[o + d] = static_cast<T>(args.scale * acc[i]);
      }
    }
  }
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_tile_threads)]] void attention_dq_portable(
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
  threadgroup float qg[attention_dq_port_q];     // Q (BQ, LD), dout (BQ, LD)
  threadgroup float kv[attention_dq_port_kv];    // K (BK, LD), V (BK, LD)
  threadgroup float dsbuf[attention_dq_port_s];  // dS (BQ, BK + 4)
  if (args.head_dim <= attention_dsmall) {
    attention_dq_port_tile<T, attention_dsmall, 32, 16, 4>(qg, kv, dsbuf, q, k, v, dout, lse, delta, dq, args, tgpos, tid);
  } else {
    attention_dq_port_tile<T, attention_dmax, 16, 8, 8>(qg, kv, dsbuf, q, k, v, dout, lse, delta, dq, args, tgpos, tid);
  }
}

// ---------------------------------------------------------------------------
// attention_dkv_simd: one threadgroup per (key tile of 32 rows, kv head hk,
// sequence b); grid (ceil(T/32), Hkv, B), 128 threads = 4 simdgroups × 8
// key rows, k and v rows and the dk, dv accumulators in registers. For each
// query head of the group and each query tile of BQ rows (32, or 16 for
// D > 64) at or after the key tile: Sᵀ = K·Qᵀ, dPᵀ = V·doutᵀ,
// Pᵀ = 2^(scale₂·Sᵀ − lse·log2 e), dSᵀ = Pᵀ⊙(dPᵀ − δ), dV += Pᵀ·dout,
// dK += dSᵀ·Q; finally dk = scale·dK. K and V (at the start) and dK and dV
// (at the end) pass through the Q/dout buffer one at a time.
// Threadgroup memory: Q and dout 2·BQ·LD·4 = 17 KB, Pᵀ and dPᵀ/dSᵀ
// 2·32·(BQ+4)·4 = 9 KB, lse and δ 2·32·4 = 256 B: 26.3 KB.
// Baseline: 8·D FLOPs per pair = 17.2 GFLOP; compulsory bytes k, v, dk, dv
// 4.2 MB each, q, dout 8.4 MB each = 33.6 MB; tile traffic of Q, dout, lse
// and δ 285 MB. Roofline max(4.8 ms, 2.9 ms) = 4.8 ms.
template <typename T, uint DMAX, uint BQ, typename P>
METAL_FUNC void attention_dkv_simd_tile(
    P qg, P pbuf, P dsbuf, P lse_tile, P delta_tile, device const T* q, device const T* k,
    device const T* v, device const T* dout, device const float* lse, device const float* delta,
    device T* dk, device T* dv, constant AttentionArgs& args, uint3 tgpos, uint tid, uint lane, uint sg) {
  constexpr uint BK = 32;
  constexpr uint NT = attention_tile_threads;
  constexpr uint ND = DMAX / 8;
  constexpr uint CPL = BQ / 4;
  constexpr uint LS = BQ + 4;
  const attention_geometry g = attention_geom(args);
  const uint k0 = tgpos.x * BK, hk = tgpos.y;
  const ulong row0 = ulong(tgpos.z) * g.seq;
  const uint LD = g.LD;
  const uint r = lane / 4u, part = lane % 4u;
  const uint row = sg * 8u + r;  // this lane's key row in the tile
  const uint u = k0 + row;

  simdgroup_float8x8 km[ND];
  simdgroup_float8x8 vm[ND];
  simdgroup_float8x8 dkm[ND];
  simdgroup_float8x8 dvm[ND];
  attention_stage(qg, k, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
  threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
  for (uint j = 0; j < ND; j++) {
    if (j < g.nd) {
      simdgroup_load(km[j], qg + sg * 8u * LD + j * 8u, LD);
    }
    dkm[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    dvm[j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  attention_stage(qg, v, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
  threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
  for (uint j = 0; j < ND; j++) {
    if (j < g.nd) {
      simdgroup_load(vm[j], qg + sg * 8u * LD + j * 8u, LD);
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  for (uint gi = 0; gi < g.G; gi++) {
    const uint h = hk * g.G + gi;
    for (uint q0 = k0 - k0 % BQ; q0 < g.seq; q0 += BQ) {
      attention_stage(qg, q, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
      attention_stage(qg + BQ * LD, dout, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
      for (uint i = tid; i < BQ; i += NT) {
        const uint t = q0 + i;
        lse_tile[i] = t < g.seq ? lse[(row0 + t) * g.H + h] * attention_log2e : 0.0f;
        delta_tile[i] = t < g.seq ? delta[(row0 + t) * g.H + h] : 0.0f;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
      for (uint c = 0; c < BQ / 8u; c++) {
        simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        simdgroup_float8x8 dacc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
#pragma clang loop unroll(full)
        for (uint j = 0; j < ND; j++) {
          if (j < g.nd) {
            simdgroup_float8x8 qt;
            simdgroup_load(qt, qg + c * 8u * LD + j * 8u, LD, ulong2(0, 0), true);
            simdgroup_multiply_accumulate(acc, km[j], qt, acc);
            simdgroup_float8x8 gt;
            simdgroup_load(gt, qg + BQ * LD + c * 8u * LD + j * 8u, LD, ulong2(0, 0), true);
            simdgroup_multiply_accumulate(dacc, vm[j], gt, dacc);
          }
        }
        simdgroup_store(acc, pbuf + sg * 8u * LS + c * 8u, LS);
        simdgroup_store(dacc, dsbuf + sg * 8u * LS + c * 8u, LS);
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      const uint sb = row * LS + part * CPL;
#pragma clang loop unroll(full)
      for (uint i = 0; i < CPL; i++) {
        const uint col = part * CPL + i;
        const uint t = q0 + col;
        float p = 0.0f, ds = 0.0f;
        if (u <= t && t < g.seq) {
          p = fast::exp2(pbuf[sb + i] * g.scale2 - lse_tile[col]);
          ds = p * (dsbuf[sb + i] - delta_tile[col]);
        }
        pbuf[sb + i] = p;
        dsbuf[sb + i] = ds;
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
      for (uint c = 0; c < BQ / 8u; c++) {
        simdgroup_float8x8 pm;
        simdgroup_float8x8 dsm;
        simdgroup_load(pm, pbuf + sg * 8u * LS + c * 8u, LS);
        simdgroup_load(dsm, dsbuf + sg * 8u * LS + c * 8u, LS);
#pragma clang loop unroll(full)
        for (uint j = 0; j < ND; j++) {
          if (j < g.nd) {
            simdgroup_float8x8 gmat;
            simdgroup_load(gmat, qg + BQ * LD + c * 8u * LD + j * 8u, LD);
            simdgroup_multiply_accumulate(dvm[j], pm, gmat, dvm[j]);
            simdgroup_float8x8 qmat;
            simdgroup_load(qmat, qg + c * 8u * LD + j * 8u, LD);
            simdgroup_multiply_accumulate(dkm[j], dsm, qmat, dkm[j]);
          }
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }

  const ulong o = (row0 + u) * g.ks + ulong(hk) * g.D;
#pragma clang loop unroll(full)
  for (uint j = 0; j < ND; j++) {
    if (j < g.nd) {
      simdgroup_store(dkm[j], qg + sg * 8u * LD + j * 8u, LD);
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  if (u < g.seq) {
    for (uint d = part; d < g.D; d += 4u) {
      dk[o + d] = static_cast<T>(args.scale * qg[row * LD + d]);
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
  for (uint j = 0; j < ND; j++) {
    if (j < g.nd) {
      simdgroup_store(dvm[j], qg + sg * 8u * LD + j * 8u, LD);
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  if (u < g.seq) {
    for (uint d = part; d < g.D; d += 4u) {
      dv[o + d] = static_cast<T>(qg[row * LD + d]);
    }
  }
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_tile_threads)]] void attention_dkv_simd(
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
  threadgroup float qg[attention_dkv_simd_q];     // Q (BQ, LD), dout (BQ, LD); K, V, dK, dV
  threadgroup float pbuf[attention_dkv_simd_p];   // Pᵀ (32, BQ + 4)
  threadgroup float dsbuf[attention_dkv_simd_p];  // dPᵀ, then dSᵀ (32, BQ + 4)
  threadgroup float lse_tile[attention_rows_max];
  threadgroup float delta_tile[attention_rows_max];
  if (args.head_dim <= attention_dsmall) {
    attention_dkv_simd_tile<T, attention_dsmall, 32>(qg, pbuf, dsbuf, lse_tile, delta_tile, q, k, v, dout, lse, delta, dk, dv,
                                       args, tgpos, tid, lane, sg);
  } else {
    attention_dkv_simd_tile<T, attention_dmax, 16>(qg, pbuf, dsbuf, lse_tile, delta_tile, q, k, v, dout, lse, delta, dk, dv,
                                        args, tgpos, tid, lane, sg);
  }
}

// attention_dkv_portable: one threadgroup per (key tile of BK rows, hk, b);
// grid (ceil(T/BK), Hkv, B), 128 threads, TPR per key row (queries p,
// p+TPR, ... of a tile; head-dim columns p, p+TPR, ... of dk and dv):
// BK = 32, TPR = 4, query tiles of BQ = 16 for D ≤ 64; BK = 16, TPR = 8,
// BQ = 8 for D > 64. For each query head of the group and each query tile
// at or after the key tile: P and dS of the row's keys against the tile's
// queries as dot products into threadgroup memory, then dV += Pᵀ·dout and
// dK += dSᵀ·Q in registers.
// Threadgroup memory: K and V 2·BK·LD·4 = 17 KB, Q and dout 2·BQ·LD·4 =
// 8.5 KB, Pᵀ and dSᵀ 2·BK·(BQ+4)·4 ≤ 5 KB, lse and δ 256 B: 30.8 KB at
// most.
// Baseline: 17.2 GFLOP as the simd flavour; tile traffic of Q, dout, lse and
// δ 285 MB as the simd flavour (every query row at or after the key tile,
// whatever BQ). Roofline max(4.8 ms, 2.9 ms) = 4.8 ms.
template <typename T, uint DMAX, uint BK, uint BQ, uint TPR, typename P>
METAL_FUNC void attention_dkv_port_tile(
    P kv, P qg, P pbuf, P dsbuf, P lse_tile, P delta_tile, device const T* q, device const T* k,
    device const T* v, device const T* dout, device const float* lse, device const float* delta,
    device T* dk, device T* dv, constant AttentionArgs& args, uint3 tgpos, uint tid) {
  constexpr uint NT = attention_tile_threads;
  constexpr uint LP = BQ + 4;
  const attention_geometry g = attention_geom(args);
  const uint k0 = tgpos.x * BK, hk = tgpos.y;
  const ulong row0 = ulong(tgpos.z) * g.seq;
  const uint LD = g.LD;
  const uint row = tid / TPR, part = tid % TPR;
  const uint u = k0 + row;

  attention_stage(kv, k, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
  attention_stage(kv + BK * LD, v, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
  float dka[DMAX / TPR];
  float dva[DMAX / TPR];
#pragma clang loop unroll(full)
  for (uint i = 0; i < DMAX / TPR; i++) {
    dka[i] = 0.0f;
    dva[i] = 0.0f;
  }
  for (uint gi = 0; gi < g.G; gi++) {
    const uint h = hk * g.G + gi;
    for (uint q0 = k0 - k0 % BQ; q0 < g.seq; q0 += BQ) {
      attention_stage(qg, q, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
      attention_stage(qg + BQ * LD, dout, row0, q0, BQ, g.seq, g.qs, h, g.D, g.Dp, LD, tid, NT);
      for (uint i = tid; i < BQ; i += NT) {
        const uint t = q0 + i;
        lse_tile[i] = t < g.seq ? lse[(row0 + t) * g.H + h] * attention_log2e : 0.0f;
        delta_tile[i] = t < g.seq ? delta[(row0 + t) * g.H + h] : 0.0f;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
      for (uint i = 0; i < BQ / TPR; i++) {
        const uint c = part + TPR * i;
        const uint t = q0 + c;
        float p = 0.0f, ds = 0.0f;
        if (u <= t && t < g.seq) {
          float s = 0.0f, dp = 0.0f;
          for (uint d = 0; d < g.D; d++) {
            s += kv[row * LD + d] * qg[c * LD + d];
            dp += kv[BK * LD + row * LD + d] * qg[BQ * LD + c * LD + d];
          }
          p = fast::exp2(s * g.scale2 - lse_tile[c]);
          ds = p * (dp - delta_tile[c]);
        }
        pbuf[row * LP + c] = p;
        dsbuf[row * LP + c] = ds;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
#pragma clang loop unroll(full)
      for (uint i = 0; i < DMAX / TPR; i++) {
        const uint d = part + TPR * i;
        if (d < g.D) {
          float a = dva[i], b = dka[i];
          for (uint c = 0; c < BQ; c++) {
            a += pbuf[row * LP + c] * qg[BQ * LD + c * LD + d];
            b += dsbuf[row * LP + c] * qg[c * LD + d];
          }
          dva[i] = a;
          dka[i] = b;
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  if (u < g.seq) {
    const ulong o = (row0 + u) * g.ks + ulong(hk) * g.D;
#pragma clang loop unroll(full)
    for (uint i = 0; i < DMAX / TPR; i++) {
      const uint d = part + TPR * i;
      if (d < g.D) {
        dk[o + d] = static_cast<T>(args.scale * dka[i]);
        dv[o + d] = static_cast<T>(dva[i]);
      }
    }
  }
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_tile_threads)]] void attention_dkv_portable(
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
  threadgroup float kv[attention_dkv_port_kv];     // K (BK, LD), V (BK, LD)
  threadgroup float qg[attention_dkv_port_q];      // Q (BQ, LD), dout (BQ, LD)
  threadgroup float pbuf[attention_dkv_port_p];    // Pᵀ (BK, BQ + 4)
  threadgroup float dsbuf[attention_dkv_port_p];   // dSᵀ (BK, BQ + 4)
  threadgroup float lse_tile[attention_rows_max];
  threadgroup float delta_tile[attention_rows_max];
  if (args.head_dim <= attention_dsmall) {
    attention_dkv_port_tile<T, attention_dsmall, 32, 16, 4>(kv, qg, pbuf, dsbuf, lse_tile, delta_tile, q, k, v, dout, lse, delta,
                                              dk, dv, args, tgpos, tid);
  } else {
    attention_dkv_port_tile<T, attention_dmax, 16, 8, 8>(kv, qg, pbuf, dsbuf, lse_tile, delta_tile, q, k, v, dout, lse, delta,
                                              dk, dv, args, tgpos, tid);
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
