package gemm

import "github.com/golf-ml/golf/internal/vmath"

// fma32 is a·b + c rounded once (vmath.FMA32: fused on arm64, emulated
// exactly elsewhere), the one multiply-add order of the Go micro-kernel.
func fma32(a, b, c float32) float32 { return vmath.FMA32(a, b, c) }
