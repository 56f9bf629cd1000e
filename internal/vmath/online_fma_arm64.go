package vmath

// fma32 is a·b + c rounded once: arm64's compiler fuses the expression
// into FMADDS (TestFMA32 checks it against fma32Odd).
func fma32(a, b, c float32) float32 { return a*b + c }
