// probe_bfloat: bfloat conversion and arithmetic, as golf's bf16 kernels
// rely on them, run by 32 threads at start-up (metal/probe.go). Thread i
// converts x[i] to bfloat (round to nearest, ties to even), widens it back
// to float (exact), and squares it in bfloat (one rounding of the exact
// product):
//
//	bits[i]    = as_type<ushort>(bfloat(x[i]))
//	widened[i] = float(bfloat(x[i]))
//	square[i]  = as_type<ushort>(bfloat(x[i]) · bfloat(x[i]))
#include <metal_stdlib>
using namespace metal;

[[kernel]] void probe_bfloat(
    device const float* x [[buffer(0)]],  // (32)
    device ushort* bits [[buffer(1)]],    // (32)
    device float* widened [[buffer(2)]],  // (32)
    device ushort* square [[buffer(3)]],  // (32)
    uint i [[thread_position_in_grid]]) {
  const bfloat b = static_cast<bfloat>(x[i]);
  bits[i] = as_type<ushort>(b);
  widened[i] = static_cast<float>(b);
  const bfloat s = static_cast<bfloat>(b * b);
  square[i] = as_type<ushort>(s);
}
