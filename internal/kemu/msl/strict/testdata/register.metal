// want: compile register
#include <metal_stdlib>
using namespace metal;

inline float sq(float x) {
  register float y = x * x;
  return y;
}
