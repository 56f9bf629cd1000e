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
// threadgroup memory, softmax statistics stay in registers, and the
// forward keeps no score matrix larger than one tile. Six kernels:
//   attention_fwd:    out and lse, online softmax (running max and sum in
//                     float) over the key tiles of one query tile;
//   attention_delta:  δ = rowsum(dout⊙out), the backward's pre-pass into a
//                     float (N, H) scratch (not dispatched where
//                     attention_dkv_ds computes δ itself: simd, D = 64
//                     and 128, AttentionArgs.own_delta);
//   attention_dkv_ds: dk and dv of one key tile, one pass over the query
//                     tiles of every query head of the group, in a fixed
//                     order (deterministic, no atomics), P and dP
//                     recomputed from lse, and dS stored into a float
//                     scratch of the causal half (attention_ds_head);
//   attention_dq_ds:  dq of one query tile from that dS, one pass over its
//                     key tiles: 2·D FLOPs per pair instead of 6·D;
//   attention_dq, attention_dkv: the same without the scratch, dq
//                     recomputing S and dP (the host's choice when the
//                     scratch, B·H·T²/2 floats, would pass its bound).
// Softmax, P, dS and every accumulation are float; each output is rounded
// once on store. Rows past T and columns past D of a staged tile are zero,
// and masked probabilities are exactly 0.
//
// Softmax in base 2: scores are scaled by scale·log2(e) once, so every
// exponential is fast::exp2 (one instruction) and lse = m·ln 2 + log(l);
// the backward uses lse·log2(e). The rounding of the folded scale (≤ 1 ulp
// of a score) is below the float32 error of the dot products themselves.
//
// simd flavour (attention_*_simd, attention_delta_simd): the head dim is a
// template parameter, HD = 64 or 128: D = 64 and D = 128 run their own
// instantiation with every loop bound a compile-time constant; any other
// D ≤ 128 runs the next larger one (D < 64 the 64, 64 < D < 128 the 128)
// with columns D..HD−1 staged as zeros by a checked loader (zeros add
// nothing to a dot product, so the MMAs need no guard). 128 threads = 4
// simdgroups, each owning 16 rows (query rows in the forward and dq, key
// rows in dk/dv) as two 8-row blocks, so every K/V (Q/dout) fragment a
// simdgroup loads from threadgroup memory feeds two MMAs, one per row
// block. Its own operand rows (Q, or Q and dout, or K and V) and its
// accumulators are simdgroup matrices in registers, loaded once.
// Staging: tiles are kept in the compute dtype T (row stride HD + 16 bytes,
// as MLX's BlockLoader pads) and, for D = 64 and 128, loaded by one
// unchecked 16-byte vector load per 8 halves/bfloats (4 floats), the
// index arithmetic shifts and masks of compile-time powers of two; only a
// tile that crosses the end of the sequence checks its rows, once per
// vector. The host requires 16-byte aligned tensor offsets there.
// Scores in registers (as MLX's Steel attention): S (and dP) come out of
// the MMAs as float simdgroup matrices and never leave them. Each lane
// works on the two elements of every 8×8 matrix it owns
// (thread_elements(): row (q & 4) + (lane/2) % 4, columns
// (q & 2)·2 + (lane % 2)·2 and the next, q = lane/4), two rows per lane
// (one per 8-row block) across the tile's 8-key blocks; a row's
// max and sum combine its four lanes (lane, lane^1, lane^8, lane^9) with
// two simd_shuffle_xor steps (masks 1 and 8). The mask is applied element
// by element from each element's (row, column); P overwrites S (and dS
// overwrites dP) element-wise in place, and those float matrices are the
// float operands of the next MMAs (float × T products, as Apple's
// compiler takes them), so P and dS are never rounded to T: the outputs
// stay the float32 results rounded once. O and the dQ/dK/dV accumulators
// share the layout, so the rescale and the epilogue work on the lane's
// own elements too. No
// threadgroup memory holds a score, and no simdgroup matrix is stored to
// threadgroup memory anywhere.
// Rescale: lazy. A row keeps its reference max m while the tile's max
// exceeds it by at most attention_lazy (2^8 in P, far below float's
// range); only when some row of the simdgroup passes it, and already has
// a sum, are the simdgroup's O blocks rescaled, each lane's elements by
// its rows' factors (no diagonal-matrix product). Causal mask: only tiles
// that the diagonal crosses (and the tile that crosses the sequence end in
// dk/dv) test keys against queries; tiles wholly below it take an unmasked
// path, tiles wholly above it are skipped (uniform per simdgroup).
// Epilogue: from registers, one vec<T, 2> store per lane per 8×8
// accumulator (the four lanes of a row write 16 consecutive bytes in
// bf16), element stores of the columns below D on the checked path.
// portable flavour: plain loops over float threadgroup tiles, TPR threads
// per row (4, or 8 for D > 64), row reductions through threadgroup memory,
// two tile shapes chosen at run time by D (≤ 64 and ≤ 128); staged tiles
// hold Dp = D rounded up to 8 columns with a row stride LD = Dp + 4.
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

// Threads per threadgroup of the portable tile kernels.
constant constexpr uint attention_tile_threads = 128;

// Threadgroup memory of each portable kernel, in floats: the larger of its
// two tile shapes (the shapes' sizes are in the kernels' comments).
constant constexpr uint attention_fwd_port_q = 4224;     // Q: 32·68 | 32·132
constant constexpr uint attention_fwd_port_kv = 2176;    // K, V: 2·16·68 | 2·8·132
constant constexpr uint attention_fwd_port_p = 640;      // P: 32·20 | 32·12
constant constexpr uint attention_dq_port_q = 4352;      // Q, dout: 2·32·68 | 2·16·132
constant constexpr uint attention_dq_port_kv = 2176;     // K, V: 2·16·68 | 2·8·132
constant constexpr uint attention_dq_port_s = 640;       // dS: 32·20 | 16·12
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


// The backward's dS scratch: attention_dkv_ds (either flavour) writes
// dS = P⊙(dP − δ) (float, before the scale) as it goes, and
// attention_dq_ds reads it back for dq = scale·dS·K, so that dq does not
// recompute S and dP (10·D FLOPs per pair in all instead of 14·D). Per
// (sequence b, query head h), bh = b·H + h, it holds the causal half of
// the T×T matrix in blocks of 64 query rows: block qb is rows
// t = 64·qb .. 64·qb + 63, each of the 64·(qb + 1) keys u < 64·(qb + 1),
// row-major; the blocks follow each other, 4096·nb(nb + 1)/2 floats per
// (b, h) with nb = ceil(T/64). The writer stores every (t, u) with
// u ≤ t < T; the readers mask the rest (u > t inside a diagonal block,
// never written) by select, so a stale or unwritten value there is never
// used.
constant constexpr uint attention_ds_block = 64;

inline ulong attention_ds_head(uint seq) {
  const ulong nb = (seq + attention_ds_block - 1) / attention_ds_block;
  return ulong(attention_ds_block * attention_ds_block) * nb * (nb + 1) / 2;
}

// attention_ds_ld is the row length (keys) of query row t's block.
inline uint attention_ds_ld(uint t) {
  return attention_ds_block * (t / attention_ds_block + 1);
}

// attention_ds_row is the offset of row t of (b, h) in the scratch.
inline ulong attention_ds_row(uint seq, uint bh, uint t) {
  const ulong qb = t / attention_ds_block;
  return ulong(bh) * attention_ds_head(seq) + ulong(attention_ds_block * attention_ds_block) * qb * (qb + 1) / 2 +
         ulong(t - attention_ds_block * uint(qb)) * attention_ds_ld(t);
}

// ---------------------------------------------------------------------------
// simd flavour: the shared pieces (see the file comment).

// Threads per threadgroup (4 simdgroups), rows per simdgroup and rows per
// threadgroup tile, and the lazy rescale's threshold in base-2 units.
constant constexpr uint attention_simd_threads = 128;
constant constexpr uint attention_sg_rows = 16;
constant constexpr uint attention_tile_rows = 64;
constant constexpr float attention_lazy = 8.0f;

// attention_vw is the elements of T in one 16-byte vector (4 floats, 8
// halves or bfloats), also the staged tiles' row padding.
template <typename T>
constexpr uint attention_vw() {
  return 16 / sizeof(T);
}

// attention_fwd_bk is the forward's key tile; attention_bwd_bk the
// backward's streamed tile (keys of dq, queries of dk/dv), halved for
// wide rows so that a backward threadgroup stays within 12 KB.
template <uint HD>
constexpr uint attention_fwd_bk() {
  return HD <= 64 ? 32 : 16;
}
template <typename T, uint HD>
constexpr uint attention_bwd_bk() {
  return HD * sizeof(T) <= 128 ? 16 : 8;
}

constexpr uint attention_max(uint a, uint b) {
  return a > b ? a : b;
}

// attention_db: the 16-bit instantiations double-buffer their streamed
// tiles (the next tile's loads issued before the current tile's MMAs, one
// barrier per tile); float ones, whose tiles are twice the bytes, stage
// one tile at a time (two barriers per tile) to stay within the
// threadgroup memory bounds (32 KB forward, 12 KB backward).
template <typename T>
constexpr bool attention_db() {
  return sizeof(T) == 2;
}
template <typename T>
constexpr uint attention_nbuf() {
  return attention_db<T>() ? 2 : 1;
}

// Threadgroup memory of the simd kernels: the larger of the HD = 64 and
// HD = 128 instantiations' two streamed tiles of T (K and V, or Q and
// dout). Scores never touch threadgroup memory.
template <typename T>
constexpr uint attention_fwd_tiles() {
  return attention_max(2 * attention_fwd_bk<64>() * (64 + attention_vw<T>()),
                       2 * attention_fwd_bk<128>() * (128 + attention_vw<T>()));
}
template <typename T>
constexpr uint attention_bwd_tiles() {
  return attention_max(2 * attention_bwd_bk<T, 64>() * (64 + attention_vw<T>()),
                       2 * attention_bwd_bk<T, 128>() * (128 + attention_vw<T>()));
}

// attention_frag_row and attention_frag_col are the row and the first
// column of the two elements of an 8×8 simdgroup matrix that lane owns
// (thread_elements(): (row, col) and (row, col + 1)), Apple's layout: with
// q = lane/4, row = (q & 4) + (lane/2) % 4, col = (q & 2)·2 + (lane % 2)·2.
// The four lanes of one row are lane, lane^1, lane^8 and lane^9, and every
// matrix of a simdgroup (S, P, O, dP, dS, accumulators) has this layout,
// so a lane's row statistics apply to its own elements of all of them.
inline uint attention_frag_row(uint lane) {
  const uint q = lane / 4;
  return (q & 4) + (lane / 2) % 4;
}
inline uint attention_frag_col(uint lane) {
  const uint q = lane / 4;
  return (q & 2) * 2 + (lane % 2) * 2;
}

// attention_row_max and attention_row_sum combine a value of each of the
// four lanes of a row (xor 1, then xor 8): every one of them gets the same
// bits (the sum is (a + b) + (c + d) on each, in one order up to
// commutation).
inline float attention_row_max(float x) {
  x = max(x, simd_shuffle_xor(x, ushort(1)));
  return max(x, simd_shuffle_xor(x, ushort(8)));
}
inline float attention_row_sum(float x) {
  x += simd_shuffle_xor(x, ushort(1));
  return x + simd_shuffle_xor(x, ushort(8));
}

// attention_elem is element e of the 16 bytes w (little-endian).
template <typename T>
inline T attention_elem(uint4 w, uint e);
template <>
inline float attention_elem<float>(uint4 w, uint e) {
  return as_type<float>(w[e]);
}
template <>
inline half attention_elem<half>(uint4 w, uint e) {
  const uint x = w[e / 2];
  return as_type<half>(ushort(e % 2 != 0 ? x >> 16 : x & 0xffffu));
}
template <>
inline bfloat attention_elem<bfloat>(uint4 w, uint e) {
  const uint x = w[e / 2];
  return as_type<bfloat>(ushort(e % 2 != 0 ? x >> 16 : x & 0xffffu));
}

// attention_load_vec stages R rows of HD elements at src (row r at
// src + r·ld, 16-byte aligned) into tile (row stride HD + vw): one 16-byte
// load per vw elements, R·HD/vw/128 per thread; R, HD and vw are
// compile-time powers of two, so the divisions are shifts. EDGE: rows
// r ≥ n (past the sequence) are zeros, one check per vector.
template <typename T, uint R, uint HD, bool EDGE, typename PT>
inline void attention_load_vec(PT tile, device const T* src, uint ld, uint n, uint tid) {
  constexpr uint vw = attention_vw<T>();
  constexpr uint per_row = HD / vw;
  constexpr uint LDT = HD + vw;
  constexpr uint count = R * per_row;
  static_assert(count % attention_simd_threads == 0, "attention_load_vec: whole vectors per thread");
#pragma clang loop unroll(full)
  for (uint i = 0; i < count / attention_simd_threads; i++) {
    const uint v = tid + i * attention_simd_threads;
    const uint r = v / per_row, c = (v % per_row) * vw;
    uint4 w = uint4(0u);
    if (!EDGE || r < n) {
      w = *reinterpret_cast<device const uint4*>(src + r * ld + c);
    }
#pragma clang loop unroll(full)
    for (uint e = 0; e < vw; e++) {
      tile[r * LDT + c + e] = attention_elem<T>(w, e);
    }
  }
}

// attention_load_checked stages the same tile for a head dim D < HD: one
// checked element at a time, zeros past row n and column D.
template <typename T, uint R, uint HD, typename PT>
inline void attention_load_checked(PT tile, device const T* src, uint ld, uint n, uint D, uint tid) {
  constexpr uint LDT = HD + attention_vw<T>();
  for (uint e = tid; e < R * HD; e += attention_simd_threads) {
    const uint r = e / HD, c = e % HD;
    tile[r * LDT + c] = r < n && c < D ? src[r * ld + c] : T(0);
  }
}

// attention_load stages R rows of a tile: the vector path when D = HD
// (exact), unchecked unless the tile crosses the end of the sequence
// (n < R rows left), else the checked path.
template <typename T, uint R, uint HD, typename PT>
inline void attention_load(PT tile, device const T* src, uint ld, uint n, uint D, bool exact, uint tid) {
  if (!exact) {
    attention_load_checked<T, R, HD>(tile, src, ld, n, D, tid);
  } else if (n >= R) {
    attention_load_vec<T, R, HD, false>(tile, src, ld, n, tid);
  } else {
    attention_load_vec<T, R, HD, true>(tile, src, ld, n, tid);
  }
}

// attention_rows_in loads a simdgroup's 16 rows of HD columns into the
// register matrices m (two 8-row blocks × HD/8), staging the threadgroup's
// 64 rows (row 0 at src) through tile in passes of R rows.
template <typename T, uint R, uint HD, typename PT>
inline void attention_rows_in(thread simdgroup_matrix<T, 8, 8> (&m)[2][HD / 8], PT tile, device const T* src,
                              uint ld, uint n, uint D, bool exact, uint tid, uint sg) {
  constexpr uint LDT = HD + attention_vw<T>();
  const uint srow = sg * attention_sg_rows;
  for (uint p0 = 0; p0 < attention_tile_rows; p0 += R) {
    attention_load<T, R, HD>(tile, src + ulong(p0) * ld, ld, n > p0 ? n - p0 : 0u, D, exact, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (srow >= p0 && srow < p0 + R) {  // uniform per simdgroup
#pragma clang loop unroll(full)
      for (uint i = 0; i < 2; i++) {
#pragma clang loop unroll(full)
        for (uint j = 0; j < HD / 8; j++) {
          simdgroup_load(m[i][j], tile + (srow - p0 + i * 8) * LDT + j * 8, LDT);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// attention_store_rows writes a simdgroup's 16 rows of accumulators acc
// (row 0 at dst, rows ld apart; n of them exist) from registers: each lane
// its own two elements of every 8×8 matrix, out = x / f (DIV) or f·x with
// f = f0 for the lane's row of the first 8-row block and f1 for the
// second. Exact: one vec<T, 2> store per matrix (the four lanes of a row
// write 8 consecutive elements); otherwise element stores of the columns
// below D.
template <typename T, uint HD, bool DIV>
inline void attention_store_rows(device T* dst, ulong ld, thread simdgroup_float8x8 (&acc)[2][HD / 8], float f0,
                                 float f1, uint n, uint D, bool exact, uint lane) {
  const uint fr = attention_frag_row(lane), fc = attention_frag_col(lane);
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
    const uint row = i * 8 + fr;
    const float f = i == 0 ? f0 : f1;
    if (row < n) {
      device T* o = dst + ulong(row) * ld + fc;
#pragma clang loop unroll(full)
      for (uint j = 0; j < HD / 8; j++) {
        const float2 x = acc[i][j].thread_elements();
        const float a = DIV ? x[0] / f : f * x[0];
        const float b = DIV ? x[1] / f : f * x[1];
        if (exact) {
          vec<T, 2> w;
          w[0] = static_cast<T>(a);
          w[1] = static_cast<T>(b);
          *reinterpret_cast<device vec<T, 2>*>(o + j * 8) = w;
        } else {
          if (j * 8 + fc < D) {
            o[j * 8] = static_cast<T>(a);
          }
          if (j * 8 + fc + 1 < D) {
            o[j * 8 + 1] = static_cast<T>(b);
          }
        }
      }
    }
  }
}

// attention_rescale multiplies the lane's elements of the simdgroup's O
// (16 rows, two 8-row blocks) by its rows' factors: a0 in the first block,
// a1 in the second (O shares S's layout, so they are the lane's own rows).
template <uint ND>
inline void attention_rescale(thread simdgroup_float8x8 (&om)[2][ND], float a0, float a1) {
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
    const float a = i == 0 ? a0 : a1;
#pragma clang loop unroll(full)
    for (uint j = 0; j < ND; j++) {
      om[i][j].thread_elements() *= a;
    }
  }
}

// ---------------------------------------------------------------------------
// attention_fwd_simd: one threadgroup per (query tile of 64 rows, head h,
// sequence b); grid (ceil(T/64), H, B), 128 threads = 4 simdgroups × 16
// query rows, Q and O in registers. Per key tile of BK keys (32 for
// HD = 64, 16 for HD = 128): S = Q·Kᵀ into float matrices, the online
// softmax on each lane's own elements of S (two rows, one per 8-row block,
// BK/4 columns of each), P in place of S in registers, then O += P·V;
// each K and V fragment feeds both row blocks' MMAs.
// Threadgroup memory (bf16 | float): K and V 2·BK·(HD + vw) elements =
// 9.2 | 17.4 KB (HD = 64), 8.7 | 16.9 KB (HD = 128): 9.2 | 17.4 KB
// declared (the score blocks and row sums of the earlier kernel, 9.5 KB,
// are gone: S, P, m and l live in registers, and the epilogue stores O/l
// from them).
// Baseline: 4·D FLOPs per pair = 8.6 GFLOP (exp2 on 33.6M scores);
// compulsory bytes q, out 8.4 MB each, k, v 4.2 MB each, lse 0.26 MB =
// 25.4 MB; tile traffic of K and V 143 MB. Roofline
// max(8.6e9/3.6e12, 143e6/1e11) = 2.4 ms.
template <typename T, uint HD, typename PT>
METAL_FUNC void attention_fwd_simd_tile(PT kvt, device const T* q, device const T* k, device const T* v,
                                        device T* out, device float* lse, constant AttentionArgs& args,
                                        uint3 tgpos, uint tid, uint lane, uint sg) {
  constexpr uint BQ = attention_tile_rows;
  constexpr uint BK = attention_fwd_bk<HD>();
  constexpr uint LDT = HD + attention_vw<T>();
  constexpr uint ND = HD / 8;  // register matrices per row block
  constexpr uint NC = BK / 8;  // 8-key blocks per tile
  const uint seq = args.seq_len, D = args.head_dim, H = args.heads;
  const uint qs = H * D, ks = args.kv_heads * D;
  const bool exact = D == HD;
  const float scale2 = args.scale * attention_log2e;
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / (H / args.kv_heads);
  const ulong row0 = ulong(tgpos.z) * seq;
  // The lane's row and first column in every 8×8 matrix.
  const uint fr = attention_frag_row(lane), fc = attention_frag_col(lane);
  const uint srow = sg * attention_sg_rows;
  const uint first = q0 + srow;  // the simdgroup's first query row
  device const T* kb = k + row0 * ks + hk * D;
  device const T* vb = v + row0 * ks + hk * D;

  simdgroup_matrix<T, 8, 8> qm[2][ND];
  attention_rows_in<T, 2 * BK, HD>(qm, kvt, q + (row0 + q0) * qs + h * D, qs, seq - q0, D, exact, tid, sg);
  simdgroup_float8x8 om[2][ND];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < ND; j++) {
      om[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }

  // m: the reference max (base-2 units) of the lane's row in row block i,
  // l its sum relative to m; the same on the row's four lanes.
  float m[2] = {attention_neg, attention_neg};
  float l[2] = {0.0f, 0.0f};
  const uint kend = min(q0 + BQ, seq);
  // Double buffering (attention_db): tile k0 is in buffer cur, staged
  // during the previous tile (or before the loop); the next tile goes into
  // the other buffer, which the previous tile's barrier freed.
  constexpr bool DB = attention_db<T>();
  constexpr uint TILE = 2 * BK * LDT;  // K and V of one tile
  uint cur = 0;
  if (DB) {
    attention_load<T, BK, HD>(kvt, kb, ks, seq, D, exact, tid);
    attention_load<T, BK, HD>(kvt + BK * LDT, vb, ks, seq, D, exact, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    const uint kvo = cur * TILE;  // offsets, not pointer variables: only a kernel declares threadgroup variables
    if (!DB) {
      attention_load<T, BK, HD>(kvt + kvo, kb + ulong(k0) * ks, ks, seq - k0, D, exact, tid);
      attention_load<T, BK, HD>(kvt + kvo + BK * LDT, vb + ulong(k0) * ks, ks, seq - k0, D, exact, tid);
      threadgroup_barrier(mem_flags::mem_threadgroup);
    } else if (k0 + BK < kend) {
      const uint kn = k0 + BK;
      const uint nxo = (cur ^ 1u) * TILE;
      attention_load<T, BK, HD>(kvt + nxo, kb + ulong(kn) * ks, ks, seq - kn, D, exact, tid);
      attention_load<T, BK, HD>(kvt + nxo + BK * LDT, vb + ulong(kn) * ks, ks, seq - kn, D, exact, tid);
    }
    if (k0 <= first + attention_sg_rows - 1) {  // some key visible to some row (uniform per simdgroup)
      const bool diag = k0 + BK - 1 > first;    // the causal diagonal crosses the tile
      simdgroup_float8x8 sm[2][NC];
#pragma clang loop unroll(full)
      for (uint c = 0; c < NC; c++) {
        sm[0][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        sm[1][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      }
#pragma clang loop unroll(full)
      for (uint j = 0; j < ND; j++) {
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
          simdgroup_matrix<T, 8, 8> kt;
          simdgroup_load(kt, kvt + kvo + c * 8 * LDT + j * 8, LDT, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(sm[0][c], qm[0][j], kt, sm[0][c]);
          simdgroup_multiply_accumulate(sm[1][c], qm[1][j], kt, sm[1][c]);
        }
      }
      // Scale (base 2) and mask the lane's scores in place, and take its
      // rows' maxima over the tile.
      float mnew[2], alpha[2];
      bool grow[2];
#pragma clang loop unroll(full)
      for (uint i = 0; i < 2; i++) {
        const uint t = first + i * 8 + fr;  // the lane's query row in block i
        float mx = attention_neg;
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
          thread float2& sv = sm[i][c].thread_elements();
          const uint u0 = k0 + c * 8 + fc;  // the key of the lane's first column
#pragma clang loop unroll(full)
          for (uint e = 0; e < 2; e++) {
            sv[e] = !diag || u0 + e <= t ? sv[e] * scale2 : attention_neg;
            mx = max(mx, sv[e]);
          }
        }
        mx = attention_row_max(mx);
        grow[i] = mx > m[i] + attention_lazy;
        mnew[i] = grow[i] ? mx : m[i];
        alpha[i] = fast::exp2(m[i] - mnew[i]);  // exactly 1 unless grow
      }
      if (simd_any((grow[0] && l[0] > 0.0f) || (grow[1] && l[1] > 0.0f))) {  // uniform: some row with a sum
        attention_rescale<ND>(om, alpha[0], alpha[1]);
      }
      // P = 2^(s − m) in place of S, in float (masked scores give exactly
      // 0), and its row sums.
#pragma clang loop unroll(full)
      for (uint i = 0; i < 2; i++) {
        float ps = 0.0f;
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
          thread float2& pv = sm[i][c].thread_elements();
          pv[0] = fast::exp2(pv[0] - mnew[i]);
          pv[1] = fast::exp2(pv[1] - mnew[i]);
          ps += pv[0] + pv[1];
        }
        l[i] = l[i] * alpha[i] + attention_row_sum(ps);
        m[i] = mnew[i];
      }
#pragma clang loop unroll(full)
      for (uint c = 0; c < NC; c++) {
#pragma clang loop unroll(full)
        for (uint j = 0; j < ND; j++) {
          simdgroup_matrix<T, 8, 8> vf;
          simdgroup_load(vf, kvt + kvo + BK * LDT + c * 8 * LDT + j * 8, LDT);
          simdgroup_multiply_accumulate(om[0][j], sm[0][c], vf, om[0][j]);
          simdgroup_multiply_accumulate(om[1][j], sm[1][c], vf, om[1][j]);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    cur ^= DB ? 1u : 0u;
  }

  // out = O/l from registers; lse = m·ln 2 + log l (one lane of each row).
  const uint n = first < seq ? seq - first : 0u;
  attention_store_rows<T, HD, true>(out + (row0 + first) * qs + h * D, qs, om, l[0], l[1], n, D, exact, lane);
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
    const uint t = first + i * 8 + fr;
    if (fc == 0 && t < seq) {
      lse[(row0 + t) * H + h] = m[i] * attention_ln2 + log(l[i]);
    }
  }
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_simd_threads)]] void attention_fwd_simd(
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
  threadgroup T kvt[attention_nbuf<T>() * attention_fwd_tiles<T>()];  // K, V (BK, HD + vw) per buffer; Q in passes
  if (args.head_dim <= attention_dsmall) {
    attention_fwd_simd_tile<T, attention_dsmall>(kvt, q, k, v, out, lse, args, tgpos, tid, lane, sg);
  } else {
    attention_fwd_simd_tile<T, attention_dmax>(kvt, q, k, v, out, lse, args, tgpos, tid, lane, sg);
  }
}

// ---------------------------------------------------------------------------
// attention_dq_simd: one threadgroup per (query tile of 64 rows, h, b); grid
// (ceil(T/64), H, B), 128 threads = 4 simdgroups × 16 query rows, q and
// dout rows and the dq accumulator in registers. Per key tile of BK keys
// (attention_bwd_bk: 16 for bf16/half at HD = 64, else 8): S = Q·Kᵀ,
// dP = dout·Vᵀ (each Kᵀ and Vᵀ fragment feeds both row blocks), then on
// each lane's own elements of S and dP, in registers: P =
// 2^(scale₂·S − lse·log2 e), dS = P⊙(dP − δ) in place of dP; dQ += dS·K;
// finally dq = scale·dQ, stored from registers.
// Threadgroup memory (bf16 | float): K and V 2·BK·(HD + vw) elements =
// 4.6 | 4.4 KB (HD = 64), 4.4 | 8.4 KB (HD = 128): 4.6 | 8.4 KB declared
// (the earlier kernel's score blocks, 5.1 | 3.1 KB, are gone).
// Baseline: 6·D FLOPs per pair = 12.9 GFLOP; compulsory bytes q, dout, dq
// 8.4 MB each, k, v 4.2 MB each, lse, δ 0.26 MB each = 34.1 MB; tile
// traffic of K and V 143 MB (64-row query tiles: half the 32-row tiles'
// 277 MB). Roofline max(3.6 ms, 1.4 ms) = 3.6 ms.
template <typename T, uint HD, typename PT>
METAL_FUNC void attention_dq_simd_tile(PT kvt, device const T* q, device const T* k, device const T* v,
                                       device const T* dout, device const float* lse, device const float* delta,
                                       device T* dq, constant AttentionArgs& args, uint3 tgpos, uint tid,
                                       uint lane, uint sg) {
  constexpr uint BQ = attention_tile_rows;
  constexpr uint BK = attention_bwd_bk<T, HD>();
  constexpr uint LDT = HD + attention_vw<T>();
  constexpr uint ND = HD / 8;
  constexpr uint NC = BK / 8;
  const uint seq = args.seq_len, D = args.head_dim, H = args.heads;
  const uint qs = H * D, ks = args.kv_heads * D;
  const bool exact = D == HD;
  const float scale2 = args.scale * attention_log2e;
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / (H / args.kv_heads);
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint fr = attention_frag_row(lane), fc = attention_frag_col(lane);
  const uint srow = sg * attention_sg_rows;
  const uint first = q0 + srow;
  device const T* kb = k + row0 * ks + hk * D;
  device const T* vb = v + row0 * ks + hk * D;

  simdgroup_matrix<T, 8, 8> qm[2][ND];
  simdgroup_matrix<T, 8, 8> gm[2][ND];
  attention_rows_in<T, 2 * BK, HD>(qm, kvt, q + (row0 + q0) * qs + h * D, qs, seq - q0, D, exact, tid, sg);
  attention_rows_in<T, 2 * BK, HD>(gm, kvt, dout + (row0 + q0) * qs + h * D, qs, seq - q0, D, exact, tid, sg);
  simdgroup_float8x8 dqm[2][ND];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < ND; j++) {
      dqm[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }
  // lse·log2 e and δ of the lane's rows (one per row block).
  float lse2[2] = {0.0f, 0.0f}, delta_t[2] = {0.0f, 0.0f};
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
    const uint t = first + i * 8 + fr;
    if (t < seq) {
      lse2[i] = lse[(row0 + t) * H + h] * attention_log2e;
      delta_t[i] = delta[(row0 + t) * H + h];
    }
  }

  const uint kend = min(q0 + BQ, seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_load<T, BK, HD>(kvt, kb + ulong(k0) * ks, ks, seq - k0, D, exact, tid);
    attention_load<T, BK, HD>(kvt + BK * LDT, vb + ulong(k0) * ks, ks, seq - k0, D, exact, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (k0 <= first + attention_sg_rows - 1) {  // uniform per simdgroup
      const bool diag = k0 + BK - 1 > first;
      simdgroup_float8x8 sm[2][NC];
      simdgroup_float8x8 dpm[2][NC];
#pragma clang loop unroll(full)
      for (uint c = 0; c < NC; c++) {
        sm[0][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        sm[1][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        dpm[0][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        dpm[1][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      }
#pragma clang loop unroll(full)
      for (uint j = 0; j < ND; j++) {
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
          simdgroup_matrix<T, 8, 8> kt;
          simdgroup_load(kt, kvt + c * 8 * LDT + j * 8, LDT, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(sm[0][c], qm[0][j], kt, sm[0][c]);
          simdgroup_multiply_accumulate(sm[1][c], qm[1][j], kt, sm[1][c]);
          simdgroup_matrix<T, 8, 8> vt;
          simdgroup_load(vt, kvt + BK * LDT + c * 8 * LDT + j * 8, LDT, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(dpm[0][c], gm[0][j], vt, dpm[0][c]);
          simdgroup_multiply_accumulate(dpm[1][c], gm[1][j], vt, dpm[1][c]);
        }
      }
      // P and dS = P⊙(dP − δ) on the lane's own elements, dS in place of
      // dP (float); masked elements are 0.
#pragma clang loop unroll(full)
      for (uint i = 0; i < 2; i++) {
        const uint t = first + i * 8 + fr;
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
          const float2 sv = sm[i][c].thread_elements();
          thread float2& dsv = dpm[i][c].thread_elements();
          const uint u0 = k0 + c * 8 + fc;
#pragma clang loop unroll(full)
          for (uint e = 0; e < 2; e++) {
            const float p = !diag || u0 + e <= t ? fast::exp2(sv[e] * scale2 - lse2[i]) : 0.0f;
            dsv[e] = p * (dsv[e] - delta_t[i]);
          }
        }
      }
#pragma clang loop unroll(full)
      for (uint c = 0; c < NC; c++) {
#pragma clang loop unroll(full)
        for (uint j = 0; j < ND; j++) {
          simdgroup_matrix<T, 8, 8> kf;
          simdgroup_load(kf, kvt + c * 8 * LDT + j * 8, LDT);
          simdgroup_multiply_accumulate(dqm[0][j], dpm[0][c], kf, dqm[0][j]);
          simdgroup_multiply_accumulate(dqm[1][j], dpm[1][c], kf, dqm[1][j]);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }

  const uint n = first < seq ? seq - first : 0u;
  attention_store_rows<T, HD, false>(dq + (row0 + first) * qs + h * D, qs, dqm, args.scale, args.scale, n, D,
                                     exact, lane);
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_simd_threads)]] void attention_dq_simd(
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
  threadgroup T kvt[attention_bwd_tiles<T>()];  // K (BK, HD + vw), V (BK, HD + vw); Q, dout in passes
  if (args.head_dim <= attention_dsmall) {
    attention_dq_simd_tile<T, attention_dsmall>(kvt, q, k, v, dout, lse, delta, dq, args, tgpos, tid, lane, sg);
  } else {
    attention_dq_simd_tile<T, attention_dmax>(kvt, q, k, v, dout, lse, delta, dq, args, tgpos, tid, lane, sg);
  }
}

// ---------------------------------------------------------------------------
// attention_dkv_simd: one threadgroup per (key tile of 64 rows, kv head hk,
// sequence b); grid (ceil(T/64), Hkv, B), 128 threads = 4 simdgroups × 16
// key rows, k and v rows and the dk, dv accumulators in registers. For
// each query head of the group and each query tile of BQ rows
// (attention_bwd_bk) at or after the key tile: Sᵀ = K·Qᵀ, dPᵀ = V·doutᵀ
// (each Qᵀ and doutᵀ fragment feeds both row blocks), then on each lane's
// own elements, in registers: Pᵀ = 2^(scale₂·Sᵀ − lse·log2 e) and
// dSᵀ = Pᵀ⊙(dPᵀ − δ), in place of Sᵀ and dPᵀ; dV += Pᵀ·dout, dK += dSᵀ·Q;
// finally dk = scale·dK and dv, stored from registers.
// Threadgroup memory: Q and dout as dq's K and V, lse and δ of the query
// tile 2·16·4 = 128 B: 4.7 | 8.6 KB declared (the earlier kernel's score
// blocks, 5.1 | 3.1 KB, are gone).
// Baseline: 8·D FLOPs per pair = 17.2 GFLOP; compulsory bytes k, v, dk, dv
// 4.2 MB each, q, dout 8.4 MB each = 33.6 MB; tile traffic of Q, dout, lse
// and δ 143 MB (64-row key tiles: half the 32-row tiles' 285 MB).
// Roofline max(4.8 ms, 1.4 ms) = 4.8 ms.
// attention_delta_lanes is δ of one row of HD = D elements (64 or 128) on
// its HD/vw consecutive lanes of a simdgroup (sub = the lane's place in the
// row, at a multiple of HD/vw lanes from the simdgroup's start): the lane
// loads the 16 bytes of dout and of out at element o (when load; zeros
// otherwise), and the sum runs d = 0, 1, ..., D − 1 in order, as the
// one-thread loop's (attention_delta_row): at step j the row's lane j
// takes the running sum from lane j − 1 and adds its vw products. The
// row's last lane returns δ. Every lane of the simdgroup must call it
// (simd_shuffle_up). attention_delta_simd and the dk/dv kernel's own δ
// (attention_dkv_delta) both sum through it: the same bits.
template <typename T, uint HD>
inline float attention_delta_lanes(device const T* dout, device const T* out, ulong o, bool load, uint sub) {
  constexpr uint vw = attention_vw<T>();
  constexpr uint lanes = HD / vw;
  uint4 a = uint4(0u), b = uint4(0u);
  if (load) {
    a = *reinterpret_cast<device const uint4*>(dout + o);
    b = *reinterpret_cast<device const uint4*>(out + o);
  }
  float acc = 0.0f;
#pragma clang loop unroll(full)
  for (uint j = 0; j < lanes; j++) {
    const float prev = simd_shuffle_up(acc, ushort(1));
    if (sub == j) {
      acc = j == 0 ? 0.0f : prev;
#pragma clang loop unroll(full)
      for (uint e = 0; e < vw; e++) {
        acc += static_cast<float>(attention_elem<T>(a, e)) * static_cast<float>(attention_elem<T>(b, e));
      }
    }
  }
  return acc;
}

// attention_dkv_delta writes δ of the query tile q0 of head h (BQ rows,
// D = HD) into dlt, zeros past the sequence: the row's HD/vw lanes sum it
// (attention_delta_lanes), attention_simd_threads / (HD/vw) rows per pass,
// BQ·(HD/vw)/128 passes (1, or 2 for float at HD = 128). Every thread of
// the threadgroup calls it.
template <typename T, uint BQ, uint HD, typename PF>
inline void attention_dkv_delta(PF dlt, device const T* dout, device const T* out, ulong row0, uint qs, uint h,
                                uint seq, uint q0, uint tid) {
  constexpr uint vw = attention_vw<T>();
  constexpr uint lanes = HD / vw;
  constexpr uint per = attention_simd_threads / lanes;
  const uint sub = tid % lanes;
#pragma clang loop unroll(full)
  for (uint r0 = 0; r0 < BQ; r0 += per) {
    const uint r = r0 + tid / lanes, tq = q0 + r;
    const bool live = r < BQ && tq < seq;
    const float acc =
        attention_delta_lanes<T, HD>(dout, out, (row0 + tq) * qs + h * HD + sub * vw, live, sub);
    if (r < BQ && sub == lanes - 1) {
      dlt[r] = live ? acc : 0.0f;
    }
  }
}

// attention_dkv_stage stages one step of attention_dkv_simd_tile: the
// query tile q0 of head h, Q and dout (BQ rows each) into qd, and its
// lse·log2 e and δ into lt and dlt (zeros past the sequence): δ read from
// delta, or with own (attention_dkv_ds_simd at D = HD, args.own_delta)
// computed here from dout and out (attention_dkv_delta).
template <typename T, uint BQ, uint HD, typename PT, typename PF>
inline void attention_dkv_stage(PT qd, PF lt, PF dlt, device const T* q, device const T* dout, device const float* lse,
                                device const float* delta, device const T* out, bool own, ulong row0, uint qs, uint H,
                                uint h, uint D, uint seq, uint q0, bool exact, uint tid) {
  constexpr uint LDT = HD + attention_vw<T>();
  const ulong base = (row0 + q0) * qs + h * D;
  attention_load<T, BQ, HD>(qd, q + base, qs, seq - q0, D, exact, tid);
  attention_load<T, BQ, HD>(qd + BQ * LDT, dout + base, qs, seq - q0, D, exact, tid);
  if (own) {
    attention_dkv_delta<T, BQ, HD>(dlt, dout, out, row0, qs, h, seq, q0, tid);
  }
  if (tid < BQ) {
    const uint tq = q0 + tid;
    lt[tid] = tq < seq ? lse[(row0 + tq) * H + h] * attention_log2e : 0.0f;
    if (!own) {
      dlt[tid] = tq < seq ? delta[(row0 + tq) * H + h] : 0.0f;
    }
  }
}

template <typename T, uint HD, bool DS, typename PT, typename PF>
METAL_FUNC void attention_dkv_simd_tile(PT qdt, PF lse_tile, PF delta_tile, device const T* q, device const T* k,
                                        device const T* v, device const T* dout, device const float* lse,
                                        device const float* delta, device const T* out, device T* dk, device T* dv,
                                        device float* ds, constant AttentionArgs& args, uint3 tgpos, uint tid,
                                        uint lane, uint sg) {
  constexpr uint BKV = attention_tile_rows;
  constexpr uint BQ = attention_bwd_bk<T, HD>();
  constexpr uint LDT = HD + attention_vw<T>();
  constexpr uint ND = HD / 8;
  constexpr uint NC = BQ / 8;
  const uint seq = args.seq_len, D = args.head_dim, H = args.heads, G = H / args.kv_heads;
  const uint qs = H * D, ks = args.kv_heads * D;
  const bool exact = D == HD;
  // δ of each query tile computed here (attention_dkv_ds_simd with
  // own_delta, D = HD: the host skips attention_delta), else read.
  const bool own = DS && exact && args.own_delta != 0;
  const float scale2 = args.scale * attention_log2e;
  const uint k0 = tgpos.x * BKV, hk = tgpos.y;
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint fr = attention_frag_row(lane), fc = attention_frag_col(lane);
  const uint srow = sg * attention_sg_rows;
  const uint first = k0 + srow;  // the simdgroup's first key row

  simdgroup_matrix<T, 8, 8> km[2][ND];
  simdgroup_matrix<T, 8, 8> vm[2][ND];
  attention_rows_in<T, 2 * BQ, HD>(km, qdt, k + (row0 + k0) * ks + hk * D, ks, seq - k0, D, exact, tid, sg);
  attention_rows_in<T, 2 * BQ, HD>(vm, qdt, v + (row0 + k0) * ks + hk * D, ks, seq - k0, D, exact, tid, sg);
  simdgroup_float8x8 dkm[2][ND];
  simdgroup_float8x8 dvm[2][ND];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < ND; j++) {
      dkm[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      dvm[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }

  // The steps (query head gi of the group, query tile q0 ≥ k0) in order;
  // with double buffering (attention_db) step n's tiles are in buffer cur,
  // staged during step n − 1 (or before the loop), and step n + 1's go
  // into the other buffer, which step n − 1's barrier freed.
  constexpr bool DB = attention_db<T>();
  constexpr uint TILE = 2 * BQ * LDT;  // Q and dout of one step
  uint cur = 0;
  if (DB) {
    attention_dkv_stage<T, BQ, HD>(qdt, lse_tile, delta_tile, q, dout, lse, delta, out, own, row0, qs, H, hk * G, D,
                                   seq, k0, exact, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  for (uint gi = 0, q0 = k0; gi < G;) {
    const uint h = hk * G + gi;
    uint ngi = gi, nq0 = q0 + BQ;  // the next step
    if (nq0 >= seq) {
      ngi = gi + 1;
      nq0 = k0;
    }
    const uint qo = cur * TILE, lo = cur * BQ;  // offsets, not pointer variables: only a kernel declares threadgroup variables
    if (!DB) {
      attention_dkv_stage<T, BQ, HD>(qdt + qo, lse_tile + lo, delta_tile + lo, q, dout, lse, delta, out, own, row0, qs,
                                     H, h, D, seq, q0, exact, tid);
      threadgroup_barrier(mem_flags::mem_threadgroup);
    } else if (ngi < G) {
      attention_dkv_stage<T, BQ, HD>(qdt + (cur ^ 1u) * TILE, lse_tile + (cur ^ 1u) * BQ, delta_tile + (cur ^ 1u) * BQ,
                                     q, dout, lse, delta, out, own, row0, qs, H, hk * G + ngi, D, seq, nq0, exact,
                                     tid);
    }
    {
      if (q0 + BQ - 1 >= first) {  // some query at or after some key (uniform per simdgroup)
        // The causal diagonal or the end of the sequence crosses the tile.
        const bool diag = q0 < first + attention_sg_rows - 1 || q0 + BQ > seq;
        simdgroup_float8x8 st[2][NC];
        simdgroup_float8x8 dpt[2][NC];
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
          st[0][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
          st[1][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
          dpt[0][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
          dpt[1][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        }
#pragma clang loop unroll(full)
        for (uint j = 0; j < ND; j++) {
#pragma clang loop unroll(full)
          for (uint c = 0; c < NC; c++) {
            simdgroup_matrix<T, 8, 8> qt;
            simdgroup_load(qt, qdt + qo + c * 8 * LDT + j * 8, LDT, ulong2(0, 0), true);
            simdgroup_multiply_accumulate(st[0][c], km[0][j], qt, st[0][c]);
            simdgroup_multiply_accumulate(st[1][c], km[1][j], qt, st[1][c]);
            simdgroup_matrix<T, 8, 8> gt;
            simdgroup_load(gt, qdt + qo + BQ * LDT + c * 8 * LDT + j * 8, LDT, ulong2(0, 0), true);
            simdgroup_multiply_accumulate(dpt[0][c], vm[0][j], gt, dpt[0][c]);
            simdgroup_multiply_accumulate(dpt[1][c], vm[1][j], gt, dpt[1][c]);
          }
        }
        // Pᵀ in place of Sᵀ and dSᵀ = Pᵀ⊙(dPᵀ − δ) in place of dPᵀ (float),
        // on the lane's own elements (key row u, query columns tq); masked
        // elements are 0.
#pragma clang loop unroll(full)
        for (uint i = 0; i < 2; i++) {
          const uint u = first + i * 8 + fr;  // the lane's key row in block i
#pragma clang loop unroll(full)
          for (uint c = 0; c < NC; c++) {
            thread float2& pv = st[i][c].thread_elements();
            thread float2& dsv = dpt[i][c].thread_elements();
#pragma clang loop unroll(full)
            for (uint e = 0; e < 2; e++) {
              const uint col = c * 8 + fc + e;  // the query's column in the tile
              const uint tq = q0 + col;
              pv[e] = !diag || (u <= tq && tq < seq) ? fast::exp2(pv[e] * scale2 - lse_tile[lo + col]) : 0.0f;
              dsv[e] = pv[e] * (dsv[e] - delta_tile[lo + col]);
            }
          }
        }
        if (DS) {
          // dS of the tile into the scratch: the lane's key row u, query
          // rows q0 + col (one 64-row block: BQ divides 64), rows past T
          // left out. Every (t, u) with u ≤ t < T of this key tile and
          // head is written by exactly one lane.
          const ulong rb = attention_ds_row(seq, tgpos.z * H + h, q0);
          const uint L = attention_ds_ld(q0);
#pragma clang loop unroll(full)
          for (uint i = 0; i < 2; i++) {
            const uint u = first + i * 8 + fr;
#pragma clang loop unroll(full)
            for (uint c = 0; c < NC; c++) {
              const float2 dsv = dpt[i][c].thread_elements();
#pragma clang loop unroll(full)
              for (uint e = 0; e < 2; e++) {
                const uint col = c * 8 + fc + e;
                if (q0 + col < seq) {
                  ds[rb + ulong(col) * L + u] = dsv[e];
                }
              }
            }
          }
        }
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
#pragma clang loop unroll(full)
          for (uint j = 0; j < ND; j++) {
            simdgroup_matrix<T, 8, 8> gf;
            simdgroup_load(gf, qdt + qo + BQ * LDT + c * 8 * LDT + j * 8, LDT);
            simdgroup_multiply_accumulate(dvm[0][j], st[0][c], gf, dvm[0][j]);
            simdgroup_multiply_accumulate(dvm[1][j], st[1][c], gf, dvm[1][j]);
          }
        }
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
#pragma clang loop unroll(full)
          for (uint j = 0; j < ND; j++) {
            simdgroup_matrix<T, 8, 8> qf;
            simdgroup_load(qf, qdt + qo + c * 8 * LDT + j * 8, LDT);
            simdgroup_multiply_accumulate(dkm[0][j], dpt[0][c], qf, dkm[0][j]);
            simdgroup_multiply_accumulate(dkm[1][j], dpt[1][c], qf, dkm[1][j]);
          }
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    cur ^= DB ? 1u : 0u;
    gi = ngi;
    q0 = nq0;
  }

  const uint n = first < seq ? seq - first : 0u;
  const ulong o = (row0 + first) * ks + hk * D;
  attention_store_rows<T, HD, false>(dk + o, ks, dkm, args.scale, args.scale, n, D, exact, lane);
  attention_store_rows<T, HD, false>(dv + o, ks, dvm, 1.0f, 1.0f, n, D, exact, lane);
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_simd_threads)]] void attention_dkv_simd(
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
  threadgroup T qdt[attention_nbuf<T>() * attention_bwd_tiles<T>()];  // Q, dout (BQ, HD + vw) per buffer; K, V in passes
  threadgroup float lse_tile[attention_nbuf<T>() * attention_sg_rows];  // lse·log2 e and δ of the query tile, per buffer
  threadgroup float delta_tile[attention_nbuf<T>() * attention_sg_rows];
  if (args.head_dim <= attention_dsmall) {
    attention_dkv_simd_tile<T, attention_dsmall, false>(qdt, lse_tile, delta_tile, q, k, v, dout, lse, delta, nullptr,
                                                        dk, dv, nullptr, args, tgpos, tid, lane, sg);
  } else {
    attention_dkv_simd_tile<T, attention_dmax, false>(qdt, lse_tile, delta_tile, q, k, v, dout, lse, delta, nullptr,
                                                      dk, dv, nullptr, args, tgpos, tid, lane, sg);
  }
}

// attention_dkv_ds_simd is attention_dkv_simd that also stores each tile's
// dS into the scratch ds (see attention_ds_head) for attention_dq_ds_simd:
// one float store per element of dSᵀ a lane owns (4·BQ/8 per lane and
// tile; the 8 key rows of an 8×8 block are 32 consecutive bytes of a
// scratch row). Same dk and dv, bit for bit. With args.own_delta (the
// host's choice at D = 64 and 128) it also computes δ of each query tile
// it stages from dout and out (attention_dkv_delta: attention_delta's
// lane sum, the same bits), one 16-byte load of each per thread and
// tile, so the backward runs without the attention_delta pass; every key
// tile recomputes the δ of its query tiles (2·D FLOPs per row, out read
// per key tile as Q and dout are).
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_simd_threads)]] void attention_dkv_ds_simd(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device const T* dout [[buffer(3)]],            // (N, H, D)
    device const float* lse [[buffer(4)]],         // (N, H)
    device const float* delta [[buffer(5)]],       // (N, H)
    device T* dk [[buffer(6)]],                    // (N, Hkv, D)
    device T* dv [[buffer(7)]],                    // (N, Hkv, D)
    device float* ds [[buffer(8)]],                // B·H·attention_ds_head(T)
    constant AttentionArgs& args [[buffer(9)]],
    device const T* out [[buffer(10)]],            // (N, H, D), read when own_delta
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup T qdt[attention_nbuf<T>() * attention_bwd_tiles<T>()];
  threadgroup float lse_tile[attention_nbuf<T>() * attention_sg_rows];
  threadgroup float delta_tile[attention_nbuf<T>() * attention_sg_rows];
  if (args.head_dim <= attention_dsmall) {
    attention_dkv_simd_tile<T, attention_dsmall, true>(qdt, lse_tile, delta_tile, q, k, v, dout, lse, delta, out, dk,
                                                       dv, ds, args, tgpos, tid, lane, sg);
  } else {
    attention_dkv_simd_tile<T, attention_dmax, true>(qdt, lse_tile, delta_tile, q, k, v, dout, lse, delta, out, dk,
                                                     dv, ds, args, tgpos, tid, lane, sg);
  }
}

// ---------------------------------------------------------------------------
// attention_dq_ds_simd: dq = scale·Σu dS[t,u]·k[u] from the scratch that
// attention_dkv_ds_simd wrote. One threadgroup per (query tile of 64 rows,
// h, b); grid (ceil(T/64), H, B), 128 threads = 4 simdgroups × 16 query
// rows, the dq accumulator in registers. Per key tile of BK keys
// (attention_fwd_bk: 32 at HD = 64, 16 at HD = 128), staged in the compute
// dtype as the forward's K: each lane loads its own two elements of every
// 8×8 dS block straight into the matrix's thread_elements() (one 8-byte
// float2 load, rows past T and, on tiles the diagonal crosses, keys after
// the query selected to 0), then dQ += dS·K, each K fragment feeding both
// row blocks. No softmax, no Q, V or dout.
// Threadgroup memory (bf16 | float): K BK·(HD + vw) = 4.6 | 8.7 KB
// (HD = 64), 4.4 | 8.4 KB (HD = 128).
// Baseline: 2·D FLOPs per pair = 4.3 GFLOP; compulsory bytes dS 143 MB
// (the causal half in 64-row blocks), k 4.2 MB, dq 8.4 MB. Roofline
// max(1.2 ms, 1.6 ms) = 1.6 ms (memory-bound on an M2).
template <typename T, uint HD, typename PT>
METAL_FUNC void attention_dq_ds_simd_tile(PT kt, device const float* ds, device const T* k, device T* dq,
                                          constant AttentionArgs& args, uint3 tgpos, uint tid, uint lane, uint sg) {
  constexpr uint BQ = attention_tile_rows;
  constexpr uint BK = attention_fwd_bk<HD>();
  constexpr uint LDT = HD + attention_vw<T>();
  constexpr uint ND = HD / 8;
  constexpr uint NC = BK / 8;
  const uint seq = args.seq_len, D = args.head_dim, H = args.heads;
  const uint qs = H * D, ks = args.kv_heads * D;
  const bool exact = D == HD;
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / (H / args.kv_heads);
  const ulong row0 = ulong(tgpos.z) * seq;
  const uint fr = attention_frag_row(lane), fc = attention_frag_col(lane);
  const uint srow = sg * attention_sg_rows;
  const uint first = q0 + srow;
  device const T* kb = k + row0 * ks + hk * D;
  // The lane's two query rows (one per 8-row block) in the scratch; a row
  // past T reads nothing.
  const uint bh = tgpos.z * H + h;
  device const float* dsr[2];
  uint tr[2];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
    tr[i] = first + i * 8 + fr;
    dsr[i] = ds + (tr[i] < seq ? attention_ds_row(seq, bh, tr[i]) : 0ul);
  }
  simdgroup_float8x8 dqm[2][ND];
#pragma clang loop unroll(full)
  for (uint i = 0; i < 2; i++) {
#pragma clang loop unroll(full)
    for (uint j = 0; j < ND; j++) {
      dqm[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    }
  }

  const uint kend = min(q0 + BQ, seq);
  // Double buffering as the forward's (attention_db).
  constexpr bool DB = attention_db<T>();
  constexpr uint TILE = BK * LDT;
  uint cur = 0;
  if (DB) {
    attention_load<T, BK, HD>(kt, kb, ks, seq, D, exact, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    const uint kco = cur * TILE;  // an offset, not a pointer variable: only a kernel declares threadgroup variables
    if (!DB) {
      attention_load<T, BK, HD>(kt + kco, kb + ulong(k0) * ks, ks, seq - k0, D, exact, tid);
      threadgroup_barrier(mem_flags::mem_threadgroup);
    } else if (k0 + BK < kend) {
      const uint kn = k0 + BK;
      attention_load<T, BK, HD>(kt + (cur ^ 1u) * TILE, kb + ulong(kn) * ks, ks, seq - kn, D, exact, tid);
    }
    if (k0 <= first + attention_sg_rows - 1) {  // uniform per simdgroup
      const bool diag = k0 + BK - 1 > first;
      simdgroup_float8x8 dsm[2][NC];
#pragma clang loop unroll(full)
      for (uint i = 0; i < 2; i++) {
#pragma clang loop unroll(full)
        for (uint c = 0; c < NC; c++) {
          dsm[i][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
          const uint t = tr[i], u0 = k0 + c * 8 + fc;
          float2 w = float2(0.0f);
          if (t < seq) {
            w = *reinterpret_cast<device const float2*>(dsr[i] + u0);
          }
          w[0] = !diag || u0 <= t ? w[0] : 0.0f;
          w[1] = !diag || u0 + 1 <= t ? w[1] : 0.0f;
          dsm[i][c].thread_elements() = w;
        }
      }
#pragma clang loop unroll(full)
      for (uint c = 0; c < NC; c++) {
#pragma clang loop unroll(full)
        for (uint j = 0; j < ND; j++) {
          simdgroup_matrix<T, 8, 8> kf;
          simdgroup_load(kf, kt + kco + c * 8 * LDT + j * 8, LDT);
          simdgroup_multiply_accumulate(dqm[0][j], dsm[0][c], kf, dqm[0][j]);
          simdgroup_multiply_accumulate(dqm[1][j], dsm[1][c], kf, dqm[1][j]);
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    cur ^= DB ? 1u : 0u;
  }

  const uint n = first < seq ? seq - first : 0u;
  attention_store_rows<T, HD, false>(dq + (row0 + first) * qs + h * D, qs, dqm, args.scale, args.scale, n, D,
                                     exact, lane);
}

template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_simd_threads)]] void attention_dq_ds_simd(
    device const float* ds [[buffer(0)]],          // B·H·attention_ds_head(T)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device T* dq [[buffer(2)]],                    // (N, H, D)
    constant AttentionArgs& args [[buffer(3)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup T kt[attention_nbuf<T>() * attention_fwd_tiles<T>() / 2];  // K (BK, HD + vw) per buffer
  if (args.head_dim <= attention_dsmall) {
    attention_dq_ds_simd_tile<T, attention_dsmall>(kt, ds, k, dq, args, tgpos, tid, lane, sg);
  } else {
    attention_dq_ds_simd_tile<T, attention_dmax>(kt, ds, k, dq, args, tgpos, tid, lane, sg);
  }
}

// ---------------------------------------------------------------------------
// attention_delta_simd: δ[n,h] = Σd dout[n,h,d]·out[n,h,d] in float. For
// D = 64 and D = 128, coalesced: thread i loads the i-th 16 bytes of dout
// and of out (row n·H + h is D/vw consecutive threads, 8, 16 or 32 lanes
// of one simdgroup), and the row's sum runs through its lanes in order
// (simd_shuffle_up), the same order as the per-row loop, so δ is the same
// bits on both paths; grid ceil(N·H·D/vw/256) × 256 threads, every lane of every simdgroup
// present. Any other D: one thread per (row, head), a loop over d (grid
// ceil(N·H/256) × 256).
// attention_delta_portable: the per-row loop for every D.
// No threadgroup memory.
// Baseline: 2·N·H·D = 8.4 MFLOP; bytes dout, out 8.4 MB each, δ 0.26 MB =
// 17.0 MB. Roofline 0.17 ms (memory-bound).
template <typename T>
inline float attention_delta_row(device const T* dout, device const T* out, uint D, uint i) {
  const ulong base = ulong(i) * D;
  float acc = 0.0f;
  for (uint d = 0; d < D; d++) {
    acc += static_cast<float>(dout[base + d]) * static_cast<float>(out[base + d]);
  }
  return acc;
}

template <typename T, uint HD>
inline void attention_delta_vec(device const T* dout, device const T* out, device float* delta, uint rows, uint i) {
  constexpr uint lanes = HD / attention_vw<T>();  // threads per row: a power of two ≤ 32
  const uint row = i / lanes, sub = i % lanes;
  const float acc = attention_delta_lanes<T, HD>(dout, out, ulong(i) * attention_vw<T>(), row < rows, sub);
  if (row < rows && sub == lanes - 1) {
    delta[row] = acc;
  }
}

template <typename T>
[[kernel]] void attention_delta_simd(
    device const T* dout [[buffer(0)]],            // (N, H, D)
    device const T* out [[buffer(1)]],             // (N, H, D)
    device float* delta [[buffer(2)]],             // (N, H)
    constant AttentionArgs& args [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  const uint rows = args.batch * args.seq_len * args.heads;
  if (args.head_dim == attention_dsmall) {
    attention_delta_vec<T, attention_dsmall>(dout, out, delta, rows, i);
  } else if (args.head_dim == attention_dmax) {
    attention_delta_vec<T, attention_dmax>(dout, out, delta, rows, i);
  } else if (i < rows) {
    delta[i] = attention_delta_row(dout, out, args.head_dim, i);
  }
}

template <typename T>
[[kernel]] void attention_delta_portable(
    device const T* dout [[buffer(0)]],            // (N, H, D)
    device const T* out [[buffer(1)]],             // (N, H, D)
    device float* delta [[buffer(2)]],             // (N, H)
    constant AttentionArgs& args [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  const uint rows = args.batch * args.seq_len * args.heads;
  if (i < rows) {
    delta[i] = attention_delta_row(dout, out, args.head_dim, i);
  }
}

// ---------------------------------------------------------------------------
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
template <typename T, uint DMAX, uint BK, uint BQ, uint TPR, bool DS, typename P>
METAL_FUNC void attention_dkv_port_tile(
    P kv, P qg, P pbuf, P dsbuf, P lse_tile, P delta_tile, device const T* q, device const T* k,
    device const T* v, device const T* dout, device const float* lse, device const float* delta,
    device T* dk, device T* dv, device float* dsg, constant AttentionArgs& args, uint3 tgpos, uint tid) {
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
        if (DS && t < g.seq) {  // BK and BQ divide 64: t and u share a 64-row block or u's is earlier
          dsg[attention_ds_row(g.seq, tgpos.z * g.H + h, t) + u] = ds;
        }
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
    attention_dkv_port_tile<T, attention_dsmall, 32, 16, 4, false>(kv, qg, pbuf, dsbuf, lse_tile, delta_tile, q, k, v,
                                                                   dout, lse, delta, dk, dv, nullptr, args, tgpos, tid);
  } else {
    attention_dkv_port_tile<T, attention_dmax, 16, 8, 8, false>(kv, qg, pbuf, dsbuf, lse_tile, delta_tile, q, k, v,
                                                                dout, lse, delta, dk, dv, nullptr, args, tgpos, tid);
  }
}

// attention_dkv_ds_portable is attention_dkv_portable that also stores
// each dS it computes (every (t, u) with t < T of its tiles, 0 where
// u > t) into the scratch for attention_dq_ds_portable. Same dk and dv.
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(attention_tile_threads)]] void attention_dkv_ds_portable(
    device const T* q [[buffer(0)]],               // (N, H, D)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device const T* v [[buffer(2)]],               // (N, Hkv, D)
    device const T* dout [[buffer(3)]],            // (N, H, D)
    device const float* lse [[buffer(4)]],         // (N, H)
    device const float* delta [[buffer(5)]],       // (N, H)
    device T* dk [[buffer(6)]],                    // (N, Hkv, D)
    device T* dv [[buffer(7)]],                    // (N, Hkv, D)
    device float* ds [[buffer(8)]],                // B·H·attention_ds_head(T)
    constant AttentionArgs& args [[buffer(9)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float kv[attention_dkv_port_kv];
  threadgroup float qg[attention_dkv_port_q];
  threadgroup float pbuf[attention_dkv_port_p];
  threadgroup float dsbuf[attention_dkv_port_p];
  threadgroup float lse_tile[attention_rows_max];
  threadgroup float delta_tile[attention_rows_max];
  if (args.head_dim <= attention_dsmall) {
    attention_dkv_port_tile<T, attention_dsmall, 32, 16, 4, true>(kv, qg, pbuf, dsbuf, lse_tile, delta_tile, q, k, v,
                                                                  dout, lse, delta, dk, dv, ds, args, tgpos, tid);
  } else {
    attention_dkv_port_tile<T, attention_dmax, 16, 8, 8, true>(kv, qg, pbuf, dsbuf, lse_tile, delta_tile, q, k, v,
                                                               dout, lse, delta, dk, dv, ds, args, tgpos, tid);
  }
}

// attention_dq_ds_portable: dq from the scratch, the portable dq's tiles
// (BQ = 32, TPR = 4, BK = 16 for D ≤ 64; BQ = 16, TPR = 8, BK = 8 above):
// per key tile staged in float, each thread reads its row's dS of the
// tile (u ≤ t) from the scratch and adds dS·K over its head-dim columns,
// keys in order, as attention_dq_portable does with the dS it computes.
// Threadgroup memory: K BK·LD·4 ≤ 4.3 KB.
template <typename T, uint DMAX, uint BQ, uint BK, uint TPR, typename P>
METAL_FUNC void attention_dq_ds_port_tile(P kv, device const float* ds, device const T* k, device T* dq,
                                          constant AttentionArgs& args, uint3 tgpos, uint tid) {
  constexpr uint NT = attention_tile_threads;
  const attention_geometry g = attention_geom(args);
  const uint q0 = tgpos.x * BQ, h = tgpos.y, hk = h / g.G;
  const ulong row0 = ulong(tgpos.z) * g.seq;
  const uint LD = g.LD;
  const uint row = tid / TPR, part = tid % TPR;
  const uint t = q0 + row;
  device const float* dsr = ds + (t < g.seq ? attention_ds_row(g.seq, tgpos.z * g.H + h, t) : 0ul);
  float acc[DMAX / TPR];
#pragma clang loop unroll(full)
  for (uint i = 0; i < DMAX / TPR; i++) {
    acc[i] = 0.0f;
  }
  const uint kend = min(q0 + BQ, g.seq);
  for (uint k0 = 0; k0 < kend; k0 += BK) {
    attention_stage(kv, k, row0, k0, BK, g.seq, g.ks, hk, g.D, g.Dp, LD, tid, NT);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float dsv[BK];
#pragma clang loop unroll(full)
    for (uint c = 0; c < BK; c++) {
      const uint u = k0 + c;
      dsv[c] = u <= t && t < g.seq ? dsr[u] : 0.0f;
    }
#pragma clang loop unroll(full)
    for (uint i = 0; i < DMAX / TPR; i++) {
      const uint d = part + TPR * i;
      if (d < g.D) {
        float a = acc[i];
        for (uint c = 0; c < BK; c++) {
          a += dsv[c] * kv[c * LD + d];
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
[[kernel]] [[max_total_threads_per_threadgroup(attention_tile_threads)]] void attention_dq_ds_portable(
    device const float* ds [[buffer(0)]],          // B·H·attention_ds_head(T)
    device const T* k [[buffer(1)]],               // (N, Hkv, D)
    device T* dq [[buffer(2)]],                    // (N, H, D)
    constant AttentionArgs& args [[buffer(3)]],
    uint3 tgpos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float kv[attention_dq_port_kv / 2];  // K (BK, LD)
  if (args.head_dim <= attention_dsmall) {
    attention_dq_ds_port_tile<T, attention_dsmall, 32, 16, 4>(kv, ds, k, dq, args, tgpos, tid);
  } else {
    attention_dq_ds_port_tile<T, attention_dmax, 16, 8, 8>(kv, ds, k, dq, args, tgpos, tid);
  }
}


#define instantiate_attention(tname, T)                                                    \
  instantiate_kernel("attention_fwd_simd_" #tname, attention_fwd_simd, T)                  \
  instantiate_kernel("attention_fwd_portable_" #tname, attention_fwd_portable, T)          \
  instantiate_kernel("attention_delta_simd_" #tname, attention_delta_simd, T)              \
  instantiate_kernel("attention_delta_portable_" #tname, attention_delta_portable, T)      \
  instantiate_kernel("attention_dq_simd_" #tname, attention_dq_simd, T)                    \
  instantiate_kernel("attention_dq_portable_" #tname, attention_dq_portable, T)            \
  instantiate_kernel("attention_dkv_simd_" #tname, attention_dkv_simd, T)                  \
  instantiate_kernel("attention_dkv_portable_" #tname, attention_dkv_portable, T)          \
  instantiate_kernel("attention_dkv_ds_simd_" #tname, attention_dkv_ds_simd, T)            \
  instantiate_kernel("attention_dkv_ds_portable_" #tname, attention_dkv_ds_portable, T)    \
  instantiate_kernel("attention_dq_ds_simd_" #tname, attention_dq_ds_simd, T)              \
  instantiate_kernel("attention_dq_ds_portable_" #tname, attention_dq_ds_portable, T)

instantiate_attention(float, float)
instantiate_attention(half, half)
instantiate_attention(bfloat, bfloat)
