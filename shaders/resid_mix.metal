// resid_mix: mixing the residual stream with the embedding stream, forward
// and backward.
//
//	out[n,c]   = mix[0,c]·x[n,c] + mix[1,c]·x0[n,c]      (forward)
//	dx[n,c]    = mix[0,c]·dout[n,c]                      (backward, overwritten)
//	dx0[n,c]  += mix[1,c]·dout[n,c]
//	dmix[0,c] += Σn dout·x;  dmix[1,c] += Σn dout·x0
//	x, x0, out, dout, dx T (N, C); mix, dmix float (2, C); dx0 float (N, C)
//
// The forward is elementwise, four consecutive elements per thread. The
// backward is column-parallel: threadgroup (bx, rb) covers the 4-column
// chunks bx·W .. bx·W+W−1 and row block rb (the grid's height RB splits the
// N rows into blocks of ceil(N/RB)); each thread owns one chunk of
// columns, walks its block's rows in order, writes dx and dx0 and sums
// dout·x and dout·x0 per column in float into partials[rb, 0, c] and
// partials[rb, 1, c]. Where the host's aligned argument is 1 (every tensor
// on a 4-element boundary, C a multiple of 4) each chunk moves as one
// vector (golf_rows.h), else element by element; the bits are the same. resid_mix_dmix then adds, per
// element of dmix, the RB partials in block order: a fixed two-pass order,
// deterministic without atomics. Nothing here reduces across threads, so
// the simd and portable flavours are the same code (both names exist so the
// host builds every kernel name one way).
// The element code and the row blocking are golf_rows.h's, shared with the
// fused kernels (fused.metal) that reproduce these kernels' bits.
// Host names: resid_mix_{fwd,bwd,dmix}_<fl>_<T>.
#include <metal_stdlib>
#include "golf_args.h"
#include "golf_rows.h"
using namespace metal;

// resid_mix_fwd: elements 4t .. 4t+3 of the (N·C) elements per thread t
// (the last chunk may be short; a chunk may cross rows unless aligned).
// Baseline (N = 8192, C = 512, bf16): 3·N·C ≈ 12.6 MFLOP; x and x0 read,
// out written, 3·N·C·2 + 8·C ≈ 25.2 MB; no threadgroup memory, 256 threads,
// N·C/4 of them; roofline max(3.5 µs, 252 µs) ≈ 0.25 ms (bandwidth).
template <typename T, bool Simd>
[[kernel]] void resid_mix_fwd(
    device const T* x [[buffer(0)]],          // (N, C)
    device const T* x0 [[buffer(1)]],         // (N, C)
    device const float* mix [[buffer(2)]],    // (2, C)
    device T* out [[buffer(3)]],              // (N, C)
    constant ResidMixArgs& args [[buffer(4)]],
    constant uint& aligned [[buffer(5)]],     // 1: every chunk moves as one vector
    uint t [[thread_position_in_grid]]) {
  const ulong total = ulong(args.rows) * args.cols;
  const ulong i = ulong(golf_vw) * t;
  if (i >= total) {
    return;
  }
  const uint n = uint(min(ulong(golf_vw), total - i));
  const bool al = aligned != 0;
  float4 m0;
  float4 m1;
  if (al) {  // the chunk lies in one row
    const ulong c = i % args.cols;
    m0 = golf_load4(mix, c, n, true);
    m1 = golf_load4(mix, args.cols + c, n, true);
  } else {
    for (uint k = 0; k < golf_vw; k++) {
      const ulong c = (i + k) % args.cols;
      m0[k] = mix[c];
      m1[k] = mix[args.cols + c];
    }
  }
  golf_storef4(out, i, n, resid_mix_chunk(m0, m1, golf_loadf4(x, i, n, al), golf_loadf4(x0, i, n, al)), al);
}

// resid_mix_bwd: dx, dx0 and the per-row-block partial sums of dmix.
// Baseline: 6·N·C ≈ 25 MFLOP; dout, x, x0 read (3·N·C·2), dx written
// (N·C·2), dx0 read and written (2·N·C·4), partials RB·2C·4 (RB = 128)
// ≈ 67.6 MB; no threadgroup memory, 128 threads (one 4-column chunk
// each), 128 threadgroups;
// roofline max(7 µs, 676 µs) ≈ 0.68 ms (bandwidth).
template <typename T, bool Simd>
[[kernel]] void resid_mix_bwd(
    device const T* dout [[buffer(0)]],       // (N, C)
    device const T* x [[buffer(1)]],          // (N, C)
    device const T* x0 [[buffer(2)]],         // (N, C)
    device const float* mix [[buffer(3)]],    // (2, C)
    device T* dx [[buffer(4)]],               // (N, C)
    device float* dx0 [[buffer(5)]],          // (N, C)
    device float* partials [[buffer(6)]],     // (RB, 2, C)
    constant ResidMixArgs& args [[buffer(7)]],
    constant uint& aligned [[buffer(8)]],     // 1: every chunk moves as one vector
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
  const float4 m0 = golf_load4(mix, c, n, al);
  const float4 m1 = golf_load4(mix, ulong(args.cols) + c, n, al);
  float acc[2 * golf_vw] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};  // Σ dout·x, Σ dout·x0 per column
  for (uint r = rows.x; r < rows.y; r++) {
    const ulong i = ulong(r) * args.cols + c;
    resid_mix_bwd_chunk(golf_loadf4(dout, i, n, al), m0, m1, x, x0, dx, dx0, i, n, acc, 0u, golf_vw, al);
  }
  const ulong base = ulong(group.y) * 2 * args.cols;
  golf_store4(partials, base + c, n, float4(acc[0], acc[1], acc[2], acc[3]), al);
  golf_store4(partials, base + args.cols + c, n, float4(acc[4], acc[5], acc[6], acc[7]), al);
}

// resid_mix_dmix: dmix[j] += Σ_rb partials[rb, j] in block order, one thread
// per element j of dmix (2·C of them). Here args.rows is the number of row
// blocks RB and args.cols the width 2·C of a block's partials. T is unused.
// Baseline: 2·RB·C = 131072 FLOP; RB·2C·4 + 2·2C·4 ≈ 0.53 MB; no
// threadgroup memory, 256 threads; roofline 5.3 µs.
template <typename T, bool Simd>
[[kernel]] void resid_mix_dmix(
    device const float* partials [[buffer(0)]],  // (RB, 2·C)
    device float* dmix [[buffer(1)]],            // (2·C)
    constant ResidMixArgs& args [[buffer(2)]],
    uint j [[thread_position_in_grid]]) {
  if (j >= args.cols) {
    return;
  }
  float sum = 0.0f;
  for (uint rb = 0; rb < args.rows; rb++) {
    sum += partials[ulong(rb) * args.cols + j];
  }
  dmix[j] += sum;
}

#define instantiate_resid_mix(tname, T)                                          \
  instantiate_kernel("resid_mix_fwd_simd_" #tname, resid_mix_fwd, T, true)       \
  instantiate_kernel("resid_mix_fwd_portable_" #tname, resid_mix_fwd, T, false)  \
  instantiate_kernel("resid_mix_bwd_simd_" #tname, resid_mix_bwd, T, true)       \
  instantiate_kernel("resid_mix_bwd_portable_" #tname, resid_mix_bwd, T, false)  \
  instantiate_kernel("resid_mix_dmix_simd_" #tname, resid_mix_dmix, T, true)     \
  instantiate_kernel("resid_mix_dmix_portable_" #tname, resid_mix_dmix, T, false)

instantiate_resid_mix(float, float)
instantiate_resid_mix(half, half)
instantiate_resid_mix(bfloat, bfloat)
