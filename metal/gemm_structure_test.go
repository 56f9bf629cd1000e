package metal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/kemu/msl/strict"
)

// gemmAST is shaderAST of shaders/linear.metal.
func gemmAST(t *testing.T, clang, filter string) []*astNode {
	t.Helper()
	return shaderAST(t, clang, "linear.metal", filter)
}

// clangOrSkip is the strict front end's clang++; without one the test
// skips, or fails where GOLF_REQUIRE_CLANG=1 (.ci/run, which installs
// clang, so that no structure check passes there by skipping).
func clangOrSkip(t *testing.T) string {
	t.Helper()
	clang, err := strict.FindClang()
	if err != nil {
		if os.Getenv(strict.EnvRequireClang) == "1" {
			t.Fatalf("%s=1: %v", strict.EnvRequireClang, err)
		}
		t.Skip(err)
	}
	return clang
}

// repoSources are the source tree's shaders and strict metal_stdlib (what
// the binary embeds, read in place).
var repoSources = sourceTree{filepath.Join("..", "shaders"), filepath.Join("..", "internal", "kemu", "msl", "strict", "include")}

// shaderAST is the AST of the shader file (astOf over repoSources): the
// declarations named by filter, each with its template instantiations.
func shaderAST(t *testing.T, clang, file, filter string) []*astNode {
	t.Helper()
	nodes, err := astOf(repoSources, clang, file, filter)
	require.NoError(t, err)
	return nodes
}

// gemmSimdKernels are the simd flavour's GEMM kernel templates: the plain
// product and the fused epilogues' kernels (gemm_nt_relu_sq,
// gemm_nn_drelu_sq, gemm_nt_scaled_add), which declare the staged tiles and
// run their body, gemm_simd_body, on them.
var gemmSimdKernels = []string{"gemm_simd", "gemm_simd_relu_sq", "gemm_simd_drelu_sq", "gemm_simd_scaled_add"}

// gemmSimdInstances returns the instantiations of the simd GEMM kernels
// (gemmSimdKernels) and of their body, gemm_simd_body, by element type.
func gemmSimdInstances(t *testing.T, clang string) (kernels, bodies map[string][]*astNode) {
	t.Helper()
	nodes := gemmAST(t, clang, "gemm_simd")
	kernels = map[string][]*astNode{}
	for _, name := range gemmSimdKernels {
		for e, fs := range instantiations(nodes, name) {
			kernels[e] = append(kernels[e], fs...)
		}
	}
	return kernels, instantiations(nodes, "gemm_simd_body")
}

// instantiations returns the instantiated definitions (with a body) of the
// function templates among nodes, by the element type of their first
// parameter ("float", "half" or "bfloat").
func instantiations(nodes []*astNode, name string) map[string][]*astNode {
	by := map[string][]*astNode{}
	for _, tmpl := range nodes {
		if tmpl.Kind != "FunctionTemplateDecl" || tmpl.Name != name {
			continue
		}
		for _, f := range tmpl.Inner {
			if f.Kind != "FunctionDecl" || strings.Contains(f.Type.QualType, " T ") || !hasKind(f, "CompoundStmt") {
				continue
			}
			by[elemOf(f.Type.QualType)] = append(by[elemOf(f.Type.QualType)], f)
		}
	}
	return by
}

func hasKind(n *astNode, kind string) bool {
	for _, c := range n.Inner {
		if c.Kind == kind {
			return true
		}
	}
	return false
}

// TestGemmSimdStructure fails if the simd flavour's GEMM goes back to
// 2-byte device loads of its operands or to float staging of 16-bit
// operands. It reads the kernel's AST from the strict front end's clang
// (the same compile as internal/kemu/msl/strict): for every half and
// bfloat instantiation of the simd GEMM kernels (gemm_simd and the fused
// epilogues' kernels), the staged operand tiles (atile, btile) are
// threadgroup arrays of the 16-bit type; neither the kernel nor its body
// (gemm_simd_body) reads device memory itself; the body's operands' fast
// path is gemm_stage_vec, called for both, and every device read of every
// 16-bit gemm_stage_vec instantiation is 16 bytes wide. (The checked edge path, gemm_stage_edge,
// reads element by element, by design.)
func TestGemmSimdStructure(t *testing.T) {
	clang := clangOrSkip(t)
	kernels, bodies := gemmSimdInstances(t, clang)
	loaders := instantiations(gemmAST(t, clang, "gemm_stage_vec"), "gemm_stage_vec")
	for _, e := range []string{"half", "bfloat"} {
		require.NotEmpty(t, kernels[e], "no %s instantiation of the simd GEMM kernels", e)
		for _, k := range kernels[e] {
			tiles := map[string]string{}
			k.walk(func(n *astNode) {
				if n.Kind == "VarDecl" && strings.Contains(n.Type.QualType, "address_space(3)") {
					tiles[n.Name] = n.Type.QualType
				}
			})
			for _, name := range []string{"atile", "btile"} {
				if assert.Contains(t, tiles, name, "%s: %s", k.Type.QualType, name) {
					assert.Equal(t, e, elemOf(tiles[name]), "%s: %s is %s, want the compute dtype", k.Type.QualType, name, tiles[name])
				}
			}
			assert.Empty(t, deviceLoads(k), "%s: the kernel reads device memory itself", k.Type.QualType)
		}
		require.NotEmpty(t, bodies[e], "no %s instantiation of gemm_simd_body", e)
		for _, k := range bodies[e] {
			calls := 0
			k.walk(func(n *astNode) {
				if n.Kind == "DeclRefExpr" && n.ReferencedDecl != nil && n.ReferencedDecl.Name == "gemm_stage_vec" {
					calls++
				}
			})
			assert.Empty(t, deviceLoads(k), "%s: the body reads device memory itself", k.Type.QualType)
			assert.GreaterOrEqual(t, calls, 2, "%s: gemm_stage_vec loads neither or only one operand", k.Type.QualType)
		}
		require.NotEmpty(t, loaders[e], "no %s instantiation of gemm_stage_vec", e)
		for _, l := range loaders[e] {
			w := deviceLoads(l)
			require.NotEmpty(t, w, "%s: no device reads", l.Type.QualType)
			for _, b := range w {
				assert.Equal(t, 16, b, "%s: a %d-byte device read; the fast path reads 16 bytes at a time", l.Type.QualType, b)
			}
		}
	}
}

// deviceStores lists the widths of the assignments to device memory in n:
// the left-hand sides, in address space 1, of the = operators.
func deviceStores(n *astNode) []int {
	var w []int
	n.walk(func(c *astNode) {
		if c.Kind == "BinaryOperator" && c.Opcode == "=" && len(c.Inner) == 2 &&
			strings.Contains(c.Inner[0].desugared(), "address_space(1)") {
			w = append(w, loadWidth(c.Inner[0].desugared()))
		}
	})
	return w
}

// TestGemmSimdRegisterEpilogue fails if the simd flavour's 16-bit GEMM
// goes back to a float staging block in threadgroup memory for its
// epilogue (or any other float threadgroup array), or stops storing its
// outputs in pairs from the registers. For every half and bfloat
// instantiation of the simd GEMM kernels (symmetric or not, fused or
// not): no threadgroup array but the 16-bit atile and btile; in their body
// (gemm_simd_body) no simdgroup_store at all (nothing goes through
// threadgroup memory on its way out), the accumulators read through
// thread_elements() and stored by gemm_store_pair; and every
// 16-bit gemm_store_pair stores either one 4-byte pair (the interior
// path) or single 2-byte elements (the checked edge path), with at least
// one 4-byte store.
func TestGemmSimdRegisterEpilogue(t *testing.T) {
	clang := clangOrSkip(t)
	kernels, bodies := gemmSimdInstances(t, clang)
	pairs := instantiations(gemmAST(t, clang, "gemm_store_pair"), "gemm_store_pair")
	for _, e := range []string{"half", "bfloat"} {
		require.NotEmpty(t, kernels[e], "no %s instantiation of the simd GEMM kernels", e)
		for _, k := range append(kernels[e], bodies[e]...) {
			k.walk(func(n *astNode) {
				if n.Kind == "VarDecl" && strings.Contains(n.Type.QualType, "address_space(3)") {
					assert.Equal(t, e, elemOf(n.Type.QualType), "%s: threadgroup array %s is %s: a float staging block?",
						k.Type.QualType, n.Name, n.Type.QualType)
				}
			})
		}
		for _, k := range kernels[e] {
			var tiles []string
			k.walk(func(n *astNode) {
				if n.Kind == "VarDecl" && strings.Contains(n.Type.QualType, "address_space(3)") {
					tiles = append(tiles, n.Name)
				}
			})
			assert.ElementsMatch(t, []string{"atile", "btile"}, tiles, "%s: threadgroup arrays", k.Type.QualType)
		}
		require.NotEmpty(t, bodies[e], "no %s instantiation of gemm_simd_body", e)
		for _, k := range bodies[e] {
			refs := map[string]int{}
			k.walk(func(n *astNode) {
				if (n.Kind == "DeclRefExpr" || n.Kind == "MemberExpr") && n.Name != "" {
					refs[n.Name]++
				}
				if n.Kind == "DeclRefExpr" && n.ReferencedDecl != nil {
					refs[n.ReferencedDecl.Name]++
				}
			})
			assert.Zero(t, refs["simdgroup_store"], "%s: the epilogue stores a matrix (to a staging block?)", k.Type.QualType)
			assert.NotZero(t, refs["thread_elements"], "%s: the epilogue does not read the lanes' elements", k.Type.QualType)
			assert.NotZero(t, refs["gemm_store_pair"], "%s: the epilogue does not store through gemm_store_pair", k.Type.QualType)
		}
		require.NotEmpty(t, pairs[e], "no %s instantiation of gemm_store_pair", e)
		for _, p := range pairs[e] {
			w := deviceStores(p)
			assert.Contains(t, w, 4, "%s: no 4-byte paired store", p.Type.QualType)
			for _, b := range w {
				assert.Contains(t, []int{2, 4}, b, "%s: a %d-byte device store", p.Type.QualType, b)
			}
		}
	}
}
