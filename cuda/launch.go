package cuda

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Launch is how the host launches one compiled kernel: Threads per block
// (blocks are one-dimensional, a multiple of 32; every kernel declares
// exactly this as its __launch_bounds__), the dynamic shared memory per
// block, and the grid, in the dimension legend of package backend (n the
// elements of the call, RB the row blocks of a column-parallel backward,
// G the blocks of a reduction's first pass, V = 8 the elements of a row
// chunk, golf_rows.cuh). The backend's host code takes these numbers
// from this table and nowhere else, and the tagged tests check every
// entry against the compiled kernels of every architecture.
type Launch struct {
	Threads       int
	DynamicShared int
	Grid          string
}

// Grid parameters the host chooses (shared by the host code and the
// table's grid formulas).
const (
	// ReduceMaxBlocks bounds the first pass of Reduce (and so the partial
	// sums reduce_final adds).
	ReduceMaxBlocks = 1024
	// ReduceItemsPerThread is the work per thread below which Reduce uses
	// fewer blocks: G = min(ReduceMaxBlocks, ⌈n/(256·16)⌉).
	ReduceItemsPerThread = 16
	// NewtonSchulzMaxBlocks bounds the partial sums of ‖g‖².
	NewtonSchulzMaxBlocks = 64
	// ColumnRowBlocks is RB, the row blocks of the column-parallel
	// backward kernels (scaled_add_bwd, resid_mix_bwd).
	ColumnRowBlocks = 128
)

// launchKey names a table entry: a kernel and the flavour of its code.
type launchKey struct {
	op, dir string
	f       Flavour
}

var (
	elementwise = func(n string) Launch { return Launch{Threads: 256, Grid: "⌈" + n + "/256⌉"} }
	rowWarps    = func(rows string) Launch { return Launch{Threads: 256, Grid: "⌈" + rows + "/8⌉ (a warp per row)"} }
	// qkHeads is qk_norm_rope's: G lanes per head, 8 warps per block.
	qkHeads = func(grid string) Launch {
		return Launch{Threads: 256, Grid: grid + ", G = qkLanes(D) lanes per head"}
	}
)

// launches is the table. Tensor-core kernels have a tc entry; in float,
// and for the other kernels, the portable entry serves both flavours
// (Kernel.Compiled).
var launches = map[launchKey]Launch{
	{"adam", "step", Portable}:               elementwise("n"),
	{"attention", "fwd", Portable}:           {Threads: 128, Grid: "(⌈T/32⌉, H, B)"},
	{"attention", "fwd", TC}:                 {Threads: 128, Grid: "(⌈T/128⌉, H, B) at D = 64, else (⌈T/64⌉, H, B)"},
	{"attention", "fwd_d128", Portable}:      {Threads: 128, Grid: "(⌈T/32⌉, H, B)"},
	{"attention", "fwd_d128", TC}:            {Threads: 128, Grid: "(⌈T/64⌉, H, B)"},
	{"attention", "delta", Portable}:         elementwise("N·H"),
	{"attention", "dq", Portable}:            {Threads: 128, Grid: "(⌈T/32⌉, H, B)"},
	{"attention", "dq", TC}:                  {Threads: 128, Grid: "(⌈T/64⌉, H, B)"},
	{"attention", "dq_d128", Portable}:       {Threads: 128, Grid: "(⌈T/32⌉, H, B)"},
	{"attention", "dq_d128", TC}:             {Threads: 128, Grid: "(⌈T/64⌉, H, B)"},
	{"attention", "dkv", Portable}:           {Threads: 128, Grid: "(⌈T/32⌉, Hkv, B)"},
	{"attention", "dkv", TC}:                 {Threads: 128, Grid: "(⌈T/64⌉, Hkv, B)"},
	{"attention", "dkv_d128", Portable}:      {Threads: 128, Grid: "(⌈T/32⌉, Hkv, B)"},
	{"attention", "dkv_d128", TC}:            {Threads: 128, Grid: "(⌈T/64⌉, Hkv, B)"},
	{"axpy", "", Portable}:                   elementwise("n"),
	{"cast_from_float", "", Portable}:        elementwise("n"),
	{"cast_from_half", "", Portable}:         elementwise("n"),
	{"cast_from_bfloat", "", Portable}:       elementwise("n"),
	{"embedding", "fwd", Portable}:           elementwise("N·C"),
	{"embedding", "bwd", Portable}:           {Threads: 256, Grid: "(V, ⌈C/256⌉)"},
	{"gemm", "", Portable}:                   {Threads: 256, Grid: "(⌈n/64⌉, ⌈m/64⌉)"},
	{"gemm", "", TC}:                         {Threads: 128, Grid: "(⌈n/64⌉, ⌈m/64⌉)"},
	{"gemm_f32", "", Portable}:               {Threads: 256, Grid: "(⌈n/64⌉, ⌈m/64⌉)"},
	{"gemm_f32", "", TC}:                     {Threads: 128, Grid: "(⌈n/64⌉, ⌈m/64⌉)"},
	{"muon", "momentum", Portable}:           elementwise("n"),
	{"newton_schulz", "sumsq", Portable}:     {Threads: 256, Grid: "min(64, ⌈R·C/4096⌉)"},
	{"newton_schulz", "norm", Portable}:      {Threads: 256, Grid: "1"},
	{"newton_schulz", "scale", Portable}:     elementwise("R·C"),
	{"newton_schulz", "store", Portable}:     elementwise("R·C"),
	{"qk_norm_rope", "fwd", Portable}:        qkHeads("⌈N·Hx/(8·32/G)⌉"),
	{"qk_norm_rope", "bwd", Portable}:        qkHeads("⌈N·Hx/(8·32/G)⌉"),
	{"qk_norm_rope", "dgain", Portable}:      {Threads: 256, Grid: "Hx"},
	{"qk_norm_rope_pair", "fwd", Portable}:   qkHeads("⌈N·Hq/(8·32/G)⌉ + ⌈N·Hk/(8·32/G)⌉ (q's heads, then k's)"),
	{"qk_norm_rope_pair", "bwd", Portable}:   qkHeads("⌈N·Hq/(8·32/G)⌉ + ⌈N·Hk/(8·32/G)⌉ (q's heads, then k's)"),
	{"qk_norm_rope_pair", "dgain", Portable}: {Threads: 256, Grid: "Hq + Hk (the sides with a dgain)"},
	{"reduce", "partial", Portable}:          {Threads: 256, Grid: "G = min(1024, ⌈n/4096⌉)"},
	{"reduce", "final", Portable}:            {Threads: 256, Grid: "1"},
	{"relu_sq", "fwd", Portable}:             elementwise("⌈n/V⌉"),
	{"relu_sq", "bwd", Portable}:             elementwise("⌈n/V⌉"),
	{"resid_mix", "fwd", Portable}:           elementwise("N·⌈C/V⌉"),
	{"resid_mix", "bwd", Portable}:           {Threads: 256, Grid: "(⌈⌈C/V⌉/256⌉, RB = 128)"},
	{"resid_mix", "dmix", Portable}:          elementwise("2·C"),
	{"resid_mix_rmsnorm", "fwd", Portable}:   rowWarps("N"),
	{"rmsnorm", "fwd", Portable}:             rowWarps("N"),
	{"rmsnorm", "bwd", Portable}:             rowWarps("N"),
	{"rmsnorm_resid_mix", "bwd", Portable}:   {Threads: 256, Grid: "RB = 128 (a block per row block)"},
	{"scale", "", Portable}:                  elementwise("n"),
	{"scaled_add", "fwd", Portable}:          elementwise("N·⌈C/V⌉"),
	{"scaled_add", "bwd", Portable}:          {Threads: 256, Grid: "(⌈C/256⌉, RB = 128)"},
	{"scaled_add", "ds", Portable}:           elementwise("C"),
	{"scaled_add_rmsnorm", "fwd", Portable}:  rowWarps("N"),
	{"softcap_ce", "fwd", Portable}:          rowWarps("N"),
	{"softcap_ce", "bwd", Portable}:          rowWarps("N"),
	{"softcap_ce", "fused", Portable}:        rowWarps("N"),
	{"zero", "", Portable}:                   elementwise("n"),
}

// LaunchFor returns the launch configuration of k in flavour f for elem
// (the entry of the flavour whose code runs: Kernel.Compiled). A kernel
// missing from the table is a programmer error.
func LaunchFor(k Kernel, f Flavour, elem string) Launch {
	cf := k.Compiled(f, elem)
	l, ok := launches[launchKey{k.Op, k.Dir, cf}]
	if !ok {
		panic(fmt.Sprintf("cuda: no launch configuration for %s", KernelName(k.Op, k.Dir, cf, elem)))
	}
	return l
}

// ArchLimits are the per-block limits of one GPU architecture that a
// launch must fit (CUDA C++ Programming Guide, "Technical Specifications
// per Compute Capability"; the same numbers the driver reports as
// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN and
// MAX_REGISTERS_PER_BLOCK).
type ArchLimits struct {
	Arch               string
	MaxThreadsPerBlock int // 1024
	RegistersPerBlock  int // 64 Ki 32-bit registers
	// RegisterUnit is the allocation unit of registers per warp (256): a
	// warp of a kernel using r registers per thread takes
	// ⌈32·r/256⌉·256 of the block's registers.
	RegisterUnit int
	// SharedPerBlock is the most shared memory (static + dynamic) one block
	// may use after opting in (cuFuncSetAttribute
	// MAX_DYNAMIC_SHARED_SIZE_BYTES); StaticSharedMax the most a kernel may
	// declare statically (ptxas refuses more).
	SharedPerBlock  int
	StaticSharedMax int
}

// archShared is the opt-in shared memory per block by compute capability
// (major·10 + minor).
var archShared = map[int]int{
	75: 64 << 10,
	80: 163 << 10,
	86: 99 << 10,
	87: 163 << 10,
	89: 99 << 10,
	90: 227 << 10,
}

// Limits returns the limits of an sm_XX architecture; an architecture
// golf has no numbers for is an error naming it.
func Limits(arch string) (ArchLimits, error) {
	cc, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(arch, "sm_"), "a"))
	sh, ok := archShared[cc]
	if err != nil || !ok || !strings.HasPrefix(arch, "sm_") {
		known := make([]int, 0, len(archShared))
		for k := range archShared {
			known = append(known, k)
		}
		sort.Ints(known)
		return ArchLimits{}, fmt.Errorf("architecture %s: no limits known (known: sm_%v)", arch, known)
	}
	return ArchLimits{
		Arch: arch, MaxThreadsPerBlock: 1024, RegistersPerBlock: 64 << 10, RegisterUnit: 256,
		SharedPerBlock: sh, StaticSharedMax: 48 << 10,
	}, nil
}

// CheckFit reports every way a launch of a compiled kernel breaks a rule;
// nil when it fits: CheckLaunch's rules, and no register spills (spill
// stores or loads: local-memory traffic the kernel was not written to
// have). It is the check of `golf kernels` and of the library's tests.
func CheckFit(name string, r Resources, l Launch, a ArchLimits) error {
	var errs []error
	if r.SpillStores > 0 || r.SpillLoads > 0 {
		errs = append(errs, fmt.Errorf("%s on %s: spills registers (%d bytes stores, %d bytes loads)",
			name, a.Arch, r.SpillStores, r.SpillLoads))
	}
	return errors.Join(append(errs, CheckLaunch(name, r, l, a))...)
}

// CheckLaunch reports every way a launch of a compiled kernel would be
// refused by the driver or the hardware; nil when it can run:
//   - Threads is a multiple of 32, at most the device's 1024, and at most
//     the kernel's launch bounds (MaxThreads; 0 means none declared);
//   - the block's registers fit: warps·⌈32·registers/256⌉·256 ≤ 65536;
//   - static + dynamic shared memory ≤ the architecture's opt-in limit,
//     and static ≤ 48 KiB.
//
// The backend checks these before its first launch. A spill (CheckFit)
// costs speed, not correctness: another NVRTC than the one golf's
// kernels were tuned with may spill a few bytes, and the backend still
// runs (its start-up says so).
func CheckLaunch(name string, r Resources, l Launch, a ArchLimits) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s on %s: "+format, append([]any{name, a.Arch}, args...)...))
	}
	if l.Threads <= 0 || l.Threads%32 != 0 {
		bad("launch with %d threads: not a positive multiple of 32", l.Threads)
	}
	if l.Threads > a.MaxThreadsPerBlock {
		bad("launch with %d threads, the device allows %d", l.Threads, a.MaxThreadsPerBlock)
	}
	if r.MaxThreads > 0 && l.Threads > r.MaxThreads {
		bad("launch with %d threads exceeds the kernel's launch bounds (%d)", l.Threads, r.MaxThreads)
	}
	warps := (l.Threads + 31) / 32
	perWarp := (32*r.Registers + a.RegisterUnit - 1) / a.RegisterUnit * a.RegisterUnit
	if warps*perWarp > a.RegistersPerBlock {
		bad("%d registers × %d threads need %d registers per block (allocated per warp in units of %d), the limit is %d",
			r.Registers, l.Threads, warps*perWarp, a.RegisterUnit, a.RegistersPerBlock)
	}
	if r.StaticShared > a.StaticSharedMax {
		bad("%d bytes of static shared memory, the limit is %d", r.StaticShared, a.StaticSharedMax)
	}
	if total := r.StaticShared + l.DynamicShared; total > a.SharedPerBlock {
		bad("%d bytes of shared memory (%d static + %d dynamic), the limit is %d",
			total, r.StaticShared, l.DynamicShared, a.SharedPerBlock)
	}
	return errors.Join(errs...)
}
