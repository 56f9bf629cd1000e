//go:build cuda

package cuda

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/dl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// EnvNCCLDir names the directory scripts/ci/trixie_libs.sh unpacks NCCL 2.22
// into (Debian trixie's libnccl-dev and libnccl2): root/usr/include/nccl.h
// and root/usr/lib/<multiarch>/libnccl.so.2.
const EnvNCCLDir = "GOLF_NCCL_DIR"

// ncclTree returns the real nccl.h and libnccl.so.2 of GOLF_NCCL_DIR; the
// test is skipped without them, or fails under GOLF_REQUIRE_CUDA_LIBS=1.
func ncclTree(t *testing.T) (header, lib string) {
	t.Helper()
	dir := os.Getenv(EnvNCCLDir)
	if dir == "" {
		needLib(t, fmt.Errorf("%s is not set: run scripts/ci/trixie_libs.sh and set it to the directory it prints", EnvNCCLDir))
	}
	header = filepath.Join(dir, "root", "usr", "include", "nccl.h")
	libs, _ := filepath.Glob(filepath.Join(dir, "root", "usr", "lib", "*", "libnccl.so.2"))
	var missing []string
	if _, err := os.Stat(header); err != nil {
		missing = append(missing, header)
	}
	if len(libs) == 0 {
		missing = append(missing, filepath.Join(dir, "root", "usr", "lib", "*", "libnccl.so.2"))
	}
	if len(missing) > 0 {
		needLib(t, fmt.Errorf("%s=%s lacks %s: run scripts/ci/trixie_libs.sh", EnvNCCLDir, dir, strings.Join(missing, " and ")))
	}
	return header, libs[0]
}

// needTool returns the path of the first of names on PATH; the test is
// skipped without one, or fails under GOLF_REQUIRE_CUDA_LIBS=1.
func needTool(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	needLib(t, fmt.Errorf("none of %s is on PATH", strings.Join(names, ", ")))
	return ""
}

// cudaStubHeaders writes the three CUDA headers nccl.h includes, with what
// it takes from them: cudaStream_t (an opaque pointer, as in
// driver_types.h), CUDART_VERSION, and __CUDA_BF16_TYPES_EXIST__, which
// CUDA 11's cuda_bf16.h defines and which gives nccl.h its ncclBfloat16.
// It returns the include directory.
func cudaStubHeaders(t *testing.T) string {
	t.Helper()
	inc := filepath.Join(t.TempDir(), "cuda-include")
	require.NoError(t, os.MkdirAll(inc, 0o755))
	for name, text := range map[string]string{
		"cuda_runtime.h": "#define CUDART_VERSION 11080\ntypedef struct CUstream_st *cudaStream_t;\n",
		"cuda_fp16.h":    "",
		"cuda_bf16.h":    "#define __CUDA_BF16_TYPES_EXIST__\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(inc, name), []byte(text), 0o644))
	}
	return inc
}

// ncclHeaderProgram prints, one "name value" a line, every constant,
// enum value, size and offset of nccl.h that golf mirrors.
const ncclHeaderProgram = `#include <stddef.h>
#include <stdio.h>
#include <nccl.h>

#define P(name, v) printf("%s %lld\n", name, (long long)(v))
#define FIELD(f) do { \
	P("offsetof(ncclConfig_t." #f ")", offsetof(ncclConfig_t, f)); \
	P("sizeof(ncclConfig_t." #f ")", sizeof(((ncclConfig_t *)0)->f)); \
} while (0)
#define E(e) P(#e, e)

int main(void) {
	P("NCCL_VERSION_CODE", NCCL_VERSION_CODE);
	P("NCCL_VERSION(NCCL_MAJOR,NCCL_MINOR,NCCL_PATCH)", NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
	P("NCCL_VERSION(2,8,4)", NCCL_VERSION(2, 8, 4));
	P("NCCL_VERSION(2,18,0)", NCCL_VERSION(2, 18, 0));
	P("NCCL_UNIQUE_ID_BYTES", NCCL_UNIQUE_ID_BYTES);
	P("sizeof(ncclUniqueId)", sizeof(ncclUniqueId));
	P("sizeof(ncclComm_t)", sizeof(ncclComm_t));
	P("sizeof(ncclResult_t)", sizeof(ncclResult_t));
	P("sizeof(ncclDataType_t)", sizeof(ncclDataType_t));
	P("sizeof(ncclRedOp_t)", sizeof(ncclRedOp_t));
	P("NCCL_CONFIG_UNDEF_INT", NCCL_CONFIG_UNDEF_INT);

	E(ncclInt8); E(ncclUint8); E(ncclInt32); E(ncclUint32); E(ncclInt64); E(ncclUint64);
	E(ncclFloat16); E(ncclFloat32); E(ncclFloat64); E(ncclBfloat16); E(ncclNumTypes);
	E(ncclSum); E(ncclProd); E(ncclMax); E(ncclMin); E(ncclAvg); E(ncclNumOps);
	E(ncclSuccess); E(ncclUnhandledCudaError); E(ncclSystemError); E(ncclInternalError);
	E(ncclInvalidArgument); E(ncclInvalidUsage); E(ncclRemoteError); E(ncclInProgress); E(ncclNumResults);

	P("sizeof(ncclConfig_t)", sizeof(ncclConfig_t));
	FIELD(size); FIELD(magic); FIELD(version); FIELD(blocking); FIELD(cgaClusterSize);
	FIELD(minCTAs); FIELD(maxCTAs); FIELD(netName); FIELD(splitShare);

	ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
	P("init.size", c.size); P("init.magic", c.magic); P("init.version", c.version);
	P("init.blocking", c.blocking); P("init.cgaClusterSize", c.cgaClusterSize);
	P("init.minCTAs", c.minCTAs); P("init.maxCTAs", c.maxCTAs);
	P("init.netName", c.netName != NULL); P("init.splitShare", c.splitShare);
	return 0;
}
`

// runHeaderProgram compiles src against the real nccl.h (its directory
// first on the include path) and returns its "name value" lines.
func runHeaderProgram(t *testing.T, header, src string) map[string]int64 {
	t.Helper()
	cc := needTool(t, "gcc", "cc", "clang")
	dir := t.TempDir()
	c, exe := filepath.Join(dir, "nccl_values.c"), filepath.Join(dir, "nccl_values")
	require.NoError(t, os.WriteFile(c, []byte(src), 0o644))
	out, err := exec.Command(cc, "-std=c11", "-Wall", "-Werror", "-I", filepath.Dir(header),
		"-I", cudaStubHeaders(t), "-o", exe, c).CombinedOutput()
	require.NoError(t, err, "compiling against %s:\n%s", header, out)
	out, err = exec.Command(exe).Output()
	require.NoError(t, err)
	got := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		require.True(t, ok, "line %q", sc.Text())
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "line %q", sc.Text())
		got[name] = n
	}
	return got
}

// ncclConfigFields maps ncclConfig_t's fields to NCCLConfig's.
var ncclConfigFields = []struct{ c, goName string }{
	{"size", "Size"}, {"magic", "Magic"}, {"version", "Version"}, {"blocking", "Blocking"},
	{"cgaClusterSize", "CGAClusterSize"}, {"minCTAs", "MinCTAs"}, {"maxCTAs", "MaxCTAs"},
	{"netName", "NetName"}, {"splitShare", "SplitShare"},
}

// goNCCLValues is what golf holds for every name the header program
// prints.
func goNCCLValues(t *testing.T) map[string]int64 {
	t.Helper()
	w := map[string]int64{
		"NCCL_VERSION_CODE": NCCLVersionCode,
		"NCCL_VERSION(NCCL_MAJOR,NCCL_MINOR,NCCL_PATCH)": int64(NCCLVersion(2, 22, 3)),
		"NCCL_VERSION(2,8,4)":                            int64(NCCLVersion(2, 8, 4)),
		"NCCL_VERSION(2,18,0)":                           MinNCCL,
		"NCCL_UNIQUE_ID_BYTES":                           NCCLUniqueIDBytes,
		"sizeof(ncclUniqueId)":                           int64(unsafe.Sizeof(NCCLUniqueID{})),
		"sizeof(ncclComm_t)":                             int64(unsafe.Sizeof(NCCLComm(0))),
		"sizeof(ncclResult_t)":                           int64(unsafe.Sizeof(NCCLResult(0))),
		"sizeof(ncclDataType_t)":                         int64(unsafe.Sizeof(NCCLDataType(0))),
		"sizeof(ncclRedOp_t)":                            int64(unsafe.Sizeof(NCCLRedOp(0))),
		"NCCL_CONFIG_UNDEF_INT":                          NCCLConfigUndefInt,
		"ncclNumTypes":                                   int64(len(ncclDataTypeNames)),
		"ncclNumOps":                                     int64(len(ncclRedOpNames)),
		"ncclNumResults":                                 int64(len(ncclResultNames)),
		"sizeof(ncclConfig_t)":                           int64(unsafe.Sizeof(NCCLConfig{})),
	}
	for name, v := range map[string]int64{
		"ncclInt8": int64(NCCLInt8), "ncclUint8": int64(NCCLUint8), "ncclInt32": int64(NCCLInt32),
		"ncclUint32": int64(NCCLUint32), "ncclInt64": int64(NCCLInt64), "ncclUint64": int64(NCCLUint64),
		"ncclFloat16": int64(NCCLFloat16), "ncclFloat32": int64(NCCLFloat32), "ncclFloat64": int64(NCCLFloat64),
		"ncclBfloat16": int64(NCCLBfloat16),
		"ncclSum":      int64(NCCLSum), "ncclProd": int64(NCCLProd), "ncclMax": int64(NCCLMax), "ncclMin": int64(NCCLMin),
		"ncclAvg":     int64(NCCLAvg),
		"ncclSuccess": int64(NCCLSuccess), "ncclUnhandledCudaError": int64(NCCLUnhandledCudaError),
		"ncclSystemError": int64(NCCLSystemError), "ncclInternalError": int64(NCCLInternalError),
		"ncclInvalidArgument": int64(NCCLInvalidArgument), "ncclInvalidUsage": int64(NCCLInvalidUsage),
		"ncclRemoteError": int64(NCCLRemoteError), "ncclInProgress": int64(NCCLInProgress),
	} {
		w[name] = v
	}
	typ := reflect.TypeFor[NCCLConfig]()
	require.Equal(t, len(ncclConfigFields), typ.NumField(), "NCCLConfig has fields the check does not know")
	init := reflect.ValueOf(DefaultNCCLConfig())
	for i, f := range ncclConfigFields {
		sf, ok := typ.FieldByName(f.goName)
		require.True(t, ok, "NCCLConfig.%s", f.goName)
		require.Equal(t, i, sf.Index[0], "NCCLConfig.%s out of order", f.goName)
		w["offsetof(ncclConfig_t."+f.c+")"] = int64(sf.Offset)
		w["sizeof(ncclConfig_t."+f.c+")"] = int64(sf.Type.Size())
		v := init.Field(i)
		switch v.Kind() {
		case reflect.Pointer:
			w["init."+f.c] = map[bool]int64{false: 0, true: 1}[!v.IsNil()]
		case reflect.Uint32, reflect.Uintptr:
			w["init."+f.c] = int64(v.Uint())
		default:
			w["init."+f.c] = v.Int()
		}
	}
	return w
}

// Every constant, enum value, size and field offset golf passes to NCCL
// is nccl.h's (NCCL 2.22): a C program compiled against the real header
// prints them, and each must equal golf's. The sizes are those of the
// 64-bit Linux ABI the program is compiled for, golf's own.
func TestNCCLHeaderValues(t *testing.T) {
	header, _ := ncclTree(t)
	got := runHeaderProgram(t, header, ncclHeaderProgram)
	want := goNCCLValues(t)
	for name, w := range want {
		g, ok := got[name]
		if assert.True(t, ok, "the header program does not print %s", name) {
			assert.Equal(t, g, w, "%s: nccl.h has %d, golf %d", name, g, w)
		}
	}
	for name := range got {
		assert.Contains(t, want, name, "golf has no value for %s", name)
	}
	// ncclConfig_t is 48 bytes, and its initialiser's size is the Go
	// struct's.
	assert.Equal(t, got["sizeof(ncclConfig_t)"], int64(DefaultNCCLConfig().Size))
}

// dynamicSymbols lists the defined functions lib exports
// (readelf --dyn-syms --wide), without symbol versions.
func dynamicSymbols(t *testing.T, lib string) map[string]bool {
	t.Helper()
	readelf := needTool(t, "readelf")
	out, err := exec.Command(readelf, "--dyn-syms", "--wide", lib).Output()
	require.NoError(t, err)
	syms := map[string]bool{}
	// Num: Value Size Type Bind Vis Ndx Name
	line := regexp.MustCompile(`^\s*\d+:\s+[0-9a-f]+\s+\d+\s+FUNC\s+\S+\s+\S+\s+(\S+)\s+(\S+)`)
	for _, l := range strings.Split(string(out), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] == "UND" {
			continue
		}
		name, _, _ := strings.Cut(m[2], "@")
		syms[name] = true
	}
	return syms
}

// Every NCCL function golf binds is exported by the real libnccl.so.2 of
// NCCL 2.22, so a misspelt name fails here and not on a GPU machine.
func TestNCCLSymbolsExported(t *testing.T) {
	_, lib := ncclTree(t)
	syms := dynamicSymbols(t, lib)
	require.Contains(t, syms, "ncclAllReduce", "readelf output not understood")
	names := ncclSymbols()
	require.NotEmpty(t, names)
	for _, n := range names {
		assert.True(t, syms[n], "%s is not exported by %s", n, lib)
	}
	// A misspelling is absent.
	assert.False(t, syms["ncclAllreduce"])
	assert.False(t, syms["ncclGetUniqueID"])
}

// glibcVersion is the C library's version ("2.36").
func glibcVersion(t *testing.T) (major, minor int) {
	t.Helper()
	out, err := exec.Command("getconf", "GNU_LIBC_VERSION").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`glibc (\d+)\.(\d+)`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "getconf GNU_LIBC_VERSION: %q", out)
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor
}

// libDirEnv is a search environment whose only directory is
// GOLF_CUDA_LIB_PATH=dir (the system directories are under an empty root).
func libDirEnv(t *testing.T, dir string) SearchEnv {
	t.Helper()
	return SearchEnv{
		Getenv: func(k string) string {
			if k == EnvLibPath {
				return dir
			}
			return ""
		},
		Glob: filepath.Glob,
		Stat: os.Stat,
		Root: t.TempDir(),
	}
}

// Pointing golf's loader at Debian trixie's libnccl.so.2: it needs glibc
// 2.38, so on an older system (bookworm's 2.36) the load fails with the
// one error that names the file and the dynamic loader's reason (the
// missing GLIBC_2.38); on 2.38 or newer it loads and reports 2.22.3.
func TestNCCLLoadTrixieLibrary(t *testing.T) {
	_, lib := ncclTree(t)
	major, minor := glibcVersion(t)
	n, err := loadNCCLFrom(libDirEnv(t, filepath.Dir(lib)))
	if major > 2 || major == 2 && minor >= 38 {
		require.NoError(t, err)
		assert.Equal(t, 22203, n.Version())
		assert.Equal(t, lib, n.Path)
		assert.Equal(t, "no error", n.GetErrorString(NCCLSuccess))
		return
	}
	if err == nil {
		t.Fatalf("glibc %d.%d: the search loaded %s, not the error %s should give", major, minor, n.Path, lib)
	}
	var le *LoadError
	require.ErrorAs(t, err, &le)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "cuda: NCCL not found; tried:\n"), msg)
	assert.Contains(t, msg, "\n  "+lib+": ", msg)
	var reason string
	for _, a := range le.Attempts {
		if a.Path == lib {
			reason = a.Err
		}
	}
	t.Logf("%s: %s", lib, reason)
	assert.Contains(t, reason, "GLIBC_2.38", "the loader's reason for %s: %q", lib, reason)
	assert.True(t, strings.HasSuffix(msg, "\n"+LibNCCL.Hint), msg)
	// Every candidate was tried and is listed.
	assert.Equal(t, len(LibNCCL.Candidates(libDirEnv(t, filepath.Dir(lib)))), len(le.Attempts))
}

// ncclProbeSource is a libnccl.so.2 compiled against the real nccl.h: its
// definitions must match the header's prototypes (the compiler refuses
// conflicting types), and each records its arguments in probe_rec, so
// calls through golf's binding show that every argument reaches C where
// the header's ABI puts it (the 128-byte ncclUniqueId by value: on the
// stack on amd64, by a pointer to a copy on arm64).
const ncclProbeSource = `#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <nccl.h>

uint64_t probe_rec[16];
unsigned char probe_id[NCCL_UNIQUE_ID_BYTES];
char probe_net[64];
int probe_async;
static char last[128];

static ncclResult_t fail(const char *msg, ncclResult_t r) { snprintf(last, sizeof last, "%s", msg); return r; }

ncclResult_t ncclGetVersion(int *v) { *v = NCCL_VERSION_CODE; return ncclSuccess; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) id->internal[i] = (char)(i * 7 + 3);
	return ncclSuccess;
}
static ncclResult_t init(uint64_t tag, ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *cfg) {
	memset(probe_rec, 0, sizeof probe_rec);
	probe_rec[0] = tag; probe_rec[1] = (uint64_t)(int64_t)nranks; probe_rec[2] = (uint64_t)(int64_t)rank;
	memcpy(probe_id, id.internal, sizeof probe_id);
	probe_net[0] = 0;
	if (cfg) {
		probe_rec[3] = cfg->size; probe_rec[4] = cfg->magic; probe_rec[5] = cfg->version;
		probe_rec[6] = (uint64_t)(int64_t)cfg->blocking; probe_rec[7] = (uint64_t)(int64_t)cfg->cgaClusterSize;
		probe_rec[8] = (uint64_t)(int64_t)cfg->minCTAs; probe_rec[9] = (uint64_t)(int64_t)cfg->maxCTAs;
		probe_rec[10] = (uint64_t)(int64_t)cfg->splitShare;
		if (cfg->netName) snprintf(probe_net, sizeof probe_net, "%s", cfg->netName);
	}
	if (nranks < 1) return fail("probe: nranks < 1", ncclInvalidArgument);
	*comm = (ncclComm_t)(uintptr_t)(0x1000 + rank);
	return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *cfg) {
	return init(1, comm, nranks, id, rank, cfg);
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
	return init(2, comm, nranks, id, rank, NULL);
}
static ncclResult_t coll(uint64_t tag, const void *s, void *r, size_t n, ncclDataType_t dt, int64_t x, ncclComm_t c, cudaStream_t st) {
	probe_rec[0] = tag; probe_rec[1] = (uintptr_t)s; probe_rec[2] = (uintptr_t)r; probe_rec[3] = n;
	probe_rec[4] = (uint64_t)dt; probe_rec[5] = (uint64_t)x; probe_rec[6] = (uintptr_t)c; probe_rec[7] = (uintptr_t)st;
	return n == 0 ? fail("probe: count 0", ncclInvalidUsage) : ncclSuccess;
}
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t dt, ncclRedOp_t op, ncclComm_t c, cudaStream_t st) {
	return coll(3, s, r, n, dt, op, c, st);
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t dt, int root, ncclComm_t c, cudaStream_t st) {
	return coll(4, s, r, n, dt, root, c, st);
}
ncclResult_t ncclGroupStart(void) { probe_rec[12]++; return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { probe_rec[13]++; return ncclSuccess; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *r) { probe_rec[6] = (uintptr_t)c; *r = (ncclResult_t)probe_async; return ncclSuccess; }
ncclResult_t ncclCommAbort(ncclComm_t c) { probe_rec[0] = 5; probe_rec[6] = (uintptr_t)c; return ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t c) { probe_rec[0] = 6; probe_rec[6] = (uintptr_t)c; return ncclSuccess; }
ncclResult_t ncclCommFinalize(ncclComm_t c) { probe_rec[0] = 7; probe_rec[6] = (uintptr_t)c; return ncclSuccess; }
ncclResult_t ncclCommCount(const ncclComm_t c, int *n) { *n = 4; probe_rec[6] = (uintptr_t)c; return ncclSuccess; }
ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r) { *r = (int)((uintptr_t)c - 0x1000); return ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t r) {
	static char s[64];
	snprintf(s, sizeof s, "probe error string %d", (int)r);
	return s;
}
const char *ncclGetLastError(ncclComm_t c) { (void)c; return last; }
`

// ncclProbe builds ncclProbeSource as libnccl.so.2 (without a soname, so
// that a later dlopen of the bare soname does not find it) and loads it
// through loadNCCLFrom; it returns the binding and the probe's record.
func ncclProbe(t *testing.T) (*NCCL, *[16]uint64, func() (id []byte, net string), *int32) {
	t.Helper()
	header, _ := ncclTree(t)
	cc := needTool(t, "gcc", "cc", "clang")
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "probe.c"), filepath.Join(dir, "libnccl.so.2")
	require.NoError(t, os.WriteFile(src, []byte(ncclProbeSource), 0o644))
	out, err := exec.Command(cc, "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC", "-I", filepath.Dir(header),
		"-I", cudaStubHeaders(t), "-o", lib, src).CombinedOutput()
	require.NoError(t, err, "compiling the probe against %s:\n%s", header, out)
	n, err := loadNCCLFrom(libDirEnv(t, dir))
	require.NoError(t, err)
	require.Equal(t, lib, n.Path)
	h, err := dl.Open(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	sym := func(name string) unsafe.Pointer {
		a, err := purego.Dlsym(h, name)
		require.NoError(t, err)
		return *(*unsafe.Pointer)(unsafe.Pointer(&a))
	}
	rec := (*[16]uint64)(sym("probe_rec"))
	idp, netp := (*[NCCLUniqueIDBytes]byte)(sym("probe_id")), (*[64]byte)(sym("probe_net"))
	read := func() ([]byte, string) {
		net := netp[:]
		if i := strings.IndexByte(string(net), 0); i >= 0 {
			net = net[:i]
		}
		return append([]byte(nil), idp[:]...), string(net)
	}
	return n, rec, read, (*int32)(sym("probe_async"))
}

// Calls through the binding reach a library compiled against the real
// nccl.h with every argument where the header's prototypes put it.
func TestNCCLBindingABI(t *testing.T) {
	n, rec, read, async := ncclProbe(t)
	assert.Equal(t, NCCLVersionCode, n.Version())
	assert.Equal(t, "2.22.3", n.VersionString())

	id, err := n.GetUniqueID()
	require.NoError(t, err)
	for i := range id {
		require.Equal(t, byte(i*7+3), id[i], "id byte %d", i)
	}

	// The id by value, and the config by pointer, with every field.
	for i := range id {
		id[i] = byte(255 - i)
	}
	net := cString("IB")
	cfg := DefaultNCCLConfig()
	cfg.Blocking, cfg.CGAClusterSize, cfg.MinCTAs, cfg.MaxCTAs, cfg.SplitShare = 1, 2, 3, 4, 5
	cfg.NetName = &net[0]
	comm, err := n.CommInitRankConfig(8, id, 6, &cfg)
	require.NoError(t, err)
	assert.Equal(t, NCCLComm(0x1006), comm)
	gotID, gotNet := read()
	assert.Equal(t, id[:], gotID, "the unique id as C received it")
	assert.Equal(t, "IB", gotNet)
	assert.Equal(t, []uint64{1, 8, 6, uint64(unsafe.Sizeof(cfg)), 0xcafebeef, NCCLVersionCode, 1, 2, 3, 4, 5}, rec[:11])

	// The default config as C reads it: every attribute INT_MIN.
	def := DefaultNCCLConfig()
	_, err = n.CommInitRankConfig(2, id, 1, &def)
	require.NoError(t, err)
	undefInt := int64(NCCLConfigUndefInt)
	undef := uint64(undefInt)
	assert.Equal(t, []uint64{1, 2, 1, 48, 0xcafebeef, 22203, undef, undef, undef, undef, undef}, rec[:11])

	comm, err = n.CommInitRank(4, id, 3)
	require.NoError(t, err)
	assert.Equal(t, NCCLComm(0x1003), comm)
	gotID, _ = read()
	assert.Equal(t, id[:], gotID)
	assert.Equal(t, []uint64{2, 4, 3}, rec[:3])

	// Seven arguments (the stream on the stack on amd64).
	require.NoError(t, n.AllReduce(0x7f0000001000, 0x7f0000002000, 1<<33+5, NCCLBfloat16, NCCLAvg, comm, 0xabcdef))
	assert.Equal(t, []uint64{3, 0x7f0000001000, 0x7f0000002000, 1<<33 + 5, 9, 4, 0x1003, 0xabcdef}, rec[:8])
	require.NoError(t, n.Broadcast(0x10, 0x20, 7, NCCLFloat32, 2, comm, 0x30))
	assert.Equal(t, []uint64{4, 0x10, 0x20, 7, 7, 2, 0x1003, 0x30}, rec[:8])

	require.NoError(t, n.GroupStart())
	require.NoError(t, n.GroupEnd())
	assert.Equal(t, []uint64{1, 1}, rec[12:14])

	c, err := n.CommCount(comm)
	require.NoError(t, err)
	assert.Equal(t, 4, c)
	r, err := n.CommUserRank(comm)
	require.NoError(t, err)
	assert.Equal(t, 3, r)

	*async = int32(NCCLRemoteError)
	ar, err := n.CommGetAsyncError(comm)
	require.NoError(t, err)
	assert.Equal(t, NCCLRemoteError, ar)
	*async = 0

	for _, k := range []struct {
		f   func(NCCLComm) error
		tag uint64
	}{{n.CommAbort, 5}, {n.CommDestroy, 6}, {n.CommFinalize, 7}} {
		require.NoError(t, k.f(comm))
		assert.Equal(t, []uint64{k.tag, 0x1003}, []uint64{rec[0], rec[6]})
	}
}

// A failed call is an *NCCLError naming the call, with NCCL's description
// of the code and its last error.
func TestNCCLBindingErrors(t *testing.T) {
	n, _, _, _ := ncclProbe(t)
	_, err := n.CommInitRank(0, NCCLUniqueID{}, 0)
	require.Error(t, err)
	var ne *NCCLError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, NCCLError{Call: "ncclCommInitRank", Code: NCCLInvalidArgument,
		Text: "probe error string 4; last error: probe: nranks < 1"}, *ne)
	assert.Equal(t, "cuda: ncclCommInitRank: ncclInvalidArgument (4): probe error string 4; last error: probe: nranks < 1", err.Error())

	err = n.AllReduce(1, 1, 0, NCCLFloat32, NCCLSum, 0x1000, 0)
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, NCCLInvalidUsage, ne.Code)
	assert.Contains(t, err.Error(), "ncclAllReduce: ncclInvalidUsage (5): probe error string 5; last error: probe: count 0")
	assert.Equal(t, "probe error string 2", n.GetErrorString(NCCLSystemError))
	assert.False(t, errors.Is(err, ErrCommAborted))
}

// The backend's communicator over the probe library and the dry driver:
// JoinComm on the backend's context, AllReduceSum of a tensor in place on
// the backend's stream in its dtype, CommError and CommAbort from another
// goroutine, and LeaveComm.
func TestNCCLBackendComm(t *testing.T) {
	n, rec, read, async := ncclProbe(t)
	b, err := OpenDry(Options{GEMM: GEMMKernels})
	require.NoError(t, err)
	defer b.Close()

	x := b.New(backend.BF16, 3, 5)
	require.ErrorContains(t, b.AllReduceSum(x), "joined no communicator")
	require.ErrorContains(t, b.JoinComm(n, NCCLUniqueID{}, 2, 2), "rank 2 of 2")

	var id NCCLUniqueID
	id[0], id[127] = 0x5a, 0xa5
	require.NoError(t, b.JoinComm(n, id, 1, 2))
	gotID, _ := read()
	assert.Equal(t, id[:], gotID)
	assert.Equal(t, []uint64{2, 2, 1}, rec[:3], "ncclCommInitRank(nranks 2, rank 1)")
	require.ErrorContains(t, b.JoinComm(n, id, 1, 2), "already")

	gen := b.gen
	require.NoError(t, b.AllReduceSum(x))
	assert.Greater(t, b.gen, gen, "an all-reduce is work that changes device memory")
	p := uint64(ptr(x))
	assert.Equal(t, []uint64{3, p, p, 15, uint64(NCCLBfloat16), uint64(NCCLSum), 0x1001, uint64(b.stream)}, rec[:8])
	v := b.New(backend.F32, 7)
	require.NoError(t, b.AllReduceSum(v))
	assert.Equal(t, []uint64{7, uint64(NCCLFloat32)}, rec[3:5])

	require.NoError(t, b.CommError())
	*async = int32(NCCLRemoteError)
	errc := make(chan error)
	go func() { errc <- b.CommError() }()
	err = <-errc
	var ne *NCCLError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, NCCLRemoteError, ne.Code)
	assert.Contains(t, err.Error(), "rank 1 of 2")
	*async = 0

	go func() { errc <- b.CommAbort() }()
	require.NoError(t, <-errc)
	assert.Equal(t, []uint64{5, 0x1001}, []uint64{rec[0], rec[6]}, "ncclCommAbort(comm)")
	assert.ErrorIs(t, b.AllReduceSum(x), ErrCommAborted)
	assert.ErrorIs(t, b.CommError(), ErrCommAborted)
	require.NoError(t, b.CommAbort(), "a second abort has nothing to do")
	rec[0] = 0
	require.NoError(t, b.LeaveComm())
	assert.Zero(t, rec[0], "LeaveComm after CommAbort freed the communicator again")
	require.NoError(t, b.CommError())

	// Join again, and leave: finalize, then destroy.
	require.NoError(t, b.JoinComm(n, id, 0, 2))
	require.NoError(t, b.LeaveComm())
	assert.Equal(t, []uint64{6, 0x1000}, []uint64{rec[0], rec[6]}, "ncclCommDestroy(comm) last")
	require.NoError(t, b.LeaveComm())
}
