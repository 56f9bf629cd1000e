// prelude_tc.cu: test kernels of golf_prelude.cuh's warp matrix loads
// (golf_ldmatrix_x4, .trans) and asynchronous copies (golf_cp_async16,
// commit, wait), for package cudacpp's tests: compiled by NVRTC for sm_80
// with the prelude (its PTX path), and run on the emulator (its emulated
// path). The prelude is included first, at global scope.
#include "golf_prelude.cuh"

// emu_ldmatrix: one warp. Four 8×8 matrices M_i[r][c] = in[64i + 8r + c]
// are staged in shared memory with rows 24 elements (48 bytes) apart;
// lane l passes row l % 8 of matrix l / 8. out[8l + i] is register i of
// golf_ldmatrix_x4, out[8l + 4 + i] of golf_ldmatrix_x4_trans.
extern "C" __global__ void __launch_bounds__(32) emu_ldmatrix(const u16* in, uint* out) {
  __shared__ __align__(16) u16 tile[32 * 24];
  const uint lane = threadIdx.x;
  for (uint e = lane; e < 256u; e += 32u) {
    tile[(e / 8u) * 24u + e % 8u] = in[e];
  }
  __syncthreads();
  const u16* row = tile + lane * 24u;  // matrix lane / 8, row lane % 8
  uint a[4], b[4];
  golf_ldmatrix_x4(a, row);
  golf_ldmatrix_x4_trans(b, row);
  for (uint i = 0; i < 4u; i++) {
    out[8u * lane + i] = a[i];
    out[8u * lane + 4u + i] = b[i];
  }
}

// emu_cp_async: one block of 64 threads, three stages of 256 floats
// (in[256s ..]). Each thread copies its 16 bytes of every stage into
// shared memory with golf_cp_async16, one group per stage, then for stage
// s waits until at most 2 − s groups are pending (golf_cp_async_wait),
// syncs, and writes the 4 floats its neighbour (thread t ^ 1) copied to
// out[256s + 4t ..]; a barrier after each stage's reads keeps any thread's
// next wait from landing a copy before every thread has read. mode 1 leaves out the wait before stage 0; mode 2
// waits there for at most 3 pending groups (too few completed); mode 3
// has thread 0 wait for everything first, and every other thread never.
extern "C" __global__ void __launch_bounds__(64) emu_cp_async(const float* in, float* out, uint mode) {
  __shared__ __align__(16) float buf[3 * 256];
  const uint t = threadIdx.x;
  for (uint s = 0; s < 3u; s++) {
    golf_cp_async16(buf + 256u * s + 4u * t, in + 256u * s + 4u * t);
    golf_cp_async_commit();
  }
  if (mode == 3u) {
    if (t == 0u) {
      golf_cp_async_wait<0>();
    }
  } else if (mode == 2u) {
    golf_cp_async_wait<3>();
  } else if (mode == 0u) {
    golf_cp_async_wait<2>();
  }
  __syncthreads();
  const uint n = t ^ 1u;
  for (uint k = 0; k < 4u; k++) {
    out[4u * t + k] = buf[4u * n + k];
  }
  __syncthreads();  // every read of stage 0 before any thread's next wait
  if (mode != 3u) {
    golf_cp_async_wait<1>();
  }
  __syncthreads();
  for (uint k = 0; k < 4u; k++) {
    out[256u + 4u * t + k] = buf[256u + 4u * n + k];
  }
  __syncthreads();
  if (mode != 3u) {
    golf_cp_async_wait<0>();
  }
  __syncthreads();
  for (uint k = 0; k < 4u; k++) {
    out[512u + 4u * t + k] = buf[512u + 4u * n + k];
  }
}
