package metal

import (
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
// bfloat instantiation of gemm_simd, the staged operand tiles (atile,
// btile) are threadgroup arrays of the 16-bit type; the kernel's body reads
// no device memory itself; its operands' fast path is gemm_stage_vec,
// called for both, and every device read of every 16-bit gemm_stage_vec
// instantiation is 16 bytes wide. (The checked edge path, gemm_stage_edge,
// reads element by element, by design.)
func TestGemmSimdStructure(t *testing.T) {
	clang, err := strict.FindClang()
	if err != nil {
		t.Skip(err)
	}
	kernels := instantiations(gemmAST(t, clang, "gemm_simd"), "gemm_simd")
	loaders := instantiations(gemmAST(t, clang, "gemm_stage_vec"), "gemm_stage_vec")
	for _, e := range []string{"half", "bfloat"} {
		require.NotEmpty(t, kernels[e], "no %s instantiation of gemm_simd", e)
		for _, k := range kernels[e] {
			tiles := map[string]string{}
			calls := 0
			k.walk(func(n *astNode) {
				if n.Kind == "VarDecl" && strings.Contains(n.Type.QualType, "address_space(3)") {
					tiles[n.Name] = n.Type.QualType
				}
				if n.Kind == "DeclRefExpr" && n.ReferencedDecl != nil && n.ReferencedDecl.Name == "gemm_stage_vec" {
					calls++
				}
			})
			for _, name := range []string{"atile", "btile"} {
				if assert.Contains(t, tiles, name, "%s: %s", k.Type.QualType, name) {
					assert.Equal(t, e, elemOf(tiles[name]), "%s: %s is %s, want the compute dtype", k.Type.QualType, name, tiles[name])
				}
			}
			assert.Empty(t, deviceLoads(k), "%s: the kernel body reads device memory itself", k.Type.QualType)
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
