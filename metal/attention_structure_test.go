package metal

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attInst is one instantiated definition of a function template: its
// element type (the first type argument, in MSL spelling), its integer
// template arguments, and the definition.
type attInst struct {
	elem string
	ints []int64
	fn   *astNode
}

// attInstances returns the instantiated definitions of template name among
// nodes.
func attInstances(nodes []*astNode, name string) []attInst {
	var out []attInst
	for _, tmpl := range nodes {
		if tmpl.Kind != "FunctionTemplateDecl" || tmpl.Name != name {
			continue
		}
		for _, f := range tmpl.Inner {
			if f.Kind != "FunctionDecl" {
				continue
			}
			in := attInst{fn: f}
			body := false
			for _, c := range f.Inner {
				switch c.Kind {
				case "TemplateArgument":
					if v, ok := c.Value.(float64); ok {
						in.ints = append(in.ints, int64(v))
					} else if in.elem == "" {
						in.elem = elemOf(c.Type.QualType)
					}
				case "CompoundStmt":
					body = true
				}
			}
			if body && (in.elem != "" || len(in.ints) > 0) {
				out = append(out, in)
			}
		}
	}
	return out
}

var attArray = regexp.MustCompile(`\[(\d+)\]$`)

// attThreadgroupBytes sums the threadgroup arrays a kernel instantiation
// declares.
func attThreadgroupBytes(t *testing.T, fn *astNode) (total int, arrays map[string]string) {
	arrays = map[string]string{}
	fn.walk(func(n *astNode) {
		if n.Kind != "VarDecl" || !strings.Contains(n.Type.QualType, "address_space(3)") {
			return
		}
		qt := n.Type.QualType
		m := attArray.FindStringSubmatch(qt)
		require.NotNil(t, m, "%s: threadgroup variable %s of type %s is not a sized array", fn.Type.QualType, n.Name, qt)
		count, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		size := loadWidth(strings.TrimSuffix(qt, m[0]))
		require.NotZero(t, size, "%s: element size of %s", fn.Type.QualType, qt)
		total += count * size
		arrays[n.Name] = qt
	})
	return total, arrays
}

// attRuntimeDivisions lists the integer divisions and remainders in fn
// whose right operand is not a compile-time constant: it refers to a function
// parameter or to a variable not declared constexpr.
func attRuntimeDivisions(fn *astNode, constexprs map[string]bool) []string {
	var bad []string
	fn.walk(func(n *astNode) {
		if n.Kind != "BinaryOperator" || (n.Opcode != "/" && n.Opcode != "%") || len(n.Inner) != 2 ||
			elemOf(n.desugared()) != "" { // a floating-point division (O/l) is not index arithmetic
			return
		}
		var refs []string
		n.Inner[1].walk(func(c *astNode) {
			if c.Kind == "DeclRefExpr" && c.ReferencedDecl != nil {
				d := c.ReferencedDecl
				if d.Kind == "ParmVarDecl" || (d.Kind == "VarDecl" && !constexprs[d.Name]) {
					refs = append(refs, d.Name)
				}
			}
			if c.Kind == "MemberExpr" {
				refs = append(refs, c.Name)
			}
		})
		if len(refs) > 0 {
			bad = append(bad, n.Opcode+" "+strings.Join(refs, ","))
		}
	})
	return bad
}

// attUnguardedMasks lists the causal comparisons in fn (a <= whose
// operands name the query row t or tq and the key row u or u0) that are
// not the right operand of a "!diag || ..." (evaluated only on tiles the
// diagonal crosses), and counts those that are.
func attUnguardedMasks(fn *astNode) (bad []string, guardedCount int) {
	var visit func(n *astNode, guarded bool)
	visit = func(n *astNode, guarded bool) {
		if n.Kind == "BinaryOperator" && n.Opcode == "||" && len(n.Inner) == 2 && attIsNotDiag(n.Inner[0]) {
			visit(n.Inner[0], guarded)
			visit(n.Inner[1], true)
			return
		}
		if n.Kind == "BinaryOperator" && n.Opcode == "<=" {
			names := map[string]bool{}
			n.walk(func(c *astNode) {
				if c.Kind == "DeclRefExpr" && c.ReferencedDecl != nil {
					names[c.ReferencedDecl.Name] = true
				}
			})
			if (names["t"] || names["tq"]) && (names["u"] || names["u0"]) {
				if guarded {
					guardedCount++
				} else {
					bad = append(bad, "<=")
				}
			}
		}
		for _, c := range n.Inner {
			visit(c, guarded)
		}
	}
	visit(fn, false)
	return bad, guardedCount
}

// attIsNotDiag reports whether n is !diag (through implicit casts and
// parentheses).
func attIsNotDiag(n *astNode) bool {
	if n.Kind != "UnaryOperator" || n.Opcode != "!" {
		return false
	}
	found := false
	n.walk(func(c *astNode) {
		if c.Kind == "DeclRefExpr" && c.ReferencedDecl != nil && c.ReferencedDecl.Name == "diag" {
			found = true
		}
	})
	return found
}

// attCalls counts the calls to callee in fn whose first argument's type
// contains typ ("" for any).
func attCalls(fn *astNode, callee, typ string) int {
	n := 0
	fn.walk(func(c *astNode) {
		if c.Kind != "CallExpr" || len(c.Inner) < 2 {
			return
		}
		name := ""
		c.Inner[0].walk(func(d *astNode) {
			if name == "" && d.Kind == "DeclRefExpr" && d.ReferencedDecl != nil {
				name = d.ReferencedDecl.Name
			}
		})
		if name == callee && strings.Contains(c.Inner[1].desugared(), typ) {
			n++
		}
	})
	return n
}

// attCallee is the name of the function a CallExpr calls ("" if none).
func attCallee(c *astNode) string {
	name := ""
	if len(c.Inner) > 0 {
		c.Inner[0].walk(func(d *astNode) {
			if name == "" && d.Kind == "DeclRefExpr" && d.ReferencedDecl != nil {
				name = d.ReferencedDecl.Name
			}
		})
	}
	return name
}

// attThreadgroupMatrixStores counts the simdgroup_store calls in fn whose
// destination (the second argument) is threadgroup memory: a score (S, P,
// dP, dS) or an accumulator block going through threadgroup memory.
func attThreadgroupMatrixStores(fn *astNode) int {
	n := 0
	fn.walk(func(c *astNode) {
		if c.Kind == "CallExpr" && len(c.Inner) >= 3 && attCallee(c) == "simdgroup_store" &&
			strings.Contains(c.Inner[2].desugared(), "address_space(3)") {
			n++
		}
	})
	return n
}

// attThreadElements counts the thread_elements() calls in fn.
func attThreadElements(fn *astNode) int {
	n := 0
	fn.walk(func(c *astNode) {
		if c.Kind == "MemberExpr" && c.Name == "thread_elements" {
			n++
		}
	})
	return n
}

// TestAttentionSimdStructure checks, on the strict front end's AST of
// shaders/attention.metal, the structure the simd attention kernels and
// the predicted-time model (efficiency.go) claim:
//   - each tile body is instantiated with the head dim as a compile-time
//     constant, HD = 64 and HD = 128, for every element type;
//   - the staged tiles are threadgroup arrays of the compute dtype, and a
//     backward threadgroup (dq, dk/dv) declares at most 12 KB of
//     threadgroup memory in every element type (the forward at most 32 KB);
//   - the staging, loading and storing helpers and the vector δ divide
//     only by compile-time constants, and the tile bodies only by the
//     group size, once per threadgroup;
//   - the fast loader reads device memory 16 bytes at a time, and the tile
//     bodies read no 16-bit element from device memory themselves (only
//     the float lse and δ);
//   - every causal comparison of a query and a key row is guarded by
//     "!diag ||": tiles the diagonal does not cross test nothing;
//   - each K/V (Q/dout) fragment loaded in the compute dtype feeds two
//     MMAs: the tile bodies hold twice as many MMA calls as fragment loads
//     of the compute dtype (dq from the stored dS too, whose only device
//     reads in its body are 8-byte pairs of dS);
//   - the scores stay in registers: no tile body, and no helper it calls,
//     stores a simdgroup matrix to threadgroup memory (S, P, dP, dS and
//     the epilogue's accumulators are read and written through
//     thread_elements()), and the kernels declare no threadgroup float
//     array beyond the 2·16 floats of dk/dv's lse and δ per buffer (two
//     buffers in the double-buffered 16-bit instantiations);
//   - the δ kernel's vector path reads 16 bytes at a time.
func TestAttentionSimdStructure(t *testing.T) {
	clang := clangOrSkip(t)
	all := shaderAST(t, clang, "attention.metal", "attention_")
	constexprs := map[string]bool{}
	for _, n := range all {
		n.walk(func(c *astNode) {
			if c.Kind == "VarDecl" && c.Constexpr {
				constexprs[c.Name] = true
			}
		})
	}

	elems := []string{"float", "half", "bfloat"}
	for _, tile := range []string{"attention_fwd_simd_tile", "attention_dq_simd_tile", "attention_dkv_simd_tile",
		"attention_dq_ds_simd_tile"} {
		// dq from the stored dS reads its float dS pairs (8 bytes) in the
		// tile body; the others only the float lse and δ.
		bodyLoad := 4
		if tile == "attention_dq_ds_simd_tile" {
			bodyLoad = 8
		}
		insts := attInstances(all, tile)
		for _, e := range elems {
			hds := map[int64]bool{}
			for _, in := range insts {
				if in.elem != e {
					continue
				}
				require.NotEmpty(t, in.ints, "%s<%s>: no head-dim argument", tile, e)
				hds[in.ints[0]] = true
				unguarded, guarded := attUnguardedMasks(in.fn)
				assert.Empty(t, unguarded, "%s<%s, %d>: a causal test outside the diagonal tiles' path", tile, e, in.ints[0])
				assert.Positive(t, guarded, "%s<%s, %d>: no causal test found", tile, e, in.ints[0])
				assert.Empty(t, attRuntimeDivisionsExcept(in.fn, constexprs, "kv_heads"),
					"%s<%s, %d>: divisions by run-time values", tile, e, in.ints[0])
				for _, w := range deviceLoads(in.fn) {
					assert.Equal(t, bodyLoad, w, "%s<%s, %d>: a %d-byte device read in the tile body", tile, e, in.ints[0], w)
				}
				assert.Zero(t, attThreadgroupMatrixStores(in.fn),
					"%s<%s, %d>: a simdgroup matrix stored to threadgroup memory (scores belong in registers)", tile, e, in.ints[0])
				assert.Positive(t, attThreadElements(in.fn), "%s<%s, %d>: no thread_elements(): the scores are not worked on in registers",
					tile, e, in.ints[0])
				if e != "float" {
					frag := attCalls(in.fn, "simdgroup_load", "simdgroup_matrix<"+map[string]string{"half": "_Float16", "bfloat": "__fp16"}[e])
					mma := attCalls(in.fn, "simdgroup_multiply_accumulate", "")
					assert.Positive(t, frag, "%s<%s, %d>: no fragment loads", tile, e, in.ints[0])
					assert.Equal(t, 2*frag, mma, "%s<%s, %d>: MMAs per fragment load", tile, e, in.ints[0])
				}
			}
			assert.Equal(t, map[int64]bool{64: true, 128: true}, hds, "%s<%s>: head-dim instantiations", tile, e)
		}
	}

	for _, kernel := range []struct {
		name, tiles string
		limit       int
		floats      int // bytes of threadgroup float arrays allowed
	}{
		{"attention_fwd_simd", "kvt", 32 << 10, 0},
		{"attention_dq_simd", "kvt", 12 << 10, 0},
		{"attention_dkv_simd", "qdt", 12 << 10, 2 * 2 * 16 * 4},
		{"attention_dkv_ds_simd", "qdt", 12 << 10, 2 * 2 * 16 * 4},
		{"attention_dq_ds_simd", "kt", 12 << 10, 0},
	} {
		insts := attInstances(all, kernel.name)
		seen := map[string]bool{}
		for _, in := range insts {
			if in.elem == "" {
				continue
			}
			seen[in.elem] = true
			total, arrays := attThreadgroupBytes(t, in.fn)
			assert.LessOrEqual(t, total, kernel.limit, "%s<%s>: threadgroup bytes", kernel.name, in.elem)
			if assert.Contains(t, arrays, kernel.tiles, "%s<%s>", kernel.name, in.elem) {
				assert.Equal(t, in.elem, elemOf(arrays[kernel.tiles]), "%s<%s>: the staged tiles are %s, want the compute dtype",
					kernel.name, in.elem, arrays[kernel.tiles])
			}
			floats := 0
			for name, qt := range arrays {
				if name != kernel.tiles && elemOf(qt) == "float" {
					c, _ := strconv.Atoi(attArray.FindStringSubmatch(qt)[1])
					floats += 4 * c
				}
			}
			assert.LessOrEqual(t, floats, kernel.floats, "%s<%s>: bytes of threadgroup float arrays besides the tiles (no score blocks)",
				kernel.name, in.elem)
			t.Logf("%s<%s>: %d bytes of threadgroup memory", kernel.name, in.elem, total)
		}
		assert.Len(t, seen, 3, "%s: instantiations by element type", kernel.name)
	}

	for _, helper := range []string{"attention_load_vec", "attention_load_checked", "attention_rows_in", "attention_store_rows",
		"attention_rescale", "attention_delta_vec", "attention_delta_lanes", "attention_dkv_delta"} {
		insts := attInstances(all, helper)
		require.NotEmpty(t, insts, "no instantiation of %s", helper)
		for _, in := range insts {
			assert.Empty(t, attRuntimeDivisions(in.fn, constexprs), "%s %s: divisions by run-time values", helper, in.fn.Type.QualType)
			assert.Zero(t, attThreadgroupMatrixStores(in.fn), "%s %s: a simdgroup matrix stored to threadgroup memory", helper,
				in.fn.Type.QualType)
		}
	}
	// δ's loads are in attention_delta_lanes, which attention_delta_vec and
	// the dk/dv kernel's own δ (attention_dkv_delta) share.
	for _, helper := range []string{"attention_load_vec", "attention_delta_lanes"} {
		for _, in := range attInstances(all, helper) {
			w := deviceLoads(in.fn)
			require.NotEmpty(t, w, "%s %s: no device reads", helper, in.fn.Type.QualType)
			for _, b := range w {
				assert.Equal(t, 16, b, "%s %s: a %d-byte device read", helper, in.fn.Type.QualType, b)
			}
		}
	}
}

// attRuntimeDivisionsExcept is attRuntimeDivisions less the divisions
// whose right operand names allowed.
func attRuntimeDivisionsExcept(fn *astNode, constexprs map[string]bool, allowed string) []string {
	var bad []string
	for _, d := range attRuntimeDivisions(fn, constexprs) {
		if !strings.Contains(d, allowed) {
			bad = append(bad, d)
		}
	}
	return bad
}
