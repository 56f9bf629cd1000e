// msl_atomic.h: MSL's atomics for the emulator: atomic_int, atomic_uint,
// atomic_bool, atomic_float (metal::atomic<T>, the size and layout of T) and
// the atomic_*_explicit functions.
//
// Threadgroups of one dispatch run concurrently on several OS threads, so
// device-memory atomics are real CPU atomics (GCC __atomic builtins,
// sequentially consistent whatever order is asked: MSL offers
// memory_order_relaxed, and a stronger order is a correct implementation of
// it). atomic_float's fetch_add is a compare-and-swap loop.
#ifndef GOLF_EMU_MSL_ATOMIC_H
#define GOLF_EMU_MSL_ATOMIC_H

#include "msl_scalar.h"

namespace metal {

enum memory_order {
  memory_order_relaxed = 0,
  memory_order_acquire = 2,
  memory_order_release = 3,
  memory_order_acq_rel = 4,
  memory_order_seq_cst = 5,
};

// atomic<T> has T's size and alignment, so a buffer of T can be bound to a
// device atomic<T>* parameter.
template <class T>
struct atomic {
  static_assert(sizeof(T) == 4, "atomic: MSL atomics are 32-bit (int, uint, float) or bool");
  T v_;
};
template <>
struct atomic<bool> {
  bool v_;
};

typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;

namespace detail {
template <class T>
struct nodeduce {
  typedef T type;
};
}  // namespace detail

template <class T>
inline void atomic_store_explicit(volatile atomic<T>* obj, typename detail::nodeduce<T>::type desired,
                                  memory_order) {
  __atomic_store(&obj->v_, &desired, __ATOMIC_SEQ_CST);
}

template <class T>
inline T atomic_load_explicit(volatile atomic<T>* obj, memory_order) {
  T v;
  __atomic_load(&obj->v_, &v, __ATOMIC_SEQ_CST);
  return v;
}

template <class T>
inline T atomic_exchange_explicit(volatile atomic<T>* obj, typename detail::nodeduce<T>::type desired,
                                  memory_order) {
  T old;
  __atomic_exchange(&obj->v_, &desired, &old, __ATOMIC_SEQ_CST);
  return old;
}

template <class T>
inline bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* obj, T* expected,
                                                  typename detail::nodeduce<T>::type desired,
                                                  memory_order, memory_order) {
  return __atomic_compare_exchange(&obj->v_, expected, &desired, false, __ATOMIC_SEQ_CST,
                                   __ATOMIC_SEQ_CST);
}

// Integer read-modify-write operations; each returns the old value.
#define GOLF_EMU_ATOMIC_RMW(name, builtin)                                                   \
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>                      \
  inline T name(volatile atomic<T>* obj, typename detail::nodeduce<T>::type v, memory_order) { \
    return builtin(&obj->v_, v, __ATOMIC_SEQ_CST);                                           \
  }
GOLF_EMU_ATOMIC_RMW(atomic_fetch_add_explicit, __atomic_fetch_add)
GOLF_EMU_ATOMIC_RMW(atomic_fetch_sub_explicit, __atomic_fetch_sub)
GOLF_EMU_ATOMIC_RMW(atomic_fetch_and_explicit, __atomic_fetch_and)
GOLF_EMU_ATOMIC_RMW(atomic_fetch_or_explicit, __atomic_fetch_or)
GOLF_EMU_ATOMIC_RMW(atomic_fetch_xor_explicit, __atomic_fetch_xor)
#undef GOLF_EMU_ATOMIC_RMW

#define GOLF_EMU_ATOMIC_MINMAX(name, better)                                                 \
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>                      \
  inline T name(volatile atomic<T>* obj, typename detail::nodeduce<T>::type v, memory_order) { \
    T old;                                                                                   \
    __atomic_load(&obj->v_, &old, __ATOMIC_SEQ_CST);                                         \
    while (better(v, old) &&                                                                 \
           !__atomic_compare_exchange(&obj->v_, &old, &v, false, __ATOMIC_SEQ_CST,           \
                                      __ATOMIC_SEQ_CST)) {                                   \
    }                                                                                        \
    return old;                                                                              \
  }
#define GOLF_EMU_GREATER(a, b) ((a) > (b))
#define GOLF_EMU_LESS(a, b) ((a) < (b))
GOLF_EMU_ATOMIC_MINMAX(atomic_fetch_max_explicit, GOLF_EMU_GREATER)
GOLF_EMU_ATOMIC_MINMAX(atomic_fetch_min_explicit, GOLF_EMU_LESS)
#undef GOLF_EMU_GREATER
#undef GOLF_EMU_LESS
#undef GOLF_EMU_ATOMIC_MINMAX

// atomic_float: add and subtract by compare-and-swap.
inline float atomic_fetch_add_explicit(volatile atomic<float>* obj, float v, memory_order) {
  float old;
  __atomic_load(&obj->v_, &old, __ATOMIC_SEQ_CST);
  float sum = old + v;
  while (!__atomic_compare_exchange(&obj->v_, &old, &sum, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
    sum = old + v;
  }
  return old;
}
inline float atomic_fetch_sub_explicit(volatile atomic<float>* obj, float v, memory_order o) {
  return atomic_fetch_add_explicit(obj, -v, o);
}

}  // namespace metal

#endif  // GOLF_EMU_MSL_ATOMIC_H
