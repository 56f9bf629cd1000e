// nccl_rank.c: one rank of the stand-in NCCL's tests (nccl_cuda_test.go).
// It loads the stand-in's libcuda.so.1 and libnccl.so.2 with dlopen, as a
// program built against NVIDIA's libraries would find them, declaring the
// calls it makes from the CUDA driver's and NCCL's documentation, and
// reports on stdout, one key=value a line.
//
//	nccl_rank LIBDIR SCENARIO RANK NRANKS IDHEX OUT CASES
//
// Scenarios: coll (run CASES, write each result to OUT), die (rank
// $VICTIM exits or kills itself after init, the others all-reduce), abort
// (rank 0 all-reduces and another thread aborts it; rank 1 all-reduces
// late), init (initialise only), api (one rank: config, argument checks).
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  char internal[128];
} Id;
typedef struct {
  size_t size;
  unsigned magic, version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char* netName;
  int splitShare;
} Config;
typedef void* Comm;
typedef uint64_t Dptr;

static int (*cuInit)(unsigned);
static int (*cuDeviceGet)(int*, int);
static int (*cuDevicePrimaryCtxRetain)(void**, int);
static int (*cuCtxSetCurrent)(void*);
static int (*cuStreamCreate)(void**, unsigned);
static int (*cuMemAlloc)(Dptr*, size_t);
static int (*cuMemAllocHost)(void**, size_t);
static int (*cuMemcpyHtoDAsync)(Dptr, const void*, size_t, void*);
static int (*cuMemcpyDtoHAsync)(void*, Dptr, size_t, void*);
static int (*cuMemsetD8Async)(Dptr, unsigned char, size_t, void*);
static int (*cuStreamSynchronize)(void*);
static int (*ncclGetVersion)(int*);
static int (*ncclCommInitRank)(Comm*, int, Id, int);
static int (*ncclCommInitRankConfig)(Comm*, int, Id, int, Config*);
static int (*ncclAllReduce)(const void*, void*, size_t, int, int, Comm, void*);
static int (*ncclBroadcast)(const void*, void*, size_t, int, int, Comm, void*);
static int (*ncclReduceScatter)(const void*, void*, size_t, int, int, Comm, void*);
static int (*ncclAllGather)(const void*, void*, size_t, int, Comm, void*);
static int (*ncclGroupStart)(void);
static int (*ncclGroupEnd)(void);
static int (*ncclCommGetAsyncError)(Comm, int*);
static int (*ncclCommAbort)(Comm);
static int (*ncclCommDestroy)(Comm);
static int (*ncclCommFinalize)(Comm);
static int (*ncclCommCount)(Comm, int*);
static int (*ncclCommCuDevice)(Comm, int*);
static int (*ncclCommUserRank)(Comm, int*);
static const char* (*ncclGetErrorString)(int);
static const char* (*ncclGetLastError)(Comm);

enum { kFloat32 = 7 };

static void die(const char* what, int rc) {
  fprintf(stderr, "nccl_rank: %s failed: %d\n", what, rc);
  exit(2);
}
#define CK(call)                   \
  do {                             \
    int rc_ = (call);              \
    if (rc_ != 0) die(#call, rc_); \
  } while (0)

static void* sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (p == NULL) {
    fprintf(stderr, "nccl_rank: no symbol %s: %s\n", name, dlerror());
    exit(2);
  }
  return p;
}

#define BIND(h, name) *(void**)(&name) = sym(h, #name)
#define BINDV(h, name, real) *(void**)(&name) = sym(h, real)

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void msg(const char* key, const char* s) {
  printf("%s=", key);
  for (; s != NULL && *s; s++) putchar(*s == '\n' ? ' ' : *s);
  putchar('\n');
}

// mix is the test's hash of (rank, element, salt); the Go test has the same.
static uint32_t mix(uint32_t r, uint32_t i, uint32_t salt) {
  uint32_t h = r * 0x9E3779B1u + i * 0x85EBCA77u + salt * 0xC2B2AE3Du;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return h;
}

static size_t type_size(int t) {
  static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return s[t];
}

// gen writes element i of rank r's input of type t.
static void gen(int t, uint32_t r, uint32_t i, uint32_t salt, unsigned char* out) {
  uint32_t h = mix(r, i, salt), h2 = mix(r + 1000, i, salt);
  uint32_t f = (h & 0x80000000u) | ((117u + (h >> 23) % 20u) << 23) | (h & 0x7fffffu);
  uint64_t d = ((uint64_t)(h & 0x80000000u) << 32) | ((uint64_t)(1013u + (h >> 23) % 20u) << 52) |
               ((((uint64_t)h2 << 20) ^ h) & 0xfffffffffffffull);
  uint16_t half = (uint16_t)((h & 0x8000u) | ((10u + (h >> 10) % 10u) << 10) | (h & 0x3ffu));
  uint64_t q = ((uint64_t)h2 << 32) | h;
  switch (t) {
    case 0:
    case 1:
      out[0] = (unsigned char)h;
      break;
    case 2:
    case 3:
      memcpy(out, &h, 4);
      break;
    case 4:
    case 5:
      memcpy(out, &q, 8);
      break;
    case 6:
      memcpy(out, &half, 2);
      break;
    case 7:
      memcpy(out, &f, 4);
      break;
    case 8:
      memcpy(out, &d, 8);
      break;
    default: {
      uint16_t b = (uint16_t)(f >> 16);
      memcpy(out, &b, 2);
    }
  }
}

static void* stream;
static void* nccl_lib;

static void setup(const char* libdir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/libcuda.so.1", libdir);
  void* cu = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (cu == NULL) {
    fprintf(stderr, "nccl_rank: %s\n", dlerror());
    exit(2);
  }
  snprintf(path, sizeof path, "%s/libnccl.so.2", libdir);
  void* nc = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (nc == NULL) {
    fprintf(stderr, "nccl_rank: %s\n", dlerror());
    exit(2);
  }
  nccl_lib = nc;
  BIND(cu, cuInit);
  BIND(cu, cuDeviceGet);
  BIND(cu, cuDevicePrimaryCtxRetain);
  BIND(cu, cuCtxSetCurrent);
  BIND(cu, cuStreamCreate);
  BINDV(cu, cuMemAlloc, "cuMemAlloc_v2");
  BINDV(cu, cuMemAllocHost, "cuMemAllocHost_v2");
  BINDV(cu, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  BINDV(cu, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  BIND(cu, cuMemsetD8Async);
  BIND(cu, cuStreamSynchronize);
  BIND(nc, ncclGetVersion);
  BIND(nc, ncclCommInitRank);
  BIND(nc, ncclCommInitRankConfig);
  BIND(nc, ncclAllReduce);
  BIND(nc, ncclBroadcast);
  BIND(nc, ncclReduceScatter);
  BIND(nc, ncclAllGather);
  BIND(nc, ncclGroupStart);
  BIND(nc, ncclGroupEnd);
  BIND(nc, ncclCommGetAsyncError);
  BIND(nc, ncclCommAbort);
  BIND(nc, ncclCommDestroy);
  BIND(nc, ncclCommFinalize);
  BIND(nc, ncclCommCount);
  BIND(nc, ncclCommCuDevice);
  BIND(nc, ncclCommUserRank);
  BIND(nc, ncclGetErrorString);
  BIND(nc, ncclGetLastError);
  int dev;
  void* ctx;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&stream, 1));
}

static Id parse_id(const char* hex) {
  Id id;
  memset(&id, 0, sizeof id);
  for (int i = 0; i < 128 && hex[2 * i] && hex[2 * i + 1]; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    id.internal[i] = (char)v;
  }
  return id;
}

// one_allreduce queues a float32 sum of n elements and waits; it reports
// the wait's result and time.
static void one_allreduce(Comm comm, const char* prefix) {
  const size_t n = 1000;
  Dptr buf;
  CK(cuMemAlloc(&buf, n * 4));
  CK(cuMemsetD8Async(buf, 0, n * 4, stream));
  int rc = ncclAllReduce((void*)buf, (void*)buf, n, kFloat32, 0, comm, stream);
  char key[64];
  snprintf(key, sizeof key, "%senqueue", prefix);
  printf("%s=%d\n", key, rc);
  double t0 = now_ms();
  rc = cuStreamSynchronize(stream);
  snprintf(key, sizeof key, "%ssync", prefix);
  printf("%s=%d\n", key, rc);
  snprintf(key, sizeof key, "%sms", prefix);
  printf("%s=%.0f\n", key, now_ms() - t0);
}

static Comm abort_comm;
static double abort_at;

static void* aborter(void* arg) {
  (void)arg;
  usleep(300 * 1000);
  abort_at = now_ms();
  printf("abort=%d\n", ncclCommAbort(abort_comm));
  fflush(stdout);
  return NULL;
}

static void run_cases(Comm comm, int rank, int nranks, const char* cases, const char* out) {
  FILE* f = fopen(out, "wb");
  if (f == NULL) die("fopen", 1);
  int salt = 0;
  for (const char* p = cases; p && *p; salt++) {
    char kind[8];
    int t, op, inplace, root;
    size_t count;
    int used = 0;
    if (sscanf(p, "%7[a-z]:%d:%d:%zu:%d:%d%n", kind, &t, &op, &count, &inplace, &root, &used) != 6) die("case", 1);
    p += used;
    if (*p == ',') p++;
    const size_t esz = type_size(t);
    size_t nsend = count, nrecv = count;
    if (strcmp(kind, "rs") == 0) nsend = count * nranks;
    if (strcmp(kind, "ag") == 0) nrecv = count * nranks;
    size_t big = nsend > nrecv ? nsend : nrecv;
    unsigned char* host;
    CK(cuMemAllocHost((void**)&host, big * esz));
    for (size_t i = 0; i < nsend; i++) gen(t, (uint32_t)rank, (uint32_t)i, (uint32_t)salt, host + i * esz);
    Dptr send, recv;
    if (inplace) {
      // One buffer: reduce-scatter's result is this rank's span of its
      // input, all-gather's input this rank's span of its result.
      CK(cuMemAlloc(&send, big * esz));
      CK(cuMemsetD8Async(send, 0xab, big * esz, stream));
      recv = send;
      if (strcmp(kind, "rs") == 0) recv = send + (Dptr)rank * count * esz;
      if (strcmp(kind, "ag") == 0) send = recv + (Dptr)rank * count * esz;
    } else {
      CK(cuMemAlloc(&recv, nrecv * esz));
      CK(cuMemsetD8Async(recv, 0xab, nrecv * esz, stream));
      CK(cuMemAlloc(&send, nsend * esz));
    }
    // The input reaches the device through the stream, before the
    // collective in it; the result comes back after it.
    CK(cuMemcpyHtoDAsync(send, host, nsend * esz, stream));
    CK(ncclGroupStart());
    if (strcmp(kind, "ar") == 0) CK(ncclAllReduce((void*)send, (void*)recv, count, t, op, comm, stream));
    if (strcmp(kind, "bc") == 0) CK(ncclBroadcast((void*)send, (void*)recv, count, t, root, comm, stream));
    if (strcmp(kind, "rs") == 0) CK(ncclReduceScatter((void*)send, (void*)recv, count, t, op, comm, stream));
    if (strcmp(kind, "ag") == 0) CK(ncclAllGather((void*)send, (void*)recv, count, t, comm, stream));
    CK(ncclGroupEnd());
    CK(cuMemcpyDtoHAsync(host, recv, nrecv * esz, stream));
    CK(cuStreamSynchronize(stream));
    fwrite(host, esz, nrecv, f);
  }
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: nccl_rank LIBDIR SCENARIO RANK NRANKS IDHEX OUT CASES\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  setup(argv[1]);
  const char* scenario = argv[2];
  const int rank = atoi(argv[3]), nranks = atoi(argv[4]);
  Id id = parse_id(argv[5]);
  Comm comm = NULL;

  if (strcmp(scenario, "api") == 0) {
    int v = 0;
    printf("version=%d rc=%d\n", v, ncclGetVersion(&v));
    printf("version=%d\n", v);
    Config c = {sizeof(Config), 0xcafebeef, 22203, (int)0x80000000, (int)0x80000000, (int)0x80000000,
                (int)0x80000000, NULL, (int)0x80000000};
    Config bad = c;
    bad.magic = 0;
    printf("badmagic=%d\n", ncclCommInitRankConfig(&comm, 1, id, 0, &bad));
    msg("badmagicmsg", ncclGetLastError(NULL));
    bad = c;
    bad.size = 8;
    printf("badsize=%d\n", ncclCommInitRankConfig(&comm, 1, id, 0, &bad));
    bad = c;
    bad.blocking = 7;
    printf("badblocking=%d\n", ncclCommInitRankConfig(&comm, 1, id, 0, &bad));
    printf("badrank=%d\n", ncclCommInitRankConfig(&comm, 1, id, 1, &c));
    Id junk;
    memset(&junk, 7, sizeof junk);
    printf("badid=%d\n", ncclCommInitRank(&comm, 1, junk, 0));
    printf("groupend=%d\n", ncclGroupEnd());
    printf("init=%d\n", ncclCommInitRankConfig(&comm, 1, id, 0, &c));
    int n = -1, r = -1, d = -1;
    printf("count=%d rc=%d\n", n, ncclCommCount(comm, &n));
    printf("count=%d\n", n);
    ncclCommUserRank(comm, &r);
    ncclCommCuDevice(comm, &d);
    printf("userrank=%d\ncudevice=%d\n", r, d);
    Dptr buf;
    CK(cuMemAlloc(&buf, 64));
    static float host_buf[16];
    printf("hostptr=%d\n", ncclAllReduce(host_buf, host_buf, 16, kFloat32, 0, comm, stream));
    msg("hostptrmsg", ncclGetLastError(comm));
    printf("pastend=%d\n", ncclAllReduce((void*)buf, (void*)buf, 17, kFloat32, 0, comm, stream));
    printf("badtype=%d\n", ncclAllReduce((void*)buf, (void*)buf, 16, 10, 0, comm, stream));
    printf("badop=%d\n", ncclAllReduce((void*)buf, (void*)buf, 16, kFloat32, 5, comm, stream));
    printf("stream0=%d\n", ncclAllReduce((void*)buf, (void*)buf, 16, kFloat32, 0, comm, NULL));
    printf("badroot=%d\n", ncclBroadcast((void*)buf, (void*)buf, 16, kFloat32, 1, comm, stream));
    float* pin;
    CK(cuMemAllocHost((void**)&pin, 64));
    for (int i = 0; i < 16; i++) pin[i] = (float)i + 0.5f;
    CK(cuMemcpyHtoDAsync(buf, pin, 64, stream));
    printf("one=%d\n", ncclAllReduce((void*)buf, (void*)buf, 16, kFloat32, 4, comm, stream));
    CK(cuMemcpyDtoHAsync(pin, buf, 64, stream));
    CK(cuStreamSynchronize(stream));
    printf("onevalue=%g\n", pin[3]);
    int async = -1;
    ncclCommGetAsyncError(comm, &async);
    printf("async=%d\n", async);
    printf("finalize=%d\n", ncclCommFinalize(comm));
    printf("afterfinalize=%d\n", ncclAllReduce((void*)buf, (void*)buf, 16, kFloat32, 0, comm, stream));
    printf("destroy=%d\n", ncclCommDestroy(comm));
    printf("twice=%d\n", ncclCommDestroy(comm));
    msg("errstr", ncclGetErrorString(6));
    return 0;
  }

  double t0 = now_ms();
  int rc = ncclCommInitRank(&comm, nranks, id, rank);
  printf("init=%d\ninitms=%.0f\n", rc, now_ms() - t0);
  if (rc != 0) {
    msg("msg", ncclGetLastError(NULL));
    return 0;
  }
  if (strcmp(scenario, "coll") == 0) {
    int n = -1, r = -1;
    CK(ncclCommCount(comm, &n));
    CK(ncclCommUserRank(comm, &r));
    printf("count=%d\nuserrank=%d\n", n, r);
    run_cases(comm, rank, nranks, argv[7], argv[6]);
    void (*stats)(uint64_t*, int);
    *(void**)(&stats) = sym(nccl_lib, "golf_standin_nccl_stats");
    uint64_t v[9];
    stats(v, 9);
    printf("stats=%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)v[0], (unsigned long long)v[1],
           (unsigned long long)v[2], (unsigned long long)v[3], (unsigned long long)v[4], (unsigned long long)v[5],
           (unsigned long long)v[6], (unsigned long long)v[7], (unsigned long long)v[8]);
    printf("ok=1\n");
  } else if (strcmp(scenario, "die") == 0) {
    const char* victim = getenv("VICTIM");
    const char* how = getenv("HOW");
    if (victim != NULL && atoi(victim) == rank) {
      if (how != NULL && strcmp(how, "kill") == 0) raise(SIGKILL);
      _exit(7);
    }
    one_allreduce(comm, "");
  } else if (strcmp(scenario, "abort") == 0) {
    if (rank == 0) {
      pthread_t th;
      abort_comm = comm;
      pthread_create(&th, NULL, aborter, NULL);
      one_allreduce(comm, "");
      printf("afterabortms=%.0f\n", now_ms() - abort_at);
      pthread_join(th, NULL);
      msg("msg", ncclGetLastError(NULL));
      return 0;
    }
    usleep(1000 * 1000);
    one_allreduce(comm, "");
  }
  if (strcmp(scenario, "init") != 0) {
    int async = -1;
    CK(ncclCommGetAsyncError(comm, &async));
    printf("async=%d\n", async);
    msg("msg", ncclGetLastError(comm));
  }
  if (getenv("NODESTROY") != NULL) _exit(0);
  printf("destroy=%d\n", ncclCommDestroy(comm));
  return 0;
}
