// want: compile no matching function for call to 'simd_sum'
// simd_sum of a struct: reduce its fields one at a time.
#include <metal_stdlib>
using namespace metal;

struct MeanVar {
  float mean;
  float var;
};

inline MeanVar reduce(MeanVar m) {
  return simd_sum(m);
}
