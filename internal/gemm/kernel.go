package gemm

// kernelFunc computes one mr×nr tile of C (mr×nr the geometry of its
// microKernel) from an A micro-panel whose element (i, p) is a[i*rs+p*qs]
// and a packed B micro-panel b (kc, nr):
//
//	acc[i][j] = Σ_p a[i*rs+p*qs]·b[p*nr+j]
//	c[i*ldc+j] = alpha·acc[i][j] + beta·c[i*ldc+j]   (loadC)
//	c[i*ldc+j] = alpha·acc[i][j]                      (!loadC)
//
// The sum runs over p in increasing order, each step a fused multiply-add
// (one rounding); the update multiplies by alpha, then adds beta·c with
// one more fused multiply-add. The A panel may be a packed copy (rs = 1,
// qs = mr) or A itself (rs = lda, qs = 1 for rows along K; rs = 1,
// qs = lda for columns along K). c holds at least (mr-1)·ldc+nr elements.
type kernelFunc func(kc int, a []float32, rs, qs int, b, c []float32, ldc int, alpha, beta float32, loadC bool)

// microKernel is a register tile and the function that computes it.
type microKernel struct {
	name   string
	mr, nr int
	fn     kernelFunc
}

// kern is the micro-kernel Sgemm uses: the fastest one this CPU runs
// (chosen in the per-architecture file's init). Tests switch it.
var kern = goKernel

// goKernel is the portable micro-kernel on a 6×16 tile.
var goKernel = microKernel{"go", 6, 16, kernelGo6x16}

// kernelGo6x16 is the portable micro-kernel: the 6×16 tile swept as six
// 2×8 sub-tiles, so that the sixteen accumulators fit in registers. Each
// step is math.FMA's single rounding, as the assembly's VFMADD231PS.
func kernelGo6x16(kc int, a []float32, rs, qs int, b, c []float32, ldc int, alpha, beta float32, loadC bool) {
	const mr, nr = 6, 16
	b = b[:kc*nr]
	_ = c[(mr-1)*ldc+nr-1]
	if kc > 0 {
		_ = a[(mr-1)*rs+(kc-1)*qs]
	}
	for i := 0; i < mr; i += 2 {
		for j := 0; j < nr; j += 8 {
			var s0, s1 [8]float32
			for p := range kc {
				a0, a1 := a[i*rs+p*qs], a[(i+1)*rs+p*qs]
				bp := (*[8]float32)(b[p*nr+j:])
				for l, bv := range bp {
					s0[l] = fma32(a0, bv, s0[l])
					s1[l] = fma32(a1, bv, s1[l])
				}
			}
			store8(c[i*ldc+j:], s0, alpha, beta, loadC)
			store8(c[(i+1)*ldc+j:], s1, alpha, beta, loadC)
		}
	}
}

// store8 writes alpha·acc (+ beta·c when loadC, fused) into c[0:8].
func store8(c []float32, acc [8]float32, alpha, beta float32, loadC bool) {
	d := (*[8]float32)(c)
	for j, v := range acc {
		v *= alpha
		if loadC {
			v = fma32(beta, d[j], v)
		}
		d[j] = v
	}
}
