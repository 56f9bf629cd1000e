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
// stand-in's driver, cuBLASLt and NCCL (src/driver.cc, src/cublaslt.cc,
// src/cubin.cc, src/nccl.cc) and the given kernel files, each in a
// namespace of its own with a registry entry per kernel, into one shared
// library, cached by the hash of everything that goes into it. Its
// directory holds it as libcuda.so.1, libcublasLt.so.11 and libnccl.so.2:
// with GOLF_CUDA_LIB_PATH pointing there, golf's own purego bindings load
// it as they would load NVIDIA's.
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
// # The stand-in NCCL
//
// The same library is linked as libnccl.so.2 too (src/nccl.cc): NCCL
// 2.22's C API for ranks that are processes of one machine, one rank per
// process. ncclGetUniqueId names a random shared memory segment; the first
// rank of ncclCommInitRank creates it, every rank claims its slot and waits
// (GOLF_STANDIN_NCCL_TIMEOUT seconds, default 60) for all of them; a rank
// claimed twice or a differing nranks is ncclInvalidUsage. Collectives
// (ncclAllReduce, ncclBroadcast, ncclReduceScatter, ncclAllGather) are
// checked when called and queued on the stream with the driver's other
// work, so they run when the host waits, in order with the kernels around
// them: each rank publishes its buffer in its slot of the segment (in
// chunks of GOLF_STANDIN_NCCL_SLOT_BYTES, default 1 MiB), and every rank
// reduces the slots in rank order 0, 1, ..., n−1, so all ranks compute the
// same bits and runs repeat exactly (float16 and bfloat16 reduced in float,
// rounded once to nearest even). A rank waiting for the others notices
// within milliseconds that one has exited or left, that another rank
// failed or aborted the communicator, or that ncclCommAbort was called on
// its own from another thread: the collective then fails as a faulting
// kernel does (CUDA_ERROR_LAUNCH_FAILED), ncclCommGetAsyncError reports
// ncclRemoteError (or ncclSystemError for its own abort) and
// ncclGetLastError names the rank. The segment's name is removed once
// every rank has attached (after a failed init, by the last rank to
// leave), so killed runs leave nothing behind. Handle.NCCLStats counts a process's communicators, collectives
// and bytes.
//
// Package cuda/standin builds it for golf's library. Only tests import
// these packages; golf's binary never does.
package cudacpp
