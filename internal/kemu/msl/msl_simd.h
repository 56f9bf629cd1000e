// msl_simd.h: barriers, simdgroup functions and simdgroup_matrix for the
// emulator, built on the runtime's two primitives (runtime.h): barrier, and
// collective (a rendezvous of the live lanes of a simdgroup).
//
// Lanes. lane = thread_index_in_threadgroup % 32 and simdgroup =
// thread_index_in_threadgroup / 32; when the threadgroup size is not a
// multiple of 32 the last simdgroup has fewer lanes. A simdgroup function
// takes part the lanes of the simdgroup that have not returned from the
// kernel (the active lanes); every one of them must call the same function
// at the same call site, or the dispatch fails ("divergent simdgroup").
// Lanes that do not exist or have returned do not contribute:
//   - simd_sum, simd_max, simd_min, simd_prefix_*_sum, simd_any, simd_all
//     reduce over the active lanes, in lane order: the sum is
//     ((v0 + v1) + v2) + ..., in the operand type;
//   - a shuffle or broadcast whose source lane is inactive or outside
//     0..31 returns the caller's own value (simd_shuffle_down leaves the top
//     delta lanes unchanged, simd_shuffle_up the bottom delta lanes, as
//     Apple documents);
//   - simd_broadcast_first returns the value of the lowest active lane.
// delta, mask and the broadcast lane must be the same on every lane (as MSL
// requires); the emulator checks that.
//
// simdgroup_matrix<T, 8, 8>. Every lane keeps a copy of the whole 8×8
// matrix, but each element belongs to one lane, as on Apple GPUs: lane l
// owns the two elements (row, col) and (row, col + 1) with q = l / 4,
// row = (q & 4) + (l / 2) % 4 and col = (q & 2)·2 + (l % 2)·2 (the layout
// MLX's Steel kernels address through thread_elements()). thread_elements()
// is a reference to the calling lane's two elements in its own copy.
// Load, store, multiply and multiply_accumulate are collectives that need
// all 32 lanes of the simdgroup, with the same arguments on every lane.
// Their operands are assembled element by element from the owning lanes'
// copies (so a value a lane wrote through thread_elements() is what the
// next product or store sees, and an element written by another lane than
// its owner is not); a load's or product's result is computed once and
// copied to every lane. Products accumulate in float:
// d[i][j] = Td(((c[i][j] + a[i][0]·b[0][j]) + a[i][1]·b[1][j]) + ...),
// each product and sum rounded to float, one rounding to the type of d.
// make_filled_simdgroup_matrix(v) with v differing between lanes gives
// each element its owner's v, as the hardware does.
#ifndef GOLF_EMU_MSL_SIMD_H
#define GOLF_EMU_MSL_SIMD_H

#include "msl_math.h"
#include "../runtime.h"

namespace metal {

// mem_flags selects the memory a barrier orders; the emulator orders all
// memory at every barrier.
enum class mem_flags : uint {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint(a) | uint(b)); }

// threadgroup_barrier returns once every thread of the threadgroup reached
// this call site.
inline void threadgroup_barrier(mem_flags, const char* file = __builtin_FILE(),
                                unsigned line = __builtin_LINE()) {
  golf_emu::barrier(file, line);
}

namespace detail {
inline void noop_fn(const golf_emu::Lanes&) {}

template <class T>
inline const T& in(const golf_emu::Lanes& L, uint l) {
  return *static_cast<const T*>(L.in[l]);
}
template <class T>
inline T& out(const golf_emu::Lanes& L, uint l) {
  return *static_cast<T*>(L.out[l]);
}
inline bool has(const golf_emu::Lanes& L, uint l) { return l < 32 && ((L.mask >> l) & 1u) != 0; }

template <class T>
inline T add(const T& a, const T& b) {
  return T(a + b);
}
template <class T>
inline T maxv(const T& a, const T& b) {
  return max(a, b);
}
template <class T>
inline T minv(const T& a, const T& b) {
  return min(a, b);
}

template <class T, T (*Op)(const T&, const T&)>
inline void reduce_fn(const golf_emu::Lanes& L) {
  bool first = true;
  T acc{};
  for (uint l = 0; l < 32; l++) {
    if (!has(L, l)) continue;
    acc = first ? in<T>(L, l) : Op(acc, in<T>(L, l));
    first = false;
  }
  for (uint l = 0; l < 32; l++)
    if (has(L, l)) out<T>(L, l) = acc;
}

template <class T, bool Inclusive>
inline void prefix_fn(const golf_emu::Lanes& L) {
  bool first = true;
  T acc{};
  for (uint l = 0; l < 32; l++) {
    if (!has(L, l)) continue;
    const T v = in<T>(L, l);
    if (!Inclusive) out<T>(L, l) = first ? T(0) : acc;
    acc = first ? v : T(acc + v);
    first = false;
    if (Inclusive) out<T>(L, l) = acc;
  }
}

// A shuffle operand: the value and the lane index or offset.
template <class T>
struct shuffle_arg {
  T value;
  uint k;
};

enum shuffle_kind { kShuffle, kDown, kUp, kXor, kBroadcast };

inline const char* shuffle_name(shuffle_kind kind) {
  switch (kind) {
    case kShuffle:
      return "simd_shuffle";
    case kDown:
      return "simd_shuffle_down";
    case kUp:
      return "simd_shuffle_up";
    case kXor:
      return "simd_shuffle_xor";
    case kBroadcast:
      return "simd_broadcast";
  }
  return "?";
}

template <class T, shuffle_kind Kind>
inline void shuffle_fn(const golf_emu::Lanes& L) {
  uint first = 32;
  for (uint l = 0; l < 32; l++) {
    if (!has(L, l)) continue;
    const uint k = in<shuffle_arg<T>>(L, l).k;
    if (first == 32) {
      first = l;
    } else if (Kind != kShuffle && k != in<shuffle_arg<T>>(L, first).k) {
      golf_emu::fail("%s: lane %u passes %u but lane %u passes %u; the argument must be the same on every lane",
                     shuffle_name(Kind), l, k, first, in<shuffle_arg<T>>(L, first).k);
    }
  }
  for (uint l = 0; l < 32; l++) {
    if (!has(L, l)) continue;
    const shuffle_arg<T>& a = in<shuffle_arg<T>>(L, l);
    long src = 0;
    switch (Kind) {
      case kShuffle:
      case kBroadcast:
        src = long(a.k);
        break;
      case kDown:
        src = long(l) + long(a.k);
        break;
      case kUp:
        src = long(l) - long(a.k);
        break;
      case kXor:
        src = long(l ^ a.k);
        break;
    }
    const bool ok = src >= 0 && src < 32 && has(L, uint(src));
    out<T>(L, l) = ok ? in<shuffle_arg<T>>(L, uint(src)).value : a.value;
  }
}

template <class T>
inline void broadcast_first_fn(const golf_emu::Lanes& L) {
  uint first = 32;
  for (uint l = 0; l < 32 && first == 32; l++)
    if (has(L, l)) first = l;
  for (uint l = 0; l < 32; l++)
    if (has(L, l)) out<T>(L, l) = in<T>(L, first);
}

template <bool All>
inline void vote_fn(const golf_emu::Lanes& L) {
  bool r = All;
  for (uint l = 0; l < 32; l++) {
    if (!has(L, l)) continue;
    if (All) r = r && in<bool>(L, l);
    else r = r || in<bool>(L, l);
  }
  for (uint l = 0; l < 32; l++)
    if (has(L, l)) out<bool>(L, l) = r;
}

inline void is_first_fn(const golf_emu::Lanes& L) {
  bool seen = false;
  for (uint l = 0; l < 32; l++) {
    if (!has(L, l)) continue;
    out<bool>(L, l) = !seen;
    seen = true;
  }
}

template <class T, class U>
inline T run(golf_emu::CollectiveFn fn, const char* what, const char* file, unsigned line,
             const U& operand) {
  T result{};
  golf_emu::collective(fn, what, file, line, &operand, &result);
  return result;
}
}  // namespace detail

#define GOLF_EMU_SITE const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()

namespace detail {
// The SIMD-group permutes and reductions exist, as in Apple's
// metal_simdgroup, for scalars and 2-, 3-, 4-vectors of char, uchar, short,
// ushort, int, uint, half and float: not bfloat (Metal has no bfloat
// shuffle), bool, long or structs.
template <class T>
inline constexpr bool simd_scalar_v =
    std::is_same_v<T, char> || std::is_same_v<T, signed char> || std::is_same_v<T, uchar> ||
    std::is_same_v<T, short> || std::is_same_v<T, ushort> || std::is_same_v<T, int> ||
    std::is_same_v<T, uint> || std::is_same_v<T, half> || std::is_same_v<T, float>;
template <class T>
struct simd_type : std::bool_constant<simd_scalar_v<T>> {};
template <class U, int M>
struct simd_type<::vec<U, M>> : std::bool_constant<simd_scalar_v<U> && M >= 2 && M <= 4> {};
}  // namespace detail
#define GOLF_EMU_SIMD_TYPE(name)          \
  static_assert(detail::simd_type<T>::value, \
                name ": T must be a scalar or vector of char, uchar, short, ushort, int, uint, half or float")

// simdgroup_barrier waits for the active lanes of the simdgroup.
inline void simdgroup_barrier(mem_flags, GOLF_EMU_SITE) {
  const char dummy = 0;
  char out = 0;
  golf_emu::collective(detail::noop_fn, "simdgroup_barrier", file, line, &dummy, &out);
}

template <class T>
inline T simd_sum(T x, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_sum");
  return detail::run<T>(detail::reduce_fn<T, detail::add<T>>, "simd_sum", file, line, x);
}
template <class T>
inline T simd_max(T x, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_max");
  return detail::run<T>(detail::reduce_fn<T, detail::maxv<T>>, "simd_max", file, line, x);
}
template <class T>
inline T simd_min(T x, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_min");
  return detail::run<T>(detail::reduce_fn<T, detail::minv<T>>, "simd_min", file, line, x);
}
template <class T>
inline T simd_prefix_inclusive_sum(T x, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_prefix_inclusive_sum");
  return detail::run<T>(detail::prefix_fn<T, true>, "simd_prefix_inclusive_sum", file, line, x);
}
template <class T>
inline T simd_prefix_exclusive_sum(T x, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_prefix_exclusive_sum");
  return detail::run<T>(detail::prefix_fn<T, false>, "simd_prefix_exclusive_sum", file, line, x);
}
template <class T>
inline T simd_shuffle(T x, ushort lane, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_shuffle");
  return detail::run<T>(detail::shuffle_fn<T, detail::kShuffle>, "simd_shuffle", file, line,
                        detail::shuffle_arg<T>{x, lane});
}
template <class T>
inline T simd_shuffle_down(T x, ushort delta, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_shuffle_down");
  return detail::run<T>(detail::shuffle_fn<T, detail::kDown>, "simd_shuffle_down", file, line,
                        detail::shuffle_arg<T>{x, delta});
}
template <class T>
inline T simd_shuffle_up(T x, ushort delta, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_shuffle_up");
  return detail::run<T>(detail::shuffle_fn<T, detail::kUp>, "simd_shuffle_up", file, line,
                        detail::shuffle_arg<T>{x, delta});
}
template <class T>
inline T simd_shuffle_xor(T x, ushort mask, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_shuffle_xor");
  return detail::run<T>(detail::shuffle_fn<T, detail::kXor>, "simd_shuffle_xor", file, line,
                        detail::shuffle_arg<T>{x, mask});
}
template <class T>
inline T simd_broadcast(T x, ushort lane, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_broadcast");
  return detail::run<T>(detail::shuffle_fn<T, detail::kBroadcast>, "simd_broadcast", file, line,
                        detail::shuffle_arg<T>{x, lane});
}
template <class T>
inline T simd_broadcast_first(T x, GOLF_EMU_SITE) {
  GOLF_EMU_SIMD_TYPE("simd_broadcast_first");
  return detail::run<T>(detail::broadcast_first_fn<T>, "simd_broadcast_first", file, line, x);
}
inline bool simd_any(bool x, GOLF_EMU_SITE) {
  return detail::run<bool>(detail::vote_fn<false>, "simd_any", file, line, x);
}
inline bool simd_all(bool x, GOLF_EMU_SITE) {
  return detail::run<bool>(detail::vote_fn<true>, "simd_all", file, line, x);
}
inline bool simd_is_first(GOLF_EMU_SITE) {
  const bool dummy = false;
  return detail::run<bool>(detail::is_first_fn, "simd_is_first", file, line, dummy);
}

// simdgroup_matrix<T, Cols, Rows>: an 8×8 matrix owned by a simdgroup.
template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix: only 8x8 is supported");
  static_assert(golf_emu::is_float_v<T>, "simdgroup_matrix: T must be float, half or bfloat");
  // p[row][col / 2][col % 2] is element (row, col): stored as the pairs
  // thread_elements() hands out, so that its reference is a real vec.
  vec<T, 2> p[Rows][Cols / 2];

  T& at(int r, int c) { return p[r][c >> 1][c & 1]; }
  const T& at(int r, int c) const { return p[r][c >> 1][c & 1]; }

  simdgroup_matrix() = default;
  // simdgroup_matrix(d) is the diagonal matrix d·I.
  explicit simdgroup_matrix(T d) {
    for (int r = 0; r < Rows; r++)
      for (int c = 0; c < Cols; c++) at(r, c) = r == c ? d : T(0);
  }

  // thread_elements is the calling lane's two elements (see above).
  vec<T, 2>& thread_elements() {
    const uint l = golf_emu::current->thread_index_in_simdgroup;
    const uint q = l / 4;
    return p[(q & 4) + (l / 2) % 4][(q & 2) + l % 2];
  }
  const vec<T, 2>& thread_elements() const {
    return const_cast<simdgroup_matrix*>(this)->thread_elements();
  }
};

typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  for (int r = 0; r < Rows; r++)
    for (int c = 0; c < Cols; c++) m.at(r, c) = value;
  return m;
}

namespace detail {

inline void need_full_simdgroup(const golf_emu::Lanes& L, const char* what) {
  if (L.mask != 0xffffffffu)
    golf_emu::fail("%s needs all 32 lanes of the simdgroup, but only lanes with mask 0x%08x take part",
                   what, L.mask);
}

// owner is the lane that owns element (r, c) of a simdgroup_matrix, the
// inverse of thread_elements()' layout. With lane bits l4..l0: row =
// 4·l4 + 2·l2 + l1 and col / 2 = 2·l3 + l0.
inline uint owner(int r, int c) {
  const uint row = uint(r), pair = uint(c) >> 1;
  return ((row >> 2) & 1u) << 4 | ((pair >> 1) & 1u) << 3 | ((row >> 1) & 1u) << 2 | (row & 1u) << 1 |
         (pair & 1u);
}

// assembled is the matrix whose element (r, c) is element (r, c) of its
// owner's copy; copy_of(l) points at lane l's copy.
template <class M, class F>
inline M assembled(F copy_of) {
  M m;
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 8; c++) m.at(r, c) = copy_of(owner(r, c))->at(r, c);
  return m;
}

template <class T>
struct matrix_io {
  T* ptr;
  ulong elements_per_row;
  ulong origin_x, origin_y;
  bool transpose;
  void* m;  // the lane's simdgroup_matrix
};

template <class T>
inline void check_uniform_io(const golf_emu::Lanes& L, const char* what) {
  need_full_simdgroup(L, what);
  const matrix_io<T>& a = in<matrix_io<T>>(L, 0);
  for (uint l = 1; l < 32; l++) {
    const matrix_io<T>& b = in<matrix_io<T>>(L, l);
    if (b.ptr != a.ptr || b.elements_per_row != a.elements_per_row || b.origin_x != a.origin_x ||
        b.origin_y != a.origin_y || b.transpose != a.transpose)
      golf_emu::fail("%s: lane %u passes other arguments than lane 0 (pointer, elements_per_row, "
                     "matrix_origin and transpose_matrix must be the same on every lane)",
                     what, l);
  }
}

// Element (r, c) of the matrix is src[(origin.y + r)·epr + origin.x + c], or
// with transpose_matrix src[(origin.x + c)·epr + origin.y + r]: matrix_origin
// is given in the matrix's own (x = column, y = row) coordinates.
template <class T>
inline ulong matrix_offset(const matrix_io<T>& a, int r, int c) {
  if (a.transpose) return (a.origin_x + ulong(c)) * a.elements_per_row + a.origin_y + ulong(r);
  return (a.origin_y + ulong(r)) * a.elements_per_row + a.origin_x + ulong(c);
}

template <class T>
inline void load_fn(const golf_emu::Lanes& L) {
  check_uniform_io<T>(L, "simdgroup_load");
  const matrix_io<T>& a = in<matrix_io<T>>(L, 0);
  simdgroup_matrix<std::remove_const_t<T>, 8, 8> m;
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 8; c++) m.at(r, c) = a.ptr[matrix_offset(a, r, c)];
  for (uint l = 0; l < 32; l++)
    *static_cast<simdgroup_matrix<std::remove_const_t<T>, 8, 8>*>(in<matrix_io<T>>(L, l).m) = m;
}

template <class T>
inline void store_fn(const golf_emu::Lanes& L) {
  check_uniform_io<T>(L, "simdgroup_store");
  const matrix_io<T>& a = in<matrix_io<T>>(L, 0);
  using M = simdgroup_matrix<T, 8, 8>;
  const M m = assembled<M>([&](uint l) { return static_cast<const M*>(in<matrix_io<T>>(L, l).m); });
  for (int r = 0; r < 8; r++)
    for (int c = 0; c < 8; c++) a.ptr[matrix_offset(a, r, c)] = m.at(r, c);
}

template <class TD, class TA, class TB, class TC>
struct mma_arg {
  simdgroup_matrix<TD, 8, 8>* d;
  const simdgroup_matrix<TA, 8, 8>* a;
  const simdgroup_matrix<TB, 8, 8>* b;
  const simdgroup_matrix<TC, 8, 8>* c;  // nullptr: simdgroup_multiply
};

template <class TD, class TA, class TB, class TC>
inline void mma_fn(const golf_emu::Lanes& L) {
  using X = mma_arg<TD, TA, TB, TC>;
  const bool acc = in<X>(L, 0).c != nullptr;
  need_full_simdgroup(L, acc ? "simdgroup_multiply_accumulate" : "simdgroup_multiply");
  const auto a = assembled<simdgroup_matrix<TA, 8, 8>>([&](uint l) { return in<X>(L, l).a; });
  const auto b = assembled<simdgroup_matrix<TB, 8, 8>>([&](uint l) { return in<X>(L, l).b; });
  simdgroup_matrix<TC, 8, 8> c;
  if (acc) c = assembled<simdgroup_matrix<TC, 8, 8>>([&](uint l) { return in<X>(L, l).c; });
  simdgroup_matrix<TD, 8, 8> d;
  for (int i = 0; i < 8; i++) {
    for (int j = 0; j < 8; j++) {
      float s = acc ? float(c.at(i, j)) : 0.0f;
      for (int k = 0; k < 8; k++) s = s + float(a.at(i, k)) * float(b.at(k, j));
      d.at(i, j) = TD(s);
    }
  }
  for (uint l = 0; l < 32; l++) *in<X>(L, l).d = d;
}

}  // namespace detail

// simdgroup_load: d = the 8×8 matrix at src (device or threadgroup memory),
// rows elements_per_row apart, starting at matrix_origin (x = column,
// y = row), transposed when transpose_matrix.
template <class T, int C, int R, class U>
inline void simdgroup_load(simdgroup_matrix<T, C, R>& d, const U* src, ulong elements_per_row = C,
                           ulong2 matrix_origin = ulong2(0), bool transpose_matrix = false,
                           GOLF_EMU_SITE) {
  static_assert(std::is_same_v<std::remove_cv_t<U>, T>,
                "simdgroup_load: the source element type must be the matrix's");
  const detail::matrix_io<const T> a{src, elements_per_row, matrix_origin.x, matrix_origin.y,
                                     transpose_matrix, &d};
  char out = 0;
  golf_emu::collective(detail::load_fn<const T>, "simdgroup_load", file, line, &a, &out);
}

// simdgroup_store writes the 8×8 matrix a to dst (the layout of simdgroup_load).
template <class T, int C, int R>
inline void simdgroup_store(const simdgroup_matrix<T, C, R>& a, T* dst, ulong elements_per_row = C,
                            ulong2 matrix_origin = ulong2(0), bool transpose_matrix = false,
                            GOLF_EMU_SITE) {
  const detail::matrix_io<T> io{dst, elements_per_row, matrix_origin.x, matrix_origin.y,
                                transpose_matrix,
                                const_cast<void*>(static_cast<const void*>(&a))};
  char out = 0;
  golf_emu::collective(detail::store_fn<T>, "simdgroup_store", file, line, &io, &out);
}

// simdgroup_multiply_accumulate: d = a·b + c (d may be c).
template <class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d,
                                          const simdgroup_matrix<TA, 8, 8>& a,
                                          const simdgroup_matrix<TB, 8, 8>& b,
                                          const simdgroup_matrix<TC, 8, 8>& c, GOLF_EMU_SITE) {
  const detail::mma_arg<TD, TA, TB, TC> x{&d, &a, &b, &c};
  char out = 0;
  golf_emu::collective(detail::mma_fn<TD, TA, TB, TC>, "simdgroup_multiply_accumulate", file, line,
                       &x, &out);
}

// simdgroup_multiply: d = a·b.
template <class TD, class TA, class TB>
inline void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                               const simdgroup_matrix<TB, 8, 8>& b, GOLF_EMU_SITE) {
  const detail::mma_arg<TD, TA, TB, TD> x{&d, &a, &b, nullptr};
  char out = 0;
  golf_emu::collective(detail::mma_fn<TD, TA, TB, TD>, "simdgroup_multiply", file, line, &x, &out);
}

#undef GOLF_EMU_SIMD_TYPE
#undef GOLF_EMU_SITE

}  // namespace metal

namespace golf_emu {

// pointee_size and pointee_align describe the element type of a buffer
// parameter (the generated registry records them for the Go side checks).
template <class P>
constexpr uint32_t pointee_size() {
  return uint32_t(sizeof(std::remove_pointer_t<P>));
}
template <class P>
constexpr uint32_t pointee_align() {
  return uint32_t(alignof(std::remove_pointer_t<P>));
}

// builtin1 and builtin3 convert a builtin value to the type its kernel
// parameter declares (uint, ushort, uint2, uint3, ...). A scalar parameter
// of a 3-component builtin gets the x component.
template <class T>
inline T builtin1(uint32_t v) {
  static_assert(!is_vec<T>::value, "this builtin is a scalar");
  return T(v);
}

template <class T>
inline T builtin3(const uint32_t (&v)[3]) {
  if constexpr (is_vec<T>::value) {
    static_assert(T::size <= 3, "a position builtin has at most 3 components");
    if constexpr (T::size == 2) {
      return T(v[0], v[1]);
    } else {
      return T(v[0], v[1], v[2]);
    }
  } else {
    return T(v[0]);
  }
}

}  // namespace golf_emu

#endif  // GOLF_EMU_MSL_SIMD_H
