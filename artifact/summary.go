package artifact

import (
	"github.com/golf-ml/golf/internal/atomicfile"

	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// SummaryFormat names the JSON written by WriteSummary.
const SummaryFormat = "golf_artifact_summary_v1"

// summaryEdge is how many leading and trailing values a summary records.
const summaryEdge = 4

// Summary is the expected-values file scripts/check_artifacts.py checks
// the raw .npz and the quantized container against.
type Summary struct {
	Format  string          `json:"format"`
	Tensors []TensorSummary `json:"tensors"`
}

// TensorSummary describes one tensor as it is stored in the raw .npz.
//
//	crc32   = CRC-32 (zlib.crc32) of the little-endian bytes of the .npy data
//	sum     = Σ x_i,  sum_abs = Σ |x_i|,  sum_sq = Σ x_i²   (float64, in order)
//	first   = x[:4], last = x[-4:]  (flattened, C order; exact float64 values)
type TensorSummary struct {
	Name   string    `json:"name"`
	Shape  []int     `json:"shape"`
	DType  string    `json:"dtype"` // numpy/MLX name: float32, float16, bfloat16, int32
	Numel  int       `json:"numel"`
	CRC32  uint32    `json:"crc32"`
	Sum    float64   `json:"sum"`
	SumAbs float64   `json:"sum_abs"`
	SumSq  float64   `json:"sum_sq"`
	First  []float64 `json:"first"`
	Last   []float64 `json:"last"`
}

// Summarize computes the summary of tensors, in order. Non-finite values
// are an error (JSON cannot hold them, and a model that has them should not
// be shipped).
func Summarize(tensors []Tensor) (Summary, error) {
	checkTensors(tensors)
	s := Summary{Format: SummaryFormat, Tensors: make([]TensorSummary, len(tensors))}
	for i, t := range tensors {
		a := t.ToArray()
		vals := make([]float64, t.Numel())
		if t.Data != nil {
			// F16/BF16 values as stored, i.e. rounded to their dtype.
			for j, v := range a.Float32s() {
				vals[j] = float64(v)
			}
		} else {
			for j, v := range t.Ints {
				vals[j] = float64(v)
			}
		}
		ts := TensorSummary{
			Name: t.Name, Shape: cloneShape(t.Shape), DType: t.DType.NumpyName(), Numel: len(vals),
			CRC32: crc32.ChecksumIEEE(a.Data),
			First: append([]float64{}, vals[:min(summaryEdge, len(vals))]...),
			Last:  append([]float64{}, vals[max(0, len(vals)-summaryEdge):]...),
		}
		for _, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Summary{}, fmt.Errorf("tensor %q holds a non-finite value", t.Name)
			}
			ts.Sum += v
			ts.SumAbs += math.Abs(v)
			ts.SumSq += v * v
		}
		s.Tensors[i] = ts
	}
	return s, nil
}

// WriteSummary writes Summarize(tensors) to path as indented JSON,
// atomically, for scripts/check_artifacts.py:
//
//	python3 scripts/check_artifacts.py model.npz model.int8.ptz summary.json
func WriteSummary(path string, tensors []Tensor) error {
	s, err := Summarize(tensors)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	js, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	})
	return err
}
