// runtime.h: the interface between a kernel language's prelude (the MSL
// shim of package msl, the CUDA prelude of package cudacpp, compiled into
// the kernels' translation units) and the dispatch runtime (runtime.cc). It
// defines no kernel-language names and no macros, so runtime.cc can use the
// C++ standard library freely.
#ifndef GOLF_EMU_RUNTIME_H
#define GOLF_EMU_RUNTIME_H

#include <cstdint>

namespace golf_emu {

// SimdWidth is the number of lanes of a simdgroup (a CUDA warp).
constexpr uint32_t SimdWidth = 32;

// ThreadCtx holds the builtin values of one thread of a dispatch.
struct ThreadCtx {
  uint32_t thread_position_in_grid[3];
  uint32_t threadgroup_position_in_grid[3];
  uint32_t thread_position_in_threadgroup[3];
  uint32_t threads_per_threadgroup[3];
  uint32_t threadgroups_per_grid[3];
  uint32_t threads_per_grid[3];
  uint32_t thread_index_in_threadgroup;
  uint32_t thread_index_in_simdgroup;
  uint32_t simdgroup_index_in_threadgroup;
  uint32_t threads_per_simdgroup;
  uint32_t simdgroups_per_threadgroup;
  // group_serial is different for every threadgroup run in the process
  // (across dispatches too): a prelude keeping per-thread state of its own
  // (CUDA's pending cp.async copies) knows by it when a thread is new.
  uint64_t group_serial;
};

// Trampoline runs one thread of a kernel: it unpacks the arguments (MSL:
// the buffers by [[buffer(n)]] index; CUDA: one pointer per parameter, to
// its value, as cuLaunchKernel's kernelParams) and the builtins from t, and
// calls the kernel.
typedef void (*Trampoline)(const ThreadCtx& t, void* const* buffers);

// Slot describes one [[buffer(n)]] parameter of a kernel.
struct Slot {
  int index;            // n of [[buffer(n)]]
  const char* param;    // parameter name
  int ref;              // 1: a reference (constant T&), 0: a pointer
  uint32_t elem_size;   // sizeof the pointee (the minimum buffer length)
  uint32_t elem_align;  // alignof the pointee
};

// KernelEntry is one kernel of a generated registry (an MSL [[host_name]],
// a CUDA extern "C" __global__ function).
struct KernelEntry {
  const char* name;  // host name
  const char* file;  // source file
  const char* func;  // C++ function, with template arguments
  Trampoline fn;
  int nslots;  // MSL: the [[buffer(n)]] slots a dispatch must bind; CUDA: 0
  const Slot* slots;
  int selftest;  // 1 for the emulator's own test kernels
  // max_threads is N of [[max_total_threads_per_threadgroup(N)]], 0 without
  // one. Such a kernel is laid out for exactly N threads per threadgroup (a
  // convention of golf's library): a dispatch of any other size fails.
  uint32_t max_threads;
};

// FieldLayout is one field of an argument struct of golf_args.h, as the
// C++ compiler lays it out.
struct FieldLayout {
  const char* type;
  const char* field;
  uint32_t offset;
  uint32_t size;
  uint32_t type_size;
};

// Lanes carries one collective operation's operands: bit l of mask is set
// for each lane l that takes part, in[l] points at its operand and out[l]
// at its result (both on the lane's own stack, valid until it resumes).
struct Lanes {
  uint32_t mask;
  const void* in[SimdWidth];
  void* out[SimdWidth];
};

// CollectiveFn computes the results of every taking-part lane at once.
typedef void (*CollectiveFn)(const Lanes& lanes);

// barrier is threadgroup_barrier: it returns once every thread of the
// threadgroup has reached it (the same call site). A thread that returned
// from the kernel, or threads at different barriers, fail the dispatch.
void barrier(const char* file, unsigned line);

// collective is a rendezvous of the live lanes of the caller's simdgroup:
// each lane deposits its operand, and once every lane that has not returned
// from the kernel has arrived at this call site, fn computes all results.
// Lanes at different collectives fail the dispatch.
void collective(CollectiveFn fn, const char* what, const char* file, unsigned line,
                const void* in, void* out);

// current is the context of the thread (fiber) running on this OS thread,
// nullptr outside a dispatch. A prelude whose builtins are globals (CUDA's
// threadIdx, blockIdx) reads them from here; the scheduler sets it before
// it resumes a fiber.
extern thread_local const ThreadCtx* current;

// fail stops the threadgroup with an error (which names the kernel and the
// threadgroup) and never returns. Shim functions call it on misuse.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// base_name is the file name of a path.
const char* base_name(const char* path);

}  // namespace golf_emu

#endif  // GOLF_EMU_RUNTIME_H
