// msl_scalar.h: MSL's scalar types for the emulator: uint/ushort/uchar/ulong,
// half (IEEE binary16), bfloat (bfloat16), their conversions, as_type and
// numeric_limits.
//
// half and bfloat are 2-byte classes holding the bits. Arithmetic follows
// MSL's types: half op half is half, half op float is float, half op int is
// half; likewise for bfloat. Each half (bfloat) operation is computed in
// float and rounded once to half (bfloat): float's 24-bit significand is at
// least 2p+2 bits for both (p = 11, 8), so the float result rounded once is
// the correctly rounded half (bfloat) result of +, −, ×, ÷ and sqrt.
//
// Conversions from float round to nearest, ties to even, bit for bit as the
// Go backend (backend.F16Bits, backend.BF16Bits): NaN stays NaN, quiet, its
// sign kept. Widening to float is exact and implicit. Converting to bfloat
// is explicit only, as in MSL (static_cast<bfloat>(f), bfloat(f)); to half
// it is implicit.
#ifndef GOLF_EMU_MSL_SCALAR_H
#define GOLF_EMU_MSL_SCALAR_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;

namespace golf_emu {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f32_to_f16 rounds f to binary16 (round to nearest, ties to even). NaN:
// sign kept, quiet bit set, the top payload bits kept.
inline uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t exp = u & 0x7f800000u;
  const uint32_t coef = u & 0x007fffffu;
  if (exp == 0x7f800000u) {  // Inf or NaN
    const uint32_t quiet = coef != 0 ? 0x0200u : 0u;
    return uint16_t(sign | 0x7c00u | quiet | (coef >> 13));
  }
  const int32_t hexp = int32_t(exp >> 23) - 127 + 15;
  if (hexp >= 0x1f) return uint16_t(sign | 0x7c00u);  // overflow to Inf
  if (hexp <= 0) {                                     // subnormal or zero
    if (14 - hexp > 24) return uint16_t(sign);
    const uint32_t c = coef | 0x00800000u;
    uint32_t hc = c >> uint32_t(14 - hexp);
    const uint32_t round = 1u << uint32_t(13 - hexp);
    if ((c & round) != 0 && (c & (3u * round - 1u)) != 0) hc++;
    return uint16_t(sign | hc);
  }
  const uint32_t h = sign | (uint32_t(hexp) << 10) | (coef >> 13);
  const uint32_t round = 0x00001000u;
  if ((coef & round) != 0 && (coef & (3u * round - 1u)) != 0) return uint16_t(h + 1);
  return uint16_t(h);
}

// f16_to_f32 widens binary16 bits to float (exact; NaN gets the quiet bit).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h & 0x7c00u) >> 10;
  uint32_t coef = uint32_t(h & 0x03ffu) << 13;
  if (exp == 0x1f) {
    if (coef == 0) return f32_from_bits(sign | 0x7f800000u);
    return f32_from_bits(sign | 0x7fc00000u | coef);
  }
  if (exp == 0) {
    if (coef == 0) return f32_from_bits(sign);
    exp++;
    while ((coef & 0x7f800000u) == 0) {
      coef <<= 1;
      exp--;
    }
    coef &= 0x007fffffu;
  }
  return f32_from_bits(sign | ((exp + (127 - 15)) << 23) | coef);
}

// f32_to_bf16 rounds f to bfloat16: bits = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
// NaN keeps its sign and gets the quiet bit.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float bf16_to_f32(uint16_t b) { return f32_from_bits(uint32_t(b) << 16); }

struct bits_tag {};

}  // namespace golf_emu

// half and bfloat are MSL scalar types: keywords, never identifiers. The
// classes are named __msl_half and __msl_bfloat, and half and bfloat are
// macros for their ::-qualified names, so a shader that declares a
// variable, parameter, field or function called half or bfloat (`uint half
// = 3;` is `uint ::__msl_half = 3;`) fails to compile here, as it does on
// Apple's compiler, instead of hiding the type.
struct __msl_bfloat;

// half is IEEE binary16.
struct __msl_half {
  uint16_t bits;

  __msl_half() = default;
  __msl_half(float f) : bits(golf_emu::f32_to_f16(f)) {}
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  __msl_half(I i) : bits(golf_emu::f32_to_f16(float(i))) {}
  __msl_half(double) = delete;  // MSL has no double: write 0.5f, not 0.5
  explicit __msl_half(__msl_bfloat b);
  constexpr __msl_half(golf_emu::bits_tag, uint16_t b) : bits(b) {}

  operator float() const { return golf_emu::f16_to_f32(bits); }
  __msl_half operator-() const { return __msl_half(golf_emu::bits_tag{}, uint16_t(bits ^ 0x8000u)); }
  __msl_half operator+() const { return *this; }
};

// bfloat is bfloat16, the top half of a binary32. MSL converts nothing to
// bfloat implicitly (Apple's compiler: "cannot initialize a variable of
// type 'bfloat' with an rvalue of type 'float'"), so every constructor from
// a number is explicit: bfloat b = f; out[i] = f; return f; are compile
// errors, static_cast<bfloat>(f), bfloat(f) and (bfloat)f are not. bfloat
// widens to float implicitly.
struct __msl_bfloat {
  uint16_t bits;

  __msl_bfloat() = default;
  explicit __msl_bfloat(float f) : bits(golf_emu::f32_to_bf16(f)) {}
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  explicit __msl_bfloat(I i) : bits(golf_emu::f32_to_bf16(float(i))) {}
  explicit __msl_bfloat(double) = delete;  // MSL has no double: write 0.5f, not 0.5
  explicit __msl_bfloat(__msl_half h) : bits(golf_emu::f32_to_bf16(float(h))) {}
  constexpr __msl_bfloat(golf_emu::bits_tag, uint16_t b) : bits(b) {}

  operator float() const { return golf_emu::bf16_to_f32(bits); }
  __msl_bfloat operator-() const { return __msl_bfloat(golf_emu::bits_tag{}, uint16_t(bits ^ 0x8000u)); }
  __msl_bfloat operator+() const { return *this; }
};

inline __msl_half::__msl_half(__msl_bfloat b) : bits(golf_emu::f32_to_f16(float(b))) {}

#define half ::__msl_half
#define bfloat ::__msl_bfloat

static_assert(sizeof(half) == 2 && alignof(half) == 2, "half must be 2 bytes");
static_assert(sizeof(bfloat) == 2 && alignof(bfloat) == 2, "bfloat must be 2 bytes");
static_assert(std::is_trivially_copyable_v<half> && std::is_trivially_copyable_v<bfloat>,
              "half and bfloat must be trivially copyable");

namespace golf_emu {

template <class T>
struct is_half_like : std::false_type {};
template <>
struct is_half_like<half> : std::true_type {};
template <>
struct is_half_like<bfloat> : std::true_type {};

// is_scalar: the element types MSL vectors and math accept.
template <class T>
inline constexpr bool is_scalar_v = std::is_arithmetic_v<T> || is_half_like<T>::value;

template <class T>
inline constexpr bool is_float_v =
    std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat>;

}  // namespace golf_emu

// Arithmetic of half and bfloat (H): H op H -> H, H op integer -> H,
// H op float -> float. Mixing half with bfloat, or either with double, does
// not compile (as in MSL).
#define GOLF_EMU_HALF_OPS(H)                                                              \
  inline H operator+(H a, H b) { return H(float(a) + float(b)); }                         \
  inline H operator-(H a, H b) { return H(float(a) - float(b)); }                         \
  inline H operator*(H a, H b) { return H(float(a) * float(b)); }                         \
  inline H operator/(H a, H b) { return H(float(a) / float(b)); }                         \
  inline float operator+(H a, float b) { return float(a) + b; }                           \
  inline float operator-(H a, float b) { return float(a) - b; }                           \
  inline float operator*(H a, float b) { return float(a) * b; }                           \
  inline float operator/(H a, float b) { return float(a) / b; }                           \
  inline float operator+(float a, H b) { return a + float(b); }                           \
  inline float operator-(float a, H b) { return a - float(b); }                           \
  inline float operator*(float a, H b) { return a * float(b); }                           \
  inline float operator/(float a, H b) { return a / float(b); }                           \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline H operator+(H a, I b) { return a + H(b); }                                       \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline H operator-(H a, I b) { return a - H(b); }                                       \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline H operator*(H a, I b) { return a * H(b); }                                       \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline H operator/(H a, I b) { return a / H(b); }                                       \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline H operator+(I a, H b) { return H(a) + b; }                                       \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline H operator-(I a, H b) { return H(a) - b; }                                       \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline H operator*(I a, H b) { return H(a) * b; }                                       \
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>                    \
  inline H operator/(I a, H b) { return H(a) / b; }                                       \
  template <class U, std::enable_if_t<golf_emu::is_scalar_v<U>, int> = 0>                 \
  inline H& operator+=(H& a, U b) { return a = H(a + b); }                                \
  template <class U, std::enable_if_t<golf_emu::is_scalar_v<U>, int> = 0>                 \
  inline H& operator-=(H& a, U b) { return a = H(a - b); }                                \
  template <class U, std::enable_if_t<golf_emu::is_scalar_v<U>, int> = 0>                 \
  inline H& operator*=(H& a, U b) { return a = H(a * b); }                                \
  template <class U, std::enable_if_t<golf_emu::is_scalar_v<U>, int> = 0>                 \
  inline H& operator/=(H& a, U b) { return a = H(a / b); }                                \
  inline bool operator==(H a, H b) { return float(a) == float(b); }                       \
  inline bool operator!=(H a, H b) { return float(a) != float(b); }                       \
  inline bool operator<(H a, H b) { return float(a) < float(b); }                         \
  inline bool operator>(H a, H b) { return float(a) > float(b); }                         \
  inline bool operator<=(H a, H b) { return float(a) <= float(b); }                       \
  inline bool operator>=(H a, H b) { return float(a) >= float(b); }                       \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator==(H a, U b) { return float(a) == float(b); }                       \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator!=(H a, U b) { return float(a) != float(b); }                       \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator<(H a, U b) { return float(a) < float(b); }                         \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator>(H a, U b) { return float(a) > float(b); }                         \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator<=(H a, U b) { return float(a) <= float(b); }                       \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator>=(H a, U b) { return float(a) >= float(b); }                       \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator==(U a, H b) { return float(a) == float(b); }                       \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator!=(U a, H b) { return float(a) != float(b); }                       \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator<(U a, H b) { return float(a) < float(b); }                         \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator>(U a, H b) { return float(a) > float(b); }                         \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator<=(U a, H b) { return float(a) <= float(b); }                       \
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>                  \
  inline bool operator>=(U a, H b) { return float(a) >= float(b); }

GOLF_EMU_HALF_OPS(half)
GOLF_EMU_HALF_OPS(bfloat)
#undef GOLF_EMU_HALF_OPS

#define GOLF_EMU_NO_MIX(op)                  \
  void operator op(half, bfloat) = delete; \
  void operator op(bfloat, half) = delete;
GOLF_EMU_NO_MIX(+)
GOLF_EMU_NO_MIX(-)
GOLF_EMU_NO_MIX(*)
GOLF_EMU_NO_MIX(/)
GOLF_EMU_NO_MIX(<)
GOLF_EMU_NO_MIX(>)
GOLF_EMU_NO_MIX(<=)
GOLF_EMU_NO_MIX(>=)
GOLF_EMU_NO_MIX(==)
GOLF_EMU_NO_MIX(!=)
#undef GOLF_EMU_NO_MIX

// Half literals: 1.5h (MSL's suffix). bfloat has no literal suffix in MSL.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wuser-defined-literals"
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wliteral-suffix"
#endif
inline half operator""h(long double v) { return half(static_cast<float>(v)); }
inline half operator""h(unsigned long long v) { return half(static_cast<float>(v)); }
#if defined(__clang__)
#pragma clang diagnostic pop
#else
#pragma GCC diagnostic pop
#endif

namespace metal {

// as_type reinterprets the bits of x as To (same size).
template <class To, class From>
inline To as_type(const From& x) {
  static_assert(sizeof(To) == sizeof(From), "as_type: types differ in size");
  To y;
  std::memcpy(static_cast<void*>(&y), static_cast<const void*>(&x), sizeof(To));
  return y;
}

// numeric_limits: std's for the built-in types, IEEE values for half and
// bfloat.
template <class T>
struct numeric_limits : std::numeric_limits<T> {};

template <class H, uint16_t Max, uint16_t MinNormal, uint16_t Eps, uint16_t Denorm, int Digits>
struct half_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = Digits;
  static constexpr H max() { return H(golf_emu::bits_tag{}, Max); }
  static constexpr H lowest() { return H(golf_emu::bits_tag{}, uint16_t(Max | 0x8000u)); }
  static constexpr H min() { return H(golf_emu::bits_tag{}, MinNormal); }
  static constexpr H epsilon() { return H(golf_emu::bits_tag{}, Eps); }
  static constexpr H denorm_min() { return H(golf_emu::bits_tag{}, Denorm); }
};

template <>
struct numeric_limits<half> : half_limits<half, 0x7bff, 0x0400, 0x1400, 0x0001, 11> {
  static constexpr half infinity() { return half(golf_emu::bits_tag{}, 0x7c00); }
  static constexpr half quiet_NaN() { return half(golf_emu::bits_tag{}, 0x7e00); }
};

template <>
struct numeric_limits<bfloat> : half_limits<bfloat, 0x7f7f, 0x0080, 0x3c00, 0x0001, 8> {
  static constexpr bfloat infinity() { return bfloat(golf_emu::bits_tag{}, 0x7f80); }
  static constexpr bfloat quiet_NaN() { return bfloat(golf_emu::bits_tag{}, 0x7fc0); }
};

}  // namespace metal

#endif  // GOLF_EMU_MSL_SCALAR_H
