// want: compile simdgroup_matrix<T, 8, 8>: T must be float, half or bfloat
// An integer simdgroup matrix: Metal has float, half and bfloat ones only.
#include <metal_stdlib>
using namespace metal;

inline void accumulate(device const int* a, device const int* b, device int* d) {
  simdgroup_matrix<int, 8, 8> ma;
  simdgroup_matrix<int, 8, 8> mb;
  simdgroup_matrix<int, 8, 8> md;
  simdgroup_load(ma, a);
  simdgroup_load(mb, b);
  simdgroup_multiply(md, ma, mb);
  simdgroup_store(md, d);
}
