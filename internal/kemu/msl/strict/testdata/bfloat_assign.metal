// want: bfloat-conversion implicit conversion from float to bfloat
// A float assigned to a bfloat: clang converts __fp16 implicitly, as g++
// once converted the emulator's bfloat; Apple's compiler has no implicit
// conversion from float to bfloat (static_cast<bfloat>(s) is the fix).
#include <metal_stdlib>
using namespace metal;

inline bfloat scaled(bfloat x, float scale) {
  bfloat y = x;
  const float s = static_cast<float>(x) * scale;
  y = s;
  return y;
}
