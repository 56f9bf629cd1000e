package shaders

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMirrorsListsEveryStruct: Mirrors, which the layout checks iterate,
// holds every struct type declared in args.go, once, so a new argument
// struct cannot escape them.
func TestMirrorsListsEveryStruct(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "args.go", nil, 0)
	require.NoError(t, err)
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok {
			if _, ok := ts.Type.(*ast.StructType); ok {
				declared = append(declared, ts.Name.Name)
			}
		}
		return true
	})
	var listed []string
	for _, m := range Mirrors {
		listed = append(listed, reflect.TypeOf(m).Name())
	}
	sort.Strings(declared)
	sort.Strings(listed)
	require.NotEmpty(t, declared)
	assert.Equal(t, declared, listed)
}
