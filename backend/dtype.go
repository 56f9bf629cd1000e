package backend

import (
	"fmt"
	"math"
	"strings"

	"github.com/x448/float16"
)

// DType is the storage type of a tensor. Every kernel computes in float32
// and rounds to the destination's DType on store (round to nearest, ties to
// even), identically on every backend.
type DType uint8

const (
	F32  DType = iota // IEEE binary32
	F16               // IEEE binary16
	BF16              // bfloat16: the top 16 bits of a binary32
	I32               // token ids and targets
)

// FloatDTypes lists the floating-point storage types a backend may be asked for.
var FloatDTypes = []DType{F32, BF16, F16}

// Size is the number of bytes one element occupies.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	}
	panic(fmt.Sprintf("backend: unknown dtype %d", d))
}

// String is the flag spelling: fp32, fp16, bf16, i32.
func (d DType) String() string {
	switch d {
	case F32:
		return "fp32"
	case F16:
		return "fp16"
	case BF16:
		return "bf16"
	case I32:
		return "i32"
	}
	return fmt.Sprintf("dtype(%d)", d)
}

// NumpyName is the dtype name numpy and MLX use ("float32", "bfloat16", ...).
func (d DType) NumpyName() string {
	switch d {
	case F32:
		return "float32"
	case F16:
		return "float16"
	case BF16:
		return "bfloat16"
	case I32:
		return "int32"
	}
	return d.String()
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 }

// Eps is the machine epsilon of d: the gap between 1 and the next
// representable number (2^-23, 2^-10, 2^-7).
func (d DType) Eps() float64 {
	switch d {
	case F32:
		return 0x1p-23
	case F16:
		return 0x1p-10
	case BF16:
		return 0x1p-7
	}
	panic(fmt.Sprintf("backend: Eps of non-float dtype %v", d))
}

// ParseDType accepts the --dtype spellings: bf16, fp16, fp32 (and the numpy
// names bfloat16, float16, float32).
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp32", "float32", "f32":
		return F32, nil
	case "fp16", "float16", "f16", "half":
		return F16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want bf16, fp16 or fp32)", s)
}

// BF16Bits rounds f to bfloat16 with round-to-nearest-even and returns its
// bits. NaN stays NaN (quiet, sign kept); ±Inf and overflow to Inf follow
// IEEE rules.
//
//	bits = (u + 0x7fff + ((u >> 16) & 1)) >> 16
func BF16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep the sign, force a quiet payload bit
		return uint16(u>>16) | 0x0040
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16Float widens bfloat16 bits to float32 (exact).
func BF16Float(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F16Bits rounds f to IEEE binary16 with round-to-nearest-even.
func F16Bits(f float32) uint16 { return uint16(float16.Fromfloat32(f)) }

// F16Float widens binary16 bits to float32 (exact).
func F16Float(b uint16) float32 { return float16.Frombits(b).Float32() }

// Round returns f rounded to d and widened back to float32: the value a
// kernel that stores f as d and loads it again would see.
func Round(d DType, f float32) float32 {
	switch d {
	case F32:
		return f
	case BF16:
		return BF16Float(BF16Bits(f))
	case F16:
		return F16Float(F16Bits(f))
	}
	panic(fmt.Sprintf("backend: Round to non-float dtype %v", d))
}

// RoundSlice rounds every element of xs to d in place.
func RoundSlice(d DType, xs []float32) {
	if d == F32 {
		return
	}
	for i, x := range xs {
		xs[i] = Round(d, x)
	}
}
