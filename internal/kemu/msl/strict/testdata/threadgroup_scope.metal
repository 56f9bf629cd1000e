// want: threadgroup-scope threadgroup
// also: kernel-signature (the emulator's generator rejects it too)
// A threadgroup variable in a helper function (MSL allows them only in
// kernels).
#include <metal_stdlib>
using namespace metal;

inline float staged(float v, uint tid) {
  threadgroup float tile[32];
  tile[tid % 32] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return tile[(tid + 1) % 32];
}
