// want: virtual virtual function
#include <metal_stdlib>
using namespace metal;

struct Activation {
  virtual float apply(float x) const { return x; }
};

inline float run(thread const Activation& a, float x) {
  return a.apply(x);
}
