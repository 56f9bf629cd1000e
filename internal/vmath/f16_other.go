//go:build !amd64 || purego

package vmath

// hasF16C is false: there is no assembly here, and the kernels below are
// never called.
const hasF16C = false

func fromF16F16C(dst *float32, src *uint16, n int) { panic("vmath: no assembly kernels") }

func toF16F16C(dst *uint16, src *float32, n int) { panic("vmath: no assembly kernels") }

func fromF16AVX512(dst *float32, src *uint16, n int) { panic("vmath: no assembly kernels") }

func toF16AVX512(dst *uint16, src *float32, n int) { panic("vmath: no assembly kernels") }
