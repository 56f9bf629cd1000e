// probe_matrix: one simdgroup_multiply_accumulate of 8×8 matrices in T
// (float, half, bfloat), d = a·b + c, loaded from and stored to device
// memory, run by one simdgroup of 32 threads at start-up (metal/probe.go).
// The operands are small integers, so every product and sum is exact in
// each type and the answer is known bit for bit. The simd flavour's GEMM
// and attention run on float matrices; half and bfloat are probed to be
// reported.
//
// Each instantiation is compiled on its own on a device (probe.go keeps
// one instantiate_kernel line), so a device that cannot build one type
// still probes the others.
#include <metal_stdlib>
#include "../golf_args.h"
using namespace metal;

template <typename T>
[[kernel]] void probe_matrix(
    device const T* a [[buffer(0)]],  // (8, 8) row-major
    device const T* b [[buffer(1)]],  // (8, 8)
    device const T* c [[buffer(2)]],  // (8, 8)
    device T* d [[buffer(3)]]) {      // (8, 8)
  simdgroup_matrix<T, 8, 8> ma;
  simdgroup_matrix<T, 8, 8> mb;
  simdgroup_matrix<T, 8, 8> mc;
  simdgroup_matrix<T, 8, 8> md;
  simdgroup_load(ma, a);
  simdgroup_load(mb, b);
  simdgroup_load(mc, c);
  simdgroup_multiply_accumulate(md, ma, mb, mc);
  simdgroup_store(md, d);
}

instantiate_kernel("probe_matrix_float", probe_matrix, float)
instantiate_kernel("probe_matrix_half", probe_matrix, half)
instantiate_kernel("probe_matrix_bfloat", probe_matrix, bfloat)
