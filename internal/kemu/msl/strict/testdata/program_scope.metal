// want: program-scope not in the constant address space
// A mutable program-scope variable.
#include <metal_stdlib>
using namespace metal;

float global_scale = 2.0f;

inline float scaled(float x) {
  return x * global_scale;
}
