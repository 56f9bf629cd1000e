// msl.h: the emulator's Metal Shading Language shim, included by
// include/metal_stdlib. It makes an MSL 3.1 compute kernel a C++17 function:
//
//   - types, math, atomics, simdgroup functions, simdgroup_matrix and
//     barriers from msl_*.h, in namespace metal (types also global, as MSL's
//     builtin types are);
//   - no floating-point contraction (see the pragma below);
//   - attributes ([[kernel]], [[buffer(n)]], [[host_name("...")]], the
//     builtin attributes) stay C++11 attributes that g++ ignores
//     (-Wno-attributes); the generated trampolines bind buffers and builtins;
//   - address spaces are macros: device and thread expand to nothing,
//     constant to const;
//   - threadgroup expands to `static thread_local`. The threads of one
//     threadgroup run as fibers on one OS thread, and each OS thread runs one
//     threadgroup at a time, so a static thread_local variable in a kernel is
//     shared by exactly the threads of one threadgroup, while threadgroups
//     running at the same time on other OS threads have their own copies.
//     The trick only works for variables declared at kernel scope without an
//     initializer (`threadgroup float tile[256];`), which is also all MSL
//     allows there; threadgroup pointers (parameters, [[threadgroup(n)]]
//     arguments, locals) are not supported, and the kernel generator
//     rejects them. Pass threadgroup arrays to helpers by template parameter
//     or use indices.
#ifndef GOLF_EMU_MSL_H
#define GOLF_EMU_MSL_H

// No contraction of a·b + c into a fused multiply-add anywhere in the
// kernels or the shim: each operation rounds once, as the Go reference
// does (cgo does not accept -ffp-contract=off as a flag). It comes before
// any include so that every function of the translation unit gets it.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "msl_scalar.h"
#include "msl_vector.h"
#include "msl_math.h"
#include "msl_atomic.h"
#include "msl_simd.h"

#define device
#define constant const
#define thread
#define threadgroup static thread_local
#define METAL_FUNC inline __attribute__((always_inline))
#define GOLF_EMU 1

namespace golf_emu {
// The generated registry (zz_kernels_gen.cc; registry.cc reads it).
extern const KernelEntry kKernels[];
extern const int kKernelCount;
extern const FieldLayout kArgLayouts[];
extern const int kArgLayoutCount;
}  // namespace golf_emu

#endif  // GOLF_EMU_MSL_H
