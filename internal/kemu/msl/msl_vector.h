// msl_vector.h: MSL's vector types vec<T, N> (float2, half4, uint3, bool2,
// ...) for the emulator.
//
// Layout as in MSL: N elements of T, a 3-vector padded to 4 elements, the
// alignment equal to the (padded) size. Components: .x .y .z .w, v[i], and
// the swizzles declared below (every ordered pair of distinct components,
// .xyz, .yzw and .zyx); a swizzle reads as a vector and can be assigned when
// its components are distinct. Operators work elementwise; a vector with a
// scalar applies the scalar to every element (the scalar is converted to
// the element type, as in MSL: implicitly, so a float or integer scalar
// does not combine with a bfloat vector, which takes static_cast<bfloat>(x)).
// Comparisons return bool vectors; use all() and any(). Conversions between
// element types are explicit: float4(h4), half2(f2). Unlike MSL,
// `auto s = v.xy;` does not compile here (a swizzle is a view): name the
// type, `float2 s = v.xy;`.
#ifndef GOLF_EMU_MSL_VECTOR_H
#define GOLF_EMU_MSL_VECTOR_H

#include "msl_scalar.h"

template <class T, int N>
struct vec;

namespace golf_emu {

// swizzle views the storage of a vector of NS elements as the vector R
// made of components I... . It lives in the vector's union.
template <class T, int NS, class R, int... I>
struct swizzle {
  T d[NS];

  swizzle() = default;
  // A swizzle is not a value: `auto s = v.xy;` would copy the view, so it
  // does not compile; write `float2 s = v.xy;`.
  swizzle(const swizzle&) = delete;

  operator R() const { return R(d[I]...); }

  swizzle& operator=(const R& r) {
    const R tmp = r;  // r may alias this vector's storage
    int k = 0;
    ((d[I] = tmp[k++]), ...);
    return *this;
  }
  swizzle& operator=(const swizzle& o) { return *this = R(o); }
  swizzle& operator+=(const R& r) { return *this = R(*this) + r; }
  swizzle& operator-=(const R& r) { return *this = R(*this) - r; }
  swizzle& operator*=(const R& r) { return *this = R(*this) * r; }
  swizzle& operator/=(const R& r) { return *this = R(*this) / r; }
};

template <class T, int N>
struct vec_storage;

#define GOLF_SWZ2(n, a, b) ::golf_emu::swizzle<T, NS, ::vec<T, 2>, a, b> n;
#define GOLF_SWZ3(n, a, b, c) ::golf_emu::swizzle<T, NS, ::vec<T, 3>, a, b, c> n;

template <class T>
struct alignas(2 * sizeof(T)) vec_storage<T, 2> {
  static constexpr int NS = 2;
  union {
    T v_[2];
    struct {
      T x, y;
    };
    GOLF_SWZ2(yx, 1, 0)
  };
};

template <class T>
struct alignas(4 * sizeof(T)) vec_storage<T, 3> {
  static constexpr int NS = 3;
  union {
    T v_[3];
    struct {
      T x, y, z;
    };
    GOLF_SWZ2(xy, 0, 1)
    GOLF_SWZ2(yx, 1, 0)
    GOLF_SWZ2(xz, 0, 2)
    GOLF_SWZ2(zx, 2, 0)
    GOLF_SWZ2(yz, 1, 2)
    GOLF_SWZ2(zy, 2, 1)
    GOLF_SWZ3(zyx, 2, 1, 0)
  };
};

template <class T>
struct alignas(4 * sizeof(T)) vec_storage<T, 4> {
  static constexpr int NS = 4;
  union {
    T v_[4];
    struct {
      T x, y, z, w;
    };
    GOLF_SWZ2(xy, 0, 1)
    GOLF_SWZ2(xz, 0, 2)
    GOLF_SWZ2(xw, 0, 3)
    GOLF_SWZ2(yx, 1, 0)
    GOLF_SWZ2(yz, 1, 2)
    GOLF_SWZ2(yw, 1, 3)
    GOLF_SWZ2(zx, 2, 0)
    GOLF_SWZ2(zy, 2, 1)
    GOLF_SWZ2(zw, 2, 3)
    GOLF_SWZ2(wx, 3, 0)
    GOLF_SWZ2(wy, 3, 1)
    GOLF_SWZ2(wz, 3, 2)
    GOLF_SWZ3(xyz, 0, 1, 2)
    GOLF_SWZ3(yzw, 1, 2, 3)
    GOLF_SWZ3(zyx, 2, 1, 0)
  };
};

#undef GOLF_SWZ2
#undef GOLF_SWZ3

// components: how many elements an argument of a vector constructor adds.
template <class A, class = void>
struct components {
  static constexpr int value = 1;
};
template <class U, int M>
struct components<::vec<U, M>> {
  static constexpr int value = M;
};
template <class U, int NS, class R, int... I>
struct components<swizzle<U, NS, R, I...>> {
  static constexpr int value = int(sizeof...(I));
};

template <class T>
struct is_vec : std::false_type {};
template <class U, int M>
struct is_vec<::vec<U, M>> : std::true_type {};

}  // namespace golf_emu

template <class T, int N>
struct vec : golf_emu::vec_storage<T, N> {
  static_assert(N >= 2 && N <= 4, "vec: N must be 2, 3 or 4");
  static_assert(golf_emu::is_scalar_v<T>, "vec: element type must be a scalar");
  using value_type = T;
  static constexpr int size = N;

  vec() = default;
  vec(const vec& o) {
    for (int i = 0; i < N; i++) this->v_[i] = o.v_[i];
  }
  vec& operator=(const vec& o) {
    for (int i = 0; i < N; i++) this->v_[i] = o.v_[i];
    return *this;
  }
  // vec(s) sets every element to s.
  vec(T s) {
    for (int i = 0; i < N; i++) this->v_[i] = s;
  }
  // vec(a, b, ...) concatenates scalars and vectors, N elements in all.
  template <class... A,
            std::enable_if_t<(sizeof...(A) >= 2) &&
                                 ((golf_emu::components<std::decay_t<A>>::value + ...) == N),
                             int> = 0>
  vec(const A&... a) {
    int k = 0;
    (put(k, a), ...);
  }
  // Conversion from another element type is explicit: float4(h4).
  template <class U, std::enable_if_t<!std::is_same_v<U, T>, int> = 0>
  explicit vec(const vec<U, N>& o) {
    for (int i = 0; i < N; i++) this->v_[i] = T(o.v_[i]);
  }

  T& operator[](int i) { return this->v_[i]; }
  const T& operator[](int i) const { return this->v_[i]; }

#define GOLF_EMU_VEC_BINOP(op)                                                   \
  friend vec operator op(const vec& a, const vec& b) {                           \
    vec r;                                                                       \
    for (int i = 0; i < N; i++) r.v_[i] = T(a.v_[i] op b.v_[i]);                 \
    return r;                                                                    \
  }                                                                              \
  friend vec operator op(const vec& a, T b) {                                    \
    vec r;                                                                       \
    for (int i = 0; i < N; i++) r.v_[i] = T(a.v_[i] op b);                       \
    return r;                                                                    \
  }                                                                              \
  friend vec operator op(T a, const vec& b) {                                    \
    vec r;                                                                       \
    for (int i = 0; i < N; i++) r.v_[i] = T(a op b.v_[i]);                       \
    return r;                                                                    \
  }                                                                              \
  vec& operator op##=(const vec& b) { return *this = *this op b; }               \
  vec& operator op##=(T b) { return *this = *this op b; }
  GOLF_EMU_VEC_BINOP(+)
  GOLF_EMU_VEC_BINOP(-)
  GOLF_EMU_VEC_BINOP(*)
  GOLF_EMU_VEC_BINOP(/)
  GOLF_EMU_VEC_BINOP(%)
  GOLF_EMU_VEC_BINOP(&)
  GOLF_EMU_VEC_BINOP(|)
  GOLF_EMU_VEC_BINOP(^)
  GOLF_EMU_VEC_BINOP(<<)
  GOLF_EMU_VEC_BINOP(>>)
#undef GOLF_EMU_VEC_BINOP

#define GOLF_EMU_VEC_CMP(op)                                                     \
  friend vec<bool, N> operator op(const vec& a, const vec& b) {                  \
    vec<bool, N> r;                                                              \
    for (int i = 0; i < N; i++) r.v_[i] = a.v_[i] op b.v_[i];                    \
    return r;                                                                    \
  }                                                                              \
  friend vec<bool, N> operator op(const vec& a, T b) {                           \
    vec<bool, N> r;                                                              \
    for (int i = 0; i < N; i++) r.v_[i] = a.v_[i] op b;                          \
    return r;                                                                    \
  }                                                                              \
  friend vec<bool, N> operator op(T a, const vec& b) {                           \
    vec<bool, N> r;                                                              \
    for (int i = 0; i < N; i++) r.v_[i] = a op b.v_[i];                          \
    return r;                                                                    \
  }
  GOLF_EMU_VEC_CMP(==)
  GOLF_EMU_VEC_CMP(!=)
  GOLF_EMU_VEC_CMP(<)
  GOLF_EMU_VEC_CMP(>)
  GOLF_EMU_VEC_CMP(<=)
  GOLF_EMU_VEC_CMP(>=)
#undef GOLF_EMU_VEC_CMP

  friend vec operator-(const vec& a) {
    vec r;
    for (int i = 0; i < N; i++) r.v_[i] = T(-a.v_[i]);
    return r;
  }
  friend vec operator+(const vec& a) { return a; }
  friend vec operator~(const vec& a) {
    vec r;
    for (int i = 0; i < N; i++) r.v_[i] = T(~a.v_[i]);
    return r;
  }
  friend vec<bool, N> operator!(const vec& a) {
    vec<bool, N> r;
    for (int i = 0; i < N; i++) r.v_[i] = !a.v_[i];
    return r;
  }

 private:
  template <class A>
  void put(int& k, const A& a) {
    if constexpr (golf_emu::is_vec<A>::value) {
      for (int i = 0; i < A::size; i++) this->v_[k++] = T(a[i]);
    } else if constexpr (golf_emu::components<A>::value > 1) {
      put(k, static_cast<vec<T, golf_emu::components<A>::value>>(a));
    } else {
      this->v_[k++] = T(a);
    }
  }
};

static_assert(sizeof(vec<float, 3>) == 16 && alignof(vec<float, 3>) == 16, "float3 layout");
static_assert(sizeof(vec<half, 2>) == 4 && alignof(vec<half, 2>) == 4, "half2 layout");

#define GOLF_EMU_VEC_TYPES(T, name) \
  typedef vec<T, 2> name##2;        \
  typedef vec<T, 3> name##3;        \
  typedef vec<T, 4> name##4;
GOLF_EMU_VEC_TYPES(float, float)
GOLF_EMU_VEC_TYPES(half, half)
GOLF_EMU_VEC_TYPES(bfloat, bfloat)
GOLF_EMU_VEC_TYPES(int, int)
GOLF_EMU_VEC_TYPES(uint, uint)
GOLF_EMU_VEC_TYPES(short, short)
GOLF_EMU_VEC_TYPES(ushort, ushort)
GOLF_EMU_VEC_TYPES(char, char)
GOLF_EMU_VEC_TYPES(uchar, uchar)
GOLF_EMU_VEC_TYPES(long, long)
GOLF_EMU_VEC_TYPES(ulong, ulong)
GOLF_EMU_VEC_TYPES(bool, bool)
#undef GOLF_EMU_VEC_TYPES

namespace metal {
using ::vec;
}

#endif  // GOLF_EMU_MSL_VECTOR_H
