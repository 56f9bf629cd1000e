// want: compile no matching function for call to 'simdgroup_load'
// A half tile loaded into a float matrix: simdgroup_load takes a pointer
// to the matrix's own element type (load a simdgroup_half8x8).
#include <metal_stdlib>
using namespace metal;

inline void load_tile(device const half* a, device float* d) {
  simdgroup_float8x8 m;
  simdgroup_load(m, a);
  simdgroup_store(m, d);
}
