// want: compile only 8x8 exists
// A 4×4 simdgroup matrix: Metal's are 8×8.
#include <metal_stdlib>
using namespace metal;

inline void load4(device const float* a, device float* d) {
  simdgroup_matrix<float, 4, 4> m;
  simdgroup_load(m, a);
  simdgroup_store(m, d);
}
