// golf_rows.cuh: the row code of the row kernels, written once and used by
// the unfused kernels (rmsnorm.cu, resid_mix.cu, scaled_add.cu,
// softcap_ce.cu) and by the fused ones (fused.cu, softcap_ce_fused), so
// that a fused kernel computes the bits of its unfused sequence by
// construction: the same per-element expressions (one inline function
// each, so NVRTC contracts them into the same multiply-adds; a product
// that is added to only under a runtime flag is golf_mul, never
// contracted), the same
// assignment of a row's elements to the lanes of a warp, the same order
// of each lane's sums and the same butterflies across the lanes.
//
// Chunks. A row is cut into chunks of V = GOLF_CHUNK = 8 consecutive
// elements in every element type: chunk j holds elements [8j, 8j + 8)
// and the last one may be short. A chunk moves between registers and
// global memory in 16-byte accesses (one for half and bfloat, two for
// float) when it is whole and its address is 16-byte aligned (rows of a
// multiple of 8 elements in a tensor whose view starts aligned), else
// element by element, with the same values either way: how a chunk is
// loaded never changes a result, and neither does the element type (the
// float32 twin of a 16-bit kernel sums in the same order).
//
// Warp rows. One warp owns a row; lane l takes chunks j = l, l + 32,
// l + 64, ... in ascending order, and the elements of a chunk in
// ascending order; its partial sums run in that order, and golf_warp_sum
// (golf_prelude.cuh) combines the lanes. The first GOLF_ROW_CACHE chunks
// of each lane stay in registers between a row's passes; later ones are
// read again (an L1 hit). The cache changes what is read, never the order
// of a sum.
//
// Column blocks. The column-parallel backward kernels split the rows into
// row blocks (golf_row_block); a thread owns the columns of one chunk and
// adds its row block's rows in ascending order, from 0.0f, per column.
#ifndef GOLF_ROWS_CUH
#define GOLF_ROWS_CUH

#include "golf_prelude.cuh"

// golf_u4 is the unit of a 16-byte access.
struct __align__(16) golf_u4 {
  uint w[4];
};

// GOLF_CHUNK is the elements of a chunk, the same in every element type
// (so that a kernel's sums run in the same order in float as in half and
// bfloat, as the conformance suite's float32 twins demand): 16 bytes of
// half or bfloat, 32 bytes (two 16-byte accesses) of float.
#define GOLF_CHUNK 8u

// golf_chunk<T> is one chunk of T.
template <typename T>
struct golf_chunk {
  static constexpr uint n = GOLF_CHUNK;
  T e[GOLF_CHUNK];
};

// GOLF_ROW_CACHE is the chunks per lane a warp row of the RMSNorm family
// keeps in registers (2: rows up to 512 elements), GOLF_CE_CACHE the
// cross-entropy's (4: rows up to 1,024).
#define GOLF_ROW_CACHE 2u
#define GOLF_CE_CACHE 4u

GOLF_DEV bool golf_aligned16(const void* p) { return ((u64)p & 15u) == 0; }

GOLF_DEV golf_u4 golf_ld16(const void* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const golf_u4*>(p);
#else
  golf_u4 r;
  __builtin_memcpy(&r, p, 16);
  return r;
#endif
}

GOLF_DEV void golf_st16(void* p, const golf_u4& r) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<golf_u4*>(p) = r;
#else
  __builtin_memcpy(p, &r, 16);
#endif
}

// golf_unpack / golf_pack convert between 16 bytes and the elements
// [at, at + 16/sizeof(T)) of a chunk (the lower address in the low bits:
// little endian, as the GPU and the emulator).
GOLF_DEV void golf_unpack(const golf_u4& r, golf_chunk<float>& c, uint at) {
#pragma unroll
  for (uint k = 0; k < 4u; k++) {
    c.e[at + k] = golf_bits_f32(r.w[k]);
  }
}
template <typename T>
GOLF_DEV void golf_unpack16(const golf_u4& r, golf_chunk<T>& c, uint at) {
#pragma unroll
  for (uint k = 0; k < 4u; k++) {
    c.e[at + 2u * k].bits = (u16)(r.w[k] & 0xffffu);
    c.e[at + 2u * k + 1u].bits = (u16)(r.w[k] >> 16);
  }
}
GOLF_DEV void golf_unpack(const golf_u4& r, golf_chunk<bf16>& c, uint at) { golf_unpack16(r, c, at); }
GOLF_DEV void golf_unpack(const golf_u4& r, golf_chunk<fp16>& c, uint at) { golf_unpack16(r, c, at); }

GOLF_DEV golf_u4 golf_pack(const golf_chunk<float>& c, uint at) {
  golf_u4 r;
#pragma unroll
  for (uint k = 0; k < 4u; k++) {
    r.w[k] = golf_f32_bits(c.e[at + k]);
  }
  return r;
}
template <typename T>
GOLF_DEV golf_u4 golf_pack16(const golf_chunk<T>& c, uint at) {
  golf_u4 r;
#pragma unroll
  for (uint k = 0; k < 4u; k++) {
    r.w[k] = (uint)c.e[at + 2u * k].bits | ((uint)c.e[at + 2u * k + 1u].bits << 16);
  }
  return r;
}
GOLF_DEV golf_u4 golf_pack(const golf_chunk<bf16>& c, uint at) { return golf_pack16(c, at); }
GOLF_DEV golf_u4 golf_pack(const golf_chunk<fp16>& c, uint at) { return golf_pack16(c, at); }

// golf_ld_chunk: elements [0, valid) of p (valid ≤ GOLF_CHUNK), the rest
// zero: 16-byte loads when the chunk is whole and p 16-byte aligned, else
// element loads (never past valid).
template <typename T>
GOLF_DEV golf_chunk<T> golf_ld_chunk(const T* p, uint valid) {
  constexpr uint n = GOLF_CHUNK;
  constexpr uint per = 16u / (uint)sizeof(T);  // elements per 16 bytes
  golf_chunk<T> c;
  if (valid == n && golf_aligned16(p)) {
#pragma unroll
    for (uint q = 0; q < n / per; q++) {
      golf_unpack(golf_ld16(p + q * per), c, q * per);
    }
    return c;
  }
#pragma unroll
  for (uint e = 0; e < n; e++) {
    c.e[e] = e < valid ? p[e] : from_f32<T>(0.0f);
  }
  return c;
}

// golf_st_chunk: stores elements [0, valid) of c at p, as golf_ld_chunk
// loads them.
template <typename T>
GOLF_DEV void golf_st_chunk(T* p, uint valid, const golf_chunk<T>& c) {
  constexpr uint n = GOLF_CHUNK;
  constexpr uint per = 16u / (uint)sizeof(T);
  if (valid == n && golf_aligned16(p)) {
#pragma unroll
    for (uint q = 0; q < n / per; q++) {
      golf_st16(p + q * per, golf_pack(c, q * per));
    }
    return;
  }
#pragma unroll
  for (uint e = 0; e < n; e++) {
    if (e < valid) {
      p[e] = c.e[e];
    }
  }
}

// golf_ld_row: chunk elements [0, valid) of p widened to float (0 after).
template <typename T>
GOLF_DEV void golf_ld_row(const T* p, uint valid, float (&v)[golf_chunk<T>::n]) {
  const golf_chunk<T> c = golf_ld_chunk<T>(p, valid);
#pragma unroll
  for (uint e = 0; e < golf_chunk<T>::n; e++) {
    v[e] = to_f32(c.e[e]);
  }
}

// golf_round_chunk: v rounded to T (to nearest even), as a chunk.
template <typename T>
GOLF_DEV golf_chunk<T> golf_round_chunk(const float (&v)[golf_chunk<T>::n]) {
  golf_chunk<T> c;
#pragma unroll
  for (uint e = 0; e < golf_chunk<T>::n; e++) {
    c.e[e] = from_f32<T>(v[e]);
  }
  return c;
}

// golf_st_row: v rounded to T and stored at p (elements [0, valid)).
template <typename T>
GOLF_DEV void golf_st_row(T* p, uint valid, const float (&v)[golf_chunk<T>::n]) {
  golf_st_chunk<T>(p, valid, golf_round_chunk<T>(v));
}

// golf_ld_f32 / golf_st_f32: the GOLF_CHUNK floats of a float array
// beside a chunk (per-column weights, dx0, partial sums), as chunks of
// float.
GOLF_DEV void golf_ld_f32(const float* p, uint valid, float (&v)[GOLF_CHUNK]) { golf_ld_row<float>(p, valid, v); }
GOLF_DEV void golf_st_f32(float* p, uint valid, const float (&v)[GOLF_CHUNK]) { golf_st_row<float>(p, valid, v); }

// golf_chunks is the number of chunks of a row of cols elements of T.
template <typename T>
GOLF_DEV uint golf_chunks(uint cols) {
  return (cols + golf_chunk<T>::n - 1u) / golf_chunk<T>::n;
}

// golf_chunk_valid is the number of elements of chunk j.
template <typename T>
GOLF_DEV uint golf_chunk_valid(uint cols, uint j) {
  return min(golf_chunk<T>::n, cols - j * golf_chunk<T>::n);
}

// golf_warp_chunks calls body(j, slot) for the lane's chunks j = lane,
// lane + 32, ... < nchunks in ascending order; slot is the register slot
// (k for the k-th chunk while k < K, then K: no slot). The first K calls
// are unrolled, so slot is a constant in each and a register array indexed
// by it stays in registers.
template <uint K, typename Body>
GOLF_DEV void golf_warp_chunks(uint nchunks, uint lane, Body&& body) {
#pragma unroll
  for (uint k = 0; k < K; k++) {
    const uint j = lane + 32u * k;
    if (j < nchunks) {
      body(j, k);
    }
  }
  for (uint j = lane + 32u * K; j < nchunks; j += 32u) {
    body(j, K);
  }
}

// --- RMSNorm -------------------------------------------------------------

// golf_rmsnorm_rstd: 1/sqrt(mean + eps) from the row's sum of squares.
GOLF_DEV float golf_rmsnorm_rstd(float ss, uint cols, float eps) { return 1.0f / sqrtf(ss / (float)cols + eps); }

// golf_widen: a chunk's elements as floats.
template <typename T>
GOLF_DEV void golf_widen(const golf_chunk<T>& c, float (&v)[golf_chunk<T>::n]) {
#pragma unroll
  for (uint e = 0; e < golf_chunk<T>::n; e++) {
    v[e] = to_f32(c.e[e]);
  }
}

// golf_rmsnorm_row: one warp normalises one row of cols elements of T:
//	*rstd = 1/sqrt(mean_c v² + eps);  out[c] = round_T(v[c]·rstd)
// fetch(j, valid) returns chunk j of the row (as stored in T);
// refetch(j, valid) returns it again for the chunks the registers do not
// hold. Every lane of the warp calls it (the row's sum is a butterfly).
template <typename T, typename Fetch, typename Refetch>
GOLF_DEV void golf_rmsnorm_row(uint cols, float eps, T* out, float* rstd, Fetch&& fetch, Refetch&& refetch) {
  constexpr uint n = golf_chunk<T>::n;
  constexpr uint K = GOLF_ROW_CACHE;
  const uint lane = golf_lane();
  const uint nch = golf_chunks<T>(cols);
  golf_chunk<T> cache[K];
  float ss = 0.0f;
  golf_warp_chunks<K>(nch, lane, [&](uint j, uint slot) {
    const uint valid = golf_chunk_valid<T>(cols, j);
    const golf_chunk<T> c = fetch(j, valid);
    float v[n];
    golf_widen<T>(c, v);
#pragma unroll
    for (uint e = 0; e < n; e++) {
      if (e < valid) {
        ss += v[e] * v[e];
      }
    }
    if (slot < K) {
      cache[slot] = c;
    }
  });
  ss = golf_warp_sum(ss);
  const float rs = golf_rmsnorm_rstd(ss, cols, eps);
  if (lane == 0) {
    *rstd = rs;
  }
  golf_warp_chunks<K>(nch, lane, [&](uint j, uint slot) {
    const uint valid = golf_chunk_valid<T>(cols, j);
    float v[n];
    golf_widen<T>(slot < K ? cache[slot] : refetch(j, valid), v);
    float o[n];
#pragma unroll
    for (uint e = 0; e < n; e++) {
      o[e] = v[e] * rs;
    }
    golf_st_row<T>(out + j * n, valid, o);
  });
}

// golf_rmsnorm_bwd_mean: one warp's mean_c(dout·x̂) of a row (x̂ = x·rs),
// the lanes' chunks summed in order and combined by golf_warp_sum. The
// first K chunks of each lane are left in cg (dout) and cx (x).
template <typename T, uint K>
GOLF_DEV float golf_rmsnorm_bwd_mean(const T* dout, const T* x, uint cols, float rs, golf_chunk<T> (&cg)[K],
                                     golf_chunk<T> (&cx)[K]) {
  constexpr uint n = golf_chunk<T>::n;
  float dot = 0.0f;
  golf_warp_chunks<K>(golf_chunks<T>(cols), golf_lane(), [&](uint j, uint slot) {
    const uint valid = golf_chunk_valid<T>(cols, j);
    const golf_chunk<T> gc = golf_ld_chunk<T>(dout + j * n, valid);
    const golf_chunk<T> xc = golf_ld_chunk<T>(x + j * n, valid);
    float g[n], v[n];
    golf_widen<T>(gc, g);
    golf_widen<T>(xc, v);
#pragma unroll
    for (uint e = 0; e < n; e++) {
      if (e < valid) {
        dot += g[e] * (v[e] * rs);
      }
    }
    if (slot < K) {
      cg[slot] = gc;
      cx[slot] = xc;
    }
  });
  return golf_warp_sum(dot) / (float)cols;
}

// golf_mul: a·b rounded to float, never contracted with an addition that
// follows (__fmul_rn on the GPU): for a product that a kernel adds to only
// sometimes (a runtime flag), so that whether NVRTC fuses it cannot depend
// on how the kernel around it is compiled.
GOLF_DEV float golf_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// golf_rmsnorm_bwd_value: dx before dres, rs·(dout − x·rs·m) (dres, when
// there is one, is added to it: the product is not fused with that add).
GOLF_DEV float golf_rmsnorm_bwd_value(float g, float v, float rs, float m) { return golf_mul(rs, g - v * rs * m); }

// --- resid mix, scaled add -------------------------------------------------

// golf_resid_mix_value: m0·x + m1·x0.
GOLF_DEV float golf_resid_mix_value(float m0, float m1, float x, float x0) { return m0 * x + m1 * x0; }

// golf_resid_mix_bwd_elem: one element of resid mix's backward for the
// incoming gradient g: dx0 += m1·g, the column sums of g·x and g·x0;
// returns dx = m0·g.
GOLF_DEV float golf_resid_mix_bwd_elem(float g, float m0, float m1, float x, float x0, float& dx0, float& sum_x,
                                       float& sum_x0) {
  dx0 += m1 * g;
  sum_x += g * x;
  sum_x0 += g * x0;
  return m0 * g;
}

// golf_resid_mix_bwd_chunk: one row's chunk (element offset i, columns
// of the chunk's m0, m1) of resid mix's backward for the incoming
// gradient g: dx written (rounded to T), dx0 (float) read and written,
// the chunk's column sums sx, sx0 continued.
template <typename T>
GOLF_DEV void golf_resid_mix_bwd_chunk(const float (&g)[golf_chunk<T>::n], const T* x, const T* x0, T* dx,
                                       float* dx0, u64 i, uint valid, const float (&m0)[golf_chunk<T>::n],
                                       const float (&m1)[golf_chunk<T>::n], float (&sx)[golf_chunk<T>::n],
                                       float (&sx0)[golf_chunk<T>::n]) {
  constexpr uint n = golf_chunk<T>::n;
  float xv[n], x0v[n], d0[n], o[n];
  golf_ld_row<T>(x + i, valid, xv);
  golf_ld_row<T>(x0 + i, valid, x0v);
  golf_ld_f32(dx0 + i, valid, d0);
#pragma unroll
  for (uint e = 0; e < n; e++) {
    o[e] = golf_resid_mix_bwd_elem(g[e], m0[e], m1[e], xv[e], x0v[e], d0[e], sx[e], sx0[e]);
  }
  golf_st_row<T>(dx + i, valid, o);
  golf_st_f32(dx0 + i, valid, d0);
}

// golf_row_block: rows [r0, r1) of row block rb of nrb (⌈rows/nrb⌉ rows
// each; the last ones may be short or empty).
GOLF_DEV void golf_row_block(uint rows, uint rb, uint nrb, uint& r0, uint& r1) {
  const uint chunk = (rows + nrb - 1u) / nrb;
  r0 = min(rows, rb * chunk);
  r1 = min(rows, r0 + chunk);
}

// golf_scaled_add_value: x + s·y.
GOLF_DEV float golf_scaled_add_value(float x, float s, float y) { return x + s * y; }

// --- softcapped cross-entropy ------------------------------------------------

// golf_ce_z: the softcapped logit cap·tanh(l/cap).
GOLF_DEV float golf_ce_z(float l, float cap) { return cap * tanhf(l / cap); }

// golf_ce_lse: one warp's log-sum-exp of a row's softcapped logits: each
// lane keeps an online (max m, Σ exp(z − m)) over its chunks in order, the
// warp combines them in fixed butterflies: mx = max of the lanes' m,
// S = Σ s·exp(m − mx), logs = log S (lse = mx + logs). A lane with no
// column has m = −∞ and s = 0 and adds 0. The first K chunks' logits of
// each lane are left in cache.
template <typename T, uint K>
GOLF_DEV void golf_ce_lse(const T* row, uint vocab, float cap, golf_chunk<T> (&cache)[K], float& mx, float& logs) {
  constexpr uint n = golf_chunk<T>::n;
  float m = golf_bits_f32(0xff800000u);  // −∞
  float s = 0.0f;
  golf_warp_chunks<K>(golf_chunks<T>(vocab), golf_lane(), [&](uint j, uint slot) {
    const uint valid = golf_chunk_valid<T>(vocab, j);
    const golf_chunk<T> c = golf_ld_chunk<T>(row + j * n, valid);
    float l[n];
    golf_widen<T>(c, l);
#pragma unroll
    for (uint e = 0; e < n; e++) {
      if (e < valid) {
        const float z = golf_ce_z(l[e], cap);
        if (z > m) {
          s = s * expf(m - z) + 1.0f;
          m = z;
        } else {
          s += expf(z - m);
        }
      }
    }
    if (slot < K) {
      cache[slot] = c;
    }
  });
  mx = golf_warp_max(m);
  const float scaled = s == 0.0f ? 0.0f : s * expf(m - mx);
  logs = logf(golf_warp_sum(scaled));
}

// golf_ce_loss: lse − z[target] of a row, NaN for a target outside
// [0, vocab).
template <typename T>
GOLF_DEV float golf_ce_loss(const T* row, int target, uint vocab, float cap, float mx, float logs) {
  if (target < 0 || (uint)target >= vocab) {
    return golf_bits_f32(0x7fc00000u);  // NaN
  }
  return (mx - golf_ce_z(to_f32(row[(uint)target]), cap)) + logs;
}

// golf_ce_dlogit: scale·(p − [target])·(1 − tanh²(l/cap)), p = exp(z − lse).
GOLF_DEV float golf_ce_dlogit(float l, bool is_target, float cap, float scale, float mx, float logs) {
  const float th = tanhf(l / cap);
  float p = expf((cap * th - mx) - logs);
  if (is_target) {
    p -= 1.0f;
  }
  return scale * p * (1.0f - th * th);
}

// golf_ce_dlogits_row: one warp writes a row's dlogits from its mx and
// logs, the logits of the first K chunks of each lane from cache.
template <typename T, uint K>
GOLF_DEV void golf_ce_dlogits_row(const T* row, int target, T* drow, uint vocab, float cap, float scale, float mx,
                                  float logs, const golf_chunk<T> (&cache)[K]) {
  constexpr uint n = golf_chunk<T>::n;
  golf_warp_chunks<K>(golf_chunks<T>(vocab), golf_lane(), [&](uint j, uint slot) {
    const uint valid = golf_chunk_valid<T>(vocab, j);
    float l[n];
    golf_widen<T>(slot < K ? cache[slot] : golf_ld_chunk<T>(row + j * n, valid), l);
    float d[n];
#pragma unroll
    for (uint e = 0; e < n; e++) {
      d[e] = golf_ce_dlogit(l[e], (int)(j * n + e) == target, cap, scale, mx, logs);
    }
    golf_st_row<T>(drow + j * n, valid, d);
  });
}

#endif  // GOLF_ROWS_CUH
