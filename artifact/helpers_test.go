package artifact

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// systemPython is Debian's interpreter, the one with numpy.
const systemPython = "/usr/bin/python3"

// numpyPython returns an interpreter that imports numpy, or skips the test
// saying why the numpy cross-check could not run.
func numpyPython(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		t.Skipf("numpy cross-check skipped: %s not found", systemPython)
	}
	out, err := exec.Command(systemPython, "-c", "import numpy; print(numpy.__version__)").CombinedOutput()
	if err != nil {
		t.Skipf("numpy cross-check skipped: %s cannot import numpy: %v: %s", systemPython, err, out)
	}
	return systemPython
}

// runPython runs a Python program with numpy and returns its stdout,
// failing the test (with stderr) when it exits non-zero.
func runPython(t *testing.T, program string, args ...string) []byte {
	t.Helper()
	py := numpyPython(t)
	cmd := exec.Command(py, append([]string{"-c", program}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "python failed; stderr:\n%s", stderr.String())
	return stdout.Bytes()
}

// repoRoot is the module root (this package's parent directory).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok, "cannot locate the test source")
	return filepath.Dir(filepath.Dir(file))
}

// randTensor is a float tensor of the given dtype with normal values of
// standard deviation std, rounded to the dtype.
func randTensor(r *rand.Rand, name string, d backend.DType, std float64, shape ...int) Tensor {
	n := numel(shape)
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = backend.Round(d, float32(r.NormFloat64()*std))
	}
	return Tensor{Name: name, Shape: shape, DType: d, Data: xs}
}

// intTensor is an int32 tensor with values spread over the whole range.
func intTensor(r *rand.Rand, name string, shape ...int) Tensor {
	xs := make([]int32, numel(shape))
	for i := range xs {
		xs[i] = int32(r.Uint32())
	}
	return Tensor{Name: name, Shape: shape, DType: backend.I32, Ints: xs}
}

// nonNil returns s, or an empty slice for nil, so that assert.Equal sees a
// nil and an empty shape (both 0-d) or element list as the same.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// assertSameF32 fails unless got and want are bitwise identical (so 0 and
// -0 differ), reporting how many elements differ and the first one.
func assertSameF32(t *testing.T, want, got []float32, msgAndArgs ...any) bool {
	t.Helper()
	if len(got) != len(want) {
		return assert.Fail(t, fmt.Sprintf("%d float32s, want %d", len(got), len(want)), msgAndArgs...)
	}
	diff, first := 0, -1
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if first < 0 {
				first = i
			}
			diff++
		}
	}
	if diff == 0 {
		return true
	}
	g, w := got[first], want[first]
	return assert.Fail(t, fmt.Sprintf("%d of %d float32s differ; first at %d: got %v (bits %#08x), want %v (bits %#08x)",
		diff, len(want), first, g, math.Float32bits(g), w, math.Float32bits(w)), msgAndArgs...)
}

// assertBits fails unless got and want hold the same element bits (as
// arrayBits and npyBits report them), reporting how many elements differ
// and the first one.
func assertBits(t *testing.T, what string, got, want []int64) bool {
	t.Helper()
	if !assert.Equal(t, len(want), len(got), "%s: number of elements", what) {
		return false
	}
	diff, first := 0, -1
	for i := range want {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			diff++
		}
	}
	if diff == 0 {
		return true
	}
	return assert.Fail(t, fmt.Sprintf("%d of %d elements differ; first at %d: got bits %#x, want %#x",
		diff, len(want), first, got[first], want[first]), what)
}

// equalTensors fails the test unless got and want hold the same tensors in
// the same order, bit for bit.
func equalTensors(t *testing.T, got, want []Tensor) {
	t.Helper()
	require.Equal(t, len(want), len(got), "number of tensors")
	for i := range want {
		g, w := got[i], want[i]
		require.Equal(t, w.Name, g.Name, "tensor %d: name", i)
		require.Equal(t, w.DType, g.DType, "tensor %q: dtype %v, want %v", w.Name, g.DType, w.DType)
		require.Equal(t, nonNil(w.Shape), nonNil(g.Shape), "tensor %q: shape", w.Name)
		if !assertSameF32(t, w.Data, g.Data, "tensor %q: data", w.Name) {
			t.FailNow()
		}
		require.Equal(t, nonNil(w.Ints), nonNil(g.Ints), "tensor %q: ints", w.Name)
	}
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
