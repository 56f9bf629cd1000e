// want: compile exceptions disabled
#include <metal_stdlib>
using namespace metal;

inline float checked(float x) {
  if (x < 0.0f) {
    throw 1;
  }
  return x;
}
