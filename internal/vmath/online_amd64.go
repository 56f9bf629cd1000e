//go:build amd64 && !purego

package vmath

import "golang.org/x/sys/cpu"

// useFMA selects the online softmax kernels of online_amd64.s (with
// useAsm): AVX-512 where use512 is set, else AVX2 with FMA.
var useFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// onlineSoftmaxAsm is OnlineSoftmax's rows on the assembly kernels (bounds
// checked by OnlineSoftmax; width ≥ 1). onlineSoftmaxAVX512 stops before a
// row whose new maximum is not finite (a NaN or infinite score, or a NaN
// m): onlineRow does that row, and the assembly resumes after it.
func onlineSoftmaxAsm(s []float32, lds, rows, width, n0 int, o []float32, ldo, d int, m []float32, l []float64) {
	if !use512 {
		for r := range rows {
			n := min(width, max(0, n0+r))
			m[r], l[r] = onlineRowAVX2(s[r*lds:r*lds+width], n, o[r*ldo:r*ldo+d], m[r], l[r])
		}
		return
	}
	for r := 0; r < rows; r++ {
		var op *float32 // o is not touched when d = 0, and may be empty
		if d > 0 {
			op = &o[r*ldo]
		}
		if r += onlineSoftmaxAVX512(&s[r*lds], lds, rows-r, width, n0+r, op, ldo, d, &m[r], &l[r]); r == rows {
			return
		}
		n := min(width, max(0, n0+r))
		m[r], l[r] = onlineRow(s[r*lds:r*lds+width], n, o[r*ldo:r*ldo+d], m[r], l[r])
	}
}

// onlineRowAVX2 is onlineRow with the exponentials in onlineExpAVX2 and the
// maximum and rescale in Max and Scale; rows whose new maximum is not
// finite go to onlineRow.
func onlineRowAVX2(s []float32, n int, o []float32, m float32, l float64) (float32, float64) {
	if n <= 0 {
		clear(s)
		return m, l
	}
	mNew := canonMax(m, Max(s[:n]))
	if mNew-mNew != 0 {
		return onlineRow(s, n, o, m, l)
	}
	var acc [16]float32
	if mNew != m {
		alpha := [1]float32{m} // m − m' is in [−Inf, 0]: the kernel's range
		onlineExpAVX2(&alpha[0], 1, mNew, &acc)
		l = float64(l * float64(alpha[0])) // rounded before the sum is added
		Scale(o, o, alpha[0])
		acc = [16]float32{}
	}
	onlineExpAVX2(&s[0], n, mNew, &acc)
	clear(s[n:])
	return mNew, l + fold16(&acc)
}

// onlineEndAsm runs OnlineSoftmaxEnd on onlineEndAVX512 and reports
// whether it did (bounds checked by OnlineSoftmaxEnd; rows, d ≥ 1).
func onlineEndAsm(o []float32, ldo, rows, d int, l []float64) bool {
	if !use512 {
		return false
	}
	onlineEndAVX512(&o[0], ldo, rows, d, &l[0])
	return true
}

// Kernels of online_amd64.s.

// onlineSoftmaxAVX512 is OnlineSoftmax on raw pointers; it returns the
// number of rows it did.
//
//go:noescape
func onlineSoftmaxAVX512(s *float32, lds, rows, width, n0 int, o *float32, ldo, d int, m *float32, l *float64) int

// onlineExpAVX2 sets x[i] = ExpFMA(x[i] − shift) for i < n (n ≥ 1, every
// x[i] − shift in [−Inf, 0]) and adds x[i] to acc[i mod 16].
//
//go:noescape
func onlineExpAVX2(x *float32, n int, shift float32, acc *[16]float32)

// onlineEndAVX512 is OnlineSoftmaxEnd on raw pointers.
//
//go:noescape
func onlineEndAVX512(o *float32, ldo, rows, d int, l *float64)
