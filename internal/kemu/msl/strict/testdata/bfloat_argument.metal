// want: bfloat-conversion implicit conversion from float to bfloat
// A float passed for a bfloat parameter.
#include <metal_stdlib>
using namespace metal;

inline void put(device bfloat* out, uint i, bfloat v) {
  out[i] = v;
}

inline void put_sum(device bfloat* out, uint i, float a, float b) {
  put(out, i, a + b);
}
