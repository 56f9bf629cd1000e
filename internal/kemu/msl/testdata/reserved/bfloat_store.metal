// Planted violation: a template storing a float through device T*,
// instantiated for T = bfloat.
#include <metal_stdlib>
using namespace metal;

template <typename T>
inline void store_scaled(device T* out, uint i, float x, float alpha) {
  const float v = x * alpha;
  out[i] = v;
}

template void store_scaled<float>(device float*, uint, float, float);
template void store_scaled<bfloat>(device bfloat*, uint, float, float);
