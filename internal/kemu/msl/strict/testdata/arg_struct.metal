// want: arg-struct not a struct of golf_args.h
// An argument struct declared outside golf_args.h: no Go mirror checks
// its layout.
#include <metal_stdlib>
using namespace metal;

struct LocalArgs {
  uint n;
  float scale;
};

[[kernel]] void bad_arg_struct(
    device float* out [[buffer(0)]],
    constant LocalArgs& args [[buffer(1)]],
    uint i [[thread_position_in_grid]]) {
  if (i < args.n) {
    out[i] = args.scale;
  }
}
