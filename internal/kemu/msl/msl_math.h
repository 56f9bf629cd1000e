// msl_math.h: MSL's math functions for the emulator (namespace metal, and
// the same set in metal::precise and metal::fast).
//
// float functions call the C library (correctly rounded or within an ulp or
// two: an emulated kernel is not bit-identical to a GPU in exp, log, tanh,
// sin, cos, pow; tests compare those with tolerances). half and bfloat
// functions compute in float and round once. Vector versions apply the
// scalar function to each element. max/min/clamp on floats follow
// fmax/fmin: a NaN operand yields the other operand.
#ifndef GOLF_EMU_MSL_MATH_H
#define GOLF_EMU_MSL_MATH_H

#include "msl_vector.h"

namespace metal {

namespace detail {
template <class T, int N, class F>
inline vec<T, N> map(const vec<T, N>& v, F f) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = f(v[i]);
  return r;
}
template <class T, int N, class F>
inline vec<T, N> map2(const vec<T, N>& a, const vec<T, N>& b, F f) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = f(a[i], b[i]);
  return r;
}
}  // namespace detail

// Unary float functions: float via the C library, half/bfloat through float.
#define GOLF_EMU_UNARY(name, expr)                                                          \
  inline float name(float x) { return expr; }                                               \
  inline half name(half x) { return half(name(float(x))); }                                 \
  inline bfloat name(bfloat x) { return bfloat(name(float(x))); }                           \
  template <class T, int N, std::enable_if_t<golf_emu::is_float_v<T>, int> = 0>             \
  inline vec<T, N> name(const vec<T, N>& v) {                                               \
    return detail::map(v, [](T e) { return name(e); });                                     \
  }

GOLF_EMU_UNARY(exp, __builtin_expf(x))
GOLF_EMU_UNARY(exp2, __builtin_exp2f(x))
GOLF_EMU_UNARY(exp10, __builtin_powf(10.0f, x))
GOLF_EMU_UNARY(log, __builtin_logf(x))
GOLF_EMU_UNARY(log2, __builtin_log2f(x))
GOLF_EMU_UNARY(log10, __builtin_log10f(x))
GOLF_EMU_UNARY(sqrt, __builtin_sqrtf(x))
GOLF_EMU_UNARY(rsqrt, 1.0f / __builtin_sqrtf(x))
GOLF_EMU_UNARY(tanh, __builtin_tanhf(x))
GOLF_EMU_UNARY(sinh, __builtin_sinhf(x))
GOLF_EMU_UNARY(cosh, __builtin_coshf(x))
GOLF_EMU_UNARY(sin, __builtin_sinf(x))
GOLF_EMU_UNARY(cos, __builtin_cosf(x))
GOLF_EMU_UNARY(tan, __builtin_tanf(x))
GOLF_EMU_UNARY(asin, __builtin_asinf(x))
GOLF_EMU_UNARY(acos, __builtin_acosf(x))
GOLF_EMU_UNARY(atan, __builtin_atanf(x))
GOLF_EMU_UNARY(floor, __builtin_floorf(x))
GOLF_EMU_UNARY(ceil, __builtin_ceilf(x))
GOLF_EMU_UNARY(round, __builtin_roundf(x))
GOLF_EMU_UNARY(rint, __builtin_rintf(x))
GOLF_EMU_UNARY(trunc, __builtin_truncf(x))
GOLF_EMU_UNARY(fabs, __builtin_fabsf(x))
GOLF_EMU_UNARY(fract, __builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f))
GOLF_EMU_UNARY(saturate, __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f))
GOLF_EMU_UNARY(sign, __builtin_isnan(x) ? 0.0f : (x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x)))
#undef GOLF_EMU_UNARY

// Binary float functions.
#define GOLF_EMU_BINARY(name, expr)                                                         \
  inline float name(float x, float y) { return expr; }                                      \
  inline half name(half x, half y) { return half(name(float(x), float(y))); }               \
  inline bfloat name(bfloat x, bfloat y) { return bfloat(name(float(x), float(y))); }       \
  template <class T, int N, std::enable_if_t<golf_emu::is_float_v<T>, int> = 0>             \
  inline vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b) {                           \
    return detail::map2(a, b, [](T x, T y) { return name(x, y); });                         \
  }                                                                                         \
  template <class T, int N, std::enable_if_t<golf_emu::is_float_v<T>, int> = 0>             \
  inline vec<T, N> name(const vec<T, N>& a, T y) {                                          \
    return detail::map(a, [y](T x) { return name(x, y); });                                 \
  }

GOLF_EMU_BINARY(pow, __builtin_powf(x, y))
GOLF_EMU_BINARY(powr, __builtin_powf(x, y))
GOLF_EMU_BINARY(fmax, __builtin_fmaxf(x, y))
GOLF_EMU_BINARY(fmin, __builtin_fminf(x, y))
GOLF_EMU_BINARY(fmod, __builtin_fmodf(x, y))
GOLF_EMU_BINARY(atan2, __builtin_atan2f(x, y))
GOLF_EMU_BINARY(copysign, __builtin_copysignf(x, y))
GOLF_EMU_BINARY(divide, x / y)
GOLF_EMU_BINARY(step, x < y ? 0.0f : 1.0f)
#undef GOLF_EMU_BINARY

// max, min, clamp: floats as fmax/fmin, integers exactly.
#define GOLF_EMU_MINMAX_FLOAT(T)                                              \
  inline T max(T x, T y) { return fmax(x, y); }                               \
  inline T min(T x, T y) { return fmin(x, y); }                               \
  inline T clamp(T x, T lo, T hi) { return fmin(fmax(x, lo), hi); }
GOLF_EMU_MINMAX_FLOAT(float)
GOLF_EMU_MINMAX_FLOAT(half)
GOLF_EMU_MINMAX_FLOAT(bfloat)
#undef GOLF_EMU_MINMAX_FLOAT

#define GOLF_EMU_MINMAX_INT(T)                                                \
  inline T max(T x, T y) { return x > y ? x : y; }                            \
  inline T min(T x, T y) { return x < y ? x : y; }                            \
  inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }            \
  inline T abs(T x) { return x < 0 ? T(-x) : x; }
GOLF_EMU_MINMAX_INT(int)
GOLF_EMU_MINMAX_INT(short)
GOLF_EMU_MINMAX_INT(char)
GOLF_EMU_MINMAX_INT(long)
#undef GOLF_EMU_MINMAX_INT

#define GOLF_EMU_MINMAX_UINT(T)                                               \
  inline T max(T x, T y) { return x > y ? x : y; }                            \
  inline T min(T x, T y) { return x < y ? x : y; }                            \
  inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }            \
  inline T abs(T x) { return x; }
GOLF_EMU_MINMAX_UINT(uint)
GOLF_EMU_MINMAX_UINT(ushort)
GOLF_EMU_MINMAX_UINT(uchar)
GOLF_EMU_MINMAX_UINT(ulong)
#undef GOLF_EMU_MINMAX_UINT

inline float abs(float x) { return fabs(x); }
inline half abs(half x) { return fabs(x); }
inline bfloat abs(bfloat x) { return fabs(x); }

template <class T, int N>
inline vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) {
  return detail::map2(a, b, [](T x, T y) { return max(x, y); });
}
template <class T, int N>
inline vec<T, N> max(const vec<T, N>& a, T b) {
  return detail::map(a, [b](T x) { return max(x, b); });
}
template <class T, int N>
inline vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) {
  return detail::map2(a, b, [](T x, T y) { return min(x, y); });
}
template <class T, int N>
inline vec<T, N> min(const vec<T, N>& a, T b) {
  return detail::map(a, [b](T x) { return min(x, b); });
}
template <class T, int N>
inline vec<T, N> clamp(const vec<T, N>& x, const vec<T, N>& lo, const vec<T, N>& hi) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = clamp(x[i], lo[i], hi[i]);
  return r;
}
template <class T, int N>
inline vec<T, N> clamp(const vec<T, N>& x, T lo, T hi) {
  return detail::map(x, [lo, hi](T e) { return clamp(e, lo, hi); });
}
template <class T, int N>
inline vec<T, N> abs(const vec<T, N>& a) {
  return detail::map(a, [](T x) { return abs(x); });
}

// fma is fused (one rounding) for float; half/bfloat round the float fma.
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline half fma(half a, half b, half c) { return half(fma(float(a), float(b), float(c))); }
inline bfloat fma(bfloat a, bfloat b, bfloat c) {
  return bfloat(fma(float(a), float(b), float(c)));
}
template <class T, int N>
inline vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = fma(a[i], b[i], c[i]);
  return r;
}

// mix(x, y, a) = x + (y − x)·a.
template <class T, std::enable_if_t<golf_emu::is_float_v<T>, int> = 0>
inline T mix(T x, T y, T a) {
  return T(x + (y - x) * a);
}
template <class T, int N>
inline vec<T, N> mix(const vec<T, N>& x, const vec<T, N>& y, const vec<T, N>& a) {
  return x + (y - x) * a;
}
template <class T, int N>
inline vec<T, N> mix(const vec<T, N>& x, const vec<T, N>& y, T a) {
  return x + (y - x) * a;
}

// Classification.
inline bool isnan(float x) { return __builtin_isnan(x); }
inline bool isinf(float x) { return __builtin_isinf(x); }
inline bool isfinite(float x) { return __builtin_isfinite(x); }
inline bool signbit(float x) { return __builtin_signbit(x); }
#define GOLF_EMU_CLASSIFY(name)                                                  \
  inline bool name(half x) { return name(float(x)); }                           \
  inline bool name(bfloat x) { return name(float(x)); }                         \
  template <class T, int N>                                                      \
  inline vec<bool, N> name(const vec<T, N>& v) {                                 \
    vec<bool, N> r;                                                              \
    for (int i = 0; i < N; i++) r[i] = name(v[i]);                               \
    return r;                                                                    \
  }
GOLF_EMU_CLASSIFY(isnan)
GOLF_EMU_CLASSIFY(isinf)
GOLF_EMU_CLASSIFY(isfinite)
GOLF_EMU_CLASSIFY(signbit)
#undef GOLF_EMU_CLASSIFY

// select(a, b, c) is c ? b : a, elementwise for vectors.
template <class T, std::enable_if_t<golf_emu::is_scalar_v<T>, int> = 0>
inline T select(T a, T b, bool c) {
  return c ? b : a;
}
template <class T, int N>
inline vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; i++) r[i] = c[i] ? b[i] : a[i];
  return r;
}

// all and any of bool vectors.
inline bool all(bool b) { return b; }
inline bool any(bool b) { return b; }
template <int N>
inline bool all(const vec<bool, N>& v) {
  for (int i = 0; i < N; i++)
    if (!v[i]) return false;
  return true;
}
template <int N>
inline bool any(const vec<bool, N>& v) {
  for (int i = 0; i < N; i++)
    if (v[i]) return true;
  return false;
}

// dot sums the products in element order.
template <class T, int N>
inline T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = T(a[0] * b[0]);
  for (int i = 1; i < N; i++) s = T(s + a[i] * b[i]);
  return s;
}

// Integer bit functions.
inline uint popcount(uint x) { return uint(__builtin_popcount(x)); }
inline uint clz(uint x) { return x == 0 ? 32u : uint(__builtin_clz(x)); }
inline uint ctz(uint x) { return x == 0 ? 32u : uint(__builtin_ctz(x)); }

// precise:: and fast:: name the same functions: the emulator has one
// accuracy (the C library's).
#define GOLF_EMU_MATH_NAMES                                                      \
  using metal::exp;                                                              \
  using metal::exp2;                                                             \
  using metal::exp10;                                                            \
  using metal::log;                                                              \
  using metal::log2;                                                             \
  using metal::log10;                                                            \
  using metal::sqrt;                                                             \
  using metal::rsqrt;                                                            \
  using metal::tanh;                                                             \
  using metal::sinh;                                                             \
  using metal::cosh;                                                             \
  using metal::sin;                                                              \
  using metal::cos;                                                              \
  using metal::tan;                                                              \
  using metal::asin;                                                             \
  using metal::acos;                                                             \
  using metal::atan;                                                             \
  using metal::atan2;                                                            \
  using metal::floor;                                                            \
  using metal::ceil;                                                             \
  using metal::round;                                                            \
  using metal::rint;                                                             \
  using metal::trunc;                                                            \
  using metal::fabs;                                                             \
  using metal::fract;                                                            \
  using metal::saturate;                                                         \
  using metal::sign;                                                             \
  using metal::pow;                                                              \
  using metal::powr;                                                             \
  using metal::fmax;                                                             \
  using metal::fmin;                                                             \
  using metal::fmod;                                                             \
  using metal::copysign;                                                         \
  using metal::divide;                                                           \
  using metal::max;                                                              \
  using metal::min;                                                              \
  using metal::clamp;                                                            \
  using metal::fma;                                                              \
  using metal::mix;                                                              \
  using metal::abs;
namespace precise {
GOLF_EMU_MATH_NAMES
}
namespace fast {
GOLF_EMU_MATH_NAMES
}
#undef GOLF_EMU_MATH_NAMES

}  // namespace metal

#endif  // GOLF_EMU_MSL_MATH_H
