// scaled_add: the per-channel scaled residual add, forward and backward.
//
//	out[n,c] = x[n,c] + s[c]·y[n,c]          (forward; s = 1 when has_s = 0)
//	dy[n,c]  = s[c]·dout[n,c]                (backward, when has_dy)
//	ds[c]   += Σn dout[n,c]·y[n,c]           (backward, when has_ds)
//	x, y, out, dout, dy T (N, C); s, ds float (C)
//
// The forward is elementwise, four consecutive elements per thread (out
// may alias x: each element is read, then written, by the same thread).
// The backward is column-parallel: threadgroup (bx, rb) covers the
// 4-column chunks bx·W .. bx·W+W−1 and row block rb (the grid's height RB
// splits the N rows into blocks of ceil(N/RB)); each thread owns one chunk
// of columns, walks its block's rows in order, writes dy and sums dout·y
// per column in float into partials[rb, c]. Where the host's aligned
// argument is 1 (every tensor on a 4-element boundary, C a multiple of 4)
// each chunk moves as one vector (golf_rows.h), else element by element;
// the bits are the same.
// scaled_add_ds then adds, per column, the RB partials in block order into
// ds: a fixed two-pass order, deterministic without atomics. Nothing here
// reduces across threads, so the simd and portable flavours are the same
// code (both names exist so the host builds every kernel name one way).
// The forward's element code is golf_rows.h's, shared with the fused
// kernel (fused.metal) that reproduces its bits.
// Host names: scaled_add_{fwd,bwd,ds}_<fl>_<T>.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_rows.h"
using namespace metal;

// scaled_add_fwd: out = x + s⊙y, elements 4t .. 4t+3 of the (N·C)
// elements per thread t (the last chunk may be short; a chunk may cross
// rows unless aligned).
// Baseline (N = 8192, C = 512, bf16): 2·N·C ≈ 8.4 MFLOP; 3·N·C·2 + 4·C
// ≈ 25.2 MB; no threadgroup memory, 256 threads, N·C/4 of them; roofline
// max(2.3 µs, 252 µs) ≈ 0.25 ms (bandwidth).
template <typename T, bool Simd>
[[kernel]] void scaled_add_fwd(
    device const T* x [[buffer(0)]],          // (N, C)
    device const T* y [[buffer(1)]],          // (N, C)
    device const float* s [[buffer(2)]],      // (C), unread when has_s = 0
    device T* out [[buffer(3)]],              // (N, C), may alias x
    constant ScaledAddArgs& args [[buffer(4)]],
    constant uint& aligned [[buffer(5)]],     // 1: every chunk moves as one vector
    uint t [[thread_position_in_grid]]) {
  const ulong total = ulong(args.rows) * args.cols;
  const ulong i = ulong(golf_vw) * t;
  if (i >= total) {
    return;
  }
  const uint n = uint(min(ulong(golf_vw), total - i));
  const bool al = aligned != 0;
  float4 sc = float4(1.0f);
  if (args.has_s != 0) {
    if (al) {
      sc = golf_load4(s, i % args.cols, n, true);  // the chunk lies in one row (C is a multiple of 4)
    } else {
      for (uint k = 0; k < n; k++) {
        sc[k] = s[(i + k) % args.cols];
      }
    }
  }
  golf_storef4(out, i, n, scaled_add_chunk(golf_loadf4(x, i, n, al), golf_loadf4(y, i, n, al), sc), al);
}

// scaled_add_bwd: dy = s⊙dout and the per-row-block column sums of dout·y.
// Baseline: 3·N·C ≈ 12.6 MFLOP; dout and y read, dy written, 3·N·C·2 B,
// plus RB·C·4 B of partials (RB = 128) ≈ 25.4 MB; no threadgroup memory,
// 128 threads (one 4-column chunk each), 128 threadgroups; roofline max(3.5 µs, 254 µs)
// ≈ 0.25 ms (bandwidth).
template <typename T, bool Simd>
[[kernel]] void scaled_add_bwd(
    device const T* dout [[buffer(0)]],       // (N, C)
    device const T* y [[buffer(1)]],          // (N, C), unread unless has_ds
    device const float* s [[buffer(2)]],      // (C), unread when has_s = 0
    device T* dy [[buffer(3)]],               // (N, C), unwritten unless has_dy
    device float* partials [[buffer(4)]],     // (RB, C), unwritten unless has_ds
    constant ScaledAddArgs& args [[buffer(5)]],
    constant uint& aligned [[buffer(6)]],     // 1: every chunk moves as one vector
    uint2 group [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint2 pos [[thread_position_in_grid]]) {
  const uint c = golf_vw * pos.x;
  if (c >= args.cols) {
    return;
  }
  const uint n = golf_chunk_len(c, args.cols);
  const bool al = aligned != 0;
  const uint2 rows = golf_row_block(args.rows, ngroups.y, group.y);
  const float4 sc = args.has_s != 0 ? golf_load4(s, c, n, al) : float4(1.0f);
  float4 acc = float4(0.0f);
  for (uint r = rows.x; r < rows.y; r++) {
    const ulong i = ulong(r) * args.cols + c;
    const float4 g = golf_loadf4(dout, i, n, al);
    if (args.has_dy != 0) {
      float4 d;
      for (uint k = 0; k < golf_vw; k++) {
        d[k] = sc[k] * g[k];
      }
      golf_storef4(dy, i, n, d, al);
    }
    if (args.has_ds != 0) {
      const float4 v = golf_loadf4(y, i, n, al);
      for (uint k = 0; k < golf_vw; k++) {
        acc[k] += g[k] * v[k];
      }
    }
  }
  if (args.has_ds != 0) {
    golf_store4(partials, ulong(group.y) * args.cols + c, n, acc, al);
  }
}

// scaled_add_ds: ds[c] += Σ_rb partials[rb, c] in block order (args.rows is
// the number of row blocks RB here), one thread per column. T is unused.
// Baseline: RB·C = 65536 FLOP; RB·C·4 + 2·C·4 ≈ 0.27 MB; no threadgroup
// memory, 256 threads; roofline 2.7 µs.
template <typename T, bool Simd>
[[kernel]] void scaled_add_ds(
    device const float* partials [[buffer(0)]],  // (RB, C)
    device float* ds [[buffer(1)]],              // (C)
    constant ScaledAddArgs& args [[buffer(2)]],
    uint c [[thread_position_in_grid]]) {
  if (c >= args.cols) {
    return;
  }
  float sum = 0.0f;
  for (uint rb = 0; rb < args.rows; rb++) {
    sum += partials[ulong(rb) * args.cols + c];
  }
  ds[c] += sum;
}

#define instantiate_scaled_add(tname, T)                                           \
  instantiate_kernel("scaled_add_fwd_simd_" #tname, scaled_add_fwd, T, true)       \
  instantiate_kernel("scaled_add_fwd_portable_" #tname, scaled_add_fwd, T, false)  \
  instantiate_kernel("scaled_add_bwd_simd_" #tname, scaled_add_bwd, T, true)       \
  instantiate_kernel("scaled_add_bwd_portable_" #tname, scaled_add_bwd, T, false)  \
  instantiate_kernel("scaled_add_ds_simd_" #tname, scaled_add_ds, T, true)         \
  instantiate_kernel("scaled_add_ds_portable_" #tname, scaled_add_ds, T, false)

instantiate_scaled_add(float, float)
instantiate_scaled_add(half, half)
instantiate_scaled_add(bfloat, bfloat)
