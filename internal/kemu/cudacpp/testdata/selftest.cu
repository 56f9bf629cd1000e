// selftest.cu: the CUDA prelude's own test kernels (package cudacpp's
// tests): compiled by NVRTC for sm_80 like the library, loaded by the
// stand-in driver from that cubin, and run on the emulator. Blocks are 1-D
// unless a kernel says otherwise; out holds one result per thread.
typedef unsigned int uint;

#define FULL 0xffffffffu

// emu_builtins: every builtin, per thread (8 values), for a 2-D grid of
// 2-D blocks.
extern "C" __global__ void __launch_bounds__(256) emu_builtins(uint* out) {
  const uint bx = blockIdx.x + gridDim.x * blockIdx.y;
  const uint t = threadIdx.x + blockDim.x * threadIdx.y;
  const uint g = bx * blockDim.x * blockDim.y + t;
  uint* o = out + 8u * g;
  o[0] = threadIdx.x;
  o[1] = threadIdx.y;
  o[2] = blockIdx.x;
  o[3] = blockIdx.y;
  o[4] = blockDim.x;
  o[5] = blockDim.y;
  o[6] = gridDim.x;
  o[7] = gridDim.y;
}

// emu_warp: the warp intrinsics, 12 results per thread, from v = 1000·block
// + 3·lane + 1 and the lane's own arguments.
extern "C" __global__ void __launch_bounds__(128) emu_warp(int* out) {
  const uint lane = threadIdx.x & 31u;
  const int v = 1000 * (int)blockIdx.x + 3 * (int)lane + 1;
  int* o = out + 12u * (blockIdx.x * blockDim.x + threadIdx.x);
  o[0] = __shfl_sync(FULL, v, (int)((lane * 7u) % 32u));
  o[1] = __shfl_sync(FULL, v, 37);  // 37 mod 32
  o[2] = __shfl_up_sync(FULL, v, 3);
  o[3] = __shfl_down_sync(FULL, v, 5);
  o[4] = __shfl_xor_sync(FULL, v, 6);
  o[5] = __shfl_sync(FULL, v, 3, 8);       // lane 3 of each 8-lane segment
  o[6] = __shfl_down_sync(FULL, v, 2, 8);  // within the segment
  o[7] = __shfl_xor_sync(FULL, v, 9, 8);   // 9 crosses into a later segment for some lanes
  const uint ballot = __ballot_sync(FULL, lane % 3u == 0u);
  o[8] = (int)ballot;
  o[9] = __popc(ballot);
  o[10] = __any_sync(FULL, lane == 31u) + 2 * __all_sync(FULL, lane < 32u) + 4 * __all_sync(FULL, lane < 31u);
  o[11] = (int)(__shfl_xor_sync(FULL, (float)v * 0.5f, lane & 1u ? 1 : 2) * 2.0f);
}

// emu_shared: static shared memory between barriers: each thread writes
// its index, then reads its neighbour's (tid+1 mod n), twice over.
extern "C" __global__ void __launch_bounds__(256) emu_shared(uint* out) {
  __shared__ uint tile[256];
  const uint n = blockDim.x, t = threadIdx.x;
  tile[t] = 10u * t + blockIdx.x;
  __syncthreads();
  const uint a = tile[(t + 1u) % n];
  __syncthreads();
  tile[t] = a + 1u;
  __syncthreads();
  out[blockIdx.x * n + t] = tile[(t + 1u) % n];
}

// emu_dynamic_shared: dynamic shared memory (the launch's size): each
// thread writes two floats, then reads the block's in reverse.
extern "C" __global__ void __launch_bounds__(128) emu_dynamic_shared(float* out) {
  extern __shared__ float dyn[];
  const uint n = blockDim.x, t = threadIdx.x;
  dyn[t] = (float)t + 0.5f;
  dyn[n + t] = -(float)t;
  __syncthreads();
  out[blockIdx.x * n + t] = dyn[n - 1u - t] + dyn[2u * n - 1u - t];
}

// emu_missing_sync: neighbours exchange through shared memory with
// __syncthreads only when flag ≠ 0 (the race detector's planted defect).
extern "C" __global__ void __launch_bounds__(128) emu_missing_sync(uint* out, int flag) {
  __shared__ uint tile[128];
  const uint t = threadIdx.x;
  tile[t] = 3u * t + 1u;
  if (flag != 0) {
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + t] = tile[(t + 1u) % blockDim.x];
}

// emu_shfl_after_return: lanes 16..31 return, then lanes 0..15 shuffle
// with the full mask (undefined on a GPU; an error here).
extern "C" __global__ void __launch_bounds__(32) emu_shfl_after_return(int* out) {
  const uint lane = threadIdx.x & 31u;
  if (lane >= 16u) {
    return;
  }
  out[lane] = __shfl_xor_sync(FULL, (int)lane, 1);
}

// emu_divergent_sync: the two halves of the block wait at different
// __syncthreads (undefined on a GPU; an error here).
extern "C" __global__ void __launch_bounds__(64) emu_divergent_sync(int* out) {
  if (threadIdx.x < 32u) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

// emu_mask_mismatch: lane 0 passes another mask than the others.
extern "C" __global__ void __launch_bounds__(32) emu_mask_mismatch(int* out) {
  const uint lane = threadIdx.x & 31u;
  out[lane] = __shfl_sync(lane == 0u ? 0x7fffffffu : FULL, (int)lane, 0);
}

// emu_oob_write: every thread writes out[n + tid]: past an n-element
// buffer for the launch's n (the stand-in's guard page).
extern "C" __global__ void __launch_bounds__(32) emu_oob_write(float* out, uint n) {
  out[n + threadIdx.x + 4096u] = 1.0f;
}
