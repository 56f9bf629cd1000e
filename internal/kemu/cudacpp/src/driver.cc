// driver.cc: the stand-in CUDA driver (libcuda.so.1's API, the calls golf
// makes), for machines without a GPU. It stands for one sm_80 device and
// checks what a real driver checks, failing loudly (an error code, and a
// message on stderr that golf_standin_last_error returns):
//
//   - cuInit before anything; a context current on the calling thread for
//     every call that needs one (CUDA_ERROR_INVALID_CONTEXT otherwise: the
//     driver keeps the current context per OS thread);
//   - modules: the image is a real cubin (NVRTC's), for an architecture
//     the device runs (same major, minor ≤ the device's:
//     CUDA_ERROR_NO_BINARY_FOR_GPU otherwise); its kernels' registers,
//     launch bounds and static shared memory are read from it (cubin.cc);
//     a kernel that the cubin has but the emulator lacks is an error;
//   - launches: grid and block dimensions within the device's limits,
//     threads ≤ the kernel's launch bounds and the device's 1024,
//     registers × threads (allocated per warp in units of 256) ≤ 65536,
//     static + dynamic shared memory ≤ 48 KiB unless the function's
//     MAX_DYNAMIC_SHARED_SIZE_BYTES allows more, ≤ the device's opt-in
//     limit; kernelParams present, extra absent; every pointer parameter
//     inside a live device allocation, with room for one element, aligned
//     to its element type;
//   - memory: device allocations (cuMemAlloc) have a guard page after
//     their last 256-byte block, so a kernel reading or writing past the
//     end faults; copies stay inside one allocation; asynchronous copies
//     move host memory from and to page-locked memory (cuMemAllocHost)
//     only (golf's rule: a pageable source would be read when the copy
//     runs, long after the call returned);
//   - golf's own rules: work goes to a stream golf created (never the
//     legacy stream 0), and the stand-in never frees memory that queued
//     work uses without running that work first (as cuMemFree's implicit
//     synchronisation does; counted).
//
// The device is infinitely slow: work queued on a stream runs only when
// the host waits for it (cuStreamSynchronize, cuEventSynchronize,
// cuCtxSynchronize), so a host read that forgets to wait, or a staging
// buffer overwritten while a copy from it is queued, gives wrong numbers
// here exactly as it would on a GPU running behind. cuEventQuery reports
// CUDA_ERROR_NOT_READY for work not yet run. A failing kernel (a barrier or
// warp-intrinsic misuse the emulator catches) fails the context like a GPU
// fault: CUDA_ERROR_LAUNCH_FAILED from then on.
//
// Kernels run on the kernel emulator's runtime (runtime.cc), the CUDA
// sources compiled as C++ over cuda_emu.h. GOLF_EMU_RACE=<seed> runs every
// launch under the race detector; GOLF_EMU_WORKERS sets the OS threads;
// GOLF_STANDIN_MEMORY the device's memory in bytes (default 16 GiB).
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kemu.h"
#include "standin.h"

namespace golf_standin {
namespace {

// CUresult values (cuda.h).
enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kInvalidContext = 201,
  kNoBinaryForGPU = 209,
  kInvalidHandle = 400,
  kNotFound = 500,
  kNotReady = 600,
  kLaunchOutOfResources = 701,
  kLaunchFailed = 719,
  kNotSupported = 801,
};

struct ErrorName {
  int code;
  const char* name;
  const char* text;
};
const ErrorName kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kNoBinaryForGPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kNotReady, "CUDA_ERROR_NOT_READY", "device not ready"},
    {kLaunchOutOfResources, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {kLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {kNotSupported, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

// The device: an sm_80 part (A100-like numbers).
constexpr int kMajor = 8, kMinor = 0;
constexpr int kSMs = 108;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kRegistersPerBlock = 65536;
constexpr int kRegisterUnit = 256;
constexpr int kStaticSharedMax = 48 << 10;
constexpr int kSharedOptin = 163 << 10;
constexpr int kSharedPerSM = 164 << 10;
constexpr int kDriverVersion = 12040;  // what cuDriverGetVersion reports: 12.4

struct Alloc {
  uint64_t base;
  uint64_t size;
  void* map;
  size_t maplen;
};

struct Op {
  uint64_t seq;
  std::string what;
  std::function<bool(std::string*)> run;  // nullptr: an event marker
  // A cuStreamWaitEvent: the work of stream wait_stream up to wait_seq
  // (the event's record as the call found it) runs first.
  uintptr_t wait_stream = 0;
  uint64_t wait_seq = 0;
};

struct Stream {
  std::deque<Op> queue;
  // eager: the stream's work runs as soon as it is queued, as far as its
  // waits allow (GOLF_STANDIN_EAGER_STREAMS: every stream but the first),
  // as on a GPU where that stream is fast and the first one slow.
  bool eager = false;
  uint64_t next = 1;  // sequence of the next op
  uint64_t done = 0;  // every op with seq ≤ done has run
};

struct Event {
  uintptr_t stream = 0;
  uint64_t seq = 0;  // 0: never recorded
  std::chrono::steady_clock::time_point when{};
};

struct Function {
  const KernelDef* def;
  CubinKernel res;
  std::string name;
  int max_dynamic_shared;  // MAX_DYNAMIC_SHARED_SIZE_BYTES
  uintptr_t module;
};

struct Module {
  Cubin cubin;
  std::map<std::string, std::unique_ptr<Function>> funcs;
};

struct Stats {
  uint64_t launches, syncs, blocking_syncs, not_ready, allocs, frees, implicit_syncs, host_allocs;
  uint64_t htod_bytes, dtoh_bytes, copies, memsets, matmuls, ops_run;
};

struct State {
  std::recursive_mutex mu;
  bool initialised = false;
  int ctx_refs = 0;
  int sticky = kSuccess;
  std::string last_error;
  std::map<uint64_t, Alloc> device;     // by base
  std::map<uint64_t, Alloc> host;       // pinned, by base
  uint64_t device_bytes = 0;
  uint64_t total_mem = uint64_t(16) << 30;
  std::map<uintptr_t, std::unique_ptr<Stream>> streams;
  std::map<uintptr_t, std::unique_ptr<Event>> events;
  std::map<uintptr_t, std::unique_ptr<Module>> modules;
  std::map<uintptr_t, Function*> functions;
  std::map<std::string, const KernelDef*> registry;
  std::map<std::string, uint64_t> runs;  // kernel launches run to completion, by name
  uintptr_t next_handle = 0x1000;
  Stats stats{};
  int workers = 0;
  // devices is how many ordinals the stand-in reports (GOLF_STANDIN_DEVICES,
  // default 1): each is the same emulated device, so that every process
  // of a multi-process test can open the device its LOCAL_RANK names (a
  // process opens one).
  int devices = 1;
  bool eager_streams = false;  // GOLF_STANDIN_EAGER_STREAMS=1
  bool race = false;
  uint64_t race_seed = 0;
};

State& state() {
  static State* s = [] {
    State* st = new State;
    for (int t = 0; t < kTableCount; t++)
      for (int i = 0; i < kTables[t].count; i++) st->registry[kTables[t].kernels[i].name] = &kTables[t].kernels[i];
    if (const char* m = std::getenv("GOLF_STANDIN_MEMORY")) st->total_mem = std::strtoull(m, nullptr, 10);
    if (const char* w = std::getenv("GOLF_EMU_WORKERS")) st->workers = std::atoi(w);
    if (const char* d = std::getenv("GOLF_STANDIN_DEVICES")) st->devices = std::atoi(d);
    if (st->devices < 1 || st->devices > 64) st->devices = 1;
    if (const char* e = std::getenv("GOLF_STANDIN_EAGER_STREAMS")) st->eager_streams = std::strcmp(e, "1") == 0;
    if (st->workers < 1) st->workers = int(std::thread::hardware_concurrency());
    if (st->workers < 1) st->workers = 1;
    if (const char* r = std::getenv("GOLF_EMU_RACE")) {
      st->race_seed = std::strtoull(r, nullptr, 10);
      st->race = st->race_seed != 0;
    }
    return st;
  }();
  return *s;
}

// The context token PrimaryCtxRetain hands out, current per OS thread.
const uintptr_t kContext = 0xc0;
thread_local uintptr_t tl_current = 0;

int fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
int fail(int code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  note_error(buf);
  return code;
}

// ready checks the state every context call needs.
int ready(const char* call) {
  State& s = state();
  if (!s.initialised) return fail(kNotInitialized, "%s before cuInit", call);
  if (tl_current != kContext)
    return fail(kInvalidContext,
                "%s on an OS thread without the context current (the driver keeps the current context per thread)",
                call);
  if (s.sticky != kSuccess) return s.sticky;
  return kSuccess;
}

const Alloc* find_alloc(const std::map<uint64_t, Alloc>& m, uint64_t p) {
  auto it = m.upper_bound(p);
  if (it == m.begin()) return nullptr;
  --it;
  if (p >= it->second.base && p < it->second.base + it->second.size) return &it->second;
  return nullptr;
}

bool in_one(const std::map<uint64_t, Alloc>& m, uint64_t p, uint64_t bytes, const char* kind, std::string* why) {
  const Alloc* a = find_alloc(m, p);
  char buf[256];
  if (a == nullptr) {
    std::snprintf(buf, sizeof buf, "0x%llx is not inside any live %s allocation", (unsigned long long)p, kind);
    *why = buf;
    return false;
  }
  if (bytes > a->base + a->size - p) {
    std::snprintf(buf, sizeof buf,
                  "[0x%llx, +%llu) runs past the end of its %s allocation (0x%llx, %llu bytes)",
                  (unsigned long long)p, (unsigned long long)bytes, kind, (unsigned long long)a->base,
                  (unsigned long long)a->size);
    *why = buf;
    return false;
  }
  return true;
}

// run_stream runs the queued work of st up to sequence upto; false when a
// piece of work fails (the context then fails).
Stream* find_stream(uintptr_t h);

bool run_stream(Stream& st, uint64_t upto) {
  State& s = state();
  while (!st.queue.empty() && st.queue.front().seq <= upto) {
    Op op = std::move(st.queue.front());
    st.queue.pop_front();
    st.done = op.seq;
    if (op.wait_stream != 0) {
      // The waited-for work runs first (a destroyed stream's ran already).
      if (Stream* o = find_stream(op.wait_stream); o != nullptr && !run_stream(*o, op.wait_seq)) {
        st.queue.clear();
        return false;
      }
      continue;
    }
    if (!op.run) continue;
    s.stats.ops_run++;
    std::string err;
    if (!op.run(&err)) {
      s.sticky = kLaunchFailed;
      note_error(op.what + ": " + err);
      st.queue.clear();
      return false;
    }
  }
  if (st.queue.empty()) st.done = st.next - 1;
  return true;
}

bool run_all() {
  for (auto& kv : state().streams)
    if (!run_stream(*kv.second, UINT64_MAX)) return false;
  return true;
}

bool pending(const Stream& st) { return !st.queue.empty(); }

bool any_pending() {
  for (auto& kv : state().streams)
    if (pending(*kv.second)) return true;
  return false;
}

uintptr_t new_handle() { return state().next_handle += 0x10; }

Stream* find_stream(uintptr_t h) {
  auto it = state().streams.find(h);
  return it == state().streams.end() ? nullptr : it->second.get();
}

int check_stream(uintptr_t h, const char* call, Stream** out) {
  if (h == 0)
    return fail(kInvalidHandle, "%s on the legacy default stream 0: golf queues all work on the stream it created",
                call);
  Stream* st = find_stream(h);
  if (st == nullptr) return fail(kInvalidHandle, "%s: 0x%llx is not a live stream", call, (unsigned long long)h);
  *out = st;
  return kSuccess;
}

// advance runs an eager stream's queued work up to its first wait whose
// work has not run.
void advance(Stream* st) {
  while (!st->queue.empty()) {
    const Op& f = st->queue.front();
    if (f.wait_stream != 0) {
      Stream* o = find_stream(f.wait_stream);
      if (o != nullptr && o->done < f.wait_seq) return;
    }
    if (!run_stream(*st, f.seq)) return;
  }
}

void push(Stream* st, std::string what, std::function<bool(std::string*)> run) {
  st->queue.push_back(Op{st->next++, std::move(what), std::move(run)});
  if (st->eager) advance(st);
}

// launch_run runs a kernel on the emulator.
bool launch_run(const Function* f, const uint32_t grid[3], const uint32_t block[3], std::vector<uint64_t>& storage,
                const std::vector<size_t>& offsets, std::string* err) {
  State& s = state();
  std::vector<void*> args(offsets.size() + 1);
  for (size_t i = 0; i < offsets.size(); i++)
    args[i] = reinterpret_cast<char*>(storage.data()) + offsets[i];
  char buf[2048];
  buf[0] = 0;
  int rc;
  if (s.race) {
    // Every allocation a pointer argument lands in may be written.
    std::vector<golf_emu_region> regions;
    std::vector<std::string> labels;
    std::set<uint64_t> seen;
    for (int i = 0; i < f->def->nparams; i++) {
      if (!f->def->params[i].pointer) continue;
      uint64_t p;
      std::memcpy(&p, args[size_t(i)], 8);
      const Alloc* a = find_alloc(s.device, p);
      if (a == nullptr || !seen.insert(a->base).second) continue;
      labels.push_back("argument " + std::to_string(i) + "'s allocation");
      regions.push_back(golf_emu_region{reinterpret_cast<void*>(a->base), size_t(a->size), nullptr});
    }
    for (size_t i = 0; i < regions.size(); i++) regions[i].label = labels[i].c_str();
    rc = golf_emu_dispatch_race(&f->def->entry, grid, block, args.data(), int(offsets.size()), s.workers,
                                s.race_seed, regions.data(), int(regions.size()), "blocks",
                                "a missing __syncthreads (or __syncwarp) between a write and a read of another "
                                "thread, or a read of shared memory that no thread wrote",
                                buf, sizeof buf);
  } else {
    rc = golf_emu_dispatch(&f->def->entry, grid, block, args.data(), int(offsets.size()), s.workers, 0, 0, buf,
                           sizeof buf);
  }
  if (rc != 0) {
    *err = buf;
    return false;
  }
  s.runs[f->name]++;
  return true;
}

// guard_alloc maps size bytes whose last 256-byte block ends at a guard
// page (PROT_NONE), with a guard page before the first too.
void* guard_alloc(uint64_t size, Alloc* a) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const uint64_t rounded = (size + 255) / 256 * 256;
  const size_t body = size_t((rounded + page - 1) / page * page);
  const size_t len = body + 2 * page;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  mprotect(m, page, PROT_NONE);
  mprotect(static_cast<char*>(m) + page + body, page, PROT_NONE);
  char* p = static_cast<char*>(m) + page + (body - rounded);
  a->base = reinterpret_cast<uint64_t>(p);
  a->size = size;
  a->map = m;
  a->maplen = len;
  return p;
}

}  // namespace

void note_error(const std::string& msg) {
  State& s = state();
  s.last_error = msg;
  std::fprintf(stderr, "golf stand-in driver: %s\n", msg.c_str());
}

bool device_range(uint64_t p, uint64_t bytes, std::string* why) {
  return in_one(state().device, p, bytes, "device", why);
}

bool stream_ok(uintptr_t s) { return s != 0 && find_stream(s) != nullptr; }

void enqueue(uintptr_t s, const char* what, std::function<bool(std::string*)> run) {
  push(find_stream(s), what, std::move(run));
}

bool context_current() { return state().initialised && tl_current == kContext; }

std::recursive_mutex& driver_mutex() { return state().mu; }

bool context_failed() { return state().sticky != kSuccess; }

}  // namespace golf_standin

using namespace golf_standin;

#define LOCK std::lock_guard<std::recursive_mutex> lock_(state().mu)
#define READY(call)                    \
  do {                                 \
    if (int rc_ = ready(call)) return rc_; \
  } while (0)

GOLF_STANDIN_EXPORT int cuGetErrorName(int res, const char** s) {
  for (const ErrorName& e : kErrors)
    if (e.code == res) {
      *s = e.name;
      return kSuccess;
    }
  *s = nullptr;
  return kInvalidValue;
}

GOLF_STANDIN_EXPORT int cuGetErrorString(int res, const char** s) {
  for (const ErrorName& e : kErrors)
    if (e.code == res) {
      *s = e.text;
      return kSuccess;
    }
  *s = nullptr;
  return kInvalidValue;
}

GOLF_STANDIN_EXPORT int cuInit(unsigned flags) {
  LOCK;
  if (flags != 0) return fail(kInvalidValue, "cuInit(%u): flags must be 0", flags);
  state().initialised = true;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuDriverGetVersion(int* v) {
  if (v == nullptr) return kInvalidValue;
  *v = kDriverVersion;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuDeviceGetCount(int* n) {
  LOCK;
  if (!state().initialised) return fail(kNotInitialized, "cuDeviceGetCount before cuInit");
  *n = state().devices;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuDeviceGet(int* d, int ordinal) {
  LOCK;
  if (!state().initialised) return fail(kNotInitialized, "cuDeviceGet before cuInit");
  if (ordinal < 0 || ordinal >= state().devices)
    return fail(kInvalidDevice, "cuDeviceGet(%d): the stand-in has %d device(s) (GOLF_STANDIN_DEVICES)", ordinal,
                state().devices);
  *d = ordinal;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuDeviceGetName(char* name, int n, int d) {
  LOCK;
  if (!state().initialised) return kNotInitialized;
  if (d < 0 || d >= state().devices) return kInvalidDevice;
  if (name == nullptr || n <= 0) return kInvalidValue;
  std::snprintf(name, size_t(n), "golf stand-in (emulated sm_%d%d)", kMajor, kMinor);
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuDeviceTotalMem_v2(size_t* bytes, int d) {
  LOCK;
  if (!state().initialised) return kNotInitialized;
  if (d < 0 || d >= state().devices) return kInvalidDevice;
  *bytes = size_t(state().total_mem);
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuDeviceGetAttribute(int* v, int attr, int d) {
  LOCK;
  if (!state().initialised) return kNotInitialized;
  if (d < 0 || d >= state().devices) return kInvalidDevice;
  switch (attr) {
    case 1:  // MAX_THREADS_PER_BLOCK
      *v = kMaxThreadsPerBlock;
      break;
    case 8:  // MAX_SHARED_MEMORY_PER_BLOCK (static)
      *v = kStaticSharedMax;
      break;
    case 12:  // MAX_REGISTERS_PER_BLOCK
      *v = kRegistersPerBlock;
      break;
    case 13:  // CLOCK_RATE (kHz)
      *v = 1410000;
      break;
    case 16:  // MULTIPROCESSOR_COUNT
      *v = kSMs;
      break;
    case 36:  // MEMORY_CLOCK_RATE (kHz)
      *v = 1215000;
      break;
    case 37:  // GLOBAL_MEMORY_BUS_WIDTH
      *v = 5120;
      break;
    case 38:  // L2_CACHE_SIZE
      *v = 40 << 20;
      break;
    case 39:  // MAX_THREADS_PER_MULTIPROCESSOR
      *v = 2048;
      break;
    case 75:  // COMPUTE_CAPABILITY_MAJOR
      *v = kMajor;
      break;
    case 76:  // COMPUTE_CAPABILITY_MINOR
      *v = kMinor;
      break;
    case 81:  // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
      *v = kSharedPerSM;
      break;
    case 97:  // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
      *v = kSharedOptin;
      break;
    case 111:  // RESERVED_SHARED_MEMORY_PER_BLOCK
      *v = 1024;
      break;
    default:
      return fail(kInvalidValue, "cuDeviceGetAttribute(%d): an attribute the stand-in does not know", attr);
  }
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuDevicePrimaryCtxRetain(uintptr_t* ctx, int d) {
  LOCK;
  if (!state().initialised) return fail(kNotInitialized, "cuDevicePrimaryCtxRetain before cuInit");
  if (d < 0 || d >= state().devices) return kInvalidDevice;
  state().ctx_refs++;
  *ctx = kContext;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuDevicePrimaryCtxRelease_v2(int d) {
  LOCK;
  if (d < 0 || d >= state().devices) return kInvalidDevice;
  State& s = state();
  if (s.ctx_refs == 0) return fail(kInvalidContext, "cuDevicePrimaryCtxRelease without a retain");
  if (--s.ctx_refs == 0) {
    // The last release destroys the context with everything in it, a
    // failed one included: the next retain starts a fresh context.
    for (auto& kv : s.device) munmap(kv.second.map, kv.second.maplen);
    for (auto& kv : s.host) munmap(kv.second.map, kv.second.maplen);
    s.device.clear();
    s.host.clear();
    s.device_bytes = 0;
    s.streams.clear();
    s.events.clear();
    s.functions.clear();
    s.modules.clear();
    s.sticky = kSuccess;
  }
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuCtxSetCurrent(uintptr_t ctx) {
  LOCK;
  if (!state().initialised) return fail(kNotInitialized, "cuCtxSetCurrent before cuInit");
  if (ctx != 0 && (ctx != kContext || state().ctx_refs == 0))
    return fail(kInvalidContext, "cuCtxSetCurrent(0x%llx): not a retained context", (unsigned long long)ctx);
  tl_current = ctx;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuCtxSynchronize() {
  LOCK;
  READY("cuCtxSynchronize");
  State& s = state();
  s.stats.syncs++;
  if (any_pending()) s.stats.blocking_syncs++;
  if (!run_all()) return s.sticky;
  return kSuccess;
}

namespace {

// elf_extent is the length of the ELF64 file at b: the furthest end of its
// header tables and sections.
size_t elf_extent(const unsigned char* b) {
  uint64_t shoff, phoff;
  uint16_t phentsize, phnum, shentsize, shnum;
  std::memcpy(&phoff, b + 32, 8);
  std::memcpy(&shoff, b + 40, 8);
  std::memcpy(&phentsize, b + 54, 2);
  std::memcpy(&phnum, b + 56, 2);
  std::memcpy(&shentsize, b + 58, 2);
  std::memcpy(&shnum, b + 60, 2);
  uint64_t end = std::max<uint64_t>(64, std::max(phoff + uint64_t(phentsize) * phnum, shoff + uint64_t(shentsize) * shnum));
  if (shentsize == 64) {
    for (uint16_t i = 0; i < shnum; i++) {
      const unsigned char* h = b + shoff + uint64_t(i) * 64;
      uint32_t type;
      uint64_t off, size;
      std::memcpy(&type, h + 4, 4);
      std::memcpy(&off, h + 24, 8);
      std::memcpy(&size, h + 32, 8);
      if (type != 8 /* SHT_NOBITS */) end = std::max(end, off + size);
    }
  }
  return size_t(end);
}

}  // namespace

GOLF_STANDIN_EXPORT int cuModuleLoadData(uintptr_t* mod, const void* image) {
  LOCK;
  READY("cuModuleLoadData");
  if (image == nullptr) return fail(kInvalidValue, "cuModuleLoadData: no image");
  // The driver is not told the image's length: an ELF file's extent is
  // that of its headers and sections.
  const unsigned char* b = static_cast<const unsigned char*>(image);
  if (std::memcmp(b, "\x7f" "ELF", 4) != 0 || b[4] != 2)
    return fail(kInvalidImage, "cuModuleLoadData: the image is not a cubin (ELF64); golf loads NVRTC's cubins, not PTX");
  const size_t size = elf_extent(b);
  auto m = std::make_unique<Module>();
  std::string err;
  if (!read_cubin(b, size, &m->cubin, &err)) return fail(kInvalidImage, "cuModuleLoadData: %s", err.c_str());
  const int major = m->cubin.arch / 10, minor = m->cubin.arch % 10;
  if (major != kMajor || minor > kMinor)
    return fail(kNoBinaryForGPU, "cuModuleLoadData: the cubin is for sm_%d, the device is sm_%d%d", m->cubin.arch,
                kMajor, kMinor);
  const uintptr_t h = new_handle();
  state().modules[h] = std::move(m);
  *mod = h;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuModuleUnload(uintptr_t mod) {
  LOCK;
  READY("cuModuleUnload");
  State& s = state();
  auto it = s.modules.find(mod);
  if (it == s.modules.end()) return fail(kInvalidHandle, "cuModuleUnload: 0x%llx is not a module", (unsigned long long)mod);
  // Queued launches of its kernels run first.
  if (any_pending()) {
    s.stats.implicit_syncs++;
    if (!run_all()) return s.sticky;
  }
  for (auto& f : it->second->funcs) s.functions.erase(reinterpret_cast<uintptr_t>(f.second.get()));
  s.modules.erase(it);
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuModuleGetFunction(uintptr_t* fn, uintptr_t mod, const char* name) {
  LOCK;
  READY("cuModuleGetFunction");
  State& s = state();
  auto it = s.modules.find(mod);
  if (it == s.modules.end()) return fail(kInvalidHandle, "cuModuleGetFunction: 0x%llx is not a module", (unsigned long long)mod);
  Module& m = *it->second;
  auto k = m.cubin.kernels.find(name);
  if (k == m.cubin.kernels.end()) return fail(kNotFound, "cuModuleGetFunction(%s): no such kernel in the cubin", name);
  auto r = s.registry.find(name);
  if (r == s.registry.end())
    return fail(kNotFound, "cuModuleGetFunction(%s): the cubin has it but the emulator does not (rebuild the stand-in)",
                name);
  auto& slot = m.funcs[name];
  if (!slot) {
    slot = std::make_unique<Function>(Function{r->second, k->second, name, kStaticSharedMax - k->second.static_shared, mod});
    s.functions[reinterpret_cast<uintptr_t>(slot.get())] = slot.get();
  }
  *fn = reinterpret_cast<uintptr_t>(slot.get());
  return kSuccess;
}

namespace {

Function* find_function(uintptr_t f) {
  auto it = state().functions.find(f);
  return it == state().functions.end() ? nullptr : it->second;
}

// max_threads is what the driver allows a block of f: its launch bounds
// (or the device's 1024), lowered to what its registers allow.
int max_threads(const Function& f) {
  int m = f.res.max_threads > 0 ? f.res.max_threads : kMaxThreadsPerBlock;
  const int per_warp = (32 * f.res.registers + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
  if (per_warp > 0) m = std::min(m, kRegistersPerBlock / per_warp * 32);
  return m;
}

}  // namespace

GOLF_STANDIN_EXPORT int cuFuncGetAttribute(int* v, int attr, uintptr_t fn) {
  LOCK;
  READY("cuFuncGetAttribute");
  Function* f = find_function(fn);
  if (f == nullptr) return fail(kInvalidHandle, "cuFuncGetAttribute: 0x%llx is not a function", (unsigned long long)fn);
  switch (attr) {
    case 0:
      *v = max_threads(*f);
      break;
    case 1:
      *v = f->res.static_shared;
      break;
    case 2:  // CONST_SIZE_BYTES
    case 3:  // LOCAL_SIZE_BYTES
      *v = 0;
      break;
    case 4:
      *v = f->res.registers;
      break;
    case 5:  // PTX_VERSION
    case 6:  // BINARY_VERSION
      *v = kMajor * 10 + kMinor;
      break;
    case 8:
      *v = f->max_dynamic_shared;
      break;
    default:
      return fail(kInvalidValue, "cuFuncGetAttribute(%d): an attribute the stand-in does not know", attr);
  }
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuFuncSetAttribute(uintptr_t fn, int attr, int v) {
  LOCK;
  READY("cuFuncSetAttribute");
  Function* f = find_function(fn);
  if (f == nullptr) return fail(kInvalidHandle, "cuFuncSetAttribute: 0x%llx is not a function", (unsigned long long)fn);
  if (attr != 8) return fail(kInvalidValue, "cuFuncSetAttribute(%d): the stand-in sets only MAX_DYNAMIC_SHARED_SIZE_BYTES", attr);
  if (v < 0 || v + f->res.static_shared > kSharedOptin)
    return fail(kInvalidValue, "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %d): %d static + %d dynamic exceeds the device's %d",
                f->name.c_str(), v, f->res.static_shared, v, kSharedOptin);
  f->max_dynamic_shared = v;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuLaunchKernel(uintptr_t fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                       unsigned bz, unsigned shared, uintptr_t stream, void** params, void** extra) {
  LOCK;
  READY("cuLaunchKernel");
  State& s = state();
  Function* f = find_function(fn);
  if (f == nullptr) return fail(kInvalidHandle, "cuLaunchKernel: 0x%llx is not a function", (unsigned long long)fn);
  const char* name = f->name.c_str();
  Stream* st;
  if (int rc = check_stream(stream, "cuLaunchKernel", &st)) return rc;
  if (gx == 0 || gy == 0 || gz == 0 || gx > 0x7fffffffu || gy > 65535 || gz > 65535)
    return fail(kInvalidValue, "cuLaunchKernel(%s): grid (%u, %u, %u) outside the device's limits", name, gx, gy, gz);
  const uint64_t threads = uint64_t(bx) * by * bz;
  if (bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || threads > kMaxThreadsPerBlock)
    return fail(kInvalidValue, "cuLaunchKernel(%s): block (%u, %u, %u) outside the device's limits", name, bx, by, bz);
  if (f->res.max_threads > 0 && threads > uint64_t(f->res.max_threads))
    return fail(kInvalidValue, "cuLaunchKernel(%s): %llu threads per block exceed the kernel's launch bounds (%d)", name,
                (unsigned long long)threads, f->res.max_threads);
  const int per_warp = (32 * f->res.registers + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
  if (uint64_t(per_warp) * ((threads + 31) / 32) > uint64_t(kRegistersPerBlock))
    return fail(kLaunchOutOfResources, "cuLaunchKernel(%s): %d registers × %llu threads exceed the block's %d registers",
                name, f->res.registers, (unsigned long long)threads, kRegistersPerBlock);
  if (int(shared) > f->max_dynamic_shared)
    return fail(kInvalidValue,
                "cuLaunchKernel(%s): %u bytes of dynamic shared memory, the function allows %d "
                "(cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                name, shared, f->max_dynamic_shared);
  if (uint64_t(shared) + uint64_t(f->res.static_shared) > uint64_t(kSharedOptin))
    return fail(kInvalidValue, "cuLaunchKernel(%s): %d static + %u dynamic bytes of shared memory exceed the device's %d",
                name, f->res.static_shared, shared, kSharedOptin);
  if (extra != nullptr) return fail(kInvalidValue, "cuLaunchKernel(%s): golf passes kernelParams, never extra", name);
  const KernelDef* d = f->def;
  if (d->nparams > 0 && params == nullptr) return fail(kInvalidValue, "cuLaunchKernel(%s): no kernelParams", name);
  // The arguments are copied now, as the driver does: the caller may reuse
  // its parameter memory as soon as the call returns.
  std::vector<size_t> offsets(size_t(d->nparams));
  size_t total = 0;
  for (int i = 0; i < d->nparams; i++) {
    const Param& p = d->params[i];
    const size_t align = p.pointer ? 8 : std::max<size_t>(p.align, 1);
    total = (total + align - 1) / align * align;
    offsets[size_t(i)] = total;
    total += p.pointer ? 8 : p.size;
  }
  auto storage = std::make_shared<std::vector<uint64_t>>((total + 7) / 8 + 1);
  for (int i = 0; i < d->nparams; i++) {
    const Param& p = d->params[i];
    if (params[i] == nullptr) return fail(kInvalidValue, "cuLaunchKernel(%s): kernelParams[%d] is null", name, i);
    char* dst = reinterpret_cast<char*>(storage->data()) + offsets[size_t(i)];
    std::memcpy(dst, params[i], p.pointer ? 8 : p.size);
    if (!p.pointer) continue;
    uint64_t ptr;
    std::memcpy(&ptr, dst, 8);
    std::string why;
    if (!device_range(ptr, p.size, &why))
      return fail(kInvalidValue, "cuLaunchKernel(%s): pointer argument %d: %s", name, i, why.c_str());
    if (ptr % p.align != 0)
      return fail(kInvalidValue, "cuLaunchKernel(%s): pointer argument %d (0x%llx) is not aligned to its %u-byte elements",
                  name, i, (unsigned long long)ptr, p.align);
  }
  s.stats.launches++;
  const std::array<uint32_t, 3> grid{gx, gy, gz}, block{bx, by, bz};
  char what[256];
  std::snprintf(what, sizeof what, "kernel %s, grid (%u, %u, %u), block (%u, %u, %u)", name, gx, gy, gz, bx, by, bz);
  push(st, what, [f, grid, block, storage, offsets](std::string* err) {
    return launch_run(f, grid.data(), block.data(), *storage, offsets, err);
  });
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuMemAlloc_v2(uint64_t* p, size_t bytes) {
  LOCK;
  READY("cuMemAlloc");
  State& s = state();
  if (bytes == 0) return fail(kInvalidValue, "cuMemAlloc(0)");
  if (s.device_bytes + bytes > s.total_mem)
    return fail(kOutOfMemory, "cuMemAlloc(%zu): %llu of %llu bytes in use", bytes, (unsigned long long)s.device_bytes,
                (unsigned long long)s.total_mem);
  Alloc a;
  if (guard_alloc(bytes, &a) == nullptr) return fail(kOutOfMemory, "cuMemAlloc(%zu): mmap failed", bytes);
  s.device[a.base] = a;
  s.device_bytes += bytes;
  s.stats.allocs++;
  *p = a.base;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuMemFree_v2(uint64_t p) {
  LOCK;
  READY("cuMemFree");
  State& s = state();
  auto it = s.device.find(p);
  if (it == s.device.end())
    return fail(kInvalidValue, "cuMemFree(0x%llx): not the start of a live allocation", (unsigned long long)p);
  if (any_pending()) {
    s.stats.implicit_syncs++;
    if (!run_all()) return s.sticky;
  }
  munmap(it->second.map, it->second.maplen);
  s.device_bytes -= it->second.size;
  s.device.erase(it);
  s.stats.frees++;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuMemAllocHost_v2(void** p, size_t bytes) {
  LOCK;
  READY("cuMemAllocHost");
  if (bytes == 0) return fail(kInvalidValue, "cuMemAllocHost(0)");
  Alloc a;
  if (guard_alloc(bytes, &a) == nullptr) return fail(kOutOfMemory, "cuMemAllocHost(%zu): mmap failed", bytes);
  state().host[a.base] = a;
  state().stats.host_allocs++;
  *p = reinterpret_cast<void*>(a.base);
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuMemFreeHost(void* p) {
  LOCK;
  READY("cuMemFreeHost");
  State& s = state();
  auto it = s.host.find(reinterpret_cast<uint64_t>(p));
  if (it == s.host.end()) return fail(kInvalidValue, "cuMemFreeHost(%p): not page-locked memory from cuMemAllocHost", p);
  if (any_pending()) {
    s.stats.implicit_syncs++;
    if (!run_all()) return s.sticky;
  }
  munmap(it->second.map, it->second.maplen);
  s.host.erase(it);
  return kSuccess;
}

namespace {

int copy_checks(const char* call, uint64_t dst, bool dst_dev, uint64_t src, bool src_dev, size_t bytes) {
  State& s = state();
  std::string why;
  if (bytes == 0) return kSuccess;
  if (!in_one(dst_dev ? s.device : s.host, dst, bytes, dst_dev ? "device" : "page-locked host", &why))
    return fail(kInvalidValue, "%s: destination %s", call, why.c_str());
  if (!in_one(src_dev ? s.device : s.host, src, bytes, src_dev ? "device" : "page-locked host", &why))
    return fail(kInvalidValue, "%s: source %s", call, why.c_str());
  return kSuccess;
}

int copy(const char* call, uint64_t dst, bool dst_dev, uint64_t src, bool src_dev, size_t bytes, uintptr_t stream) {
  Stream* st;
  if (int rc = check_stream(stream, call, &st)) return rc;
  if (int rc = copy_checks(call, dst, dst_dev, src, src_dev, bytes)) return rc;
  State& s = state();
  s.stats.copies++;
  if (!dst_dev) s.stats.dtoh_bytes += bytes;
  if (!src_dev) s.stats.htod_bytes += bytes;
  push(st, call, [dst, src, bytes](std::string*) {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return true;
  });
  return kSuccess;
}

}  // namespace

GOLF_STANDIN_EXPORT int cuMemcpyHtoDAsync_v2(uint64_t dst, const void* src, size_t bytes, uintptr_t stream) {
  LOCK;
  READY("cuMemcpyHtoDAsync");
  return copy("cuMemcpyHtoDAsync", dst, true, reinterpret_cast<uint64_t>(src), false, bytes, stream);
}

GOLF_STANDIN_EXPORT int cuMemcpyDtoHAsync_v2(void* dst, uint64_t src, size_t bytes, uintptr_t stream) {
  LOCK;
  READY("cuMemcpyDtoHAsync");
  return copy("cuMemcpyDtoHAsync", reinterpret_cast<uint64_t>(dst), false, src, true, bytes, stream);
}

GOLF_STANDIN_EXPORT int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, uintptr_t stream) {
  LOCK;
  READY("cuMemcpyDtoDAsync");
  return copy("cuMemcpyDtoDAsync", dst, true, src, true, bytes, stream);
}

GOLF_STANDIN_EXPORT int cuMemsetD8Async(uint64_t dst, unsigned char v, size_t n, uintptr_t stream) {
  LOCK;
  READY("cuMemsetD8Async");
  Stream* st;
  if (int rc = check_stream(stream, "cuMemsetD8Async", &st)) return rc;
  std::string why;
  if (n > 0 && !device_range(dst, n, &why)) return fail(kInvalidValue, "cuMemsetD8Async: %s", why.c_str());
  state().stats.memsets++;
  push(st, "cuMemsetD8Async", [dst, v, n](std::string*) {
    std::memset(reinterpret_cast<void*>(dst), v, n);
    return true;
  });
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuStreamCreate(uintptr_t* stream, unsigned flags) {
  LOCK;
  READY("cuStreamCreate");
  if (flags > 1) return fail(kInvalidValue, "cuStreamCreate: flags 0x%x", flags);
  const uintptr_t h = new_handle();
  auto st = std::make_unique<Stream>();
  st->eager = state().eager_streams && !state().streams.empty();
  state().streams[h] = std::move(st);
  *stream = h;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuStreamDestroy_v2(uintptr_t stream) {
  LOCK;
  READY("cuStreamDestroy");
  Stream* st;
  if (int rc = check_stream(stream, "cuStreamDestroy", &st)) return rc;
  // The driver lets queued work finish; here it runs now.
  if (pending(*st)) state().stats.implicit_syncs++;
  if (!run_stream(*st, UINT64_MAX)) return state().sticky;
  state().streams.erase(stream);
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuStreamSynchronize(uintptr_t stream) {
  LOCK;
  READY("cuStreamSynchronize");
  Stream* st;
  if (int rc = check_stream(stream, "cuStreamSynchronize", &st)) return rc;
  State& s = state();
  s.stats.syncs++;
  if (pending(*st)) s.stats.blocking_syncs++;
  if (!run_stream(*st, UINT64_MAX)) return s.sticky;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuEventCreate(uintptr_t* ev, unsigned flags) {
  LOCK;
  READY("cuEventCreate");
  if (flags & ~0x7u) return fail(kInvalidValue, "cuEventCreate: flags 0x%x", flags);
  const uintptr_t h = new_handle();
  state().events[h] = std::make_unique<Event>();
  *ev = h;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuEventDestroy_v2(uintptr_t ev) {
  LOCK;
  READY("cuEventDestroy");
  if (state().events.erase(ev) == 0) return fail(kInvalidHandle, "cuEventDestroy: 0x%llx is not an event", (unsigned long long)ev);
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuEventRecord(uintptr_t ev, uintptr_t stream) {
  LOCK;
  READY("cuEventRecord");
  auto it = state().events.find(ev);
  if (it == state().events.end()) return fail(kInvalidHandle, "cuEventRecord: 0x%llx is not an event", (unsigned long long)ev);
  Stream* st;
  if (int rc = check_stream(stream, "cuEventRecord", &st)) return rc;
  Event* e = it->second.get();
  e->stream = stream;
  e->seq = st->next;
  push(st, "cuEventRecord", [e](std::string*) {
    e->when = std::chrono::steady_clock::now();
    return true;
  });
  return kSuccess;
}

namespace {

Event* find_event(uintptr_t ev) {
  auto it = state().events.find(ev);
  return it == state().events.end() ? nullptr : it->second.get();
}

}  // namespace

// cuStreamWaitEvent: the work queued on stream after this call waits for
// the work before the event's latest record (as of this call); an event
// never recorded is no wait.
GOLF_STANDIN_EXPORT int cuStreamWaitEvent(uintptr_t stream, uintptr_t ev, unsigned flags) {
  LOCK;
  READY("cuStreamWaitEvent");
  if (flags != 0) return fail(kInvalidValue, "cuStreamWaitEvent: flags 0x%x", flags);
  Stream* st;
  if (int rc = check_stream(stream, "cuStreamWaitEvent", &st)) return rc;
  Event* e = find_event(ev);
  if (e == nullptr) return fail(kInvalidHandle, "cuStreamWaitEvent: 0x%llx is not an event", (unsigned long long)ev);
  if (e->seq == 0) return kSuccess;
  st->queue.push_back(Op{st->next++, "cuStreamWaitEvent", nullptr, e->stream, e->seq});
  if (st->eager) advance(st);
  return kSuccess;
}

namespace {

bool event_done(const Event& e) {
  if (e.seq == 0) return true;
  Stream* st = find_stream(e.stream);
  return st == nullptr || st->done >= e.seq;
}

}  // namespace

GOLF_STANDIN_EXPORT int cuEventQuery(uintptr_t ev) {
  LOCK;
  READY("cuEventQuery");
  Event* e = find_event(ev);
  if (e == nullptr) return fail(kInvalidHandle, "cuEventQuery: 0x%llx is not an event", (unsigned long long)ev);
  if (event_done(*e)) return kSuccess;
  state().stats.not_ready++;
  return kNotReady;
}

GOLF_STANDIN_EXPORT int cuEventSynchronize(uintptr_t ev) {
  LOCK;
  READY("cuEventSynchronize");
  Event* e = find_event(ev);
  if (e == nullptr) return fail(kInvalidHandle, "cuEventSynchronize: 0x%llx is not an event", (unsigned long long)ev);
  State& s = state();
  s.stats.syncs++;
  if (event_done(*e)) return kSuccess;
  s.stats.blocking_syncs++;
  if (!run_stream(*find_stream(e->stream), e->seq)) return s.sticky;
  return kSuccess;
}

GOLF_STANDIN_EXPORT int cuEventElapsedTime(float* ms, uintptr_t start, uintptr_t end) {
  LOCK;
  READY("cuEventElapsedTime");
  Event *a = find_event(start), *b = find_event(end);
  if (a == nullptr || b == nullptr) return fail(kInvalidHandle, "cuEventElapsedTime: not an event");
  if (a->seq == 0 || b->seq == 0) return fail(kInvalidHandle, "cuEventElapsedTime: an event never recorded");
  if (!event_done(*a) || !event_done(*b)) return kNotReady;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return kSuccess;
}

// golf_standin_stats is what the stand-in counted, for tests: launches,
// synchronising calls (stream, event, context), those that found work
// still queued (the host waited), event queries that found work queued,
// device allocations and frees, implicit synchronisations (a free or an
// unload with work queued), page-locked allocations, bytes copied to and
// from the device, copies, memsets, cuBLASLt matmuls, and queued
// operations run.
GOLF_STANDIN_EXPORT void golf_standin_stats(uint64_t* out, int n) {
  LOCK;
  const Stats& s = state().stats;
  const uint64_t v[] = {s.launches, s.syncs,      s.blocking_syncs, s.not_ready, s.allocs,
                        s.frees,    s.implicit_syncs, s.host_allocs, s.htod_bytes, s.dtoh_bytes,
                        s.copies,   s.memsets,    s.matmuls,        s.ops_run};
  for (int i = 0; i < n && i < int(sizeof v / sizeof v[0]); i++) out[i] = v[i];
}

// count_matmul counts a cuBLASLt matmul (cublaslt.cc).
void golf_standin::count_matmul() { state().stats.matmuls++; }

// golf_standin_last_error is the message of the latest failure ("" if
// none).
GOLF_STANDIN_EXPORT const char* golf_standin_last_error() {
  LOCK;
  return state().last_error.c_str();
}

// golf_standin_kernels lists the emulated kernels, one name a line.
GOLF_STANDIN_EXPORT const char* golf_standin_kernels() {
  LOCK;
  static std::string out;
  out.clear();
  for (auto& kv : state().registry) out += kv.first + "\n";
  return out.c_str();
}

// golf_standin_kernel_runs lists, one "name count" a line, how many
// launches of each kernel have run to completion, for the tests that show
// every kernel of a library ran.
GOLF_STANDIN_EXPORT const char* golf_standin_kernel_runs() {
  LOCK;
  static std::string out;
  out.clear();
  for (auto& kv : state().runs) out += kv.first + " " + std::to_string(kv.second) + "\n";
  return out.c_str();
}

// golf_standin_function_resources reports what the stand-in read from the
// cubin for a function (registers, launch bounds, static shared memory),
// for the test that compares its reader with package cuda's.
GOLF_STANDIN_EXPORT int golf_standin_function_resources(uintptr_t fn, int* regs, int* max_threads, int* shared) {
  LOCK;
  Function* f = find_function(fn);
  if (f == nullptr) return kInvalidHandle;
  *regs = f->res.registers;
  *max_threads = f->res.max_threads;
  *shared = f->res.static_shared;
  return kSuccess;
}
