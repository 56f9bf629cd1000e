// golf_reduce.h: the threadgroup-memory tree reductions of the portable
// kernels, written once.
//
// golf_tree_sum(scratch, tid, n) and golf_tree_max(scratch, tid, n) combine
// scratch[0..n), one value per thread written by thread tid before the
// call, into scratch[0], for any n from 1 to 1024 — not only powers of
// two. The tree is w = the next power of two ≥ n wide; at stride s (w/2,
// w/4, ..., 1) thread tid < s combines scratch[tid + s] into scratch[tid]
// only when tid + s < n, so no value is dropped or read twice when n is not
// a power of two (n = 192 at C = 192, say, where a tree over n/2, n/4, ...
// would lose elements). The order of the sums is fixed by n: the result is
// the same on every run.
//
// Every thread of the threadgroup must call it, with the same n (it holds
// barriers). scratch is a threadgroup float array of at least n elements,
// passed as a pointer whose address space the template deduces. On return
// scratch[0] holds the result, visible to every thread; the other elements
// are clobbered.
#ifndef GOLF_REDUCE_H
#define GOLF_REDUCE_H

#include <metal_stdlib>

template <typename P>
METAL_FUNC void golf_tree_sum(P scratch, uint tid, uint n) {
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  uint width = 1;
  while (width < n) {
    width <<= 1;
  }
  for (uint s = width / 2; s > 0; s >>= 1) {
    if (tid < s && tid + s < n) {
      scratch[tid] += scratch[tid + s];
    }
    metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  }
}

template <typename P>
METAL_FUNC void golf_tree_max(P scratch, uint tid, uint n) {
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  uint width = 1;
  while (width < n) {
    width <<= 1;
  }
  for (uint s = width / 2; s > 0; s >>= 1) {
    if (tid < s && tid + s < n) {
      scratch[tid] = metal::max(scratch[tid], scratch[tid + s]);
    }
    metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  }
}

#endif  // GOLF_REDUCE_H
