package metal

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/internal/kemu/msl/strict"
)

// astNode is the part of a clang -ast-dump=json node the structure test
// reads.
type astNode struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Opcode    string `json:"opcode"`
	CastKind  string `json:"castKind"`
	Constexpr bool   `json:"constexpr"`
	Value     any    `json:"value"`
	Type      struct {
		QualType          string `json:"qualType"`
		DesugaredQualType string `json:"desugaredQualType"`
	} `json:"type"`
	ReferencedDecl *astNode   `json:"referencedDecl"`
	Inner          []*astNode `json:"inner"`
}

func (n *astNode) walk(f func(*astNode)) {
	f(n)
	for _, c := range n.Inner {
		c.walk(f)
	}
}

// desugared is the node's type with typedefs resolved.
func (n *astNode) desugared() string {
	if n.Type.DesugaredQualType != "" {
		return n.Type.DesugaredQualType
	}
	return n.Type.QualType
}

// gemmAST is shaderAST of shaders/linear.metal.
func gemmAST(t *testing.T, clang, filter string) []*astNode {
	t.Helper()
	return shaderAST(t, clang, "linear.metal", filter)
}

// shaderAST compiles shaders/file with the strict front end's
// metal_stdlib (MSL 3.1, as internal/kemu/msl/strict does) and returns
// the declarations named by filter (-ast-dump-filter), each with its
// template instantiations.
func shaderAST(t *testing.T, clang, file, filter string) []*astNode {
	t.Helper()
	cmd := exec.Command(clang, "-x", "c++", "-std=c++17", "-target", "arm64-apple-macos14", "-fsyntax-only",
		"-nostdinc", "-nostdinc++", "-isystem", filepath.Join("..", "internal", "kemu", "msl", "strict", "include"),
		"-D__METAL_VERSION__=310", "-fno-exceptions", "-fno-rtti", "-Wno-unknown-attributes",
		"-I", filepath.Join("..", "shaders"), "-Xclang", "-ast-dump=json", "-Xclang", "-ast-dump-filter="+filter,
		filepath.Join("..", "shaders", file))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "clang: %s", errOut.String())
	var nodes []*astNode
	dec := json.NewDecoder(&out)
	for {
		n := new(astNode)
		err := dec.Decode(n)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		nodes = append(nodes, n)
	}
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

// elemOf names the first element type in a clang type string: half is
// _Float16 and bfloat __fp16 in the strict metal_stdlib.
func elemOf(qt string) string {
	for _, e := range []struct{ spelled, msl string }{{"_Float16", "half"}, {"__fp16", "bfloat"}, {"float", "float"}} {
		if i := strings.Index(qt, e.spelled); i >= 0 && !strings.Contains(qt[:i], "_Float16") && !strings.Contains(qt[:i], "__fp16") {
			return e.msl
		}
	}
	return ""
}

var (
	extVector = regexp.MustCompile(`ext_vector_type\((\d+)\)`)
	scalarTok = regexp.MustCompile(`\b(_Float16|__fp16|float|unsigned int|uint|int|unsigned short|ushort|short|unsigned char|uchar|char|unsigned long|ulong|long)\b`)
)

// loadWidth is the bytes of a value of clang type qt, 0 if unknown.
func loadWidth(qt string) int {
	size := map[string]int{"_Float16": 2, "__fp16": 2, "float": 4, "unsigned int": 4, "uint": 4, "int": 4,
		"unsigned short": 2, "ushort": 2, "short": 2, "unsigned char": 1, "uchar": 1, "char": 1,
		"unsigned long": 8, "ulong": 8, "long": 8}
	s := size[scalarTok.FindString(qt)]
	if m := extVector.FindStringSubmatch(qt); m != nil {
		n := 0
		for _, c := range m[1] {
			n = n*10 + int(c-'0')
		}
		s *= n
	}
	return s
}

// deviceLoads lists the widths of the reads of device memory in n: the
// lvalue-to-rvalue conversions of expressions in address space 1.
func deviceLoads(n *astNode) []int {
	var w []int
	n.walk(func(c *astNode) {
		if c.Kind == "ImplicitCastExpr" && c.CastKind == "LValueToRValue" && len(c.Inner) == 1 &&
			strings.Contains(c.Inner[0].desugared(), "address_space(1)") {
			w = append(w, loadWidth(c.Inner[0].desugared()))
		}
	})
	return w
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
