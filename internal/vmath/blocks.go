package vmath

// Whole-block kernels: every slice here has a length that is a multiple of
// 8. Each xxxBlocks runs the assembly when useAsm is set and its Go loop
// (the definition the assembly must match bit for bit) otherwise.
// An assembly kernel whose exponential leaves the polynomial's range stops
// before that block and returns how far it got; the Go version does that
// block and the assembly resumes after it.

func expSubBlocks(dst, src []float32, shift float32, acc *[lanes]float64) {
	for i := 0; i < len(src); i += lanes {
		if useAsm {
			if i += expSubAsm(dst[i:], src[i:len(src)], shift, acc); i == len(src) {
				return
			}
		}
		expSubGo(dst[i:i+lanes], src[i:i+lanes], shift, acc)
	}
}

func expSubGo(dst, src []float32, shift float32, acc *[lanes]float64) {
	for i := 0; i < len(src); i += lanes {
		d, s := dst[i:i+lanes:i+lanes], src[i:i+lanes:i+lanes]
		for j := range lanes {
			d[j] = Exp32(s[j] - shift)
			acc[j] += float64(d[j])
		}
	}
}

func maxBlocks(x []float32, acc *[lanes]float32) (nan bool) {
	if useAsm {
		return maxAsm(x, acc)
	}
	return maxGo(x, acc)
}

func maxGo(x []float32, acc *[lanes]float32) (nan bool) {
	for i := 0; i < len(x); i += lanes {
		for j, v := range x[i : i+lanes : i+lanes] {
			acc[j] = maxStep(acc[j], v)
			nan = nan || v != v
		}
	}
	return nan
}

func tanhBlocks(dst, src []float32) {
	if useAsm {
		tanhAsm(dst, src)
		return
	}
	for i, v := range src {
		dst[i] = Tanh32(v)
	}
}

func softcapBlocks(th, z, x []float32, c float32, acc *[lanes]float32) (nan bool) {
	if useAsm {
		return softcapAsm(th, z, x, c, acc)
	}
	for i := range x {
		th[i] = Tanh32(x[i] / c)
		z[i] = c * th[i]
	}
	return maxGo(z, acc)
}

func softmaxGradBlocks(s, dp []float32, lse, delta float32) {
	for i := 0; i < len(s); i += lanes {
		if useAsm {
			if i += softmaxGradAsm(s[i:], dp[i:], lse, delta); i == len(s) {
				return
			}
		}
		for j := i; j < i+lanes; j++ {
			s[j] = Exp32(s[j] - lse)
			dp[j] = s[j] * (dp[j] - delta)
		}
	}
}

func divBlocks(dst, src []float32, d float32) {
	if useAsm {
		divAsm(dst, src, d)
		return
	}
	for i, v := range src {
		dst[i] = v / d
	}
}
