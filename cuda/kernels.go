package cuda

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

//go:embed kernels/*.cu kernels/*.cuh
var kernelFiles embed.FS

// Flavour selects a kernel variant by device capability, as Metal's
// simd/portable.
type Flavour int

const (
	// Portable kernels are plain CUDA C++ (warp shuffles, shared memory,
	// float multiply-adds): what the CPU emulator runs, and a fallback.
	Portable Flavour = iota
	// TC kernels use the tensor cores through mma.sync (m16n8k16, sm_80+)
	// for the bf16 and fp16 matrix products of the GEMM and attention; in
	// float, and in every other kernel, they are the portable code (fp32
	// products stay exact fp32: no TF32).
	TC
)

// Flavours lists every flavour.
var Flavours = []Flavour{Portable, TC}

func (f Flavour) String() string {
	if f == TC {
		return "tc"
	}
	return "portable"
}

// Kernel names one kernel of the library by op and direction, and the
// kernel file (cuda/kernels/<File>.cu) that holds it. TC marks the kernels
// with a tensor-core variant (in half and bfloat).
type Kernel struct {
	Op, Dir, File string
	TC            bool
}

// Kernels is the registry: every kernel the backend launches. The library
// holds exactly the host names of these (TestLibraryIsRegistry): every
// kernel in the portable flavour and all three element types, and the TC
// ones also in the tc flavour for half and bfloat. The names are the Metal
// library's (shaders/*.metal) where Metal has the kernel; the attention
// kernels for head dims 65..128 (dirs fwd_d128, dq_d128, dkv_d128) are
// CUDA's own. The fused ops' kernels are in fused.cu (shaders/fused.metal),
// qk_norm_rope.cu and softcap_ce.cu.
var Kernels = []Kernel{
	{Op: "adam", Dir: "step", File: "adam"},
	{Op: "attention", Dir: "fwd", File: "attention", TC: true},
	{Op: "attention", Dir: "delta", File: "attention"},
	{Op: "attention", Dir: "dq", File: "attention", TC: true},
	{Op: "attention", Dir: "dkv", File: "attention", TC: true},
	{Op: "attention", Dir: "fwd_d128", File: "attention", TC: true},
	{Op: "attention", Dir: "dq_d128", File: "attention", TC: true},
	{Op: "attention", Dir: "dkv_d128", File: "attention", TC: true},
	{Op: "axpy", File: "elementwise"},
	{Op: "cast_from_float", File: "elementwise"},
	{Op: "cast_from_half", File: "elementwise"},
	{Op: "cast_from_bfloat", File: "elementwise"},
	{Op: "embedding", Dir: "fwd", File: "embedding"},
	{Op: "embedding", Dir: "bwd", File: "embedding"},
	{Op: "gemm", File: "linear", TC: true},
	{Op: "gemm_f32", File: "linear", TC: true},
	{Op: "muon", Dir: "momentum", File: "muon"},
	{Op: "newton_schulz", Dir: "sumsq", File: "newton_schulz"},
	{Op: "newton_schulz", Dir: "norm", File: "newton_schulz"},
	{Op: "newton_schulz", Dir: "scale", File: "newton_schulz"},
	{Op: "newton_schulz", Dir: "store", File: "newton_schulz"},
	{Op: "qk_norm_rope", Dir: "fwd", File: "qk_norm_rope"},
	{Op: "qk_norm_rope", Dir: "bwd", File: "qk_norm_rope"},
	{Op: "qk_norm_rope", Dir: "dgain", File: "qk_norm_rope"},
	{Op: "qk_norm_rope_pair", Dir: "fwd", File: "qk_norm_rope"},
	{Op: "qk_norm_rope_pair", Dir: "bwd", File: "qk_norm_rope"},
	{Op: "qk_norm_rope_pair", Dir: "dgain", File: "qk_norm_rope"},
	{Op: "reduce", Dir: "partial", File: "elementwise"},
	{Op: "reduce", Dir: "final", File: "elementwise"},
	{Op: "relu_sq", Dir: "fwd", File: "relu_sq"},
	{Op: "relu_sq", Dir: "bwd", File: "relu_sq"},
	{Op: "resid_mix", Dir: "fwd", File: "resid_mix"},
	{Op: "resid_mix", Dir: "bwd", File: "resid_mix"},
	{Op: "resid_mix", Dir: "dmix", File: "resid_mix"},
	{Op: "resid_mix_rmsnorm", Dir: "fwd", File: "fused"},
	{Op: "rmsnorm", Dir: "fwd", File: "rmsnorm"},
	{Op: "rmsnorm", Dir: "bwd", File: "rmsnorm"},
	{Op: "rmsnorm_resid_mix", Dir: "bwd", File: "fused"},
	{Op: "scale", File: "elementwise"},
	{Op: "scaled_add", Dir: "fwd", File: "scaled_add"},
	{Op: "scaled_add", Dir: "bwd", File: "scaled_add"},
	{Op: "scaled_add", Dir: "ds", File: "scaled_add"},
	{Op: "scaled_add_rmsnorm", Dir: "fwd", File: "fused"},
	{Op: "softcap_ce", Dir: "fwd", File: "softcap_ce"},
	{Op: "softcap_ce", Dir: "bwd", File: "softcap_ce"},
	{Op: "softcap_ce", Dir: "fused", File: "softcap_ce"},
	{Op: "zero", File: "elementwise"},
}

// ElemTypes are the kernels' element types, spelled as in the Metal host
// names (float, half, bfloat).
var ElemTypes = []string{"float", "half", "bfloat"}

// ElemType is the host-name spelling of a float dtype.
func ElemType(dt backend.DType) string {
	switch dt {
	case backend.F32:
		return "float"
	case backend.F16:
		return "half"
	case backend.BF16:
		return "bfloat"
	}
	panic(fmt.Sprintf("cuda: no kernel element type for %v", dt))
}

// KernelName is the host name of a kernel: <op>_<dir>_<flavour>_<elem>, or
// <op>_<flavour>_<elem> without a direction (metal.KernelName's scheme).
func KernelName(op, dir string, f Flavour, elem string) string {
	if dir == "" {
		return fmt.Sprintf("%s_%s_%s", op, f, elem)
	}
	return fmt.Sprintf("%s_%s_%s_%s", op, dir, f, elem)
}

// Compiled is the flavour whose code runs when k is launched in flavour f
// for elem: f itself for a TC kernel in half or bfloat, else Portable (a
// kernel without tensor cores is the same code in both flavours, and in
// float the tc flavour keeps fp32 products exact, without TF32, by running
// the portable kernel). Identical code is thus compiled once.
func (k Kernel) Compiled(f Flavour, elem string) Flavour {
	if f == TC && k.TC && elem != "float" {
		return TC
	}
	return Portable
}

// Name is the host name the backend launches for k in flavour f and element
// type elem: the name of the Compiled flavour's kernel.
func (k Kernel) Name(f Flavour, elem string) string {
	return KernelName(k.Op, k.Dir, k.Compiled(f, elem), elem)
}

// HostNames lists the distinct host names of the registry for element type
// elem: the kernels the library holds for it.
func HostNames(elem string) []string {
	seen := map[string]bool{}
	var names []string
	for _, k := range Kernels {
		for _, f := range Flavours {
			n := k.Name(f, elem)
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

// KernelFiles lists the kernel files (without .cu), sorted.
func KernelFiles() []string {
	seen := map[string]bool{}
	var files []string
	for _, k := range Kernels {
		if !seen[k.File] {
			seen[k.File] = true
			files = append(files, k.File)
		}
	}
	sort.Strings(files)
	return files
}

// The headers every kernel file may include by name.
const (
	preludeName = "golf_prelude.cuh"
	rowsName    = "golf_rows.cuh"
	argsName    = "golf_args.h"
)

// kernelHeaders returns the headers every kernel file may include: the
// prelude, the row code (golf_rows.cuh) and golf_args.h (the argument
// structs shared with the Metal kernels and the Go host).
func kernelHeaders() ([]Header, error) {
	var hdrs []Header
	for _, name := range []string{preludeName, rowsName} {
		src, err := fs.ReadFile(kernelFiles, path.Join("kernels", name))
		if err != nil {
			return nil, fmt.Errorf("cuda: %w", err)
		}
		hdrs = append(hdrs, Header{name, string(src)})
	}
	args, err := fs.ReadFile(shaders.FS(), argsName)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	return append(hdrs, Header{argsName, string(args)}), nil
}

// FileProgram is the NVRTC program of one kernel file: its source, named
// "<file>.cu" in compiler messages, and the headers.
func FileProgram(file string) (Program, error) {
	src, err := fs.ReadFile(kernelFiles, path.Join("kernels", file+".cu"))
	if err != nil {
		return Program{}, fmt.Errorf("cuda: kernel file %s.cu: %w", file, err)
	}
	hdrs, err := kernelHeaders()
	if err != nil {
		return Program{}, err
	}
	return Program{Name: file + ".cu", Source: string(src), Headers: hdrs}, nil
}

// CompileOptions are the NVRTC options of every kernel program: the real
// architecture (a cubin, not PTX), C++17, ptxas's resource report (for
// spills; see Resources) and the element type whose kernels the program
// instantiates (GOLF_INSTANTIATE). No fast math: expf, tanhf and logf keep
// their full accuracy, and float division and sqrt round correctly.
func CompileOptions(arch, elem string, extra ...string) []string {
	opts := []string{
		"--gpu-architecture=" + arch,
		"-std=c++17",
		"--ptxas-options=-v",
		"-DGOLF_ELEM_" + elem,
	}
	return append(opts, extra...)
}

// ParseArchs parses a comma-separated list of sm_XX architectures
// (--arch); an entry that is not sm_<digits>[a] is an error naming it.
func ParseArchs(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		num, ok := strings.CutPrefix(a, "sm_")
		num = strings.TrimSuffix(num, "a")
		if !ok || num == "" || strings.Trim(num, "0123456789") != "" {
			return nil, fmt.Errorf("architecture %q: want sm_<number>, e.g. sm_80", a)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no architecture given")
	}
	return out, nil
}
