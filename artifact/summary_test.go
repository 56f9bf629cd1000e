package artifact

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

func TestSummarize(t *testing.T) {
	ts := []Tensor{
		{Name: "a", Shape: []int{2, 3}, DType: backend.F32, Data: []float32{1, -2, 3, 0.5, -0.25, 6}},
		{Name: "b", Shape: []int{}, DType: backend.BF16, Data: []float32{1.5}},
		{Name: "c", Shape: []int{3}, DType: backend.I32, Ints: []int32{-7, 0, 9}},
	}
	s, err := Summarize(ts)
	require.NoError(t, err)
	require.Len(t, s.Tensors, 3)
	// Exact: every value below is a short binary fraction.
	a := s.Tensors[0]
	assert.Equal(t, "a", a.Name, "a: name")
	assert.Equal(t, "float32", a.DType, "a: dtype")
	assert.Equal(t, 6, a.Numel, "a: numel")
	assert.Equal(t, []int{2, 3}, a.Shape, "a: shape")
	assert.Equal(t, 8.25, a.Sum, "a: sum")
	assert.Equal(t, 12.75, a.SumAbs, "a: sum_abs")
	assert.Equal(t, 1+4+9+0.25+0.0625+36, a.SumSq, "a: sum_sq")
	assert.Equal(t, []float64{1, -2, 3, 0.5}, a.First, "a: first")
	assert.Equal(t, []float64{3, 0.5, -0.25, 6}, a.Last, "a: last")
	assert.Equal(t, crc32.ChecksumIEEE(F32Array(nil, ts[0].Data).Data), a.CRC32, "a: crc32")
	// bfloat16 1.5 is stored as the bits 0x3fc0.
	b := s.Tensors[1]
	assert.Equal(t, "bfloat16", b.DType, "b: dtype")
	assert.Equal(t, crc32.ChecksumIEEE([]byte{0xc0, 0x3f}), b.CRC32, "b: crc32")
	assert.Equal(t, []float64{1.5}, b.First, "b: first")
	c := s.Tensors[2]
	assert.Equal(t, 2.0, c.Sum, "c: sum")
	assert.Equal(t, 16.0, c.SumAbs, "c: sum_abs")
	assert.Equal(t, []float64{-7, 0, 9}, c.First, "c: first")
	ts[0].Data[4] = float32(math.Inf(1))
	_, err = Summarize(ts)
	assert.ErrorContains(t, err, `"a"`, "non-finite value: the error names the tensor")
}

// artifactState is modelLike plus bfloat16 tensors, one of them quantized.
func artifactState() []Tensor {
	r := rand.New(rand.NewPCG(13, 14))
	ts := modelLike()
	return append(ts,
		randTensor(r, "blocks.1.bf16_small", backend.BF16, 1, 10),
		randTensor(r, "blocks.1.bf16_big", backend.BF16, 0.05, 3, 2, KeepFloatMaxNumel/4),
		randTensor(r, "blocks.1.mlp.proj.weight", backend.F32, 0.5, 64, 1100))
}

// writeArtifacts saves the three files check_artifacts.py reads.
func writeArtifacts(t *testing.T, dir string, raw, quantized, summary []Tensor) [3]string {
	t.Helper()
	npz, ptz, js := filepath.Join(dir, "m.npz"), filepath.Join(dir, "m.int8.ptz"), filepath.Join(dir, "summary.json")
	q, _ := Quantize(quantized, testPatterns)
	require.NoError(t, SaveNPZ(npz, raw))
	_, _, err := SaveQuantized(ptz, q)
	require.NoError(t, err)
	require.NoError(t, WriteSummary(js, summary))
	return [3]string{npz, ptz, js}
}

func runChecker(t *testing.T, files [3]string) (string, error) {
	t.Helper()
	py := numpyPython(t)
	var out bytes.Buffer
	cmd := exec.Command(py, filepath.Join(repoRoot(t), "scripts", "check_artifacts.py"), files[0], files[1], files[2])
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestCheckArtifactsAccepts(t *testing.T) {
	numpyPython(t)
	ts := artifactState()
	out, err := runChecker(t, writeArtifacts(t, t.TempDir(), ts, ts, ts))
	require.NoError(t, err, "check_artifacts.py rejected golf's artifacts:\n%s", out)
	require.Contains(t, out, "tensors OK", "check_artifacts.py's report")
	t.Log(strings.TrimSpace(out))
}

func TestCheckArtifactsRejects(t *testing.T) {
	numpyPython(t)
	ts := artifactState()
	// A quantized model of slightly different weights: one value moved by
	// ten quantization steps.
	moved := make([]Tensor, len(ts))
	copy(moved, ts)
	w := moved[0]
	w.Data = append([]float32{}, w.Data...)
	w.Data[100] += 10 * 0.02 * 4 / 127
	moved[0] = w

	for name, setup := range map[string]func(dir string) [3]string{
		"quantized from other weights": func(dir string) [3]string {
			return writeArtifacts(t, dir, ts, moved, ts)
		},
		"raw model lacks a tensor": func(dir string) [3]string {
			return writeArtifacts(t, dir, ts[1:], ts, ts)
		},
		"summary disagrees": func(dir string) [3]string {
			files := writeArtifacts(t, dir, ts, ts, ts)
			js := files[2]
			var s Summary
			b, err := os.ReadFile(js)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &s))
			s.Tensors[2].Last[1] = math.Nextafter(s.Tensors[2].Last[1], 9)
			b, err = json.Marshal(s)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(js, b, 0o644))
			return files
		},
	} {
		out, err := runChecker(t, setup(t.TempDir()))
		var ee *exec.ExitError
		if assert.ErrorAs(t, err, &ee, "%s: check_artifacts.py must exit 1:\n%s", name, out) {
			assert.Equal(t, 1, ee.ExitCode(), "%s: check_artifacts.py's exit code:\n%s", name, out)
		}
		assert.Contains(t, out, "FAIL", "%s: check_artifacts.py reports FAIL lines", name)
	}
}
