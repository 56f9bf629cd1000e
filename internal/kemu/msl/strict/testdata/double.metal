// want: double MSL has no double
// also: compile (-Wdouble-promotion: s += x[i] widens a float)
#include <metal_stdlib>
using namespace metal;

inline float accurate_mean(device const float* x, uint n) {
  double s = 0;
  for (uint i = 0; i < n; i++) {
    s += x[i];
  }
  return float(s / n);
}
