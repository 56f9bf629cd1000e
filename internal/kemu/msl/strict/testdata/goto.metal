// want: goto goto
#include <metal_stdlib>
using namespace metal;

inline uint first_set(uint x) {
  uint i = 0;
again:
  if ((x & 1u) == 0 && i < 32) {
    x >>= 1;
    i++;
    goto again;
  }
  return i;
}
