// registry.h: the C interface of the MSL kernel registry (the generated
// zz_kernels_gen.cc), for cgo.
#ifndef GOLF_MSL_REGISTRY_H
#define GOLF_MSL_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char* name;      // host name
  const char* file;      // source file
  const char* func;      // C++ function with template arguments
  int nslots;            // [[buffer(n)]] parameters
  int selftest;          // 1 for the emulator's own test kernels
  uint32_t max_threads;  // [[max_total_threads_per_threadgroup(N)]], 0 for none
  const void* entry;     // the golf_emu::KernelEntry, for golf_emu_dispatch
} golf_msl_kernel_info;

typedef struct {
  int index;            // n of [[buffer(n)]]
  const char* param;    // parameter name
  int ref;              // 1: constant T& (one T), 0: pointer
  uint32_t elem_size;   // sizeof(T)
  uint32_t elem_align;  // alignof(T)
} golf_msl_slot_info;

typedef struct {
  const char* type;
  const char* field;
  uint32_t offset;
  uint32_t size;
  uint32_t type_size;
} golf_msl_layout_info;

int golf_msl_kernel_count(void);
void golf_msl_kernel_get(int i, golf_msl_kernel_info* out);
void golf_msl_slot_get(int i, int slot, golf_msl_slot_info* out);
int golf_msl_layout_count(void);
void golf_msl_layout_get(int i, golf_msl_layout_info* out);

#ifdef __cplusplus
}
#endif

#endif  // GOLF_MSL_REGISTRY_H
