// want: compile 'cmath' file not found
// The C++ standard library does not exist in MSL.
#include <metal_stdlib>
#include <cmath>
using namespace metal;

inline float root(float x) {
  return std::sqrt(x);
}
