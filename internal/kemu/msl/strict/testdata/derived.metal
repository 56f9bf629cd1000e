// want: derived-class derives from a base class
#include <metal_stdlib>
using namespace metal;

struct Base {
  float scale;
};

struct Scaled : Base {
  float shift;
};

inline float apply(thread const Scaled& s, float x) {
  return s.scale * x + s.shift;
}
