// probe_simd: the SIMD-group functions of the simd flavour's reductions
// (simd_sum, simd_max, simd_min, simd_prefix_exclusive_sum) and shuffles
// (simd_shuffle_xor, simd_shuffle_down, simd_broadcast), run by one
// simdgroup of 32 threads at start-up (metal/probe.go) so that a device is
// judged by what it computes, not only by the family it reports.
//
// Lane l holds x = l + 1; out[f·32 + l] is function f's result on lane l:
//
//	0 simd_sum                  528 (1 + 2 + ... + 32)
//	1 simd_max                  32
//	2 simd_min                  1
//	3 simd_prefix_exclusive_sum l·(l + 1)/2
//	4 simd_shuffle_xor(x, 1)    (l ^ 1) + 1
//	5 simd_shuffle_down(x, 1)   l + 2 (lanes 0 to 30)
//	6 simd_broadcast(x, 5)      6
//	7 [[threads_per_simdgroup]] 32
#include <metal_stdlib>
using namespace metal;

[[kernel]] void probe_simd(
    device float* out [[buffer(0)]],  // (8, 32)
    uint lane [[thread_index_in_simdgroup]],
    uint width [[threads_per_simdgroup]]) {
  const float x = static_cast<float>(lane + 1u);
  out[0u * 32u + lane] = simd_sum(x);
  out[1u * 32u + lane] = simd_max(x);
  out[2u * 32u + lane] = simd_min(x);
  out[3u * 32u + lane] = simd_prefix_exclusive_sum(x);
  out[4u * 32u + lane] = simd_shuffle_xor(x, static_cast<ushort>(1));
  out[5u * 32u + lane] = simd_shuffle_down(x, static_cast<ushort>(1));
  out[6u * 32u + lane] = simd_broadcast(x, static_cast<ushort>(5));
  out[7u * 32u + lane] = static_cast<float>(width);
}
