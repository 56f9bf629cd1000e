package artifact

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
)

// Tensor is one named tensor of a model state, in the order the caller
// lists them (the reference's flat parameter names, e.g.
// "blocks.0.attn.c_q.weight").
//
// Float tensors (F32, F16, BF16) carry their values in Data as float32; an
// F16 or BF16 value is rounded to its dtype (nearest, ties to even) when it
// is written, so Data should already lie on that grid. I32 tensors carry
// Ints. The other slice is nil.
type Tensor struct {
	Name  string
	Shape []int
	DType backend.DType
	Data  []float32 // F32, F16, BF16
	Ints  []int32   // I32
}

// Numel is the number of elements (1 for a 0-d tensor).
func (t Tensor) Numel() int { return numel(t.Shape) }

// Nbytes is the size of the tensor in its own dtype (numpy's nbytes).
func (t Tensor) Nbytes() int { return t.Numel() * t.DType.Size() }

// check panics with a named message when t is malformed: a programmer
// error, never a user's.
func (t Tensor) check() {
	if t.Name == "" {
		panic("artifact: tensor with an empty name")
	}
	for _, d := range t.Shape {
		if d < 0 {
			panic(fmt.Sprintf("artifact: tensor %q has a negative dimension in shape %v", t.Name, t.Shape))
		}
	}
	n := t.Numel()
	switch {
	case t.DType.IsFloat():
		if len(t.Data) != n || t.Ints != nil {
			panic(fmt.Sprintf("artifact: tensor %q %v %v has %d float values and %d ints, want %d floats",
				t.Name, t.DType, t.Shape, len(t.Data), len(t.Ints), n))
		}
	case t.DType == backend.I32:
		if len(t.Ints) != n || t.Data != nil {
			panic(fmt.Sprintf("artifact: tensor %q i32 %v has %d ints and %d float values, want %d ints",
				t.Name, t.Shape, len(t.Ints), len(t.Data), n))
		}
	default:
		panic(fmt.Sprintf("artifact: tensor %q has unknown dtype %v", t.Name, t.DType))
	}
}

// checkTensors checks every tensor and that names are unique.
func checkTensors(ts []Tensor) {
	seen := make(map[string]bool, len(ts))
	for _, t := range ts {
		t.check()
		if seen[t.Name] {
			panic(fmt.Sprintf("artifact: duplicate tensor name %q", t.Name))
		}
		seen[t.Name] = true
	}
}

// ToArray packs t as the .npy array it is saved as: F32 '<f4', F16 '<f2',
// BF16 '<V2' (as MLX writes bfloat16), I32 '<i4'.
func (t Tensor) ToArray() Array {
	t.check()
	switch t.DType {
	case backend.F32:
		return F32Array(t.Shape, t.Data)
	case backend.F16:
		return F16Array(t.Shape, t.Data)
	case backend.BF16:
		return BF16Array(t.Shape, t.Data)
	default: // I32, as check allows nothing else
		return I32Array(t.Shape, t.Ints)
	}
}

// TensorFromArray unpacks a named .npy array. int8 and uint8 arrays are not
// model tensors and are an error.
func TensorFromArray(name string, a Array) (Tensor, error) {
	t := Tensor{Name: name, Shape: cloneShape(a.Shape)}
	switch a.Elem {
	case ElemF4:
		t.DType = backend.F32
	case ElemF2:
		t.DType = backend.F16
	case ElemBF16:
		t.DType = backend.BF16
	case ElemI4:
		t.DType, t.Ints = backend.I32, a.Int32s()
		return t, nil
	default:
		return Tensor{}, fmt.Errorf("tensor %q has dtype %v, want float32, float16, bfloat16 or int32", name, a.Elem)
	}
	t.Data = a.Float32s()
	return t, nil
}

// dtypeFromName parses the numpy/MLX dtype names the quantized container
// records ("float32", "float16", "bfloat16").
func dtypeFromName(s string) (backend.DType, bool) {
	switch s {
	case "float32":
		return backend.F32, true
	case "float16":
		return backend.F16, true
	case "bfloat16":
		return backend.BF16, true
	}
	return 0, false
}
