//go:build cuda

package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/golf-ml/golf/internal/dl"
)

// MinNVRTC is the oldest NVRTC golf accepts: 11.8, the first with sm_90
// (and the one Debian ships).
var MinNVRTC = [2]int{11, 8}

// NVRTC is the runtime compiler, loaded with LoadNVRTC.
type NVRTC struct {
	Path         string // the libnvrtc file loaded
	BuiltinsPath string // the libnvrtc-builtins loaded beside it
	Major, Minor int

	version           func(major, minor *int32) int32
	getErrorString    func(res int32) *byte
	numSupportedArchs func(n *int32) int32
	supportedArchs    func(archs *int32) int32
	createProgram     func(prog *uintptr, src, name *byte, numHeaders int32, headers, includeNames **byte) int32
	destroyProgram    func(prog *uintptr) int32
	compileProgram    func(prog uintptr, numOptions int32, options **byte) int32
	getCUBINSize      func(prog uintptr, size *uint64) int32
	getCUBIN          func(prog uintptr, cubin *byte) int32
	getPTXSize        func(prog uintptr, size *uint64) int32
	getPTX            func(prog uintptr, ptx *byte) int32
	getProgramLogSize func(prog uintptr, size *uint64) int32
	getProgramLog     func(prog uintptr, log *byte) int32
}

var loadNVRTC = sync.OnceValues(func() (*NVRTC, error) {
	noNVRTCCache()
	return openNVRTC(LibNVRTC, DefaultSearchEnv())
})

// EnvCUDACacheDisable is CUDA's switch of its compute cache, which NVRTC
// 12.9 and later also use for the programs they compile.
const EnvCUDACacheDisable = "CUDA_CACHE_DISABLE"

// noNVRTCCache sets CUDA_CACHE_DISABLE=1, unless the user set it, before
// NVRTC loads. From 12.9 NVRTC keeps compiled programs in CUDA's compute
// cache, and a program it finds there comes back without ptxas's report
// (an empty log), so the spills and stack frames that golf checks would be
// unknown. golf caches its own cubins with their logs (Cache), so NVRTC's
// cache saves nothing here; golf loads cubins for the device's exact
// architecture, which the driver's JIT cache (the same switch) never sees.
// os.Setenv reaches the C environment that NVRTC reads, through cgo or
// purego's stand-in for it.
func noNVRTCCache() {
	if _, set := os.LookupEnv(EnvCUDACacheDisable); !set {
		os.Setenv(EnvCUDACacheDisable, "1")
	}
}

// openNVRTC searches lib (LibNVRTC, or a variant in tests) in env.
func openNVRTC(lib Library, env SearchEnv) (*NVRTC, error) {
	n := &NVRTC{}
	_, path, err := openLibrary(lib, env, purego.RTLD_NOW|purego.RTLD_LOCAL, n.check)
	if err != nil {
		return nil, err
	}
	n.Path = loadedPath(path)
	return n, nil
}

// LoadNVRTC finds, opens and checks NVRTC once per process (see
// Library.Candidates for where it looks).
func LoadNVRTC() (*NVRTC, error) { return loadNVRTC() }

// check binds the symbols of the library at h, refuses one older than
// MinNVRTC, and loads its libnvrtc-builtins from the same directory (NVRTC
// opens the builtins by soname at compile time; a copy already loaded under
// that soname is the one it gets, so a newer builtins library elsewhere on
// the loader's path cannot be mixed in).
func (n *NVRTC) check(h uintptr, path string) error {
	err := bindSymbols(h, []symbol{
		{"nvrtcVersion", &n.version, false},
		{"nvrtcGetErrorString", &n.getErrorString, false},
		{"nvrtcGetNumSupportedArchs", &n.numSupportedArchs, true},
		{"nvrtcGetSupportedArchs", &n.supportedArchs, true},
		{"nvrtcCreateProgram", &n.createProgram, false},
		{"nvrtcDestroyProgram", &n.destroyProgram, false},
		{"nvrtcCompileProgram", &n.compileProgram, false},
		{"nvrtcGetCUBINSize", &n.getCUBINSize, false},
		{"nvrtcGetCUBIN", &n.getCUBIN, false},
		{"nvrtcGetPTXSize", &n.getPTXSize, false},
		{"nvrtcGetPTX", &n.getPTX, false},
		{"nvrtcGetProgramLogSize", &n.getProgramLogSize, false},
		{"nvrtcGetProgramLog", &n.getProgramLog, false},
	})
	if err != nil {
		return err
	}
	var major, minor int32
	if r := n.version(&major, &minor); r != 0 {
		return fmt.Errorf("nvrtcVersion: %s", n.errorString(r))
	}
	n.Major, n.Minor = int(major), int(minor)
	if n.Major < MinNVRTC[0] || n.Major == MinNVRTC[0] && n.Minor < MinNVRTC[1] {
		return &TooOldError{Found: fmt.Sprintf("%d.%d", n.Major, n.Minor), Need: fmt.Sprintf("%d.%d", MinNVRTC[0], MinNVRTC[1])}
	}
	dir := filepath.Dir(loadedPath(path))
	builtins, tried := findBuiltins(dir, n.Major, n.Minor)
	if builtins == "" {
		return fmt.Errorf("NVRTC %d.%d found, but its libnvrtc-builtins is not beside it (tried %s)",
			n.Major, n.Minor, strings.Join(tried, ", "))
	}
	if _, err := dl.Open(builtins, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return fmt.Errorf("loading %s: %v", builtins, err)
	}
	n.BuiltinsPath = builtins
	return nil
}

// findBuiltins returns libnvrtc-builtins.so.<major>.<minor> in dir, else
// the newest libnvrtc-builtins.so.<major>.* there; and the paths tried.
func findBuiltins(dir string, major, minor int) (string, []string) {
	exact := filepath.Join(dir, fmt.Sprintf("libnvrtc-builtins.so.%d.%d", major, minor))
	if _, err := os.Stat(exact); err == nil {
		return exact, nil
	}
	pat := filepath.Join(dir, fmt.Sprintf("libnvrtc-builtins.so.%d.*", major))
	m, _ := filepath.Glob(pat)
	sort.Slice(m, func(i, j int) bool { return versionLess(m[j], m[i]) })
	if len(m) > 0 {
		return m[0], nil
	}
	return "", []string{exact, pat}
}

// versionLess orders library file names by their numeric version suffix
// (libx.so.12.9 < libx.so.12.10).
func versionLess(a, b string) bool {
	va, vb := soVersion(a), soVersion(b)
	for i := 0; i < len(va) && i < len(vb); i++ {
		if va[i] != vb[i] {
			return va[i] < vb[i]
		}
	}
	return len(va) < len(vb)
}

func soVersion(p string) []int {
	_, v, _ := strings.Cut(filepath.Base(p), ".so.")
	var out []int
	for _, f := range strings.Split(v, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

func (n *NVRTC) errorString(r int32) string {
	return fmt.Sprintf("%s (%d)", goString(n.getErrorString(r)), r)
}

// SupportedArchs lists the sm_XX architectures this NVRTC compiles for
// (nvrtcGetSupportedArchs), ascending.
func (n *NVRTC) SupportedArchs() ([]string, error) {
	if n.numSupportedArchs == nil || n.supportedArchs == nil {
		return nil, fmt.Errorf("cuda: NVRTC %d.%d cannot list its architectures", n.Major, n.Minor)
	}
	var cnt int32
	if r := n.numSupportedArchs(&cnt); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcGetNumSupportedArchs: %s", n.errorString(r))
	}
	archs := make([]int32, cnt)
	if r := n.supportedArchs(firstOrNil(archs)); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcGetSupportedArchs: %s", n.errorString(r))
	}
	out := make([]string, len(archs))
	for i, a := range archs {
		out[i] = fmt.Sprintf("sm_%d", a)
	}
	return out, nil
}

// CompileResult is what one successful compile produced.
type CompileResult struct {
	CUBIN []byte // for a real architecture (--gpu-architecture=sm_XX)
	PTX   string // for a virtual one (compute_XX)
	Log   string // NVRTC's log, with ptxas's report under --ptxas-options=-v
}

// CompileError is a failed compile: NVRTC's result and its log, whose
// messages name the file and line (attention.cu(120): error: ...) or, for
// ptxas, the entry function.
type CompileError struct {
	Program string
	Options []string
	Result  string
	Log     string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: compiling %s (%s): %s\n%s", e.Program, strings.Join(e.Options, " "),
		e.Result, strings.TrimRight(e.Log, "\n"))
}

// Compile compiles p with options. For a --gpu-architecture=sm_XX option
// it returns the cubin, for compute_XX the PTX. It is safe for concurrent
// use (NVRTC allows concurrent compiles of distinct programs).
func (n *NVRTC) Compile(p Program, options []string) (*CompileResult, error) {
	names := make([]string, len(p.Headers))
	srcs := make([]string, len(p.Headers))
	for i, h := range p.Headers {
		names[i], srcs[i] = h.Name, h.Source
	}
	hdrPtrs, hdrBufs := cStrings(srcs)
	namePtrs, nameBufs := cStrings(names)
	src, name := cString(p.Source), cString(p.Name)
	var prog uintptr
	r := n.createProgram(&prog, &src[0], &name[0], int32(len(p.Headers)), firstOrNil(hdrPtrs), firstOrNil(namePtrs))
	runtime.KeepAlive(hdrBufs)
	runtime.KeepAlive(nameBufs)
	runtime.KeepAlive(src)
	runtime.KeepAlive(name)
	if r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcCreateProgram(%s): %s", p.Name, n.errorString(r))
	}
	defer n.destroyProgram(&prog)

	optPtrs, optBufs := cStrings(options)
	r = n.compileProgram(prog, int32(len(options)), firstOrNil(optPtrs))
	runtime.KeepAlive(optBufs)
	log, lerr := n.programLog(prog)
	if lerr != nil {
		return nil, lerr
	}
	if r != 0 {
		return nil, &CompileError{Program: p.Name, Options: options, Result: n.errorString(r), Log: log}
	}
	res := &CompileResult{Log: log}
	if virtualArch(options) {
		var size uint64
		if r := n.getPTXSize(prog, &size); r != 0 {
			return nil, fmt.Errorf("cuda: nvrtcGetPTXSize(%s): %s", p.Name, n.errorString(r))
		}
		buf := make([]byte, size)
		if r := n.getPTX(prog, firstOrNil(buf)); r != 0 {
			return nil, fmt.Errorf("cuda: nvrtcGetPTX(%s): %s", p.Name, n.errorString(r))
		}
		res.PTX = strings.TrimRight(string(buf), "\x00")
		return res, nil
	}
	var size uint64
	if r := n.getCUBINSize(prog, &size); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcGetCUBINSize(%s): %s", p.Name, n.errorString(r))
	}
	res.CUBIN = make([]byte, size)
	if r := n.getCUBIN(prog, firstOrNil(res.CUBIN)); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcGetCUBIN(%s): %s", p.Name, n.errorString(r))
	}
	return res, nil
}

// virtualArch reports whether the options target a virtual architecture
// (compute_XX: NVRTC produces PTX only).
func virtualArch(options []string) bool {
	for _, o := range options {
		for _, prefix := range []string{"--gpu-architecture=", "-arch="} {
			if a, ok := strings.CutPrefix(o, prefix); ok {
				return strings.HasPrefix(a, "compute_")
			}
		}
	}
	return false
}

func (n *NVRTC) programLog(prog uintptr) (string, error) {
	var size uint64
	if r := n.getProgramLogSize(prog, &size); r != 0 {
		return "", fmt.Errorf("cuda: nvrtcGetProgramLogSize: %s", n.errorString(r))
	}
	buf := make([]byte, size)
	if r := n.getProgramLog(prog, firstOrNil(buf)); r != 0 {
		return "", fmt.Errorf("cuda: nvrtcGetProgramLog: %s", n.errorString(r))
	}
	return strings.TrimRight(string(buf), "\x00"), nil
}
