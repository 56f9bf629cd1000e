//go:build cuda

package cuda

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/shaders"
)

// argMirrors are the Go mirrors of golf_args.h that the CUDA kernels take
// by value.
var argMirrors = []any{
	shaders.EltwiseArgs{}, shaders.RMSNormArgs{}, shaders.ScalarArgs{}, shaders.ReduceArgs{},
	shaders.RMSNormBwdArgs{}, shaders.ResidMixArgs{}, shaders.ScaledAddArgs{}, shaders.EmbeddingArgs{},
	shaders.GemmArgs{}, shaders.RopeArgs{}, shaders.AttentionArgs{}, shaders.CEArgs{}, shaders.AdamArgs{},
	shaders.MomentumArgs{}, shaders.NSArgs{},
}

// cName is the C spelling of a mirror's field (HasRes → has_res,
// TransA → trans_a, Bias1 → bias1).
func cName(goName string) string {
	var b strings.Builder
	rs := []rune(goName)
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// layoutProbe is a program of static_asserts that NVRTC lays out every
// argument struct as Go does. NVRTC has no offsetof, so the probe checks
// what fixes the offsets: a constexpr aggregate initialised with 1, 2, 3,
// ... in Go's field order must have each named field (C spelling) hold its
// number with Go's type (uint or float) and size, and the struct Go's size,
// so fields sit in Go's order without padding.
func layoutProbe(extra string) Program {
	var src strings.Builder
	src.WriteString("#include \"golf_prelude.cuh\"\n")
	src.WriteString("template <class A, class B> struct same { static constexpr bool v = false; };\n")
	src.WriteString("template <class A> struct same<A, A> { static constexpr bool v = true; };\n")
	for _, m := range argMirrors {
		ty := reflect.TypeOf(m)
		fmt.Fprintf(&src, "static_assert(sizeof(%s) == %d, \"sizeof(%s)\");\n", ty.Name(), ty.Size(), ty.Name())
		var inits, ctypes []string
		for i := range ty.NumField() {
			switch ty.Field(i).Type.Kind() {
			case reflect.Float32:
				inits, ctypes = append(inits, fmt.Sprintf("%d.0f", i+1)), append(ctypes, "float")
			case reflect.Uint32:
				inits, ctypes = append(inits, fmt.Sprintf("%du", i+1)), append(ctypes, "unsigned int")
			default:
				panic(fmt.Sprintf("%s.%s: no C type for %v", ty.Name(), ty.Field(i).Name, ty.Field(i).Type))
			}
		}
		fmt.Fprintf(&src, "constexpr %s probe_%s{%s};\n", ty.Name(), ty.Name(), strings.Join(inits, ", "))
		for i := range ty.NumField() {
			f := ty.Field(i)
			fmt.Fprintf(&src, "static_assert(probe_%s.%s == %s && sizeof(probe_%s.%s) == %d && same<decltype(%s::%s), %s>::v, \"%s.%s\");\n",
				ty.Name(), cName(f.Name), inits[i], ty.Name(), cName(f.Name), f.Type.Size(), ty.Name(), cName(f.Name), ctypes[i],
				ty.Name(), cName(f.Name))
		}
	}
	src.WriteString(extra)
	src.WriteString("extern \"C\" __global__ void layout_probe() {}\n")
	return Program{Name: "layout_probe.cu", Source: src.String()}
}

// NVRTC lays out every kernel argument struct as Go does; a planted wrong
// size fails the same check.
func TestArgumentStructLayoutsMatchGo(t *testing.T) {
	n := requireNVRTC(t)
	hdrs, err := kernelHeaders()
	require.NoError(t, err)
	p := layoutProbe("")
	p.Headers = hdrs
	_, err = n.Compile(p, CompileOptions("sm_80", "float"))
	require.NoError(t, err)
	assert.Equal(t, 15, strings.Count(p.Source, "static_assert(sizeof("))

	for _, planted := range []string{
		"static_assert(sizeof(RopeArgs) == 32, \"planted size\");\n",
		"static_assert(same<decltype(RopeArgs::base), unsigned int>::v, \"planted type\");\n",
		"constexpr AdamArgs planted_order{1u, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f};\n" +
			"static_assert(planted_order.beta1 == 2.0f, \"planted order\");\n",
	} {
		bad := layoutProbe(planted)
		bad.Headers = hdrs
		_, err = n.Compile(bad, CompileOptions("sm_80", "float"))
		require.Error(t, err, planted)
		assert.Contains(t, err.Error(), "planted", planted)
	}
}

func TestCName(t *testing.T) {
	for goName, c := range map[string]string{"HasRes": "has_res", "TransA": "trans_a", "Bias1": "bias1", "N": "n", "KvHeads": "kv_heads", "Lda": "lda"} {
		assert.Equal(t, c, cName(goName))
	}
}
