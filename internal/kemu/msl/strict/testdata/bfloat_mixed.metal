// want: bfloat-conversion implicit conversion from float to bfloat
// bfloat × float is float in MSL (only bfloat op bfloat and bfloat op
// integer stay bfloat): narrowing it back needs a cast.
#include <metal_stdlib>
using namespace metal;

inline bfloat scale(bfloat a, float f) {
  const bfloat c = a * f;
  return c;
}
