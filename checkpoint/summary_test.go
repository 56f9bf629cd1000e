package checkpoint

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

	"github.com/golf-ml/golf/backend"
)

func TestSummarize(t *testing.T) {
	ts := []Tensor{
		{Name: "a", Shape: []int{2, 3}, DType: backend.F32, Data: []float32{1, -2, 3, 0.5, -0.25, 6}},
		{Name: "b", Shape: []int{}, DType: backend.BF16, Data: []float32{1.5}},
		{Name: "c", Shape: []int{3}, DType: backend.I32, Ints: []int32{-7, 0, 9}},
	}
	s, err := Summarize(ts)
	if err != nil {
		t.Fatal(err)
	}
	a := s.Tensors[0]
	if a.Name != "a" || a.DType != "float32" || a.Numel != 6 || !equalInts(a.Shape, []int{2, 3}) {
		t.Errorf("a: %+v", a)
	}
	if a.Sum != 8.25 || a.SumAbs != 12.75 || a.SumSq != 1+4+9+0.25+0.0625+36 {
		t.Errorf("a sums: %v %v %v", a.Sum, a.SumAbs, a.SumSq)
	}
	if !equalF64(a.First, []float64{1, -2, 3, 0.5}) || !equalF64(a.Last, []float64{3, 0.5, -0.25, 6}) {
		t.Errorf("a edges: %v %v", a.First, a.Last)
	}
	if a.CRC32 != crc32.ChecksumIEEE(F32Array(nil, ts[0].Data).Data) {
		t.Errorf("a crc32 %#x", a.CRC32)
	}
	// bfloat16 1.5 is stored as the bits 0x3fc0.
	if b := s.Tensors[1]; b.DType != "bfloat16" || b.CRC32 != crc32.ChecksumIEEE([]byte{0xc0, 0x3f}) || !equalF64(b.First, []float64{1.5}) {
		t.Errorf("b: %+v", b)
	}
	if c := s.Tensors[2]; c.Sum != 2 || c.SumAbs != 16 || !equalF64(c.First, []float64{-7, 0, 9}) {
		t.Errorf("c: %+v", c)
	}
	ts[0].Data[4] = float32(math.Inf(1))
	if _, err := Summarize(ts); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("non-finite value: error %v", err)
	}
}

func equalF64(a, b []float64) bool {
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
	if err := SaveNPZ(npz, raw); err != nil {
		t.Fatal(err)
	}
	if _, _, err := SaveQuantized(ptz, q); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(js, summary); err != nil {
		t.Fatal(err)
	}
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
	if err != nil || !strings.Contains(out, "tensors OK") {
		t.Fatalf("check_artifacts.py rejected golf's artifacts: %v\n%s", err, out)
	}
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
			b, _ := os.ReadFile(js)
			json.Unmarshal(b, &s)
			s.Tensors[2].Last[1] = math.Nextafter(s.Tensors[2].Last[1], 9)
			b, _ = json.Marshal(s)
			os.WriteFile(js, b, 0o644)
			return files
		},
	} {
		out, err := runChecker(t, setup(t.TempDir()))
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out, "FAIL") {
			t.Errorf("%s: check_artifacts.py exit %v, want 1 with FAIL lines:\n%s", name, err, out)
		}
	}
}
