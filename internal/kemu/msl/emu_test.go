//go:build cgo

package msl

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/kemu/msl/internal/kgen"
	"github.com/golf-ml/golf/shaders"
)

// TestGeneratedUpToDate regenerates zz_kernels_gen.cc from the sources and
// compares it with the file in the package.
func TestGeneratedUpToDate(t *testing.T) {
	cfg, err := kgen.Load(".", "../../../shaders")
	require.NoError(t, err)
	want, err := kgen.Generate(cfg)
	require.NoError(t, err)
	got, err := os.ReadFile("zz_kernels_gen.cc")
	require.NoError(t, err)
	require.True(t, bytes.Equal(got, want), "zz_kernels_gen.cc is out of date: run go generate ./internal/kemu/msl")
}

// TestLibraryKernels checks the registry: every kernel is named
// <base>_<simd|portable>_<float|half|bfloat> and exists in every flavour
// and dtype, the sample kernels are there, and each has the buffer slots
// its shader declares.
func TestLibraryKernels(t *testing.T) {
	got := Kernels()
	bases := map[string]bool{"relu_sq_fwd": true, "relu_sq_bwd": true, "rmsnorm_fwd": true}
	for _, name := range got {
		base, ok := "", false
		for _, fl := range []string{"_simd_", "_portable_"} {
			if i := strings.LastIndex(name, fl); i > 0 {
				base, ok = name[:i], true
			}
		}
		if !assert.True(t, ok, "kernel %s: name is not <base>_<simd|portable>_<dtype>", name) {
			continue
		}
		bases[base] = true
	}
	var want []string
	for base := range bases {
		for _, dt := range []string{"float", "half", "bfloat"} {
			for _, fl := range []string{"simd", "portable"} {
				want = append(want, base+"_"+fl+"_"+dt)
			}
		}
	}
	sort.Strings(want)
	assert.Equal(t, want, got, "Kernels()")
	k, err := Lookup("rmsnorm_fwd_simd_half")
	require.NoError(t, err)
	assert.Equal(t, "rmsnorm.metal", k.File(), "rmsnorm_fwd_simd_half: file")
	assert.Equal(t, "rmsnorm_fwd_simd<half>", k.Func(), "rmsnorm_fwd_simd_half: func")
	wantSlots := []Slot{
		{0, "x", false, 2, 2}, {1, "out", false, 2, 2}, {2, "rstd", false, 4, 4}, {3, "args", true, 12, 4},
	}
	assert.Equal(t, wantSlots, k.Slots(), "rmsnorm_fwd_simd_half: slots")
	_, err = Lookup("emu_simd_ops_float")
	assert.Error(t, err, "Lookup finds a self-test kernel")
	_, err = Lookup("no_such_kernel")
	assert.Error(t, err, "Lookup finds no_such_kernel")
}

// TestArgLayouts checks every struct of golf_args.h against its Go mirror
// in package shaders (shaders.Mirrors, which its own test keeps complete):
// the same fields, offsets and sizes as the C++ compiler lays out.
func TestArgLayouts(t *testing.T) {
	mirrors := map[string]reflect.Type{}
	for _, m := range shaders.Mirrors {
		mirrors[reflect.TypeOf(m).Name()] = reflect.TypeOf(m)
	}
	require.Len(t, mirrors, len(shaders.Mirrors), "shaders.Mirrors lists a type twice")
	fields := map[string][]fieldLayout{}
	for _, f := range argLayouts() {
		fields[f.Struct] = append(fields[f.Struct], f)
	}
	for name := range fields {
		assert.Contains(t, mirrors, name, "golf_args.h struct %s has no Go mirror in package shaders", name)
	}
	// layout is a field as both sides see it.
	type layout struct {
		Name         string
		Offset, Size int
	}
	for name, typ := range mirrors {
		fs := fields[name]
		if !assert.NotEmpty(t, fs, "Go mirror shaders.%s has no struct in golf_args.h", name) {
			continue
		}
		assert.Equal(t, fs[0].StructSize, int(typ.Size()), "%s: Go size against C++", name)
		if !assert.Equal(t, len(fs), typ.NumField(), "%s: Go fields against C++", name) {
			continue
		}
		for i, f := range fs {
			g := typ.Field(i)
			assert.Equal(t, layout{camel(f.Field), f.Offset, f.Size}, layout{g.Name, int(g.Offset), int(g.Type.Size())},
				"%s field %d (C++ %s): Go against C++", name, i, f.Field)
		}
	}
}

// camel turns a C field name (snake_case) into its Go mirror's name.
func camel(s string) string {
	var sb strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			sb.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return sb.String()
}

// TestBarrierNeighbour: threads write threadgroup memory, and after a
// barrier read what a thread of another simdgroup wrote; then overwrite and
// read again. Sizes cover a partial last simdgroup and 1024 threads.
func TestBarrierNeighbour(t *testing.T) {
	for _, tc := range []struct{ threads, shift, groups int }{
		{96, 37, 3}, {100, 45, 2}, {1024, 333, 2}, {33, 32, 4}, {1, 0, 2},
	} {
		n := tc.threads
		out := poisoned(4 * 2 * n * tc.groups)
		args := selftestArgs{Delta: uint32(tc.shift)}
		dispatch(t, "emu_barrier_neighbour", [3]int{tc.groups, 1, 1}, [3]int{n, 1, 1}, out, structBytes(&args))
		got := decodeU32(out)
		bad := 0
		for g := 0; g < tc.groups; g++ {
			for tid := 0; tid < n; tid++ {
				v1 := uint32(g*100000 + (tid+tc.shift)%n)
				u := (tid + 2*tc.shift) % n
				v2 := 3*uint32(g*100000+(u+tc.shift)%n) + 1
				i := 2 * (g*n + tid)
				if got[i] != v1 || got[i+1] != v2 {
					if bad++; bad <= 5 { // the first 5 mismatches of tc
						assert.Equal(t, []uint32{v1, v2}, got[i:i+2], "T=%d group %d thread %d", n, g, tid)
					}
				}
			}
		}
	}
}

// TestBuiltins checks every builtin of every thread in a 3-D dispatch with
// a partial simdgroup.
func TestBuiltins(t *testing.T) {
	groups := [3]int{3, 2, 2}
	threads := [3]int{5, 3, 4} // 60 threads: simdgroups of 32 and 28
	var gridN [3]int
	for d := range gridN {
		gridN[d] = groups[d] * threads[d]
	}
	total := gridN[0] * gridN[1] * gridN[2]
	out := poisoned(4 * 24 * total)
	dispatch(t, "emu_builtins", groups, threads, out)
	got := decodeU32(out)
	nt := threads[0] * threads[1] * threads[2]
	for z := 0; z < gridN[2]; z++ {
		for y := 0; y < gridN[1]; y++ {
			for x := 0; x < gridN[0]; x++ {
				pos := [3]int{x, y, z}
				var tg, local [3]int
				for d := 0; d < 3; d++ {
					tg[d], local[d] = pos[d]/threads[d], pos[d]%threads[d]
				}
				tid := local[0] + threads[0]*(local[1]+threads[1]*local[2])
				var want []uint32
				for _, v := range [][3]int{pos, tg, local, threads, groups, gridN} {
					want = append(want, uint32(v[0]), uint32(v[1]), uint32(v[2]))
				}
				want = append(want, uint32(tid), uint32(tid%32), uint32(tid/32), 32, uint32((nt+31)/32),
					uint32(threads[0]+1000*threads[1]))
				i := 24 * (x + gridN[0]*(y+gridN[1]*z))
				require.Equal(t, want, got[i:i+24], "thread %v: builtins", pos)
			}
		}
	}
}

// TestThreadgroupIsolation runs two threadgroups at the same time on two
// workers: each must see its own threadgroup memory.
func TestThreadgroupIsolation(t *testing.T) {
	defer SetWorkers(0) // back to the default
	SetWorkers(2)
	const n = 64
	for rep := 0; rep < 3; rep++ {
		sync := make([]byte, 4)
		out := poisoned(4 * (2*n + 2))
		dispatch(t, "emu_tg_isolation", [3]int{2, 1, 1}, [3]int{n, 1, 1}, sync, out)
		got := decodeU32(out)
		require.Equal(t, []uint32{1, 1}, got[2*n:2*n+2], "flags: the two threadgroups did not run at the same time")
		for g := 0; g < 2; g++ {
			for tid := 0; tid < n; tid++ {
				require.Equal(t, uint32(g*1000+tid), got[g*n+tid], "group %d thread %d: read from its threadgroup memory", g, tid)
			}
		}
	}
}

// TestMisuseFails: divergent barriers and collectives, and a deadlock, fail
// the dispatch with an error naming the kernel, the threadgroup and the
// cause (never a hang or a wrong answer).
func TestMisuseFails(t *testing.T) {
	buf := func() [][]byte { return [][]byte{make([]byte, 4*256)} }
	for _, tc := range []struct {
		kernel  string
		threads int
		want    []string
	}{
		{"emu_bad_return", 64, []string{"thread 3 returned", "threadgroup_barrier", "selftest.metal:"}},
		{"emu_bad_sites", 64, []string{"divergent threadgroup_barrier", "thread 32"}},
		{"emu_bad_simd", 32, []string{"divergent simdgroup 0", "simd_max", "simd_sum"}},
		{"emu_deadlock", 32, []string{"deadlock", "16 thread(s) (first 0) wait at simd_sum", "16 thread(s) (first 16) wait at threadgroup_barrier"}},
		{"emu_bad_shuffle", 32, []string{"simd_shuffle_down", "same on every lane"}},
		{"emu_mma_partial", 16, []string{"simdgroup_load needs all 32 lanes"}},
	} {
		want := append([]string{"kernel " + tc.kernel, "threadgroup (0,0,0)"}, tc.want...)
		dispatchErr(t, tc.kernel, [3]int{3, 1, 1}, [3]int{tc.threads, 1, 1}, buf(), want...)
	}
	// The emulator is still usable after a failed dispatch.
	TestBarrierNeighbour(t)
}

// TestDispatchChecks: bad arguments are errors, not crashes.
func TestDispatchChecks(t *testing.T) {
	x, out, args := make([]byte, 16), make([]byte, 16), make([]byte, 4)
	for _, tc := range []struct {
		name    string
		threads [3]int
		bufs    [][]byte
		want    string
	}{
		{"relu_sq_fwd_simd_float", [3]int{1025, 1, 1}, [][]byte{x, out, args}, "threads per threadgroup"},
		{"relu_sq_fwd_simd_float", [3]int{32, 32, 2}, [][]byte{x, out, args}, "2048 threads per threadgroup"},
		{"relu_sq_fwd_simd_float", [3]int{32, 1, 1}, [][]byte{x, out}, "no buffer bound at index 2 (args)"},
		{"relu_sq_fwd_simd_float", [3]int{32, 1, 1}, [][]byte{x, nil, args}, "no buffer bound at index 1 (out)"},
		{"rmsnorm_fwd_simd_float", [3]int{32, 1, 1}, [][]byte{x, out, out, args}, "shorter than one element (12 bytes)"},
		{"relu_sq_fwd_simd_float", [3]int{32, 1, 1}, [][]byte{x[1:], out, args}, "not aligned to 4 bytes"},
		{"nope", [3]int{32, 1, 1}, nil, `no kernel "nope"`},
	} {
		err := Dispatch(tc.name, [3]int{1, 1, 1}, tc.threads, tc.bufs)
		assert.ErrorContains(t, err, tc.want, "%s %v", tc.name, tc.threads)
	}
	// Zero threadgroups is an empty dispatch.
	assert.NoError(t, Dispatch("relu_sq_fwd_simd_float", [3]int{0, 1, 1}, [3]int{32, 1, 1}, [][]byte{x, out, args}), "empty dispatch")
}

func TestContextKind(t *testing.T) {
	assert.Contains(t, []string{"x86-64 asm", "arm64 asm", "ucontext"}, ContextKind(), "ContextKind()")
}

func ExampleKernels() {
	for _, name := range Kernels() {
		if strings.HasPrefix(name, "relu_sq_bwd_portable_") {
			fmt.Println(name)
		}
	}
	// Output:
	// relu_sq_bwd_portable_bfloat
	// relu_sq_bwd_portable_float
	// relu_sq_bwd_portable_half
}
