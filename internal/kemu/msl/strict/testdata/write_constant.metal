// want: compile cannot assign to variable 'args'
// A write through a constant reference.
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

[[kernel]] void bad_write_constant(
    device float* out [[buffer(0)]],
    constant EltwiseArgs& args [[buffer(1)]],
    uint i [[thread_position_in_grid]]) {
  args.n = 0;
  out[i] = 1.0f;
}
