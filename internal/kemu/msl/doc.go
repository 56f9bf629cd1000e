// Package msl runs golf's Metal compute kernels on the CPU: the Metal
// Shading Language (MSL 3.1) prelude of the kernel emulator (package kemu,
// whose runtime runs the threads), for machines without a Mac. Package
// metal's tests wire it into an emulated Metal runtime
// (metal.EmuConfig.Kernels); golf's binary never imports it.
//
// # How it works
//
// The kernels are real MSL (shaders/*.metal). They are compiled as C++17 by
// g++ (through cgo) against the emulator's own <metal_stdlib>
// (include/metal_stdlib → msl.h), with -Wall -Wextra -Wno-attributes
// -Wno-unknown-pragmas -Wdouble-promotion -fno-fast-math and no
// floating-point contraction (a pragma in msl.h: every a·b + c rounds
// twice, as the Go reference does). Warnings are errors only with
// -tags golf_werror (CI), never in a user's `go build`.
//
//   - scalar and vector types: half (IEEE binary16) and bfloat classes whose
//     conversions from float round to nearest even bit for bit as the Go
//     backend (backend.F16Bits, BF16Bits); half op half is computed in float
//     and rounded once, which is exactly IEEE half arithmetic; vec<T, N>
//     with .xyzw, swizzles, elementwise operators (msl_scalar.h,
//     msl_vector.h). half and bfloat are macros for ::__msl_half and
//     ::__msl_bfloat, so, as in MSL, they cannot name a variable; as in
//     MSL nothing converts to bfloat implicitly (its constructors from
//     float and integers are explicit: bfloat b = f; out[i] = f; return f;
//     do not compile, static_cast<bfloat>(f) does), bfloat op bfloat and
//     bfloat op integer are bfloat, and bfloat widens to float implicitly;
//   - math functions (precise:: and fast:: are the same), atomics
//     (msl_math.h, msl_atomic.h);
//   - attributes stay C++ attributes that the compiler ignores; address
//     spaces are macros (device, thread: nothing; constant: const);
//   - threadgroup is `static thread_local`: see below.
//
// The generator (go generate ./internal/kemu/msl, program gen, package
// internal/kgen) reads the [[kernel]] signatures and the instantiate_kernel
// instantiations of every .metal file and writes zz_kernels_gen.cc: the
// sources included as C++, one trampoline per host name that casts the
// bound buffers to the parameter types and passes the builtins, and the
// registry table. A test checks that the file is up to date.
//
// A dispatch (Kernel.Dispatch: Metal's dispatchThreadgroups) runs on the
// runtime of package kemu: its threadgroups go to a pool of OS threads
// (SetWorkers, default GOMAXPROCS), each running one threadgroup at a
// time, the T threads of a threadgroup as fibers on that OS thread, under a
// round-robin scheduler:
//
//   - threadgroup_barrier releases the threads once all T have reached the
//     same call site;
//   - simdgroup functions (simd_sum, simd_shuffle..., simdgroup_barrier,
//     simdgroup_matrix load/store/multiply) are a rendezvous of the live lanes
//     of the simdgroup (lane = thread_index_in_threadgroup % 32): each lane
//     deposits its operand, and when every lane that has not returned is
//     waiting at the same call site the results are computed at once. Lanes
//     that returned, or that a partial last simdgroup lacks, do not take
//     part; a shuffle from such a lane returns the caller's own value
//     (msl_simd.h documents every function). simd_sum, simd_shuffle... and
//     the other permutes and reductions compile, as in Apple's
//     metal_simdgroup, for scalars and vectors of char, uchar, short,
//     ushort, int, uint, half and float only (a static_assert: no bfloat,
//     bool or struct shuffles);
//   - simdgroup_matrix<T, 8, 8> keeps the whole matrix in every lane; its
//     operations need all 32 lanes with identical arguments, and accumulate
//     in float.
//
// Misuse is an error naming the kernel, the threadgroup and the call sites,
// never a hang or a silent wrong answer: a thread that returns while others
// wait at a barrier (or arrive later), threads at different barriers, lanes
// at different simdgroup functions, non-uniform shuffle arguments, matrix
// operations in a partial simdgroup, and any deadlock (no thread can run).
//
// # Threadgroup memory
//
// `threadgroup float tile[256];` becomes `static thread_local float
// tile[256];`. All fibers of a threadgroup run on one OS thread, so they
// share the variable; threadgroups running at the same time on other OS
// threads have their own copies. The constraints: threadgroup variables are
// declared in a kernel's body, without an initializer (as MSL requires);
// threadgroup-qualified pointers, parameters and [[threadgroup(n)]]
// arguments are not supported (the generator rejects them: use indices, or
// `auto p = tile + k;`); and an OS thread runs one threadgroup at a time.
// Like GPU threadgroup memory, the contents are undefined when a
// threadgroup starts (here: whatever the previous threadgroup on that OS
// thread left). The cost: thread-local storage is reserved (and zeroed) in
// every thread of the process, so each kernel instantiation's threadgroup
// arrays add their size to every thread; keep them at what the kernel
// needs (MSL's limit is 32 KB per kernel anyway).
//
// # What the emulator cannot prove
//
// # Races
//
// Fibers of a threadgroup interleave only at barriers and simdgroup
// functions, so a missing barrier can go unnoticed under one schedule.
// SetRaceCheck runs every dispatch again with the fibers of each
// threadgroup scheduled in reverse and in a seeded random order between
// synchronisation points (each schedule on new OS threads, whose
// threadgroup memory starts zeroed), and requires bit-identical buffers; a
// difference is an error naming the kernel (a missing threadgroup_barrier or
// simdgroup_barrier, or a read of threadgroup memory no thread wrote).
//
// # Thread counts
//
// A kernel declaring [[max_total_threads_per_threadgroup(N)]] is, in golf's
// library, laid out for exactly N threads: Dispatch refuses any other
// threadgroup size, so every emulated test checks the host's counts
// against the kernels' (Kernel.MaxTotalThreads reports N).
//
// # What the emulator cannot prove
//
// Passing here shows a kernel computes the right values under MSL's
// execution model. The strict front end (package internal/kemu/msl/strict) checks
// what g++ cannot: address spaces, MSL's C++ restrictions, reserved words,
// threadgroup memory limits, the MSL version, the types of a kernel's
// position and size attributes. These wait for a real Mac
// (the macOS CI runs the same kernels on the GPU and compares with the
// emulator):
//
//   - timing and performance, occupancy, memory coalescing;
//   - races between threadgroups (they run on real OS threads but are not
//     detected), and memory ordering beyond barriers and atomics;
//   - forward progress: a thread spinning on a value another thread of its
//     threadgroup writes never yields, and hangs;
//   - Apple's compiler itself: implicit conversions it forbids and clang
//     allows (but those to bfloat, which both builds reject), function
//     constants, its own bugs;
//   - resource limits that depend on the compiled code: register pressure
//     lowering a pipeline's maxTotalThreadsPerThreadgroup, argument buffer
//     limits;
//   - the hardware's simdgroup details: the order in which simd_sum and
//     simdgroup_matrix accumulate, values read from inactive lanes, Apple's
//     distribution of matrix elements over lanes (thread_elements());
//   - accuracy of exp, log, tanh, sin, cos, pow (and their fast:: versions,
//     the same functions here): the C library's here, the GPU's there
//     (tests compare them with tolerances);
//   - out-of-bounds accesses: a kernel reading past a buffer reads host
//     memory here (or crashes the process), garbage or zero there.
package msl
