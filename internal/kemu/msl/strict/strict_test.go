package strict

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/shaders"
)

// clangOrSkip returns the clang++ of the strict front end, or skips: the
// only reason to skip, and a failure where GOLF_REQUIRE_CLANG=1 (.ci/run,
// which installs clang).
func clangOrSkip(t *testing.T) string {
	t.Helper()
	c, err := FindClang()
	if errors.Is(err, ErrNoClang) {
		if os.Getenv(EnvRequireClang) == "1" {
			t.Fatalf("%s=1: %v", EnvRequireClang, err)
		}
		t.Skip("not supported: " + err.Error())
	}
	require.NoError(t, err)
	return c
}

func libraryConfig(t *testing.T) Config {
	return Config{
		Clang: clangOrSkip(t), Version: 310,
		Include: filepath.Join("..", "..", "..", "..", "shaders"),
		Args:    filepath.Join("..", "..", "..", "..", "shaders", "golf_args.h"),
		Mirrors: shaders.Mirrors,
	}
}

// TestLibraryIsStrictMSL: every shader of the library passes every rule.
func TestLibraryIsStrictMSL(t *testing.T) {
	cfg := libraryConfig(t)
	files, err := filepath.Glob(filepath.Join(cfg.Include, "*.metal"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	r, err := Analyze(cfg, files)
	require.NoError(t, err)
	for _, v := range r.Violations {
		assert.Fail(t, "strict MSL violation in the library", v.String())
	}
	// The threadgroup memory the rule measured, against the sums of the
	// kernels' arrays written out by hand (floats × 4 bytes, halves and
	// bfloats × 2; the largest instantiation of each attention kernel: the
	// 16-bit simd ones hold two buffers of their streamed tiles).
	for kernel, want := range map[string]int{
		"attention_fwd_simd":     2 * (2 * 32 * 72) * 2,    // bf16: K, V, two buffers (the scores are in registers)
		"attention_dq_ds_simd":   2 * (32 * 72) * 2,        // bf16: K, two buffers
		"attention_dkv_ds_simd":  2 * (2*16*72*2 + 2*16*4), // bf16: Q, dout; lse, δ (float), two buffers
		"attention_fwd_portable": (4224 + 2176 + 640 + 2*128) * 4,
		"attention_dq_simd":      (2 * 8 * 132) * 4, // float: K, V
		"attention_dq_portable":  (4352 + 2176 + 640) * 4,
		"attention_dkv_simd":     2 * (2*16*72*2 + 2*16*4), // as attention_dkv_ds_simd
		"attention_dkv_portable": (4352 + 2176 + 2*640 + 2*32) * 4,
		"rmsnorm_fwd_portable":   1024 * 4,
		"gemm_simd":              2 * 2 * 1536 * 4, // float: A, B tiles, double-buffered (16-bit types: half that)
		"embedding_bwd_simd":     (1024 + 32) * 4,
		"relu_sq_fwd":            0,
	} {
		got, ok := r.Threadgroup[kernel]
		if assert.True(t, ok, "no threadgroup figure for %s", kernel) {
			assert.Equal(t, want, got, "threadgroup bytes of %s", kernel)
		}
	}
	names := make([]string, 0, len(r.Threadgroup))
	for k := range r.Threadgroup {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.Logf("%-30s %6d bytes of threadgroup memory", k, r.Threadgroup[k])
	}
}

// TestFixtures: each fixture in testdata plants one violation (its first
// line says `// want: <rule> <text>`), and Check must report it under that
// rule, with that text, and nothing under other rules (but those of its
// `// also: <rule>` lines, where one mistake breaks two rules); ok.metal
// passes.
func TestFixtures(t *testing.T) {
	cfg := libraryConfig(t)
	cfg.Mirrors = nil
	files, err := filepath.Glob(filepath.Join("testdata", "*.metal"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 20)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			text, err := os.ReadFile(f)
			require.NoError(t, err)
			vs, err := Check(cfg, []string{f})
			require.NoError(t, err)
			first, _, _ := strings.Cut(string(text), "\n")
			want, planted := strings.CutPrefix(first, "// want: ")
			if !planted {
				for _, v := range vs {
					assert.Fail(t, "violation in a control fixture", v.String())
				}
				return
			}
			rule, msg, _ := strings.Cut(want, " ")
			allowed := map[string]bool{rule: true}
			for _, line := range strings.Split(string(text), "\n") {
				if also, ok := strings.CutPrefix(line, "// also: "); ok {
					r, _, _ := strings.Cut(also, " ")
					allowed[r] = true
				}
			}
			require.NotEmpty(t, vs, "the planted violation (%s) was not reported", want)
			found := false
			for _, v := range vs {
				t.Logf("%v", v)
				assert.True(t, allowed[v.Rule], "unexpected rule %s (want only %s): %v", v.Rule, rule, v)
				if v.Rule == rule && strings.Contains(v.Msg, msg) {
					found = true
					// Located in the fixture, on a line of code (not in
					// the strict library, nor at line 0).
					assert.Equal(t, filepath.Base(f), v.File, "the violation's file: %v", v)
					assert.Positive(t, v.Line, "the violation's line: %v", v)
				}
			}
			assert.True(t, found, "no [%s] violation containing %q", rule, msg)
		})
	}
}

// TestViolationLines: the new rules point at the offending line: the
// conversion's expression (in a template, the pattern's line of the
// instantiation that converts), the matrix declaration a library
// static_assert fails for, the parameter whose attribute type disagrees.
func TestViolationLines(t *testing.T) {
	cfg := libraryConfig(t)
	cfg.Mirrors = nil
	for file, needle := range map[string]string{
		"bfloat_template_store.metal": "out[i] = v;",
		"bfloat_return.metal":         "return x * 2.0f;",
		"bfloat_argument.metal":       "put(out, i, a + b);",
		"simdgroup_matrix_type.metal": "simdgroup_matrix<int, 8, 8> ma;",
		"simd_shuffle_bfloat.metal":   "simd_shuffle_down(x, 1)",
		"kernel_attr_width.metal":     "uint3 tg [[threadgroup_position_in_grid]]",
		"kernel_attr_pair.metal":      "uint n [[threads_per_threadgroup]]",
	} {
		path := filepath.Join("testdata", file)
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		want := 0
		for i, l := range strings.Split(string(text), "\n") {
			if strings.Contains(l, needle) {
				want = i + 1
				break
			}
		}
		require.NotZero(t, want, "%s: no line holds %q", file, needle)
		vs, err := Check(cfg, []string{path})
		require.NoError(t, err)
		if assert.Len(t, vs, 1, "%s: %v", file, vs) {
			assert.Equal(t, file, vs[0].File, "%s: %v", file, vs[0])
			assert.Equal(t, want, vs[0].Line, "%s: %v", file, vs[0])
		}
	}
}

// LayoutArgs is the Go mirror of testdata/layout_args.h, wrong on purpose:
// N is 8 bytes where the C struct's n is 4.
type LayoutArgs struct {
	N     uint64
	Scale float32
}

// TestLayoutFixture: a Go mirror laid out differently from clang's arm64
// layout of its struct is an arg-layout violation; so are a struct without
// a mirror, a mirror without a struct and a field named differently.
func TestLayoutFixture(t *testing.T) {
	cfg := libraryConfig(t)
	cfg.Args = filepath.Join("testdata", "layout_args.h")
	type Other struct{ X uint32 }
	for _, tc := range []struct {
		name    string
		mirrors []any
		want    string
	}{
		{"size", []any{LayoutArgs{}}, "LayoutArgs"},
		{"no mirror", []any{}, "struct LayoutArgs has no Go mirror"},
		{"no struct", []any{LayoutArgs{}, Other{}}, "Go mirror Other has no struct"},
	} {
		cfg.Mirrors = tc.mirrors
		vs, err := Check(cfg, []string{filepath.Join("testdata", "ok.metal")})
		require.NoError(t, err)
		found := false
		for _, v := range vs {
			t.Logf("%s: %v", tc.name, v)
			found = found || (v.Rule == "arg-layout" && strings.Contains(v.Msg, tc.want))
		}
		assert.True(t, found, "%s: no arg-layout violation containing %q", tc.name, tc.want)
	}
}

// TestLibraryIsMSL31: the joined library, as newLibraryWithSource receives
// it, compiles as MSL 3.1 (the version golf requests, macOS 14) against a
// library that declares nothing newer, so no kernel uses a feature of a
// later MSL; and it does not compile as MSL 3.0 (macOS 13), which has no
// bfloat: the reason golf requires macOS 14.
func TestLibraryIsMSL31(t *testing.T) {
	cfg := libraryConfig(t)
	src, err := shaders.Source()
	require.NoError(t, err)
	require.NoError(t, CompileSource(cfg, "library.metal", src))

	cfg.Version = 300
	err = CompileSource(cfg, "library.metal", src)
	require.Error(t, err, "the library compiled as MSL 3.0")
	assert.Contains(t, err.Error(), "bfloat")
}

// TestVersionGate: the strict library hides what MSL 3.2 added (shader
// logging) below version 320: msl_version.metal fails as MSL 3.1 (the
// fixture test) and compiles as MSL 3.2, so the failure is the version's.
func TestVersionGate(t *testing.T) {
	cfg := libraryConfig(t)
	cfg.Mirrors = nil
	cfg.Version = 320
	vs, err := Check(cfg, []string{filepath.Join("testdata", "msl_version.metal")})
	require.NoError(t, err)
	assert.Empty(t, vs)
}
