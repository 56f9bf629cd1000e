// runtime.cc: the kernel emulator's dispatch runtime, shared by every kernel
// language (MSL threadgroups and simdgroups, CUDA blocks and warps).
//
// A dispatch is a grid of threadgroups. A pool of OS threads (workers)
// takes threadgroups one at a time from a shared counter. A worker runs the
// T threads of its threadgroup as fibers on T stacks of its own (allocated
// once, reused), with a round-robin scheduler: a fiber runs until it
// returns from the kernel or blocks at a barrier or simdgroup collective.
//
//   threadgroup_barrier: a thread blocks until all T threads have arrived at
//     the same call site; the last one releases them all. A thread that has
//     returned while others wait (or arrive later), or threads at different
//     barrier sites, fail the dispatch.
//   collectives (simd_*, simdgroup_barrier, simdgroup_matrix operations): a
//     lane deposits pointers to its operand and result and blocks; when every
//     lane of its simdgroup that has not returned is waiting at the same call
//     site, the last arrival (or the last lane to return) computes all
//     results and releases the lanes. Lanes at different collectives fail
//     the dispatch.
//   deadlock: when no fiber can run and some have not returned, the
//     dispatch fails with a summary of where the threads wait.
//
// Every error names the kernel and the threadgroup position. An error stops
// the dispatch: no further threadgroup starts, those running finish, and
// the error of the failing threadgroup of lowest index is reported.
//
// Schedules. By default (kScheduleInOrder) the ready fibers run first in,
// first out, and the thread that completes a barrier or a collective runs
// on. The race detector (golf_emu_dispatch's schedule argument) runs the
// same dispatch under other orders: kScheduleReverse takes the most recently
// readied fiber first (so threads run from the highest index down between
// synchronisation points), kScheduleRandom a uniformly random ready fiber
// (a xorshift generator seeded by the seed and the threadgroup's index, so a
// run is reproducible). In both, the thread that completes a barrier or a
// collective yields too, so that the order of every thread after it is the
// schedule's. A kernel whose threads communicate only across barriers gives
// bit-identical results under every schedule.
#include "runtime.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fiber.h"
#include "kemu.h"

namespace golf_emu {

namespace {

constexpr size_t kStackSize = size_t(128) << 10;
constexpr uint32_t kMaxThreads = 1024;

enum class State : uint8_t { Ready, Running, Barrier, Collective, Done };

enum Schedule : int { kScheduleInOrder = 0, kScheduleReverse = 1, kScheduleRandom = 2 };

struct Fiber {
  Context ctx;
  ThreadCtx t;
  State state;
  uint32_t tid;
  uint32_t lane;
  uint32_t sg;
  const char* what;  // where it waits
  const char* file;
  unsigned line;
};

struct SimdState {
  uint32_t sg;
  uint32_t live;     // lanes that have not returned
  uint32_t waiting;  // lanes arrived at the pending collective
  CollectiveFn fn;
  const char* what;
  const char* file;
  unsigned line;
  uint32_t first;  // first lane that arrived
  Lanes lanes;
};

struct Group {
  const KernelEntry* kernel;
  void* const* buffers;
  uint32_t pos[3];
  uint32_t n;
  uint32_t done;
  uint32_t first_done;
  uint32_t tg_waiting;
  uint32_t tg_first;
  const char* tg_file;
  unsigned tg_line;
  bool failed;
  std::string error;
  std::vector<Fiber> fibers;
  std::vector<SimdState> simd;
  std::vector<uint32_t> ready;
  size_t ready_head;
  int schedule;
  uint64_t rng;
  Context sched;
};

thread_local Group* tl_group = nullptr;
thread_local Fiber* tl_fiber = nullptr;

bool same_site(const char* f1, unsigned l1, const char* f2, unsigned l2) {
  return l1 == l2 && (f1 == f2 || std::strcmp(f1, f2) == 0);
}

void push_ready(Group* g, Fiber* f) {
  f->state = State::Ready;
  g->ready.push_back(f->tid);
}

void yield(Group* g, Fiber* f) { context_switch(&f->ctx, &g->sched); }

// next_ready takes the next fiber to run from the ready list (not empty)
// in the group's schedule.
uint32_t next_ready(Group& g) {
  switch (g.schedule) {
    case kScheduleReverse: {
      const uint32_t tid = g.ready.back();
      g.ready.pop_back();
      return tid;
    }
    case kScheduleRandom: {
      g.rng ^= g.rng << 13;
      g.rng ^= g.rng >> 7;
      g.rng ^= g.rng << 17;
      const size_t k = g.ready_head + size_t(g.rng % (g.ready.size() - g.ready_head));
      std::swap(g.ready[k], g.ready[g.ready_head]);
      return g.ready[g.ready_head++];
    }
    default:
      return g.ready[g.ready_head++];
  }
}

// yield_ready puts the running fiber back on the ready list and yields, so
// that the schedule decides who runs next (the race detector's schedules).
void yield_ready(Group* g, Fiber* f) {
  push_ready(g, f);
  yield(g, f);
}

// complete runs the pending collective of s and releases its lanes.
void complete(Group* g, SimdState& s) {
  const Lanes lanes = s.lanes;
  const CollectiveFn fn = s.fn;
  s.waiting = 0;
  s.lanes.mask = 0;
  fn(lanes);
  for (uint32_t l = 0; l < SimdWidth; l++) {
    if (((lanes.mask >> l) & 1u) == 0) continue;
    Fiber* o = &g->fibers[s.sg * SimdWidth + l];
    if (o != tl_fiber && o->state == State::Collective) push_ready(g, o);
  }
}

// thread_exit is the bookkeeping of a fiber whose kernel call returned.
void thread_exit(Group* g, Fiber* f) {
  if (g->done == 0) g->first_done = f->tid;
  g->done++;
  if (g->tg_waiting > 0)
    fail("thread %u returned while %u thread(s) (first %u) wait at threadgroup_barrier (%s:%u); "
         "every thread of the threadgroup must reach every barrier",
         f->tid, g->tg_waiting, g->tg_first, base_name(g->tg_file), g->tg_line);
  SimdState& s = g->simd[f->sg];
  s.live--;
  if (s.waiting > 0 && s.waiting == s.live) complete(g, s);
}

void fiber_entry() {
  Group* g = tl_group;
  Fiber* f = tl_fiber;
  g->kernel->fn(f->t, g->buffers);
  thread_exit(g, f);
  f->state = State::Done;
  yield(g, f);
  std::abort();  // a finished fiber is never resumed
}

// deadlock_report describes where the threads of a stuck group wait.
std::string deadlock_report(const Group* g) {
  struct Entry {
    const char* what;
    const char* file;
    unsigned line;
    uint32_t count;
    uint32_t first;
  };
  std::vector<Entry> entries;
  for (const Fiber& f : g->fibers) {
    if (f.state != State::Barrier && f.state != State::Collective) continue;
    bool found = false;
    for (Entry& e : entries) {
      if (e.what == f.what && same_site(e.file, e.line, f.file, f.line)) {
        e.count++;
        found = true;
        break;
      }
    }
    if (!found) entries.push_back(Entry{f.what, f.file, f.line, 1, f.tid});
  }
  std::string s = "deadlock: no thread can proceed;";
  char buf[256];
  for (const Entry& e : entries) {
    std::snprintf(buf, sizeof buf, " %u thread(s) (first %u) wait at %s (%s:%u);", e.count, e.first,
                  e.what, base_name(e.file), e.line);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " %u returned", g->done);
  s += buf;
  return s;
}

// Stacks are a worker's fiber stacks, each with a guard page below it.
class Stacks {
 public:
  ~Stacks() {
    for (void* p : maps_) munmap(p, kStackSize + guard_);
  }
  bool ensure(size_t n) {
    if (guard_ == 0) guard_ = size_t(sysconf(_SC_PAGESIZE));
    while (maps_.size() < n) {
      void* p = mmap(nullptr, kStackSize + guard_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) return false;
      mprotect(p, guard_, PROT_NONE);
      maps_.push_back(p);
    }
    return true;
  }
  void* base(size_t i) const { return static_cast<char*>(maps_[i]) + guard_; }

 private:
  size_t guard_ = 0;
  std::vector<void*> maps_;
};

struct Job {
  const KernelEntry* kernel;
  void* const* buffers;
  int schedule;
  uint64_t seed;
  uint32_t groups[3];
  uint32_t threads[3];
  uint64_t total;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  uint64_t error_group = 0;
};

// run_group runs one threadgroup on the calling OS thread; false on error
// (then g.error says why).
bool run_group(Group& g, Stacks& stacks, const Job& j, const uint32_t pos[3], uint64_t index) {
  const uint32_t tx = j.threads[0], ty = j.threads[1], tz = j.threads[2];
  const uint32_t n = tx * ty * tz;
  const uint32_t nsg = (n + SimdWidth - 1) / SimdWidth;
  g.kernel = j.kernel;
  g.buffers = j.buffers;
  for (int d = 0; d < 3; d++) g.pos[d] = pos[d];
  g.n = n;
  g.done = 0;
  g.first_done = 0;
  g.tg_waiting = 0;
  g.tg_first = 0;
  g.tg_file = nullptr;
  g.tg_line = 0;
  g.failed = false;
  g.error.clear();
  if (!stacks.ensure(n)) {
    g.error = "cannot allocate fiber stacks";
    return false;
  }
  g.fibers.resize(n);
  g.simd.resize(nsg);
  for (uint32_t s = 0; s < nsg; s++) {
    SimdState& st = g.simd[s];
    st.sg = s;
    st.live = s + 1 < nsg ? SimdWidth : n - s * SimdWidth;
    st.waiting = 0;
    st.fn = nullptr;
    st.lanes.mask = 0;
  }
  g.ready.clear();
  g.ready_head = 0;
  g.schedule = j.schedule;
  // splitmix64 of (seed, threadgroup index): a nonzero xorshift state.
  uint64_t z = j.seed + 0x9e3779b97f4a7c15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  g.rng = (z ^ (z >> 31)) | 1u;
  static std::atomic<uint64_t> next_serial{1};
  const uint64_t serial = next_serial.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; i++) {
    Fiber& f = g.fibers[i];
    f.tid = i;
    f.lane = i % SimdWidth;
    f.sg = i / SimdWidth;
    f.what = nullptr;
    ThreadCtx& t = f.t;
    const uint32_t local[3] = {i % tx, (i / tx) % ty, i / (tx * ty)};
    for (int d = 0; d < 3; d++) {
      t.thread_position_in_threadgroup[d] = local[d];
      t.threadgroup_position_in_grid[d] = pos[d];
      t.threads_per_threadgroup[d] = j.threads[d];
      t.threadgroups_per_grid[d] = j.groups[d];
      t.threads_per_grid[d] = j.groups[d] * j.threads[d];
      t.thread_position_in_grid[d] = pos[d] * j.threads[d] + local[d];
    }
    t.thread_index_in_threadgroup = i;
    t.thread_index_in_simdgroup = f.lane;
    t.simdgroup_index_in_threadgroup = f.sg;
    t.threads_per_simdgroup = SimdWidth;
    t.simdgroups_per_threadgroup = nsg;
    t.group_serial = serial;
    context_init(&f.ctx, stacks.base(i), kStackSize, fiber_entry);
    push_ready(&g, &f);
  }

  tl_group = &g;
  bool ok = true;
  for (;;) {
    if (g.failed) {
      ok = false;
      break;
    }
    if (g.ready_head == g.ready.size()) {
      g.ready.clear();
      g.ready_head = 0;
      if (g.done == g.n) break;
      g.error = deadlock_report(&g);
      ok = false;
      break;
    }
    Fiber* f = &g.fibers[next_ready(g)];
    f->state = State::Running;
    tl_fiber = f;
    current = &f->t;
    context_switch(&g.sched, &f->ctx);
  }
  tl_group = nullptr;
  tl_fiber = nullptr;
  current = nullptr;
  return ok;
}

void block_signals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

// Pool is the set of worker threads; one dispatch runs at a time.
class Pool {
 public:
  std::mutex dispatch_mu;

  void run(Job& j, int workers) {
    resize(workers);
    std::unique_lock<std::mutex> lk(mu_);
    job_ = &j;
    gen_++;
    running_ = int(threads_.size());
    work_cv_.notify_all();
    done_cv_.wait(lk, [this] { return running_ == 0; });
    job_ = nullptr;
  }

  // stop ends the worker threads (a pool of the race detector's).
  void stop() { resize(0); }

 private:
  void resize(int n) {
    if (int(threads_.size()) == n) return;
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
    for (int i = 0; i < n; i++) threads_.emplace_back([this, g = gen_] { worker(g); });
  }

  void worker(uint64_t seen) {
    block_signals();
    Stacks stacks;
    Group group;
    for (;;) {
      std::unique_lock<std::mutex> lk(mu_);
      work_cv_.wait(lk, [&] { return stop_ || gen_ != seen; });
      if (stop_) return;
      seen = gen_;
      Job* j = job_;
      lk.unlock();
      work(*j, stacks, group);
      lk.lock();
      if (--running_ == 0) done_cv_.notify_all();
    }
  }

  static void work(Job& j, Stacks& stacks, Group& g) {
    const uint64_t gx = j.groups[0], gy = j.groups[1];
    for (;;) {
      if (j.failed.load()) return;
      const uint64_t i = j.next.fetch_add(1);
      if (i >= j.total) return;
      const uint32_t pos[3] = {uint32_t(i % gx), uint32_t((i / gx) % gy), uint32_t(i / (gx * gy))};
      if (!run_group(g, stacks, j, pos, i)) {
        // Report the failing threadgroup of lowest index: every group below
        // it was taken earlier and has finished (or failed) by the end.
        std::lock_guard<std::mutex> lk(j.mu);
        if (!j.failed.load() || i < j.error_group) {
          char head[256];
          std::snprintf(head, sizeof head, "kernel %s, threadgroup (%u,%u,%u): ", j.kernel->name,
                        pos[0], pos[1], pos[2]);
          j.error = head + g.error;
          j.error_group = i;
          j.failed.store(true);
        }
      }
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::vector<std::thread> threads_;
  Job* job_ = nullptr;
  uint64_t gen_ = 0;
  int running_ = 0;
  bool stop_ = false;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: workers live as long as the process
  return *p;
}

void set_error(char* err, size_t errlen, const std::string& msg) {
  if (errlen == 0) return;
  std::snprintf(err, errlen, "%s", msg.c_str());
}

}  // namespace

thread_local const ThreadCtx* current = nullptr;

void barrier(const char* file, unsigned line) {
  Group* g = tl_group;
  Fiber* f = tl_fiber;
  if (g == nullptr || f == nullptr) fail("threadgroup_barrier outside a dispatch");
  if (g->done > 0)
    fail("threadgroup_barrier (%s:%u) reached by thread %u after thread %u returned; every thread "
         "of the threadgroup must reach every barrier",
         base_name(file), line, f->tid, g->first_done);
  if (g->tg_waiting == 0) {
    g->tg_file = file;
    g->tg_line = line;
    g->tg_first = f->tid;
  } else if (!same_site(file, line, g->tg_file, g->tg_line)) {
    fail("divergent threadgroup_barrier: thread %u is at %s:%u while %u thread(s) (first %u) wait "
         "at %s:%u",
         f->tid, base_name(file), line, g->tg_waiting, g->tg_first, base_name(g->tg_file),
         g->tg_line);
  }
  g->tg_waiting++;
  if (g->tg_waiting == g->n) {
    g->tg_waiting = 0;
    for (Fiber& o : g->fibers)
      if (&o != f && o.state == State::Barrier) push_ready(g, &o);
    if (g->schedule != kScheduleInOrder) yield_ready(g, f);
    return;
  }
  f->state = State::Barrier;
  f->what = "threadgroup_barrier";
  f->file = file;
  f->line = line;
  yield(g, f);
}

void collective(CollectiveFn fn, const char* what, const char* file, unsigned line, const void* in,
                void* out) {
  Group* g = tl_group;
  Fiber* f = tl_fiber;
  if (g == nullptr || f == nullptr) fail("%s outside a dispatch", what);
  SimdState& s = g->simd[f->sg];
  if (s.waiting == 0) {
    s.fn = fn;
    s.what = what;
    s.file = file;
    s.line = line;
    s.first = f->lane;
    s.lanes.mask = 0;
  } else if (fn != s.fn || !same_site(file, line, s.file, s.line)) {
    fail("divergent simdgroup %u: lane %u calls %s (%s:%u) while %u lane(s) (first %u) wait at %s "
         "(%s:%u); every active lane must call the same simdgroup function",
         f->sg, f->lane, what, base_name(file), line, s.waiting, s.first, s.what,
         base_name(s.file), s.line);
  }
  s.lanes.in[f->lane] = in;
  s.lanes.out[f->lane] = out;
  s.lanes.mask |= 1u << f->lane;
  s.waiting++;
  if (s.waiting == s.live) {
    complete(g, s);
    if (g->schedule != kScheduleInOrder) yield_ready(g, f);
    return;
  }
  f->state = State::Collective;
  f->what = what;
  f->file = file;
  f->line = line;
  yield(g, f);
}

void fail(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  Group* g = tl_group;
  Fiber* f = tl_fiber;
  if (g == nullptr || f == nullptr) {
    std::fprintf(stderr, "golf emu: %s\n", buf);
    std::abort();
  }
  g->error = buf;
  g->failed = true;
  f->state = State::Done;
  yield(g, f);
  std::abort();  // a failed group is never resumed
}

const char* base_name(const char* path) {
  if (path == nullptr) return "?";
  const char* b = std::strrchr(path, '/');
  return b ? b + 1 : path;
}

}  // namespace golf_emu

namespace golf_emu {
namespace {

// dispatch is golf_emu_dispatch on the workers of p (nullptr: the shared
// pool, whose threads live as long as the process), the caller holding
// pool().dispatch_mu.
int dispatch(const void* entry, const uint32_t* groups, const uint32_t* threads,
             void* const* buffers, int nbuffers, int workers, int schedule, uint64_t seed, char* err,
             size_t errlen, Pool* p) {
  if (entry == nullptr) {
    set_error(err, errlen, "no such kernel");
    return 1;
  }
  const KernelEntry& k = *static_cast<const KernelEntry*>(entry);
  uint64_t nthreads = 1, total = 1;
  for (int d = 0; d < 3; d++) {
    nthreads *= threads[d];
    total *= groups[d];
  }
  if (nthreads == 0 || nthreads > kMaxThreads) {
    set_error(err, errlen,
              "kernel " + std::string(k.name) + ": " + std::to_string(nthreads) +
                  " threads per threadgroup (want 1 to 1024)");
    return 1;
  }
  if (k.max_threads != 0 && nthreads != k.max_threads) {
    set_error(err, errlen,
              "kernel " + std::string(k.name) + ": dispatched with " + std::to_string(nthreads) +
                  " threads per threadgroup; it is laid out for exactly " +
                  std::to_string(k.max_threads) + " ([[max_total_threads_per_threadgroup(" +
                  std::to_string(k.max_threads) + ")]])");
    return 1;
  }
  for (int s = 0; s < k.nslots; s++) {
    const Slot& slot = k.slots[s];
    if (slot.index >= nbuffers || buffers[slot.index] == nullptr) {
      set_error(err, errlen,
                "kernel " + std::string(k.name) + ": no buffer bound at index " +
                    std::to_string(slot.index) + " (" + slot.param + ")");
      return 1;
    }
  }
  if (total == 0) return 0;
  if (workers < 1) workers = 1;

  Job j;
  j.kernel = &k;
  j.buffers = buffers;
  j.schedule = schedule;
  j.seed = seed;
  for (int d = 0; d < 3; d++) {
    j.groups[d] = groups[d];
    j.threads[d] = threads[d];
  }
  j.total = total;
  if (p == nullptr) p = &pool();
  p->run(j, workers);
  if (j.failed.load()) {
    set_error(err, errlen, j.error);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace golf_emu

extern "C" {

const char* golf_emu_context_kind(void) { return golf_emu::context_kind(); }

int golf_emu_dispatch(const void* entry, const uint32_t* groups, const uint32_t* threads,
                      void* const* buffers, int nbuffers, int workers, int schedule, uint64_t seed,
                      char* err, size_t errlen) {
  using namespace golf_emu;
  std::lock_guard<std::mutex> lk(pool().dispatch_mu);
  return dispatch(entry, groups, threads, buffers, nbuffers, workers, schedule, seed, err, errlen,
                  nullptr);
}

int golf_emu_dispatch_race(const void* entry, const uint32_t* groups, const uint32_t* threads,
                           void* const* buffers, int nbuffers, int workers, uint64_t seed,
                           const golf_emu_region* regions, int nregions, const char* unit,
                           const char* hint, char* err, size_t errlen) {
  using namespace golf_emu;
  const char* name = entry ? static_cast<const KernelEntry*>(entry)->name : "?";
  auto snapshot = [&]() {
    std::vector<std::string> out(size_t(nregions < 0 ? 0 : nregions));
    for (int i = 0; i < nregions; i++)
      out[size_t(i)].assign(static_cast<const char*>(regions[i].ptr), regions[i].len);
    return out;
  };
  auto restore = [&](const std::vector<std::string>& from) {
    for (int i = 0; i < nregions; i++) std::memcpy(regions[i].ptr, from[size_t(i)].data(), regions[i].len);
  };
  // Each schedule runs on new OS threads, whose group memory (thread_local)
  // starts zeroed: a thread that reads group memory before any thread of
  // its group wrote it then reads zeros under one schedule and a value
  // written under another, where threads reused from an earlier dispatch
  // could hold the same stale values under every schedule.
  std::lock_guard<std::mutex> lk(pool().dispatch_mu);
  auto run = [&](int schedule) {
    Pool fresh;
    const int rc = dispatch(entry, groups, threads, buffers, nbuffers, workers, schedule, seed, err,
                            errlen, &fresh);
    fresh.stop();
    return rc;
  };
  const std::vector<std::string> before = snapshot();
  if (run(kScheduleInOrder) != 0) return 1;
  const std::vector<std::string> want = snapshot();
  struct Alt {
    int schedule;
    std::string name;
  };
  const Alt alts[] = {{kScheduleReverse, "reverse"},
                      {kScheduleRandom, "random (seed " + std::to_string(seed) + ")"}};
  for (const Alt& alt : alts) {
    restore(before);
    if (run(alt.schedule) != 0) {
      const std::string msg = std::string(err) + " (under the " + alt.name +
                              " schedule of the race detector)";
      restore(want);
      set_error(err, errlen, msg);
      return 1;
    }
    for (int i = 0; i < nregions; i++) {
      const char* a = static_cast<const char*>(regions[i].ptr);
      const std::string& w = want[size_t(i)];
      for (size_t b = 0; b < regions[i].len; b++) {
        if (a[b] == w[b]) continue;
        const std::string msg = "kernel " + std::string(name) + ": race: " + regions[i].label +
                                " differs at byte " + std::to_string(b) +
                                " between the in-order and the " + alt.name +
                                " schedule of the threads of its " + unit + ": " + hint;
        restore(want);
        set_error(err, errlen, msg);
        return 1;
      }
    }
  }
  restore(want);
  return 0;
}

}  // extern "C"
