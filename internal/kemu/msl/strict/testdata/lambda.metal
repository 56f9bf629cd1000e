// want: lambda a lambda expression
#include <metal_stdlib>
using namespace metal;

inline float twice(float x) {
  auto f = [](float v) { return 2.0f * v; };
  return f(x);
}
