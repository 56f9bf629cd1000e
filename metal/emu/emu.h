// emu.h: the C interface of the emulator, for cgo.
#ifndef GOLF_EMU_H
#define GOLF_EMU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char* name;  // host name
  const char* file;  // source file
  const char* func;  // C++ function with template arguments
  int nslots;        // [[buffer(n)]] parameters
  int selftest;      // 1 for the emulator's own test kernels
  uint32_t max_threads;  // [[max_total_threads_per_threadgroup(N)]], 0 for none
} golf_emu_kernel_info;

typedef struct {
  int index;            // n of [[buffer(n)]]
  const char* param;    // parameter name
  int ref;              // 1: constant T& (one T), 0: pointer
  uint32_t elem_size;   // sizeof(T)
  uint32_t elem_align;  // alignof(T)
} golf_emu_slot_info;

typedef struct {
  const char* type;
  const char* field;
  uint32_t offset;
  uint32_t size;
  uint32_t type_size;
} golf_emu_layout_info;

int golf_emu_kernel_count(void);
void golf_emu_kernel_get(int i, golf_emu_kernel_info* out);
void golf_emu_slot_get(int i, int slot, golf_emu_slot_info* out);
int golf_emu_layout_count(void);
void golf_emu_layout_get(int i, golf_emu_layout_info* out);
const char* golf_emu_context_kind(void);

// golf_emu_dispatch runs kernel i over groups[0]×groups[1]×groups[2]
// threadgroups of threads[0]×threads[1]×threads[2] threads, buffers[n] bound
// at [[buffer(n)]], on workers OS threads, the fibers of each threadgroup
// scheduled in order (schedule 0), in reverse (1) or at random (2, from
// seed). It returns 0, or 1 with a message in err.
int golf_emu_dispatch(int kernel, const uint32_t* groups, const uint32_t* threads,
                      void* const* buffers, int nbuffers, int workers, int schedule, uint64_t seed,
                      char* err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif  // GOLF_EMU_H
