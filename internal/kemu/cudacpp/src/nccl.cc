// nccl.cc: the stand-in NCCL (libnccl.so.2's C API as of NCCL 2.22, the
// calls a data-parallel trainer makes), over the stand-in driver's memory
// and streams (driver.cc), for machines without a GPU. Ranks are
// processes of one machine, one rank per process (as golf runs them); they
// meet in a shared memory segment that the unique id names.
//
//   - ncclGetUniqueId: 128 bytes holding "golfnccl", the creator's pid and a
//     random segment name (/golf-nccl-<pid>-<random hex>), so a segment
//     left by a killed run never meets a later one.
//   - ncclCommInitRank(Config): the first rank to arrive creates the
//     segment (O_CREAT|O_EXCL: race-free), the others attach to it; each
//     claims its rank and waits, up to GOLF_STANDIN_NCCL_TIMEOUT seconds
//     (default 60), until every rank has attached. A rank claimed twice or
//     an nranks that disagrees with the segment's is ncclInvalidUsage; a
//     rank that does not arrive in time, or one that exits while the others
//     wait, fails every waiting rank, and ncclGetLastError names it.
//   - Collectives (ncclAllReduce, ncclBroadcast, ncclReduceScatter,
//     ncclAllGather) check their arguments when called (the communicator,
//     the stream, the buffers inside live device allocations) and are
//     queued on the stream with the driver's other work: they run, in
//     order with the kernels and copies around them, when the host waits
//     for the stream. Each rank publishes its send buffer in its slot of
//     the segment (GOLF_STANDIN_NCCL_SLOT_BYTES per rank, default 1 MiB;
//     larger buffers go in chunks), a barrier, every rank reduces the slots
//     in rank order 0, 1, ..., n-1 into its receive buffer, a barrier: every
//     rank computes the same bits, and runs are deterministic. The send
//     buffer may be the receive buffer (in place). float16 and bfloat16 are
//     reduced in float and rounded once to nearest even; integers wrap;
//     ncclAvg is the sum divided by nranks (integers: truncated); ncclMax
//     and ncclMin of floating point are fmax and fmin.
//   - Faults: a barrier spins, then sleeps, and every few milliseconds
//     checks the communicator's abort flag (ncclCommAbort, from any
//     thread), the segment's failure flag (set by the first rank whose
//     collective failed or that aborted, with its reason) and whether each
//     rank it waits for still runs (kill(pid, 0), zombies counted dead) or
//     has left. A failure fails the queued work as a faulting kernel does
//     (CUDA_ERROR_LAUNCH_FAILED from then on), and ncclCommGetAsyncError
//     returns ncclRemoteError (a peer exited, left or failed) or
//     ncclSystemError (this communicator was aborted).
//   - The segment's name is unlinked once every rank has attached (the
//     mappings stay), so a run whose ranks are all killed leaves nothing in
//     /dev/shm; after a failed init the last rank to leave (every other one
//     has left or exited) unlinks it. A process that comes with the id
//     after every rank attached finds no segment and times out.
//   - ncclCommFinalize refuses further collectives; ncclCommDestroy and
//     ncclCommAbort release the handle, and the rank leaves the segment
//     once its queued collectives have run (or been dropped).
//   - A collective waits for a live peer without a time limit, as NCCL's
//     do (a trainer's watchdog calls ncclCommAbort). It runs inside the
//     host's wait, under the driver's lock: other threads' driver calls
//     wait for it as for a busy device, while ncclCommAbort and
//     ncclCommGetAsyncError never take that lock.
//
// Not modelled: ncclCommCuDevice reports device 0 whatever the current
// device; several communicators' collectives in one group run one by
// one as they are called (ncclGroupStart/ncclGroupEnd only nest); a
// non-blocking config (blocking = 0) initialises as a blocking one does;
// one process may hold several communicators, but not two ranks of one
// communicator that wait on each other (the driver runs one stream's work
// at a time).
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "standin.h"

#ifdef GOLF_NCCL_HEADER
// The real nccl.h declares the API: the definitions below then fail to
// compile where a signature differs, and the static_asserts where a value
// does (the test of the stand-in's ABI).
#include GOLF_NCCL_HEADER
#else
// The API as NCCL 2.22 documents it.
typedef struct CUstream_st* cudaStream_t;
typedef struct ncclComm* ncclComm_t;
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;
typedef struct ncclConfig_v21700 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
} ncclConfig_t;
typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclNumTypes = 10
} ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5 } ncclRedOp_t;
#endif

// The values golf passes, as NCCL 2.22's nccl.h has them.
static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId");
static_assert(ncclSuccess == 0 && ncclUnhandledCudaError == 1 && ncclSystemError == 2 && ncclInternalError == 3 &&
                  ncclInvalidArgument == 4 && ncclInvalidUsage == 5 && ncclRemoteError == 6 && ncclInProgress == 7,
              "ncclResult_t");
static_assert(ncclInt8 == 0 && ncclUint8 == 1 && ncclInt32 == 2 && ncclUint32 == 3 && ncclInt64 == 4 &&
                  ncclUint64 == 5 && ncclFloat16 == 6 && ncclFloat32 == 7 && ncclFloat64 == 8 && ncclBfloat16 == 9 &&
                  ncclNumTypes == 10,
              "ncclDataType_t");
static_assert(ncclSum == 0 && ncclProd == 1 && ncclMax == 2 && ncclMin == 3 && ncclAvg == 4 && ncclNumOps == 5,
              "ncclRedOp_t");
static_assert(sizeof(ncclConfig_t) == 48 && offsetof(ncclConfig_t, magic) == 8 && offsetof(ncclConfig_t, version) == 12 &&
                  offsetof(ncclConfig_t, blocking) == 16 && offsetof(ncclConfig_t, netName) == 32 &&
                  offsetof(ncclConfig_t, splitShare) == 40,
              "ncclConfig_t");

namespace golf_nccl {
namespace {

constexpr int kVersion = 22203;  // NCCL_VERSION(2, 22, 3)
constexpr unsigned kConfigMagic = 0xcafebeef;
constexpr int kConfigUndef = INT_MIN;
constexpr char kIdMagic[8] = {'g', 'o', 'l', 'f', 'n', 'c', 'c', 'l'};
constexpr size_t kIdName = 16;  // offset of the segment's name in the id
constexpr char kNamePrefix[] = "/golf-nccl-";
constexpr uint64_t kSegMagic = 0x73676d6e63636c67ull;
constexpr int kMaxRanks = 256;

// Rank is one rank's entry in the segment.
struct alignas(64) Rank {
  std::atomic<int32_t> pid;    // 0 until claimed
  std::atomic<int32_t> state;  // kFree, kAttached, kLeft
  std::atomic<uint64_t> arrived;  // barriers this rank has reached
};
enum : int32_t { kFree = 0, kAttached = 1, kLeft = 2 };

// Header opens the segment; the ranks' slots follow it.
struct Header {
  std::atomic<uint64_t> magic;  // stored last by the creator
  uint32_t nranks;
  int32_t creator_pid;
  uint64_t slot_bytes;
  uint64_t total_bytes;
  std::atomic<int32_t> attached;
  std::atomic<int32_t> fail_claim;  // the first failure claims the reason
  std::atomic<int32_t> failed;      // 1 + the rank whose failure is in reason
  char reason[512];
  Rank ranks[kMaxRanks];
};
static_assert(std::atomic<int32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "process-shared atomics");

size_t header_bytes() {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return (sizeof(Header) + page - 1) / page * page;
}

// Stats are golf_standin_nccl_stats' counters.
struct Stats {
  std::atomic<uint64_t> inits{0}, collectives{0}, allreduces{0}, broadcasts{0}, reduce_scatters{0}, allgathers{0},
      bytes{0}, failures{0}, aborts{0};
};
Stats stats;

std::mutex err_mu;
std::string last_err;

void set_error(const std::string& msg) {
  {
    std::lock_guard<std::mutex> l(err_mu);
    last_err = msg;
  }
  std::fprintf(stderr, "golf stand-in NCCL: %s\n", msg.c_str());
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
ncclResult_t fail(ncclResult_t code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  set_error(buf);
  return code;
}

double env_seconds(const char* name, double def) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return def;
  char* end;
  const double d = std::strtod(v, &end);
  return (*end == 0 && d > 0) ? d : def;
}

uint64_t env_slot_bytes() {
  const char* v = std::getenv("GOLF_STANDIN_NCCL_SLOT_BYTES");
  uint64_t b = 1 << 20;
  if (v != nullptr && *v != 0) b = std::strtoull(v, nullptr, 10);
  if (b < 64) b = 64;
  if (b > (uint64_t(1) << 30)) b = uint64_t(1) << 30;
  return b / 64 * 64;
}

// alive reports whether process pid still runs (a zombie does not).
bool alive(int32_t pid) {
  if (pid <= 0) return false;
  if (pid == getpid()) return true;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64], buf[512];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return true;  // no /proc: kill's answer stands
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* close = std::strrchr(buf, ')');
  if (close == nullptr || close[1] != ' ') return true;
  return close[2] != 'Z' && close[2] != 'X';
}

void pause_for(int us) {
  timespec ts{0, long(us) * 1000};
  nanosleep(&ts, nullptr);
}

// Segment is one rank's mapping of a communicator's segment.
struct Segment {
  std::string name;
  Header* h = nullptr;
  size_t len = 0;
  int rank = -1;
  int nranks = 0;
  uint64_t barriers = 0;  // barriers this rank has passed

  unsigned char* slot(int r) const {
    return reinterpret_cast<unsigned char*>(h) + header_bytes() + size_t(r) * h->slot_bytes;
  }

  // fail_all records the first failure of the communicator for every rank.
  void fail_all(const std::string& why) {
    int32_t expect = 0;
    if (!h->fail_claim.compare_exchange_strong(expect, 1)) return;
    std::snprintf(h->reason, sizeof h->reason, "%s", why.c_str());
    h->failed.store(rank + 1, std::memory_order_release);
  }

  // remote_failure is the failure another rank recorded ("" if none).
  std::string remote_failure() const {
    const int32_t f = h->failed.load(std::memory_order_acquire);
    if (f == 0 || f == rank + 1) return "";
    return format("rank %d failed the communicator: %s", f - 1, h->reason);
  }

  // leave marks the rank gone; the last one to leave unlinks the segment.
  void leave() {
    if (h == nullptr) return;
    // Sequentially consistent: of two ranks leaving at once, at least one
    // sees the other gone.
    if (rank >= 0) h->ranks[rank].state.store(kLeft);
    bool last = true;
    for (int r = 0; r < int(h->nranks) && last; r++) {
      if (r == rank) continue;
      const int32_t pid = h->ranks[r].pid.load();
      if (pid != 0 && h->ranks[r].state.load() != kLeft && alive(pid)) last = false;
    }
    if (last) shm_unlink(name.c_str());
    munmap(h, len);
    h = nullptr;
  }
};

// Comm is a communicator's state, shared by its handle and its queued
// collectives: the rank leaves the segment when the last of them is gone.
struct Comm {
  Segment seg;
  std::atomic<bool> aborted{false};
  std::atomic<int> async{ncclSuccess};
  std::mutex mu;  // error
  std::string error;
  bool finalized = false;  // under handles_mu
  ~Comm() { seg.leave(); }

  void record(ncclResult_t code, const std::string& msg) {
    int expect = ncclSuccess;
    async.compare_exchange_strong(expect, int(code));
    std::lock_guard<std::mutex> l(mu);
    if (error.empty()) error = msg;
  }
};

}  // namespace
}  // namespace golf_nccl

// ncclComm is the handle: it holds the communicator.
struct ncclComm {
  std::shared_ptr<golf_nccl::Comm> c;
};

namespace golf_nccl {
namespace {

std::mutex handles_mu;
std::set<ncclComm*> handles;
thread_local int group_depth = 0;

std::shared_ptr<Comm> lookup(ncclComm_t comm) {
  std::lock_guard<std::mutex> l(handles_mu);
  if (comm == nullptr || handles.count(comm) == 0) return nullptr;
  return comm->c;
}

// wait_all waits until every rank has reached barrier e (or, in init,
// attached: e == 0); "" on success, else why not (code in *code).
std::string wait_all(Comm* c, uint64_t e, const char* what, ncclResult_t* code,
                     std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) {
  Segment& s = c->seg;
  Header* h = s.h;
  const int n = int(h->nranks);
  auto reached = [&](int r) {
    if (e == 0) return h->ranks[r].pid.load(std::memory_order_acquire) != 0 &&
                       h->ranks[r].state.load(std::memory_order_acquire) != kFree;
    return h->ranks[r].arrived.load(std::memory_order_acquire) >= e;
  };
  int spins = 0, sleep_us = 20;
  auto next_check = std::chrono::steady_clock::now();
  for (;;) {
    int missing = -1;
    if (e == 0) {
      if (h->attached.load(std::memory_order_acquire) < n)
        for (int r = 0; r < n && missing < 0; r++)
          if (!reached(r)) missing = r;
    } else {
      for (int r = 0; r < n && missing < 0; r++)
        if (!reached(r)) missing = r;
    }
    if (missing < 0) return "";
    if (++spins < 4000) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      next_check = now + std::chrono::milliseconds(4);
      if (c->aborted.load()) {
        *code = ncclSystemError;
        return format("the communicator was aborted (ncclCommAbort) while rank %d waited for rank %d in %s", s.rank,
                      missing, what);
      }
      std::string remote = s.remote_failure();
      if (!remote.empty()) {
        *code = ncclRemoteError;
        return remote;
      }
      for (int r = 0; r < n; r++) {
        if (r == s.rank || reached(r)) continue;
        const int32_t pid = h->ranks[r].pid.load(std::memory_order_acquire);
        if (pid == 0) continue;
        if (h->ranks[r].state.load(std::memory_order_acquire) == kLeft) {
          *code = ncclRemoteError;
          return format("rank %d (pid %d) left the communicator (ncclCommDestroy, ncclCommAbort or a failed init) "
                        "while rank %d waited for it in %s",
                        r, int(pid), s.rank, what);
        }
        if (!alive(pid)) {
          *code = ncclRemoteError;
          return format("rank %d (pid %d) exited while rank %d waited for it in %s", r, int(pid), s.rank, what);
        }
      }
      if (now >= deadline) {
        std::string miss;
        int have = 0;
        for (int r = 0; r < n; r++) {
          if (reached(r)) {
            have++;
            continue;
          }
          miss += (miss.empty() ? "" : ", ") + std::to_string(r);
        }
        *code = ncclSystemError;
        return format("%s timed out after %gs (GOLF_STANDIN_NCCL_TIMEOUT) waiting for every rank to attach to %s: "
                      "%d of %d attached, missing rank%s %s",
                      what, env_seconds("GOLF_STANDIN_NCCL_TIMEOUT", 60), s.name.c_str(), have, n,
                      miss.find(',') == std::string::npos ? "" : "s", miss.c_str());
      }
    }
    pause_for(sleep_us);
    if (sleep_us < 1000) sleep_us *= 2;
  }
}

// barrier is a barrier of every rank; "" on success.
std::string barrier(Comm* c, const char* what, ncclResult_t* code) {
  Segment& s = c->seg;
  const uint64_t e = ++s.barriers;
  s.h->ranks[s.rank].arrived.store(e, std::memory_order_release);
  return wait_all(c, e, what, code);
}

// Element types: storage T, arithmetic A.
float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays a quiet NaN
  u += 0x7fffu + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    u = sign | (uint32_t(exp - 15 + 127) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;
  } else {  // subnormal: normalise
    int e = -14;
    while ((mant & 0x400) == 0) {
      mant <<= 1;
      e--;
    }
    u = sign | (uint32_t(e + 127) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((a >> 13) & 0x3ff));  // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to infinity (65520 and up)
  const int exp = int(a >> 23) - 127;
  if (exp >= -14) {  // normal
    uint32_t m = a & 0x7fffffu;
    uint32_t h = (uint32_t(exp + 15) << 10) | (m >> 13);
    const uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return uint16_t(sign | h);
  }
  if (exp < -25) return sign;  // below half the smallest subnormal
  // Subnormal: the value in units of 2^-24, rounded to nearest even.
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const int shift = -exp - 1;  // 14..24: m · 2^(exp-23) / 2^-24 = m >> (-exp - 1)
  uint32_t h = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1))) h++;
  return uint16_t(sign | h);
}

template <class T>
struct Int {
  typedef T Store;
  typedef typename std::make_unsigned<T>::type U;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
  static T add(T a, T b) { return T(U(a) + U(b)); }
  static T mul(T a, T b) { return T(U(a) * U(b)); }
  static T max(T a, T b) { return a > b ? a : b; }
  static T min(T a, T b) { return a < b ? a : b; }
  static T avg(T a, int n) { return T(a / T(n)); }
};

template <class T>
struct Float {
  typedef T Store;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
  static T add(T a, T b) { return a + b; }
  static T mul(T a, T b) { return a * b; }
  static T max(T a, T b) { return std::fmax(a, b); }
  static T min(T a, T b) { return std::fmin(a, b); }
  static T avg(T a, int n) { return a / T(n); }
};

template <float (*In)(uint16_t), uint16_t (*Out)(float)>
struct Narrow {
  typedef uint16_t Store;
  static float load(uint16_t v) { return In(v); }
  static uint16_t store(float v) { return Out(v); }
  static float add(float a, float b) { return a + b; }
  static float mul(float a, float b) { return a * b; }
  static float max(float a, float b) { return std::fmax(a, b); }
  static float min(float a, float b) { return std::fmin(a, b); }
  static float avg(float a, int n) { return a / float(n); }
};

// reduce_with writes dst[i] = op over ranks 0..n-1 of src[r][i], in rank
// order.
template <class E>
void reduce_with(void* dst, unsigned char* const* src, int n, size_t count, int op) {
  typedef typename E::Store S;
  S* d = static_cast<S*>(dst);
  for (size_t i = 0; i < count; i++) {
    S v;
    std::memcpy(&v, src[0] + i * sizeof(S), sizeof(S));
    auto acc = E::load(v);
    for (int r = 1; r < n; r++) {
      std::memcpy(&v, src[r] + i * sizeof(S), sizeof(S));
      const auto x = E::load(v);
      switch (op) {
        case ncclSum:
        case ncclAvg:
          acc = E::add(acc, x);
          break;
        case ncclProd:
          acc = E::mul(acc, x);
          break;
        case ncclMax:
          acc = E::max(acc, x);
          break;
        default:
          acc = E::min(acc, x);
          break;
      }
    }
    if (op == ncclAvg) acc = E::avg(acc, n);
    const S out = E::store(acc);
    std::memcpy(d + i, &out, sizeof(S));
  }
}

void reduce(int type, void* dst, unsigned char* const* src, int n, size_t count, int op) {
  switch (type) {
    case ncclInt8:
      return reduce_with<Int<int8_t>>(dst, src, n, count, op);
    case ncclUint8:
      return reduce_with<Int<uint8_t>>(dst, src, n, count, op);
    case ncclInt32:
      return reduce_with<Int<int32_t>>(dst, src, n, count, op);
    case ncclUint32:
      return reduce_with<Int<uint32_t>>(dst, src, n, count, op);
    case ncclInt64:
      return reduce_with<Int<int64_t>>(dst, src, n, count, op);
    case ncclUint64:
      return reduce_with<Int<uint64_t>>(dst, src, n, count, op);
    case ncclFloat16:
      return reduce_with<Narrow<half_to_float, float_to_half>>(dst, src, n, count, op);
    case ncclFloat32:
      return reduce_with<Float<float>>(dst, src, n, count, op);
    case ncclFloat64:
      return reduce_with<Float<double>>(dst, src, n, count, op);
    default:
      return reduce_with<Narrow<bf16_to_float, float_to_bf16>>(dst, src, n, count, op);
  }
}

size_t type_size(int t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* type_name(int t) {
  static const char* const names[] = {"int8",    "uint8",   "int32",   "uint32",  "int64",
                                      "uint64",  "float16", "float32", "float64", "bfloat16"};
  return t >= 0 && t < ncclNumTypes ? names[t] : "?";
}

const char* op_name(int op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < ncclNumOps ? names[op] : "?";
}

enum Kind { kAllReduce, kBroadcast, kReduceScatter, kAllGather };

// Coll is one queued collective.
struct Coll {
  Kind kind;
  unsigned char* send;
  unsigned char* recv;
  size_t count;  // elements per rank: all-reduce and broadcast the buffer's, reduce-scatter recvcount, all-gather sendcount
  int type, op, root;
};

// run_coll runs a collective on the segment; "" on success.
std::string run_coll(Comm* c, const Coll& k, const char* what, ncclResult_t* code) {
  Segment& s = c->seg;
  const int n = s.nranks, me = s.rank;
  if (c->aborted.load()) {
    *code = ncclSystemError;
    return format("the communicator was aborted (ncclCommAbort) before rank %d's %s ran", me, what);
  }
  const size_t esz = type_size(k.type);
  std::vector<unsigned char*> slots(static_cast<size_t>(n));
  for (int r = 0; r < n; r++) slots[size_t(r)] = s.slot(r);
  // Elements per chunk: all-reduce, broadcast and all-gather put a chunk
  // of their buffer in the slot, reduce-scatter a chunk for every rank.
  size_t per = s.h->slot_bytes / esz;
  if (k.kind == kReduceScatter) per /= size_t(n);
  for (size_t off = 0; off < k.count; off += per) {
    const size_t len = std::min(per, k.count - off);
    switch (k.kind) {
      case kAllReduce:
      case kAllGather:
        std::memcpy(slots[size_t(me)], k.send + off * esz, len * esz);
        break;
      case kBroadcast:
        if (me == k.root) std::memcpy(slots[size_t(me)], k.send + off * esz, len * esz);
        break;
      case kReduceScatter:
        for (int r = 0; r < n; r++)
          std::memcpy(slots[size_t(me)] + size_t(r) * len * esz, k.send + (size_t(r) * k.count + off) * esz, len * esz);
        break;
    }
    std::string err = barrier(c, what, code);
    if (!err.empty()) return err;
    switch (k.kind) {
      case kAllReduce:
        reduce(k.type, k.recv + off * esz, slots.data(), n, len, k.op);
        break;
      case kBroadcast:
        std::memmove(k.recv + off * esz, slots[size_t(k.root)], len * esz);
        break;
      case kAllGather:
        for (int r = 0; r < n; r++)
          std::memmove(k.recv + (size_t(r) * k.count + off) * esz, slots[size_t(r)], len * esz);
        break;
      case kReduceScatter: {
        std::vector<unsigned char*> mine(static_cast<size_t>(n));
        for (int r = 0; r < n; r++) mine[size_t(r)] = slots[size_t(r)] + size_t(me) * len * esz;
        reduce(k.type, k.recv + off * esz, mine.data(), n, len, k.op);
        break;
      }
    }
    err = barrier(c, what, code);
    if (!err.empty()) return err;
  }
  return "";
}

// enqueue_coll checks a collective's arguments and queues it on stream.
ncclResult_t enqueue_coll(const char* call, Kind kind, const void* send, void* recv, size_t count, int type, int op,
                          int root, ncclComm_t comm, cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> driver_lock(golf_standin::driver_mutex());
  std::shared_ptr<Comm> c = lookup(comm);
  if (c == nullptr) return fail(ncclInvalidArgument, "%s: %p is not a live communicator", call, static_cast<void*>(comm));
  {
    std::lock_guard<std::mutex> l(handles_mu);
    if (c->finalized) return fail(ncclInvalidUsage, "%s on a finalized communicator (ncclCommFinalize)", call);
  }
  if (const int a = c->async.load()) {
    std::lock_guard<std::mutex> l(c->mu);
    return fail(ncclResult_t(a), "%s on a communicator that has failed: %s", call, c->error.c_str());
  }
  const size_t esz = type_size(type);
  if (esz == 0) return fail(ncclInvalidArgument, "%s: datatype %d is not an ncclDataType_t", call, type);
  if (op < 0 || op >= ncclNumOps)
    return fail(ncclInvalidArgument, "%s: op %d is not one of ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg", call, op);
  const int n = c->seg.nranks, me = c->seg.rank;
  if (root < 0 || root >= n) return fail(ncclInvalidArgument, "%s: root %d outside 0..%d", call, root, n - 1);
  if (!golf_standin::context_current())
    return fail(ncclUnhandledCudaError, "%s on an OS thread without the CUDA context current", call);
  if (golf_standin::context_failed())
    return fail(ncclUnhandledCudaError, "%s after a failed kernel failed the context", call);
  const uintptr_t st = reinterpret_cast<uintptr_t>(stream);
  if (!golf_standin::stream_ok(st))
    return fail(ncclInvalidArgument, "%s: stream %p is not a live stream of the context", call, static_cast<void*>(stream));
  uint64_t send_bytes = count * esz, recv_bytes = count * esz;
  if (kind == kReduceScatter) send_bytes *= uint64_t(n);
  if (kind == kAllGather) recv_bytes *= uint64_t(n);
  if (count > 0) {
    std::string why;
    const bool need_send = kind != kBroadcast || me == root;
    if (need_send && !golf_standin::device_range(reinterpret_cast<uint64_t>(send), send_bytes, &why))
      return fail(ncclInvalidArgument, "%s: send buffer: %s", call, why.c_str());
    if (!golf_standin::device_range(reinterpret_cast<uint64_t>(recv), recv_bytes, &why))
      return fail(ncclInvalidArgument, "%s: receive buffer: %s", call, why.c_str());
    if (send != nullptr && esz > 1 && (reinterpret_cast<uintptr_t>(send) % esz != 0 || reinterpret_cast<uintptr_t>(recv) % esz != 0))
      return fail(ncclInvalidArgument, "%s: buffers not aligned to their %zu-byte elements", call, esz);
  }
  if (count == 0) return ncclSuccess;
  std::string what = kind == kBroadcast
                         ? format("%s(rank %d of %d, %zu x %s, root %d)", call, me, n, count, type_name(type), root)
                         : kind == kAllGather
                               ? format("%s(rank %d of %d, %zu x %s)", call, me, n, count, type_name(type))
                               : format("%s(rank %d of %d, %zu x %s, %s)", call, me, n, count, type_name(type), op_name(op));
  Coll k{kind, static_cast<unsigned char*>(const_cast<void*>(send)), static_cast<unsigned char*>(recv), count, type, op,
         root};
  golf_standin::enqueue(st, what.c_str(), [c, k, what](std::string* err) {
    ncclResult_t code = ncclSuccess;
    *err = run_coll(c.get(), k, what.c_str(), &code);
    if (err->empty()) {
      stats.collectives++;
      return true;
    }
    stats.failures++;
    c->seg.fail_all(*err);
    c->record(code, *err);
    set_error(what + ": " + *err);
    return false;
  });
  stats.bytes += send_bytes;
  switch (kind) {
    case kAllReduce:
      stats.allreduces++;
      break;
    case kBroadcast:
      stats.broadcasts++;
      break;
    case kReduceScatter:
      stats.reduce_scatters++;
      break;
    case kAllGather:
      stats.allgathers++;
      break;
  }
  return ncclSuccess;
}

bool parse_id(const ncclUniqueId& id, std::string* name) {
  if (std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0) return false;
  const char* p = id.internal + kIdName;
  const size_t len = strnlen(p, NCCL_UNIQUE_ID_BYTES - kIdName);
  if (len == NCCL_UNIQUE_ID_BYTES - kIdName || std::strncmp(p, kNamePrefix, sizeof kNamePrefix - 1) != 0) return false;
  *name = std::string(p, len);
  return true;
}

// attach opens (creating it if first) the segment of name for rank of
// nranks and claims the rank.
ncclResult_t attach(Segment* s, const std::string& name, int nranks, int rank,
                    std::chrono::steady_clock::time_point deadline) {
  const char* call = "ncclCommInitRank";
  const size_t hb = header_bytes();
  s->name = name;
  s->rank = rank;
  s->nranks = nranks;
  for (;;) {
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      const uint64_t slot = env_slot_bytes();
      const uint64_t total = hb + uint64_t(nranks) * slot;
      if (ftruncate(fd, off_t(total)) != 0) {
        const int e = errno;
        close(fd);
        shm_unlink(name.c_str());
        return fail(ncclSystemError, "%s: ftruncate of %s to %llu bytes: %s", call, name.c_str(),
                    (unsigned long long)total, std::strerror(e));
      }
      void* m = mmap(nullptr, size_t(total), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      const int e = errno;
      close(fd);
      if (m == MAP_FAILED) {
        shm_unlink(name.c_str());
        return fail(ncclSystemError, "%s: mmap of %s: %s", call, name.c_str(), std::strerror(e));
      }
      Header* h = static_cast<Header*>(m);  // zero-filled by ftruncate
      h->nranks = uint32_t(nranks);
      h->creator_pid = int32_t(getpid());
      h->slot_bytes = slot;
      h->total_bytes = total;
      h->magic.store(kSegMagic, std::memory_order_release);
      s->h = h;
      s->len = size_t(total);
      break;
    }
    if (errno != EEXIST)
      return fail(ncclSystemError, "%s: shm_open(%s): %s", call, name.c_str(), std::strerror(errno));
    fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) {
      if (errno == ENOENT) continue;  // unlinked meanwhile: create it afresh
      return fail(ncclSystemError, "%s: shm_open(%s): %s", call, name.c_str(), std::strerror(errno));
    }
    // Wait for the creator to size and initialise it.
    Header* h = nullptr;
    size_t len = 0;
    for (;;) {
      struct stat sb;
      if (fstat(fd, &sb) == 0 && size_t(sb.st_size) >= hb) {
        if (h == nullptr) {
          void* m = mmap(nullptr, size_t(sb.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
          if (m == MAP_FAILED) {
            const int e = errno;
            close(fd);
            return fail(ncclSystemError, "%s: mmap of %s: %s", call, name.c_str(), std::strerror(e));
          }
          h = static_cast<Header*>(m);
          len = size_t(sb.st_size);
        }
        if (h->magic.load(std::memory_order_acquire) == kSegMagic) break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        close(fd);
        if (h != nullptr) munmap(h, len);
        return fail(ncclSystemError, "%s: timed out after %gs (GOLF_STANDIN_NCCL_TIMEOUT) waiting for %s to be initialised",
                    call, env_seconds("GOLF_STANDIN_NCCL_TIMEOUT", 60), name.c_str());
      }
      pause_for(200);
    }
    close(fd);
    if (len != h->total_bytes) {
      munmap(h, len);
      return fail(ncclInternalError, "%s: %s is %zu bytes, its header says %llu", call, name.c_str(), len,
                  (unsigned long long)h->total_bytes);
    }
    s->h = h;
    s->len = len;
    if (int(h->nranks) != nranks) {
      const int have = int(h->nranks), creator = int(h->creator_pid);
      munmap(h, len);
      s->h = nullptr;
      return fail(ncclInvalidUsage,
                  "%s(nranks %d, rank %d): the communicator of this unique id was created with nranks %d (by pid %d)",
                  call, nranks, rank, have, creator);
    }
    break;
  }
  Header* h = s->h;
  int32_t expect = 0;
  if (!h->ranks[rank].pid.compare_exchange_strong(expect, int32_t(getpid()))) {
    munmap(h, s->len);
    s->h = nullptr;
    return fail(ncclInvalidUsage, "%s(nranks %d, rank %d): rank %d is already attached to this unique id (by pid %d)",
                call, nranks, rank, rank, int(expect));
  }
  h->ranks[rank].state.store(kAttached, std::memory_order_release);
  h->attached.fetch_add(1, std::memory_order_acq_rel);
  return ncclSuccess;
}

ncclResult_t init_rank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const char* call) {
  if (out == nullptr) return fail(ncclInvalidArgument, "%s: comm is NULL", call);
  *out = nullptr;
  if (nranks < 1 || nranks > kMaxRanks)
    return fail(ncclInvalidArgument, "%s: nranks %d outside 1..%d (the stand-in's limit)", call, nranks, kMaxRanks);
  if (rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "%s: rank %d outside 0..%d", call, rank, nranks - 1);
  std::string name;
  if (!parse_id(id, &name)) return fail(ncclInvalidArgument, "%s: the unique id is not one ncclGetUniqueId made", call);
  const double timeout = env_seconds("GOLF_STANDIN_NCCL_TIMEOUT", 60);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout));
  auto c = std::make_shared<Comm>();
  if (ncclResult_t rc = attach(&c->seg, name, nranks, rank, deadline)) {
    c->seg.rank = -1;  // nothing claimed, nothing to leave
    if (c->seg.h != nullptr) munmap(c->seg.h, c->seg.len);
    c->seg.h = nullptr;
    return rc;
  }
  ncclResult_t code = ncclSuccess;
  const std::string what = format("%s(rank %d of %d)", call, rank, nranks);
  const std::string err = wait_all(c.get(), 0, what.c_str(), &code, deadline);
  if (!err.empty()) {
    c->seg.fail_all(err);
    return fail(code, "%s", err.c_str());  // c leaves the segment
  }
  // Every rank has attached: nobody opens the segment by name any more, so
  // it goes now, and a run whose ranks all die leaves nothing behind.
  shm_unlink(name.c_str());
  stats.inits++;
  ncclComm* h = new ncclComm{c};
  std::lock_guard<std::mutex> l(handles_mu);
  handles.insert(h);
  *out = h;
  return ncclSuccess;
}

// release drops a handle (the communicator lives on while queued
// collectives hold it).
ncclResult_t release(ncclComm_t comm, const char* call, bool abort) {
  std::shared_ptr<Comm> c;
  {
    std::lock_guard<std::mutex> l(handles_mu);
    if (comm == nullptr || handles.erase(comm) == 0)
      return fail(ncclInvalidArgument, "%s: %p is not a live communicator", call, static_cast<void*>(comm));
    c = std::move(comm->c);
    delete comm;
  }
  if (abort) {
    // The reason first: the other ranks read it, not this rank's waiting
    // collective's own failure.
    stats.aborts++;
    c->seg.fail_all(format("rank %d aborted the communicator (ncclCommAbort)", c->seg.rank));
    c->aborted.store(true);
  }
  return ncclSuccess;
}

}  // namespace
}  // namespace golf_nccl

using namespace golf_nccl;

GOLF_STANDIN_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = kVersion;
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  std::memset(uniqueId->internal, 0, sizeof uniqueId->internal);
  std::memcpy(uniqueId->internal, kIdMagic, sizeof kIdMagic);
  const int32_t pid = int32_t(getpid());
  std::memcpy(uniqueId->internal + 8, &pid, 4);
  std::random_device rd;
  char name[NCCL_UNIQUE_ID_BYTES - kIdName];
  std::snprintf(name, sizeof name, "%s%d-%08x%08x%08x%08x", kNamePrefix, int(pid), rd(), rd(), rd(), rd());
  std::memcpy(uniqueId->internal + kIdName, name, std::strlen(name) + 1);
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank(comm, nranks, commId, rank, "ncclCommInitRank");
}

GOLF_STANDIN_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                        ncclConfig_t* config) {
  if (config != nullptr) {
    if (config->magic != kConfigMagic)
      return fail(ncclInvalidArgument,
                  "ncclCommInitRankConfig: config's magic is 0x%x, not 0x%x: initialise it with NCCL_CONFIG_INITIALIZER",
                  config->magic, kConfigMagic);
    if (config->size < offsetof(ncclConfig_t, blocking) + sizeof(int) || config->size > 4096)
      return fail(ncclInvalidArgument, "ncclCommInitRankConfig: config's size %zu is not an ncclConfig_t's", config->size);
    if (config->version < 21400 || config->version > kVersion)
      return fail(ncclInvalidArgument, "ncclCommInitRankConfig: config's version %u is not one of 2.14..2.22",
                  config->version);
    if (config->blocking != kConfigUndef && config->blocking != 0 && config->blocking != 1)
      return fail(ncclInvalidArgument, "ncclCommInitRankConfig: config's blocking is %d, not 0 or 1", config->blocking);
  }
  return init_rank(comm, nranks, commId, rank, "ncclCommInitRankConfig");
}

GOLF_STANDIN_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                               cudaStream_t stream) {
  return enqueue_coll("ncclAllReduce", kAllReduce, sendbuff, recvbuff, count, int(datatype), int(op), 0, comm, stream);
}

GOLF_STANDIN_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                               ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return enqueue_coll("ncclBroadcast", kBroadcast, sendbuff, recvbuff, count, int(datatype), ncclSum, root, comm, stream);
}

GOLF_STANDIN_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                                   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                                   cudaStream_t stream) {
  return enqueue_coll("ncclReduceScatter", kReduceScatter, sendbuff, recvbuff, recvcount, int(datatype), int(op), 0,
                      comm, stream);
}

GOLF_STANDIN_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                               ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return enqueue_coll("ncclAllGather", kAllGather, sendbuff, recvbuff, sendcount, int(datatype), ncclSum, 0, comm,
                      stream);
}

GOLF_STANDIN_EXPORT ncclResult_t ncclGroupStart() {
  group_depth++;
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  group_depth--;
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (c == nullptr)
    return fail(ncclInvalidArgument, "ncclCommGetAsyncError: %p is not a live communicator", static_cast<void*>(comm));
  if (asyncError == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  *asyncError = ncclResult_t(c->async.load());
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return release(comm, "ncclCommAbort", true); }

GOLF_STANDIN_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return release(comm, "ncclCommDestroy", false); }

GOLF_STANDIN_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  std::lock_guard<std::mutex> l(handles_mu);
  if (comm == nullptr || handles.count(comm) == 0)
    return fail(ncclInvalidArgument, "ncclCommFinalize: %p is not a live communicator", static_cast<void*>(comm));
  comm->c->finalized = true;
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (c == nullptr) return fail(ncclInvalidArgument, "ncclCommCount: %p is not a live communicator", static_cast<void*>(comm));
  if (count == nullptr) return fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
  *count = c->seg.nranks;
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (c == nullptr)
    return fail(ncclInvalidArgument, "ncclCommCuDevice: %p is not a live communicator", static_cast<void*>(comm));
  if (device == nullptr) return fail(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
  *device = 0;  // the stand-in's one device
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  std::shared_ptr<Comm> c = lookup(comm);
  if (c == nullptr)
    return fail(ncclInvalidArgument, "ncclCommUserRank: %p is not a live communicator", static_cast<void*>(comm));
  if (rank == nullptr) return fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
  *rank = c->seg.rank;
  return ncclSuccess;
}

GOLF_STANDIN_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (ncclGetLastError has the details)";
    case ncclSystemError:
      return "unhandled system error (ncclGetLastError has the details)";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument (ncclGetLastError has the details)";
    case ncclInvalidUsage:
      return "invalid usage (ncclGetLastError has the details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

// ncclGetLastError is the message of the latest failure of any call of
// this process ("" if none); a communicator that has failed answers its
// own first failure.
GOLF_STANDIN_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  thread_local std::string out;
  std::shared_ptr<Comm> c = comm == nullptr ? nullptr : lookup(comm);
  if (c != nullptr) {
    std::lock_guard<std::mutex> l(c->mu);
    if (!c->error.empty()) {
      out = c->error;
      return out.c_str();
    }
  }
  std::lock_guard<std::mutex> l(err_mu);
  out = last_err;
  return out.c_str();
}

// golf_standin_nccl_stats is what the stand-in NCCL counted, for tests:
// communicators initialised, collectives run to completion, all-reduces,
// broadcasts, reduce-scatters and all-gathers queued, send bytes queued,
// collectives that failed, aborts.
GOLF_STANDIN_EXPORT void golf_standin_nccl_stats(uint64_t* out, int n) {
  const uint64_t v[] = {stats.inits,      stats.collectives,     stats.allreduces,
                        stats.broadcasts, stats.reduce_scatters, stats.allgathers,
                        stats.bytes,      stats.failures,        stats.aborts};
  for (int i = 0; i < n && i < int(sizeof v / sizeof v[0]); i++) out[i] = v[i];
}
