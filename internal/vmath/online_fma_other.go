//go:build !arm64

package vmath

// fma32 is a·b + c rounded once, emulated (fma32Odd): Go fuses a float32
// multiply and add only on some architectures.
func fma32(a, b, c float32) float32 { return fma32Odd(a, b, c) }
