// Planted violation: a float initialising a bfloat. MSL has no implicit
// conversion to bfloat; Apple's compiler rejects it, and so must the
// emulator build (static_cast<bfloat>(x) is the fix).
#include <metal_stdlib>
using namespace metal;

inline float round_trip(float x) {
  const bfloat b = x;
  return static_cast<float>(b);
}
