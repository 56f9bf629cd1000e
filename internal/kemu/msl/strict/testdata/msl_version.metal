// want: compile os_log
// Shader logging is MSL 3.2 (macOS 15): a library for MSL 3.1 cannot use it.
#include <metal_stdlib>
using namespace metal;

[[kernel]] void bad_msl_version(
    device float* out [[buffer(0)]],
    uint i [[thread_position_in_grid]]) {
  os_log log("golf", "kernels");
  log.log("thread %u", i);
  out[i] = 0.0f;
}
