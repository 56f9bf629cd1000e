// kemu.h: the C interface of the kernel emulator's runtime (runtime.cc),
// for cgo (package kemu) and for the CUDA stand-in driver (package
// cudacpp), which build the same runtime.
#ifndef GOLF_KEMU_H
#define GOLF_KEMU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// golf_emu_region is memory a dispatch may write, compared by the race
// detector; label names it in an error ("buffer 0 (out)").
typedef struct {
  void* ptr;
  size_t len;
  const char* label;
} golf_emu_region;

const char* golf_emu_context_kind(void);

// golf_emu_dispatch runs the kernel entry (a const golf_emu::KernelEntry*
// of a generated registry) over groups[0]×groups[1]×groups[2] threadgroups
// (CUDA: blocks) of threads[0]×threads[1]×threads[2] threads, the
// trampoline getting buffers (MSL: buffers[n] bound at [[buffer(n)]];
// CUDA: one pointer per kernel parameter), on workers OS threads, the
// fibers of each threadgroup scheduled in order (schedule 0), in reverse (1)
// or at random (2, from seed). It returns 0, or 1 with a message in err.
int golf_emu_dispatch(const void* entry, const uint32_t* groups, const uint32_t* threads,
                      void* const* buffers, int nbuffers, int workers, int schedule, uint64_t seed,
                      char* err, size_t errlen);

// golf_emu_dispatch_race is golf_emu_dispatch under the race detector: the
// dispatch runs in order, then from the same inputs in reverse and in the
// random order of seed; every region must come out bit-identical. A
// difference is an error naming the kernel, the region, the byte and the
// schedule, then unit (the groups' name: "threadgroups", "blocks") and hint
// (what is likely missing). The regions end as the in-order run left them.
int golf_emu_dispatch_race(const void* entry, const uint32_t* groups, const uint32_t* threads,
                           void* const* buffers, int nbuffers, int workers, uint64_t seed,
                           const golf_emu_region* regions, int nregions, const char* unit,
                           const char* hint, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif  // GOLF_KEMU_H
