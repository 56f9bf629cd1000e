// cublaslt.cc: the stand-in cuBLASLt (the calls golf makes), over the
// stand-in driver's memory and stream (driver.cc). Descriptors, layouts
// and preferences keep the attributes golf sets and reads, with cuBLASLt's
// sizes (a Set of the wrong size, or an attribute the stand-in does not
// know, is CUBLAS_STATUS_INVALID_VALUE); the heuristics check the problem
// (compute and scale type, operand types, column order, batch count 1,
// shapes that agree, ld ≥ rows, the default epilogue, host pointer mode)
// and return one algorithm bound to those descriptors and the
// preference's alignments; cublasLtMatmul checks the algorithm, the handle,
// the stream, every operand's extent inside one device allocation and its
// alignment, C = D only with the same layout, the workspace, and queues
// the product on the stream:
//
//	D = alpha·op(A)·op(B) + beta·C     column-major, op(A) M×K
//
// computed in float, each element's products added for k = 0, 1, ... in
// order (no fused multiply-add), C read only when beta ≠ 0, and rounded once
// to D's type (round to nearest even). CUBLAS_COMPUTE_32F_FAST_TF32 rounds
// the operands to TF32 first.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "standin.h"

namespace golf_standin {
namespace {

// cublasStatus_t.
enum : int {
  kOK = 0,
  kNotInitialized = 1,
  kAllocFailed = 3,
  kInvalidValue = 7,
  kExecutionFailed = 13,
  kNotSupported = 15,
};

// cudaDataType_t, cublasComputeType_t, cublasOperation_t.
enum : int { kR32F = 0, kR16F = 2, kR16BF = 14 };
enum : int { kCompute32F = 68, kCompute32FFastTF32 = 77 };
enum : int { kOpN = 0, kOpT = 1 };
constexpr uint32_t kEpilogueDefault = 1;
constexpr uint64_t kAlgoMagic = 0x676f6c66616c676full;  // "golfalgo"

// An attribute value (at most 8 bytes) with its size.
struct Attr {
  uint64_t value;
  size_t size;
};
typedef std::map<int, Attr> Attrs;

struct Desc {
  Attrs a;
};
struct Layout {
  Attrs a;
};
struct Pref {
  Attrs a;
};

std::mutex mu;
std::map<uintptr_t, std::unique_ptr<Desc>> descs;
std::map<uintptr_t, std::unique_ptr<Layout>> layouts;
std::map<uintptr_t, std::unique_ptr<Pref>> prefs;
std::map<uintptr_t, int> handles;
uintptr_t next_handle = 0x70000;

int lt_fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
int lt_fail(int code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  note_error(std::string("cuBLASLt: ") + buf);
  return code;
}

template <class T>
T* find(std::map<uintptr_t, std::unique_ptr<T>>& m, uintptr_t h) {
  auto it = m.find(h);
  return it == m.end() ? nullptr : it->second.get();
}

int set_attr(Attrs& a, const char* what, int attr, const void* buf, size_t size) {
  auto it = a.find(attr);
  if (it == a.end()) return lt_fail(kInvalidValue, "%s SetAttribute(%d): an attribute the stand-in does not know", what, attr);
  if (buf == nullptr || size != it->second.size)
    return lt_fail(kInvalidValue, "%s SetAttribute(%d): %zu bytes, the attribute has %zu", what, attr, size,
                   it->second.size);
  it->second.value = 0;
  std::memcpy(&it->second.value, buf, size);
  return kOK;
}

int get_attr(const Attrs& a, const char* what, int attr, void* buf, size_t size, size_t* written) {
  auto it = a.find(attr);
  if (it == a.end()) return lt_fail(kInvalidValue, "%s GetAttribute(%d): an attribute the stand-in does not know", what, attr);
  if (size == 0 && buf == nullptr) {
    if (written == nullptr) return kInvalidValue;
    *written = it->second.size;
    return kOK;
  }
  if (buf == nullptr || size < it->second.size)
    return lt_fail(kInvalidValue, "%s GetAttribute(%d): a buffer of %zu bytes, the attribute has %zu", what, attr, size,
                   it->second.size);
  std::memcpy(buf, &it->second.value, it->second.size);
  if (written != nullptr) *written = it->second.size;
  return kOK;
}

uint64_t get(const Attrs& a, int attr) { return a.at(attr).value; }

size_t type_size(int t) { return t == kR32F ? 4 : 2; }

const char* type_name(int t) {
  switch (t) {
    case kR32F:
      return "CUDA_R_32F";
    case kR16F:
      return "CUDA_R_16F";
    case kR16BF:
      return "CUDA_R_16BF";
  }
  return "an unsupported type";
}

// Problem is a matmul after the checks.
struct Problem {
  int transa, transb, compute;
  int ta, tb, tc, td;
  uint64_t m, n, k;
  int64_t lda, ldb, ldc, ldd;
  uint64_t arows, acols, brows, bcols;
};

// check verifies a problem as the heuristics and matmul do.
int check(uintptr_t dh, uintptr_t ah, uintptr_t bh, uintptr_t ch, uintptr_t dlh, Problem* p) {
  Desc* d = find(descs, dh);
  Layout *a = find(layouts, ah), *b = find(layouts, bh), *c = find(layouts, ch), *dl = find(layouts, dlh);
  if (d == nullptr) return lt_fail(kInvalidValue, "0x%llx is not a matmul descriptor", (unsigned long long)dh);
  if (!a || !b || !c || !dl) return lt_fail(kInvalidValue, "a layout handle is not a live layout");
  p->compute = int(get(d->a, 0));
  if (p->compute != kCompute32F && p->compute != kCompute32FFastTF32)
    return lt_fail(kNotSupported, "compute type %d: the stand-in computes CUBLAS_COMPUTE_32F(_FAST_TF32) only", p->compute);
  if (int(get(d->a, 1)) != kR32F) return lt_fail(kNotSupported, "scale type %d: want CUDA_R_32F", int(get(d->a, 1)));
  if (get(d->a, 2) != 0) return lt_fail(kNotSupported, "pointer mode %d: golf passes alpha and beta on the host", int(get(d->a, 2)));
  if (get(d->a, 7) != kEpilogueDefault)
    return lt_fail(kNotSupported, "epilogue %u: the stand-in has the default epilogue only", unsigned(get(d->a, 7)));
  p->transa = int(get(d->a, 3));
  p->transb = int(get(d->a, 4));
  if ((p->transa != kOpN && p->transa != kOpT) || (p->transb != kOpN && p->transb != kOpT))
    return lt_fail(kInvalidValue, "transa %d, transb %d: want CUBLAS_OP_N or CUBLAS_OP_T", p->transa, p->transb);
  Layout* ls[4] = {a, b, c, dl};
  const char* names = "ABCD";
  for (int i = 0; i < 4; i++) {
    if (get(ls[i]->a, 1) != 0)
      return lt_fail(kNotSupported, "layout %c: order %d, golf's layouts are column-major (CUBLASLT_ORDER_COL)",
                     names[i], int(get(ls[i]->a, 1)));
    if (get(ls[i]->a, 5) != 1)
      return lt_fail(kNotSupported, "layout %c: batch count %d, golf's products are single", names[i], int(get(ls[i]->a, 5)));
    const int64_t ld = int64_t(get(ls[i]->a, 4));
    if (ld < int64_t(get(ls[i]->a, 2)) || ld < 1)
      return lt_fail(kInvalidValue, "layout %c: ld %lld < rows %llu", names[i], (long long)ld,
                     (unsigned long long)get(ls[i]->a, 2));
  }
  p->ta = int(get(a->a, 0));
  p->tb = int(get(b->a, 0));
  p->tc = int(get(c->a, 0));
  p->td = int(get(dl->a, 0));
  for (int t : {p->ta, p->tb, p->tc, p->td})
    if (t != kR32F && t != kR16F && t != kR16BF) return lt_fail(kNotSupported, "operand type %d", t);
  if (p->ta != p->tb) return lt_fail(kNotSupported, "A is %s, B %s: want one type", type_name(p->ta), type_name(p->tb));
  if (p->tc != p->td) return lt_fail(kNotSupported, "C is %s, D %s: want one type", type_name(p->tc), type_name(p->td));
  if (p->ta == kR32F && p->td != kR32F) return lt_fail(kNotSupported, "float A and B with %s D", type_name(p->td));
  if (p->ta != kR32F && p->td != kR32F && p->td != p->ta)
    return lt_fail(kNotSupported, "%s A and B with %s D", type_name(p->ta), type_name(p->td));
  if (p->compute == kCompute32FFastTF32 && p->ta != kR32F)
    return lt_fail(kNotSupported, "TF32 compute with %s operands", type_name(p->ta));
  p->m = get(dl->a, 2);
  p->n = get(dl->a, 3);
  if (get(c->a, 2) != p->m || get(c->a, 3) != p->n)
    return lt_fail(kInvalidValue, "C is %llu×%llu, D %llu×%llu", (unsigned long long)get(c->a, 2),
                   (unsigned long long)get(c->a, 3), (unsigned long long)p->m, (unsigned long long)p->n);
  p->arows = get(a->a, 2);
  p->acols = get(a->a, 3);
  p->brows = get(b->a, 2);
  p->bcols = get(b->a, 3);
  const uint64_t am = p->transa == kOpN ? p->arows : p->acols, ak = p->transa == kOpN ? p->acols : p->arows;
  const uint64_t bk = p->transb == kOpN ? p->brows : p->bcols, bn = p->transb == kOpN ? p->bcols : p->brows;
  if (am != p->m || bn != p->n || ak != bk)
    return lt_fail(kInvalidValue,
                   "op(A) is %llu×%llu and op(B) %llu×%llu for a %llu×%llu D: the shapes do not agree",
                   (unsigned long long)am, (unsigned long long)ak, (unsigned long long)bk, (unsigned long long)bn,
                   (unsigned long long)p->m, (unsigned long long)p->n);
  p->k = ak;
  p->lda = int64_t(get(a->a, 4));
  p->ldb = int64_t(get(b->a, 4));
  p->ldc = int64_t(get(c->a, 4));
  p->ldd = int64_t(get(dl->a, 4));
  return kOK;
}

float load(const void* base, int t, uint64_t i) {
  if (t == kR32F) {
    float f;
    std::memcpy(&f, static_cast<const char*>(base) + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const char*>(base) + 2 * i, 2);
  uint32_t u;
  if (t == kR16BF) {
    u = uint32_t(h) << 16;
  } else {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1f) {
      u = sign | 0x7f800000u | (m << 13);
    } else if (e != 0) {
      u = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
      u = sign;
    } else {
      uint32_t ex = 113;
      while ((m & 0x400u) == 0) {
        m <<= 1;
        ex--;
      }
      u = sign | (ex << 23) | ((m & 0x3ffu) << 13);
    }
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

uint16_t to_fp16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u, mag = u & 0x7fffffffu;
  if (mag >= 0x7f800000u) {
    const uint32_t coef = mag & 0x007fffffu;
    return uint16_t(sign | 0x7c00u | (coef != 0 ? 0x0200u : 0u) | (coef >> 13));
  }
  if (mag >= 0x47800000u) return uint16_t(sign | 0x7c00u);
  if (mag < 0x38800000u) {
    const uint32_t shift = 126u - (mag >> 23);
    if (shift > 24u) return uint16_t(sign);
    const uint32_t m = (mag & 0x007fffffu) | 0x00800000u;
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u) != 0)) r++;
    return uint16_t(sign | r);
  }
  uint32_t h = (mag - 0x38000000u) >> 13;
  const uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0)) h++;
  return uint16_t(sign | h);
}

float to_tf32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;
  u += 0xfffu + ((u >> 13) & 1u);
  u &= ~0x1fffu;
  std::memcpy(&f, &u, 4);
  return f;
}

void store(void* base, int t, uint64_t i, float v) {
  if (t == kR32F) {
    std::memcpy(static_cast<char*>(base) + 4 * i, &v, 4);
    return;
  }
  const uint16_t h = t == kR16BF ? to_bf16(v) : to_fp16(v);
  std::memcpy(static_cast<char*>(base) + 2 * i, &h, 2);
}

// run computes the product (see the file comment).
void run(const Problem& p, float alpha, float beta, const void* A, const void* B, const void* C, void* D) {
  const uint64_t M = p.m, N = p.n, K = p.k;
  const bool tf32 = p.compute == kCompute32FFastTF32;
  // op(A) as a dense column-major M×K float matrix, op(B) as K×N.
  std::vector<float> a(M * K), b(K * N);
  for (uint64_t kk = 0; kk < K; kk++)
    for (uint64_t i = 0; i < M; i++) {
      const uint64_t idx = p.transa == kOpN ? i + kk * uint64_t(p.lda) : kk + i * uint64_t(p.lda);
      const float v = load(A, p.ta, idx);
      a[i + kk * M] = tf32 ? to_tf32(v) : v;
    }
  for (uint64_t j = 0; j < N; j++)
    for (uint64_t kk = 0; kk < K; kk++) {
      const uint64_t idx = p.transb == kOpN ? kk + j * uint64_t(p.ldb) : j + kk * uint64_t(p.ldb);
      const float v = load(B, p.tb, idx);
      b[kk + j * K] = tf32 ? to_tf32(v) : v;
    }
  auto columns = [&](uint64_t j0, uint64_t j1) {
    std::vector<float> acc(M);
    for (uint64_t j = j0; j < j1; j++) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (uint64_t kk = 0; kk < K; kk++) {
        const float bv = b[kk + j * K];
        const float* ac = &a[kk * M];
        for (uint64_t i = 0; i < M; i++) acc[i] += ac[i] * bv;
      }
      for (uint64_t i = 0; i < M; i++) {
        float v = alpha * acc[i];
        if (beta != 0.0f) v += beta * load(C, p.tc, i + j * uint64_t(p.ldc));
        store(D, p.td, i + j * uint64_t(p.ldd), v);
      }
    }
  };
  unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  if (M * N * K < (uint64_t(1) << 18)) workers = 1;
  workers = unsigned(std::min<uint64_t>(workers, N));
  std::vector<std::thread> ts;
  const uint64_t per = (N + workers - 1) / workers;
  for (unsigned w = 0; w < workers; w++) {
    const uint64_t j0 = w * per, j1 = std::min(N, j0 + per);
    if (j0 < j1) ts.emplace_back(columns, j0, j1);
  }
  for (std::thread& t : ts) t.join();
}

// extent is the bytes a column-major rows×cols matrix with leading
// dimension ld spans.
uint64_t extent(uint64_t rows, uint64_t cols, int64_t ld, int t) {
  if (rows == 0 || cols == 0) return 0;
  return ((cols - 1) * uint64_t(ld) + rows) * type_size(t);
}

}  // namespace
}  // namespace golf_standin

using namespace golf_standin;

#define LT_LOCK std::lock_guard<std::mutex> lt_lock_(mu)

GOLF_STANDIN_EXPORT size_t cublasLtGetVersion() { return 111103; }

GOLF_STANDIN_EXPORT const char* cublasLtGetStatusString(int status) {
  switch (status) {
    case kOK:
      return "the operation completed successfully";
    case kNotInitialized:
      return "the library was not initialized";
    case kAllocFailed:
      return "the resource allocation failed";
    case kInvalidValue:
      return "an invalid value was used as an argument";
    case kExecutionFailed:
      return "the GPU program failed to execute";
    case kNotSupported:
      return "the functionality requested is not supported";
  }
  return "unknown status";
}

GOLF_STANDIN_EXPORT int cublasLtCreate(uintptr_t* h) {
  LT_LOCK;
  if (!context_current())
    return lt_fail(kNotInitialized, "cublasLtCreate on an OS thread without the device's context current");
  const uintptr_t id = next_handle += 0x10;
  handles[id] = 1;
  *h = id;
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtDestroy(uintptr_t h) {
  LT_LOCK;
  if (handles.erase(h) == 0) return lt_fail(kNotInitialized, "cublasLtDestroy: 0x%llx is not a handle", (unsigned long long)h);
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtMatmulDescCreate(uintptr_t* d, int compute, int scale) {
  LT_LOCK;
  auto desc = std::make_unique<Desc>();
  desc->a = {{0, {uint64_t(uint32_t(compute)), 4}}, {1, {uint64_t(uint32_t(scale)), 4}}, {2, {0, 4}},
             {3, {kOpN, 4}}, {4, {kOpN, 4}}, {5, {kOpN, 4}}, {7, {kEpilogueDefault, 4}}};
  const uintptr_t id = next_handle += 0x10;
  descs[id] = std::move(desc);
  *d = id;
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtMatmulDescDestroy(uintptr_t d) {
  LT_LOCK;
  if (descs.erase(d) == 0) return lt_fail(kInvalidValue, "cublasLtMatmulDescDestroy: not a descriptor");
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtMatmulDescSetAttribute(uintptr_t d, int attr, const void* buf, size_t size) {
  LT_LOCK;
  Desc* x = find(descs, d);
  if (x == nullptr) return lt_fail(kInvalidValue, "cublasLtMatmulDescSetAttribute: not a descriptor");
  return set_attr(x->a, "cublasLtMatmulDesc", attr, buf, size);
}

GOLF_STANDIN_EXPORT int cublasLtMatmulDescGetAttribute(uintptr_t d, int attr, void* buf, size_t size, size_t* written) {
  LT_LOCK;
  Desc* x = find(descs, d);
  if (x == nullptr) return lt_fail(kInvalidValue, "cublasLtMatmulDescGetAttribute: not a descriptor");
  return get_attr(x->a, "cublasLtMatmulDesc", attr, buf, size, written);
}

GOLF_STANDIN_EXPORT int cublasLtMatrixLayoutCreate(uintptr_t* l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  LT_LOCK;
  auto lay = std::make_unique<Layout>();
  lay->a = {{0, {uint64_t(uint32_t(type)), 4}}, {1, {0, 4}}, {2, {rows, 8}}, {3, {cols, 8}},
            {4, {uint64_t(ld), 8}}, {5, {1, 4}}, {6, {0, 8}}};
  const uintptr_t id = next_handle += 0x10;
  layouts[id] = std::move(lay);
  *l = id;
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtMatrixLayoutDestroy(uintptr_t l) {
  LT_LOCK;
  if (layouts.erase(l) == 0) return lt_fail(kInvalidValue, "cublasLtMatrixLayoutDestroy: not a layout");
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtMatrixLayoutSetAttribute(uintptr_t l, int attr, const void* buf, size_t size) {
  LT_LOCK;
  Layout* x = find(layouts, l);
  if (x == nullptr) return lt_fail(kInvalidValue, "cublasLtMatrixLayoutSetAttribute: not a layout");
  return set_attr(x->a, "cublasLtMatrixLayout", attr, buf, size);
}

GOLF_STANDIN_EXPORT int cublasLtMatrixLayoutGetAttribute(uintptr_t l, int attr, void* buf, size_t size, size_t* written) {
  LT_LOCK;
  Layout* x = find(layouts, l);
  if (x == nullptr) return lt_fail(kInvalidValue, "cublasLtMatrixLayoutGetAttribute: not a layout");
  return get_attr(x->a, "cublasLtMatrixLayout", attr, buf, size, written);
}

GOLF_STANDIN_EXPORT int cublasLtMatmulPreferenceCreate(uintptr_t* p) {
  LT_LOCK;
  auto pref = std::make_unique<Pref>();
  pref->a = {{0, {0, 4}}, {1, {0, 8}}, {5, {256, 4}}, {6, {256, 4}}, {7, {256, 4}}, {8, {256, 4}}};
  const uintptr_t id = next_handle += 0x10;
  prefs[id] = std::move(pref);
  *p = id;
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtMatmulPreferenceDestroy(uintptr_t p) {
  LT_LOCK;
  if (prefs.erase(p) == 0) return lt_fail(kInvalidValue, "cublasLtMatmulPreferenceDestroy: not a preference");
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtMatmulPreferenceSetAttribute(uintptr_t p, int attr, const void* buf, size_t size) {
  LT_LOCK;
  Pref* x = find(prefs, p);
  if (x == nullptr) return lt_fail(kInvalidValue, "cublasLtMatmulPreferenceSetAttribute: not a preference");
  return set_attr(x->a, "cublasLtMatmulPreference", attr, buf, size);
}

GOLF_STANDIN_EXPORT int cublasLtMatmulPreferenceGetAttribute(uintptr_t p, int attr, void* buf, size_t size, size_t* written) {
  LT_LOCK;
  Pref* x = find(prefs, p);
  if (x == nullptr) return lt_fail(kInvalidValue, "cublasLtMatmulPreferenceGetAttribute: not a preference");
  return get_attr(x->a, "cublasLtMatmulPreference", attr, buf, size, written);
}

// The algorithm the heuristics return: the magic, the descriptors it was
// chosen for, and the preference's minimum alignments (A, B, C, D; 16 bits
// each).
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspace;
  int state;
  float waves;
  int reserved[4];
};
static_assert(sizeof(HeuristicResult) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes");

GOLF_STANDIN_EXPORT int cublasLtMatmulAlgoGetHeuristic(uintptr_t h, uintptr_t d, uintptr_t a, uintptr_t b, uintptr_t c,
                                                       uintptr_t dl, uintptr_t pref, int requested,
                                                       HeuristicResult* results, int* returned) {
  LT_LOCK;
  if (handles.count(h) == 0) return lt_fail(kNotInitialized, "cublasLtMatmulAlgoGetHeuristic: 0x%llx is not a handle", (unsigned long long)h);
  Pref* p = find(prefs, pref);
  if (p == nullptr) return lt_fail(kInvalidValue, "cublasLtMatmulAlgoGetHeuristic: not a preference");
  if (requested < 1 || results == nullptr || returned == nullptr)
    return lt_fail(kInvalidValue, "cublasLtMatmulAlgoGetHeuristic: requested %d results", requested);
  Problem prob;
  *returned = 0;
  if (int rc = check(d, a, b, c, dl, &prob)) return rc;
  std::memset(results, 0, sizeof(HeuristicResult));
  Algo& al = results[0].algo;
  al.data[0] = kAlgoMagic;
  al.data[1] = d;
  al.data[2] = a;
  al.data[3] = b;
  al.data[4] = c;
  al.data[5] = dl;
  al.data[6] = get(p->a, 5) | get(p->a, 6) << 16 | get(p->a, 7) << 32 | get(p->a, 8) << 48;
  results[0].workspace = 0;
  results[0].state = kOK;
  results[0].waves = 1.0f;
  *returned = 1;
  return kOK;
}

GOLF_STANDIN_EXPORT int cublasLtMatmul(uintptr_t h, uintptr_t d, const float* alpha, const void* A, uintptr_t ad,
                                       const void* B, uintptr_t bd, const float* beta, const void* C, uintptr_t cd,
                                       void* D, uintptr_t dd, const Algo* algo, void* workspace, size_t wsize,
                                       uintptr_t stream) {
  std::lock_guard<std::recursive_mutex> driver_lock(driver_mutex());
  LT_LOCK;
  if (context_failed()) return lt_fail(kExecutionFailed, "cublasLtMatmul after a failed kernel failed the context");
  if (handles.count(h) == 0) return lt_fail(kNotInitialized, "cublasLtMatmul: 0x%llx is not a handle", (unsigned long long)h);
  if (!context_current()) return lt_fail(kNotInitialized, "cublasLtMatmul on an OS thread without the context current");
  if (algo == nullptr || algo->data[0] != kAlgoMagic || algo->data[1] != d || algo->data[2] != ad ||
      algo->data[3] != bd || algo->data[4] != cd || algo->data[5] != dd)
    return lt_fail(kInvalidValue, "cublasLtMatmul: the algorithm is not one the heuristics returned for these descriptors");
  Problem p;
  if (int rc = check(d, ad, bd, cd, dd, &p)) return rc;
  if (alpha == nullptr || beta == nullptr) return lt_fail(kInvalidValue, "cublasLtMatmul: alpha or beta is null");
  if (!stream_ok(stream))
    return lt_fail(kInvalidValue, "cublasLtMatmul: stream 0x%llx is not a stream golf created", (unsigned long long)stream);
  const float al = *alpha, be = *beta;
  struct Operand {
    char name;
    const void* ptr;
    uint64_t bytes;
    int align;
  } ops[4] = {
      {'A', A, extent(p.arows, p.acols, p.lda, p.ta), int(algo->data[6] & 0xffff)},
      {'B', B, extent(p.brows, p.bcols, p.ldb, p.tb), int((algo->data[6] >> 16) & 0xffff)},
      {'C', C, extent(p.m, p.n, p.ldc, p.tc), int((algo->data[6] >> 32) & 0xffff)},
      {'D', D, extent(p.m, p.n, p.ldd, p.td), int((algo->data[6] >> 48) & 0xffff)},
  };
  for (const Operand& o : ops) {
    if (o.name == 'C' && be == 0.0f) continue;  // C is not read
    std::string why;
    if (!device_range(reinterpret_cast<uint64_t>(o.ptr), o.bytes, &why))
      return lt_fail(kInvalidValue, "cublasLtMatmul: %c: %s", o.name, why.c_str());
    if (o.align > 0 && reinterpret_cast<uint64_t>(o.ptr) % uint64_t(o.align) != 0)
      return lt_fail(kNotSupported, "cublasLtMatmul: %c (%p) is not aligned to the %d bytes the algorithm was chosen for",
                     o.name, o.ptr, o.align);
  }
  if (C == D && be != 0.0f && (p.ldc != p.ldd || p.tc != p.td))
    return lt_fail(kNotSupported, "cublasLtMatmul: C = D with different layouts");
  if (wsize > 0) {
    std::string why;
    if (!device_range(reinterpret_cast<uint64_t>(workspace), wsize, &why))
      return lt_fail(kInvalidValue, "cublasLtMatmul: workspace: %s", why.c_str());
  }
  count_matmul();
  enqueue(stream, "cublasLtMatmul", [p, al, be, A, B, C, D](std::string*) {
    run(p, al, be, A, B, C, D);
    return true;
  });
  return kOK;
}
