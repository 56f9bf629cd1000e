// golf_relu_sq.h: the element code of the squared ReLU, written once for
// relu_sq.metal's kernels and the GEMM epilogues of linear.metal that fuse
// it (gemm_nt_relu_sq, gemm_nn_drelu_sq), so both compute the same bits:
// the same float expression on the same rounded operands, rounded once
// where the caller stores. max(v, 0) is written as v <= 0 ? 0 : v so that
// NaN passes through and -0 becomes +0, as Go's max does in the CPU
// backend.
#ifndef GOLF_RELU_SQ_H
#define GOLF_RELU_SQ_H

#include <metal_stdlib>
using namespace metal;

// relu_sq_fwd_elem is max(v, 0)².
METAL_FUNC float relu_sq_fwd_elem(float v) {
  const float r = v <= 0.0f ? 0.0f : v;
  return r * r;
}

// relu_sq_bwd_elem is 2·max(v, 0)·d.
METAL_FUNC float relu_sq_bwd_elem(float v, float d) {
  const float r = v <= 0.0f ? 0.0f : v;
  return 2.0f * r * d;
}

#endif  // GOLF_RELU_SQ_H
