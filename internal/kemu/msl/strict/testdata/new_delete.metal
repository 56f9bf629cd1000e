// want: new-delete new or delete
#include <metal_stdlib>
using namespace metal;

inline float scratch_sum(uint n) {
  float* buf = new float[4];
  buf[0] = float(n);
  const float s = buf[0];
  delete[] buf;
  return s;
}
