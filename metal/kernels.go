package metal

import "fmt"

// Kernel names one kernel of the library by op and direction; with a
// flavour and an element type, KernelName gives its host name.
type Kernel struct{ Op, Dir string }

// Kernels is the registry: every kernel the backend dispatches. The library
// (shaders/*.metal) holds exactly these, each in both flavours and all three
// element types (TestLibraryIsRegistry).
var Kernels = []Kernel{
	{"adam", "step"},
	{"attention", "fwd"}, {"attention", "delta"}, {"attention", "dq"}, {"attention", "dkv"},
	{"attention", "dkv_ds"}, {"attention", "dq_ds"},
	{"axpy", ""},
	{"cast_from_float", ""}, {"cast_from_half", ""}, {"cast_from_bfloat", ""},
	{"embedding", "fwd"}, {"embedding", "bwd"},
	{"gemm", "nn"}, {"gemm", "nt"}, {"gemm", "tn"}, {"gemm", "tt"}, {"gemm", "reduce"},
	{"gemm", "nt_sym"}, {"gemm", "nn_sym"},
	{"gemm", "nt_relu_sq"}, {"gemm", "nn_drelu_sq"}, {"gemm", "nt_scaled_add"},
	{"gemm_f32", "nn"}, {"gemm_f32", "nt"}, {"gemm_f32", "tn"}, {"gemm_f32", "tt"}, {"gemm_f32", "reduce"},
	{"muon", "momentum"}, {"muon", "momentum_sumsq"}, {"muon", "axpy_t"},
	{"newton_schulz", "sumsq"}, {"newton_schulz", "norm"}, {"newton_schulz", "scale_t"}, {"newton_schulz", "scale4"},
	{"newton_schulz", "store"},
	{"qk_norm_rope", "fwd"}, {"qk_norm_rope", "bwd"}, {"qk_norm_rope", "dgain"},
	{"qk_norm_rope_pair", "fwd"}, {"qk_norm_rope_pair", "bwd"}, {"qk_norm_rope_pair", "dgain"},
	{"reduce", "partial"}, {"reduce", "final"},
	{"relu_sq", "fwd"}, {"relu_sq", "bwd"}, {"relu_sq", "fwd4"}, {"relu_sq", "bwd4"},
	{"resid_mix", "fwd"}, {"resid_mix", "bwd"}, {"resid_mix", "dmix"},
	{"resid_mix_rmsnorm", "fwd"},
	{"rmsnorm", "fwd"}, {"rmsnorm", "bwd"},
	{"rmsnorm_resid_mix", "bwd"},
	{"scale", ""},
	{"scaled_add", "fwd"}, {"scaled_add", "bwd"}, {"scaled_add", "ds"},
	{"scaled_add_rmsnorm", "fwd"},
	{"softcap_ce", "fwd"}, {"softcap_ce", "bwd"}, {"softcap_ce", "fused"},
	{"zero", ""},
}

// ElemTypes are the kernels' element types, in MSL spelling.
var ElemTypes = []string{"float", "half", "bfloat"}

// HostNames lists every host name of the registry.
func HostNames() []string {
	var names []string
	for _, k := range Kernels {
		for _, f := range []Flavour{Simd, Portable} {
			for _, e := range ElemTypes {
				names = append(names, KernelName(k.Op, k.Dir, f, e))
			}
		}
	}
	return names
}

var registered = func() map[Kernel]bool {
	m := map[Kernel]bool{}
	for _, k := range Kernels {
		m[k] = true
	}
	return m
}()

// checkRegistered panics for a kernel missing from the registry.
func checkRegistered(op, dir string) {
	if !registered[Kernel{op, dir}] {
		panic(fmt.Sprintf("metal: kernel %s/%s is not in the registry (metal/kernels.go)", op, dir))
	}
}

// attTileKernelThreads is the threadgroup size of attention's tile
// kernels (attention.metal's attention_tile_threads); the simd forward has
// its own constant, attFwdSimdThreads, of the same value.
const attTileKernelThreads = 128

// requiredThreads is the number of threads per threadgroup that kernel k's
// op dispatches in flavour f when that number is fixed by the kernel's
// tiling (its threadgroup arrays and simdgroup layout assume it), or 1 for
// kernels whose ops size their threadgroups from the pipeline's limit. A
// pipeline allowing fewer threads cannot run the op: Open refuses it.
func requiredThreads(k Kernel, f Flavour) int {
	switch k.Op {
	case "gemm", "gemm_f32":
		if k.Dir == "reduce" {
			return 1
		}
		if f == Simd {
			return gemmThreadsSimd
		}
		return gemmThreadsPortable
	case "attention":
		switch k.Dir {
		case "fwd":
			if f == Simd {
				return attFwdSimdThreads
			}
			return attTileKernelThreads
		case "dq", "dkv", "dq_ds", "dkv_ds":
			return attTileKernelThreads
		}
	case "newton_schulz":
		if k.Dir == "sumsq" || k.Dir == "norm" {
			return nsThreads
		}
	case "muon":
		if k.Dir == "momentum_sumsq" {
			return nsThreads
		}
	}
	return 1
}
