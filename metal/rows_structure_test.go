package metal

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rowVectorFuncs are the row and element-wise functions that move their
// 16-bit tensors in 4-element chunks through golf_rows.h's vector
// accessors, by the shader file that instantiates them: kernels and the
// row helpers they share with the fused kernels.
var rowVectorFuncs = map[string][]string{
	"rmsnorm.metal": {"rmsnorm_bwd_simd", "rmsnorm_bwd_store", "rmsnorm_sumsq_part",
		"rmsnorm_fwd_store", "rmsnorm_bwd_dot_part", "rmsnorm_bwd_chunk"},
	"fused.metal": {"resid_mix_rmsnorm_fwd_simd", "scaled_add_rmsnorm_fwd_simd", "rmsnorm_resid_mix_bwd_simd",
		"resid_mix_rmsnorm_sweep", "scaled_add_rmsnorm_sweep", "rmsnorm_resid_mix_row", "resid_mix_bwd_chunk"},
	"scaled_add.metal":    {"scaled_add_fwd", "scaled_add_bwd"},
	"resid_mix.metal":     {"resid_mix_fwd", "resid_mix_bwd"},
	"qk_norm_rope.metal":  {"qk_norm_rope_sumsq", "qk_norm_rope_fwd_store", "qk_norm_rope_bwd_sums", "qk_norm_rope_bwd_store"},
	"elementwise.metal":   {"zero_elems", "cast_elems", "axpy_elems", "scale_elems"},
	"muon.metal":          {"muon_momentum", "muon_momentum_sumsq_part", "muon_axpy_t"},
	"newton_schulz.metal": {"newton_schulz_sumsq_part", "newton_schulz_scale4", "newton_schulz_scale_t"},
	"adam.metal":          {"adam_step"},
}

// vectorAccessors are golf_rows.h's chunk accessors.
var vectorAccessors = []string{"golf_load4", "golf_loadf4", "golf_store4", "golf_storef4"}

// TestRowsVectorStructure fails if a row or element-wise kernel listed in
// rowVectorFuncs goes back to scalar 2-byte device loads: in every half
// and bfloat instantiation of each, no device read is 2 bytes wide (the
// 16-bit tensors are read only through the chunk accessors), and the
// function calls an accessor or a helper that does; and golf_load4 of
// half and bfloat reads 8 bytes at once on its vector path (its scalar
// tail reads 2), golf_store4 writes 8.
func TestRowsVectorStructure(t *testing.T) {
	clang := clangOrSkip(t)
	for file, names := range rowVectorFuncs {
		for _, name := range names {
			found := 0
			for e, fns := range instantiations(shaderAST(t, clang, file, name), name) {
				for _, f := range fns {
					if e != "half" && e != "bfloat" {
						continue
					}
					found++
					for _, w := range deviceLoads(f) {
						assert.NotEqual(t, 2, w, "%s %s: a 2-byte device read: the 16-bit tensors go through golf_rows.h's vector accessors", name, f.Type.QualType)
					}
					calls := 0
					f.walk(func(n *astNode) {
						if n.Kind == "DeclRefExpr" && n.ReferencedDecl != nil && n.ReferencedDecl.Kind == "FunctionDecl" {
							if isRowAccessor(n.ReferencedDecl.Name) {
								calls++
							}
						}
					})
					assert.Positive(t, calls, "%s %s: calls no chunk accessor and no row helper", name, f.Type.QualType)
				}
			}
			assert.Positive(t, found, "%s (%s): no half or bfloat instantiation", name, file)
		}
	}
	for _, e := range []string{"half", "bfloat"} {
		loads := instantiations(shaderAST(t, clang, "rmsnorm.metal", "golf_load4"), "golf_load4")[e]
		require.NotEmpty(t, loads, "no %s instantiation of golf_load4", e)
		for _, f := range loads {
			assert.Contains(t, deviceLoads(f), 8, "%s: golf_load4 has no 8-byte device read", f.Type.QualType)
		}
		stores := instantiations(shaderAST(t, clang, "rmsnorm.metal", "golf_store4"), "golf_store4")[e]
		require.NotEmpty(t, stores, "no %s instantiation of golf_store4", e)
		for _, f := range stores {
			wide := false
			f.walk(func(n *astNode) {
				if n.Kind == "BinaryOperator" && n.Opcode == "=" && len(n.Inner) == 2 &&
					strings.Contains(n.Inner[0].desugared(), "address_space(1)") && loadWidth(n.Inner[0].desugared()) == 8 {
					wide = true
				}
			})
			assert.True(t, wide, "%s: golf_store4 has no 8-byte device write", f.Type.QualType)
		}
	}
}

// isRowAccessor is true for golf_rows.h's chunk accessors and the row
// helpers built on them (rmsnorm_*, resid_mix_*, scaled_add_*, qk_norm_rope_*
// functions: each listed in rowVectorFuncs itself).
func isRowAccessor(name string) bool {
	for _, a := range vectorAccessors {
		if name == a {
			return true
		}
	}
	for _, p := range []string{"rmsnorm_", "resid_mix_", "scaled_add_", "qk_norm_rope_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
