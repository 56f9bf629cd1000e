package kgen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testArgs = `
#ifndef GOLF_ARGS_H
#define GOLF_ARGS_H
#define instantiate_kernel(host, func, ...) \
  template [[host_name(host)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
struct FooArgs {
  uint n;
  float inv_scale;  // a comment
};
#endif
`

func gen(t *testing.T, shader string) (string, error) {
	t.Helper()
	out, err := Generate(Config{
		Args:    Source{Path: "golf_args.h", Text: []byte(testArgs)},
		Shaders: []Source{{Path: "../../shaders/foo.metal", Text: []byte(shader)}},
	})
	return string(out), err
}

// TestGenerateExpandsInstantiations: nested instantiation macros with #
// and ##, several template parameters, a plain kernel, buffer and builtin
// parameters, comments and continuation lines.
func TestGenerateExpandsInstantiations(t *testing.T) {
	out, err := gen(t, `
#include <metal_stdlib>
#include "golf_args.h"
using namespace metal;

/* a block comment with [[kernel]] void fake( inside */
template <typename T, int N = 4>
[[kernel]] void foo_fwd(
    device const T* x [[buffer(0)]],   // (n)
    device vec<T, 2>* y [[buffer(2)]],
    constant FooArgs& args [[buffer(1)]],
    uint2 gid [[thread_position_in_grid]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float tile[N * 2];
  tile[lane] = 0;
}

#define FOO_THREADS 64
[[kernel]] [[max_total_threads_per_threadgroup(FOO_THREADS * 2)]] void foo_plain(device float* p [[buffer(0)]]) {
  p[0] = 1;
}

#define inst_one(tname, T, n) \
  instantiate_kernel("foo_fwd_" #tname "_" #n, foo_fwd, T, n)
#define inst_all(tname, T) \
  inst_one(tname, T, 4)    \
  inst_one(tname, T, 8)    \
  instantiate_kernel("foo_fwd_x" #tname, foo_fwd, T, 1)
inst_all(float, float)
inst_all(half, half)
`)
	require.NoError(t, err)
	for _, want := range []string{
		`namespace golf_shader_foo {`,
		`#include "foo.metal"`,
		"static void k_foo_fwd_half_8(const golf_emu::ThreadCtx& t, void* const* b) {\n  foo_fwd<half, 8>(\n" +
			"      static_cast<device const half*>(b[0]),\n" +
			"      static_cast<device vec<half, 2>*>(b[2]),\n" +
			"      *static_cast<constant FooArgs*>(b[1]),\n" +
			"      golf_emu::builtin3<uint2>(t.thread_position_in_grid),\n" +
			"      golf_emu::builtin1<ushort>(t.thread_index_in_simdgroup));",
		`{1, "args", 1, golf_emu::pointee_size<constant FooArgs*>(), golf_emu::pointee_align<constant FooArgs*>()}`,
		`{"foo_fwd_float_4", "foo.metal", "foo_fwd<float, 4>", golf_shader_foo::k_foo_fwd_float_4, 3, golf_shader_foo::s_foo_fwd_float_4, 0, 0}`,
		"static constexpr uint32_t mt_foo_plain = uint32_t(FOO_THREADS* 2);",
		`golf_shader_foo::s_foo_plain, 0, golf_shader_foo::mt_foo_plain},`,
		`{"foo_fwd_xhalf", "foo.metal", "foo_fwd<half, 1>"`,
		`{"foo_plain", "foo.metal", "foo_plain", golf_shader_foo::k_foo_plain, 1,`,
		"  (void)t;\n  foo_plain(",
		`const int golf_emu::kKernelCount = 7;`,
		`{"FooArgs", "inv_scale", offsetof(FooArgs, inv_scale), sizeof(FooArgs::inv_scale), sizeof(FooArgs)},`,
		`const int golf_emu::kArgLayoutCount = 2;`,
		"// sha256 ",
	} {
		if !assert.Contains(t, out, want, "generated file") {
			break
		}
	}
}

// TestGenerateRejects: what the emulator cannot run is an error at
// generation time, naming the file and line.
func TestGenerateRejects(t *testing.T) {
	kernel := func(params, body string) string {
		return "template <typename T>\n[[kernel]] void k(" + params + ") {\n" + body + "\n}\n" +
			`instantiate_kernel("k_float", k, float)` + "\n"
	}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"threadgroup parameter", kernel("threadgroup T* s [[threadgroup(0)]]", ""), "foo.metal:2: kernel k: parameter s: threadgroup memory parameters ([[threadgroup(n)]]) are not supported"},
		{"threadgroup pointer", kernel("device T* p [[buffer(0)]]", "threadgroup T tile[4];\nthreadgroup T* q = tile;"), `foo.metal:4: threadgroup declaration with "*"`},
		{"threadgroup initializer", kernel("device T* p [[buffer(0)]]", "threadgroup T x = 0;"), `threadgroup declaration with "="`},
		{"threadgroup in a helper", "void h() {\n threadgroup float t[4];\n}\n" + kernel("device T* p [[buffer(0)]]", ""), "foo.metal:2: threadgroup outside a kernel body"},
		{"unknown attribute", kernel("device T* p [[buffer(0)]], uint q [[quadgroup_index_in_threadgroup]]", ""), "attribute [[quadgroup_index_in_threadgroup]] is not supported"},
		{"no attribute", kernel("device T* p", ""), "has no attribute"},
		{"buffer by value", kernel("float p [[buffer(0)]]", ""), "a buffer is a pointer or a reference"},
		{"never instantiated", "template <typename T>\n[[kernel]] void k(device T* p [[buffer(0)]]) {}\n", "kernel template k is never instantiated"},
		{"wrong arity", kernel("device T* p [[buffer(0)]]", "") + `instantiate_kernel("k2", k, float, 4)`, "2 template arguments for 1 parameters"},
		{"unknown function", kernel("device T* p [[buffer(0)]]", "") + `instantiate_kernel("k2", nope, float)`, "no [[kernel]] nope"},
		{"duplicate host", kernel("device T* p [[buffer(0)]]", "") + `instantiate_kernel("k_float", k, float)`, `host name "k_float" already used`},
		{"function attribute", "template <typename T>\n[[kernel]] [[host_name(\"x\")]] void k(device T* p [[buffer(0)]]) {}\n", `kernel k: attribute [[host_name("x")]] is not supported`},
		{"hand instantiation", "template <typename T>\n[[kernel]] void k<float>(device float* p [[buffer(0)]]);\n", "instantiate kernels with instantiate_kernel"},
	} {
		_, err := gen(t, tc.src)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestArgStructFieldTypes(t *testing.T) {
	src, err := lex("golf_args.h", "struct A {\n  uint n;\n  float2 v;\n};\n")
	require.NoError(t, err)
	_, err = parseArgStructs(src)
	assert.ErrorContains(t, err, "golf_args.h:3: struct A: field type float2", "a float2 field rejected at line 3")
}

// TestParseFile: the exported reading of kernel signatures, for the strict
// front end: parameters with their attributes and element type names, and
// the thread count of [[max_total_threads_per_threadgroup(N)]].
func TestParseFile(t *testing.T) {
	ks, err := ParseFile("k.metal", []byte(`
template <typename T>
[[kernel]] [[max_total_threads_per_threadgroup(K_THREADS / 2)]] void k(
    device const T* x [[buffer(0)]],
    constant FooArgs& args [[buffer(3)]],
    uint tid [[thread_index_in_threadgroup]]) {
}
instantiate_kernel("k_float", k, float)
[[kernel]] void plain(device float2* p [[buffer(1)]]) {}
`))
	require.NoError(t, err)
	require.Len(t, ks, 2, "kernels")
	k := ks[0]
	assert.Equal(t, "k", k.Name, "kernel k: name")
	assert.True(t, k.Template, "kernel k: template")
	assert.Equal(t, "K_THREADS / 2", k.Threads, "kernel k: threads")
	assert.Equal(t, 3, k.Line, "kernel k: line")
	want := []ParamDecl{
		{Name: "x", Type: "device const T*", TypeName: "T", Attr: "buffer", Index: 0, Pointer: true, Line: 4},
		{Name: "args", Type: "constant FooArgs&", TypeName: "FooArgs", Attr: "buffer", Index: 3, Line: 5},
		{Name: "tid", Type: "uint", TypeName: "uint", Attr: "thread_index_in_threadgroup", Line: 6},
	}
	assert.Equal(t, want, k.Params, "kernel k: params")
	p := ks[1]
	assert.Equal(t, "plain", p.Name, "kernel plain: name")
	assert.False(t, p.Template, "kernel plain: template")
	assert.Empty(t, p.Threads, "kernel plain: threads")
	if assert.Len(t, p.Params, 1, "kernel plain: params") {
		assert.Equal(t, "float2", p.Params[0].TypeName, "kernel plain: param type")
	}
	_, err = ParseFile("bad.metal", []byte("[[kernel]] void b(device float* p [[buffer(31)]]) {}\n"))
	assert.ErrorContains(t, err, "bad.metal:1: kernel b: parameter p: buffer index 31 (want 0 to 30)", "buffer 31")
	ss, err := ParseArgStructs("a.h", []byte("struct A {\n  uint n;\n  float s;\n};\n"))
	require.NoError(t, err, "ParseArgStructs")
	require.Len(t, ss, 1, "ParseArgStructs")
	assert.Equal(t, "A", ss[0].Name, "ParseArgStructs: name")
	assert.Equal(t, 1, ss[0].Line, "ParseArgStructs: line")
	assert.Equal(t, []string{"n", "s"}, ss[0].Fields, "ParseArgStructs: fields")
}
