// Package cudacpp is the CUDA C++ side of the kernel emulator (package
// kemu): a prelude that compiles golf's CUDA kernels (cuda/kernels/*.cu,
// unchanged) as C++17 for the CPU, and a stand-in CUDA driver built on it,
// for machines without an NVIDIA GPU.
//
// # The prelude
//
// src/cuda_emu.h gives the CUDA built-ins over the runtime of package
// kemu: threadIdx, blockIdx, blockDim, gridDim; __syncthreads (the
// runtime's barrier); __shared__ (static, and extern dynamic) memory as
// thread_local arrays shared by the fibers of one block; the warp
// intrinsics (__shfl_sync, __shfl_up_sync, __shfl_down_sync,
// __shfl_xor_sync, __ballot_sync, __any_sync, __all_sync, __syncwarp) as
// rendezvous of the 32 fibers of a warp with PTX's shfl.sync lane rules;
// __popc and the other integer intrinsics; the float math. The kernels'
// own prelude (golf_prelude.cuh) then takes its CPU path: integer
// round-to-nearest-even conversions for bf16 and fp16, and golf_mma16816's
// warp-shuffle implementation of the m16n8k16 tensor-core product. The
// header's comment lists what the emulator cannot check.
//
// # The stand-in driver
//
// Build compiles the runtime (package kemu's Sources), the prelude, the
// stand-in's driver and cuBLASLt (src/driver.cc, src/cublaslt.cc,
// src/cubin.cc) and the given kernel files, each in a namespace of its own
// with a registry entry per kernel, into one shared library, cached by the
// hash of everything that goes into it. Its directory holds it as
// libcuda.so.1 and libcublasLt.so.11: with GOLF_CUDA_LIB_PATH pointing
// there, golf's own purego bindings load it as they would load NVIDIA's.
// It takes the real NVRTC's cubins (cuModuleLoadData), reads each kernel's
// registers, launch bounds and shared memory from them, checks every call
// as a driver would and more strictly (see driver.cc's comment: context on
// the calling thread, launch configuration against the cubin, pointer
// ownership and alignment, page-locked staging, guard pages after every
// allocation) and fails loudly: an error code, and the message on stderr
// and from Handle.LastError. Work queued on a stream runs only when the
// host waits (an infinitely slow device), so a host that forgets a wait
// reads stale memory here as it would on a GPU. Handle.Stats counts
// launches, waits, allocations and copies for the tests of the backend's
// host behaviour.
//
// Package cuda/standin builds it for golf's library. Only tests import
// these packages; golf's binary never does.
package cudacpp
