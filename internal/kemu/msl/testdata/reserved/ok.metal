// The control: half and bfloat used as types in every way the shaders use
// them compile.
#include <metal_stdlib>
using namespace metal;

template <typename T>
inline float load(device const T* x, uint i) {
  return static_cast<float>(x[i]);
}

inline float uses(device const half* h, device const bfloat* b, uint npairs) {
  const half one = half(1.0f);
  const bfloat two = static_cast<bfloat>(2.0f);
  const half2 v = half2(one, one);
  float s = float(numeric_limits<half>::max()) * 0.0f + float(numeric_limits<bfloat>::max()) * 0.0f;
  for (uint i = 0; i < npairs; i++) {
    s += load(h, i) + load(b, i) + float(v.x) + float(two);
  }
  return s;
}
