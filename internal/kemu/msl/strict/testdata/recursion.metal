// want: recursion recursive call
// Mutual recursion between two helpers of a kernel.
#include <metal_stdlib>
using namespace metal;

uint odd(uint n);

inline uint even(uint n) {
  return n == 0 ? 1u : odd(n - 1);
}

uint odd(uint n) {
  return n == 0 ? 0u : even(n - 1);
}

[[kernel]] void bad_recursion(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = even(i);
}
