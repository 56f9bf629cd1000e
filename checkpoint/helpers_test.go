package checkpoint

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

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
	if err := cmd.Run(); err != nil {
		t.Fatalf("python failed: %v\nstderr:\n%s", err, stderr.String())
	}
	return stdout.Bytes()
}

// repoRoot is the module root (this package's parent directory).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
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

// sameBits reports whether two float32 slices are bitwise identical and,
// if not, the first differing index.
func sameBits(a, b []float32) (bool, int) {
	if len(a) != len(b) {
		return false, -1
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false, i
		}
	}
	return true, 0
}

// equalTensors fails the test unless got and want hold the same tensors in
// the same order, bit for bit.
func equalTensors(t *testing.T, got, want []Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d tensors, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.DType != w.DType || !equalInts(g.Shape, w.Shape) {
			t.Fatalf("tensor %d: got %q %v %v, want %q %v %v", i, g.Name, g.DType, g.Shape, w.Name, w.DType, w.Shape)
		}
		if ok, j := sameBits(g.Data, w.Data); !ok {
			t.Fatalf("tensor %q: data differs at %d (len %d vs %d)", w.Name, j, len(g.Data), len(w.Data))
		}
		if len(g.Ints) != len(w.Ints) {
			t.Fatalf("tensor %q: %d ints, want %d", w.Name, len(g.Ints), len(w.Ints))
		}
		for j := range w.Ints {
			if g.Ints[j] != w.Ints[j] {
				t.Fatalf("tensor %q: int %d is %d, want %d", w.Name, j, g.Ints[j], w.Ints[j])
			}
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
