// Package kemu is golf's kernel emulator: it runs GPU compute kernels on the
// CPU, for machines without the GPU (every Linux CI run). One runtime, one
// prelude per kernel language:
//
//	kemu          the runtime (runtime.cc, fiber.cc): grids of threadgroups
//	              (CUDA: blocks) on a pool of OS threads, their threads as
//	              fibers, barriers, group memory, simdgroup (CUDA: warp)
//	              collectives, the race detector
//	kemu/msl      the Metal Shading Language prelude (a metal_stdlib shim)
//	              and the registry of shaders/*.metal, run by package
//	              metal's tests through cgo
//	kemu/cudacpp  the CUDA C++ prelude (threadIdx, __syncthreads,
//	              __shared__, __shfl_*_sync, ...) and the stand-in CUDA
//	              driver: a shared library, built by the tests, that loads
//	              the real NVRTC cubins and runs cuda/kernels/*.cu on this
//	              runtime behind the driver and cuBLASLt APIs
//
// Nothing of golf's binary imports these packages: the emulated runtimes
// exist for tests and tools (cmd/golf's tests check that `go list -deps
// ./cmd/golf` holds none of them, so building golf compiles no C++).
//
// # The runtime
//
// A dispatch (Metal's dispatchThreadgroups, CUDA's cuLaunchKernel) hands
// its threadgroups to a pool of OS threads (SetWorkers, default
// GOMAXPROCS), each running one threadgroup at a time. The T threads of a
// threadgroup run as fibers on that OS thread (a hand-written context
// switch on x86-64 and arm64, ucontext elsewhere or with -tags
// golf_emu_ucontext; 128 KiB stacks with a guard page, allocated once per
// worker), under a round-robin scheduler:
//
//   - a barrier (threadgroup_barrier, __syncthreads) releases the threads
//     once all T have reached the same call site;
//   - a collective (simd_sum, simdgroup_matrix operations, __shfl_sync,
//     __ballot_sync, ...) is a rendezvous of the live lanes of the
//     simdgroup (lane = thread index % 32): each lane deposits its operand,
//     and when every lane that has not returned is waiting at the same call
//     site the prelude's function computes every result at once. What a
//     returned lane means is the language's: MSL leaves it out, CUDA's
//     full-mask intrinsics refuse it.
//
// Misuse is an error naming the kernel, the threadgroup and the call sites,
// never a hang or a silent wrong answer: a thread that returns while others
// wait at a barrier (or arrive later), threads at different barriers, lanes
// at different collectives, and any deadlock (no thread can run).
//
// # Group memory
//
// Threadgroup (CUDA: __shared__) variables are `static thread_local`: all
// fibers of a threadgroup run on one OS thread, so they share the
// variable; threadgroups running at the same time on other OS threads have
// their own copies. Like GPU memory of that kind, the contents are
// undefined when a threadgroup starts (here: whatever the previous
// threadgroup on that OS thread left).
//
// # Races
//
// Fibers of a threadgroup interleave only at barriers and collectives, so a
// missing barrier can go unnoticed under one schedule. SetRaceCheck (or
// GOLF_EMU_RACE=<seed> for a whole process) runs every dispatch again with
// the fibers of each threadgroup scheduled in reverse and in a seeded
// random order between synchronisation points, each schedule on new OS
// threads (whose group memory starts zeroed, so a read of group memory no
// thread wrote differs between schedules), and requires bit-identical
// results (golf_emu_dispatch_race in kemu.h); a difference is an error
// naming the kernel and the memory.
//
// # Building
//
// The C++ is compiled by cgo for the Go API of this package (used by
// package msl), and from Sources by the CUDA stand-in's build. Warnings are
// errors with -tags golf_werror (CI), never in a user's build.
//
// What the emulator cannot prove (timing, races between threadgroups,
// forward progress of spinning threads, the hardware's collective order,
// the GPU compiler itself) is listed in each prelude's documentation.
package kemu
