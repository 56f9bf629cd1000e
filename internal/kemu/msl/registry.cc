// registry.cc: the C interface of the generated MSL kernel registry.
#include "registry.h"

#include "../runtime.h"

namespace golf_emu {
// The generated registry (zz_kernels_gen.cc).
extern const KernelEntry kKernels[];
extern const int kKernelCount;
extern const FieldLayout kArgLayouts[];
extern const int kArgLayoutCount;
}  // namespace golf_emu

extern "C" {

int golf_msl_kernel_count(void) { return golf_emu::kKernelCount; }

void golf_msl_kernel_get(int i, golf_msl_kernel_info* out) {
  const golf_emu::KernelEntry& k = golf_emu::kKernels[i];
  out->name = k.name;
  out->file = k.file;
  out->func = k.func;
  out->nslots = k.nslots;
  out->selftest = k.selftest;
  out->max_threads = k.max_threads;
  out->entry = &k;
}

void golf_msl_slot_get(int i, int s, golf_msl_slot_info* out) {
  const golf_emu::Slot& slot = golf_emu::kKernels[i].slots[s];
  out->index = slot.index;
  out->param = slot.param;
  out->ref = slot.ref;
  out->elem_size = slot.elem_size;
  out->elem_align = slot.elem_align;
}

int golf_msl_layout_count(void) { return golf_emu::kArgLayoutCount; }

void golf_msl_layout_get(int i, golf_msl_layout_info* out) {
  const golf_emu::FieldLayout& f = golf_emu::kArgLayouts[i];
  out->type = f.type;
  out->field = f.field;
  out->offset = f.offset;
  out->size = f.size;
  out->type_size = f.type_size;
}

}  // extern "C"
