package cuda

import (
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/shaders"
)

// Every kernel of the registry has a launch configuration in every flavour
// and element type, and every table entry belongs to a kernel that runs.
func TestLaunchTableCoversRegistry(t *testing.T) {
	used := map[launchKey]bool{}
	for _, k := range Kernels {
		for _, f := range Flavours {
			for _, e := range ElemTypes {
				l := LaunchFor(k, f, e)
				assert.Equal(t, 0, l.Threads%32, "%s", k.Name(f, e))
				assert.NotEmpty(t, l.Grid, "%s", k.Name(f, e))
				used[launchKey{k.Op, k.Dir, k.Compiled(f, e)}] = true
			}
		}
	}
	for key := range launches {
		assert.True(t, used[key], "launch entry %v belongs to no kernel that runs", key)
	}
	assert.Panics(t, func() { LaunchFor(Kernel{Op: "nope"}, Portable, "float") })
}

func TestCompiledFlavour(t *testing.T) {
	gemm := Kernel{Op: "gemm", File: "linear", TC: true}
	assert.Equal(t, "gemm_tc_bfloat", gemm.Name(TC, "bfloat"))
	assert.Equal(t, "gemm_tc_half", gemm.Name(TC, "half"))
	assert.Equal(t, "gemm_portable_float", gemm.Name(TC, "float"), "fp32 must not take the tensor-core path")
	assert.Equal(t, "gemm_portable_bfloat", gemm.Name(Portable, "bfloat"))
	rms := Kernel{Op: "rmsnorm", Dir: "fwd", File: "rmsnorm"}
	assert.Equal(t, "rmsnorm_fwd_portable_half", rms.Name(TC, "half"))
	// 40 kernels in float; 13 tensor-core kernels more in each 16-bit type.
	assert.Len(t, HostNames("float"), len(Kernels))
	ntc := 0
	for _, k := range Kernels {
		if k.TC {
			ntc++
		}
	}
	assert.Len(t, HostNames("bfloat"), len(Kernels)+ntc)
}

// metalHost matches the host-name prefixes of shaders/*.metal's
// instantiations: "<op>[_<dir>]_<flavour>_" #tname.
var metalHost = regexp.MustCompile(`instantiate_kernel\("([a-z0-9_]+?)_(simd|portable)_" #tname`)

// metalGemmVariant matches the Metal GEMM's transpose variants, its
// split-K reduction, its symmetric products and its fused epilogues.
var metalGemmVariant = regexp.MustCompile(`^gemm(_f32)?_(nn|nt|tn|tt|reduce)$|^gemm_(nn|nt)_sym$|^gemm_nt_relu_sq$|^gemm_nn_drelu_sq$|^gemm_nt_scaled_add$`)

// metalMuonFusions are Metal's fused Muon passes, each run on CUDA as the
// kernels of its unfused sequence: the momentum with Newton–Schulz's sum
// of squares (muon_momentum, newton_schulz_sumsq), a tall matrix's update
// from its transposed iterate (newton_schulz_store, axpy), and the
// transposing scale (newton_schulz_scale, which on Metal is scale4 and
// scale_t by layout).
var metalMuonFusions = map[string][]string{
	"muon_momentum_sumsq":   {"muon_momentum", "newton_schulz_sumsq"},
	"muon_axpy_t":           {"newton_schulz_store", "axpy"},
	"newton_schulz_scale_t": {"newton_schulz_scale"},
}

// The CUDA library has every kernel of the Metal library under the same
// <op>_<dir> (the flavour names differ: simd there, tc here), the GEMM's
// variants aside, and its only extras are the attention kernels for head
// dims up to 128 and the two GEMMs those variants are.
func TestRegistryCoversMetalKernels(t *testing.T) {
	files, err := fs.Glob(shaders.FS(), "*.metal")
	require.NoError(t, err)
	metal := map[string]bool{}
	for _, f := range files {
		src, err := fs.ReadFile(shaders.FS(), f)
		require.NoError(t, err)
		for _, m := range metalHost.FindAllStringSubmatch(string(src), -1) {
			metal[m[1]] = true
		}
	}
	require.Greater(t, len(metal), 30, "too few Metal kernels parsed: %v", metal)
	cuda := map[string]bool{}
	for _, k := range Kernels {
		base := k.Op
		if k.Dir != "" {
			base += "_" + k.Dir
		}
		cuda[base] = true
	}
	var missing, extra []string
	for m := range metal {
		// Metal's four-a-thread vector variants (relu_sq_fwd4, ...) are
		// the CUDA kernels of the name without the 4, which choose 16-byte
		// or element accesses per chunk themselves.
		if v, ok := strings.CutSuffix(m, "4"); ok && cuda[v] {
			continue
		}
		// Metal's GEMM has its transposes as compile-time variants
		// (gemm_nt, gemm_f32_tn, ...), which the CUDA gemm kernels take
		// as arguments, a split-K pass (gemm_reduce, gemm_f32_reduce)
		// that the CUDA GEMMs do without, and symmetric products
		// (gemm_nn_sym, gemm_nt_sym: Newton–Schulz's A·A and X·Xᵀ on the
		// tiles above the diagonal), which CUDA computes in full through
		// cuBLASLt, and the MLP's linear + relu² epilogues (gemm_nt_relu_sq:
		// h and relu(h)² from one product; gemm_nn_drelu_sq: dh from
		// dout·w and h) and its second product's residual add
		// (gemm_nt_scaled_add), which CUDA runs as their unfused sequences,
		// the cuBLASLt product then relu_sq_fwd, relu_sq_bwd or
		// scaled_add_fwd.
		if metalGemmVariant.MatchString(m) {
			continue
		}
		if seq, ok := metalMuonFusions[m]; ok {
			for _, c := range seq {
				assert.True(t, cuda[c], "%s: CUDA runs its unfused sequence, which needs %s", m, c)
			}
			continue
		}
		// Metal's backward with dS stored by dk/dv and read back by dq
		// (attention_dkv_ds, attention_dq_ds); CUDA's dq recomputes S and
		// dP.
		if m == "attention_dkv_ds" || m == "attention_dq_ds" {
			continue
		}
		if !cuda[m] {
			missing = append(missing, m)
		}
	}
	for c := range cuda {
		// The transposing scale is one CUDA kernel, Metal's scale4 and
		// scale_t by layout.
		if c == "newton_schulz_scale" && metal["newton_schulz_scale4"] && metal["newton_schulz_scale_t"] {
			continue
		}
		if !metal[c] {
			extra = append(extra, c)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	assert.Empty(t, missing, "Metal kernels without a CUDA kernel")
	assert.Equal(t, []string{"attention_dkv_d128", "attention_dq_d128", "attention_fwd_d128", "gemm", "gemm_f32"}, extra)
}

func TestLimits(t *testing.T) {
	// The programming guide's opt-in shared memory per block, in bytes.
	for arch, want := range map[string]int{"sm_80": 166912, "sm_86": 101376, "sm_89": 101376, "sm_90": 232448, "sm_90a": 232448} {
		l, err := Limits(arch)
		require.NoError(t, err)
		assert.Equal(t, want, l.SharedPerBlock, arch)
		assert.Equal(t, 65536, l.RegistersPerBlock)
		assert.Equal(t, 49152, l.StaticSharedMax)
	}
	_, err := Limits("sm_61")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "architecture sm_61: no limits known")
}

// One planted violation per rule: each is reported, by itself, and a
// launch that fits reports nothing.
func TestCheckFitRules(t *testing.T) {
	a, err := Limits("sm_86")
	require.NoError(t, err)
	ok := Resources{Registers: 64, MaxThreads: 256, StaticShared: 16 << 10}
	good := Launch{Threads: 256}
	require.NoError(t, CheckFit("k", ok, good, a))

	cases := []struct {
		name string
		r    Resources
		l    Launch
		want string
	}{
		{"spill", Resources{Registers: 255, MaxThreads: 256, SpillStores: 8, SpillLoads: 4}, good,
			"k on sm_86: spills registers (8 bytes stores, 4 bytes loads)"},
		{"bounds", ok, Launch{Threads: 512}, "launch with 512 threads exceeds the kernel's launch bounds (256)"},
		{"device", Resources{Registers: 16}, Launch{Threads: 2048}, "launch with 2048 threads, the device allows 1024"},
		{"warp", ok, Launch{Threads: 100}, "launch with 100 threads: not a positive multiple of 32"},
		// 255 registers round to 256 per thread: 8192 per warp, 9 warps.
		{"registers", Resources{Registers: 255}, Launch{Threads: 288},
			"255 registers × 288 threads need 73728 registers per block (allocated per warp in units of 256), the limit is 65536"},
		{"dynamic", ok, Launch{Threads: 256, DynamicShared: 90 << 10},
			"108544 bytes of shared memory (16384 static + 92160 dynamic), the limit is 101376"},
		{"static", Resources{Registers: 32, StaticShared: 50 << 10}, good,
			"51200 bytes of static shared memory, the limit is 49152"},
	}
	for _, c := range cases {
		err := CheckFit("k", c.r, c.l, a)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
		assert.Equal(t, 1, strings.Count(err.Error(), "k on sm_86:"), "%s: %v", c.name, err)
		// CheckLaunch, the backend's check, lets a spill through and
		// refuses everything else alike.
		err = CheckLaunch("k", c.r, c.l, a)
		if c.name == "spill" {
			assert.NoError(t, err, c.name)
		} else if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
	// 255 registers at 256 threads is exactly 65536: fits.
	require.NoError(t, CheckFit("k", Resources{Registers: 255}, Launch{Threads: 256}, a))
	// The same dynamic shared memory fits sm_80's 163 KiB.
	a80, err := Limits("sm_80")
	require.NoError(t, err)
	require.NoError(t, CheckFit("k", ok, Launch{Threads: 256, DynamicShared: 90 << 10}, a80))
}
