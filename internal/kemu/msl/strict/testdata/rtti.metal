// want: compile typeid
#include <metal_stdlib>
using namespace metal;

inline bool same(float x, float y) {
  return typeid(x) == typeid(y);
}
