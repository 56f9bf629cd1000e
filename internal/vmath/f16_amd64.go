//go:build amd64 && !purego

package vmath

import "golang.org/x/sys/cpu"

// hasF16C reports the half-precision conversions VCVTPH2PS and VCVTPS2PH
// (F16C, VEX-encoded, so AVX too). FromF16 and ToF16 use them when useAsm
// is also set, so that tests clearing useAsm run the Go loops.
var hasF16C = cpu.X86.HasF16C && cpu.X86.HasAVX

// Kernels of f16_amd64.s; n is a positive multiple of 8.

//go:noescape
func fromF16F16C(dst *float32, src *uint16, n int)

//go:noescape
func toF16F16C(dst *uint16, src *float32, n int)

// The AVX-512 forms, used where use512 is set; n is a positive multiple
// of 8.

//go:noescape
func fromF16AVX512(dst *float32, src *uint16, n int)

//go:noescape
func toF16AVX512(dst *uint16, src *float32, n int)
