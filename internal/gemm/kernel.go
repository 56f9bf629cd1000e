package gemm

// kernelFunc computes one MR×NR tile of C from a packed A micro-panel
// a (kc, MR) and a packed B micro-panel b (kc, NR):
//
//	acc[i][j] = Σ_p a[p*MR+i]·b[p*NR+j]
//	c[i*ldc+j] = alpha·acc[i][j] + beta·c[i*ldc+j]   (loadC)
//	c[i*ldc+j] = alpha·acc[i][j]                      (!loadC)
//
// The sum runs over p in increasing order. c holds at least (MR-1)·ldc+NR
// elements.
type kernelFunc func(kc int, a, b, c []float32, ldc int, alpha, beta float32, loadC bool)

// kernel is the micro-kernel Sgemm uses; init in the per-architecture file
// replaces it when the CPU has a faster one. Tests switch it to kernelGo.
var kernel kernelFunc = kernelGo

// kernelGo is the portable micro-kernel. The tile is swept as six 2×8
// sub-tiles so that the sixteen accumulators fit in registers.
func kernelGo(kc int, a, b, c []float32, ldc int, alpha, beta float32, loadC bool) {
	a = a[:kc*MR]
	b = b[:kc*NR]
	_ = c[(MR-1)*ldc+NR-1]
	for i := 0; i < MR; i += 2 {
		for j := 0; j < NR; j += 8 {
			var s00, s01, s02, s03, s04, s05, s06, s07 float32
			var s10, s11, s12, s13, s14, s15, s16, s17 float32
			for p := range kc {
				ap := (*[2]float32)(a[p*MR+i:])
				bp := (*[8]float32)(b[p*NR+j:])
				a0, a1 := ap[0], ap[1]
				b0, b1, b2, b3, b4, b5, b6, b7 := bp[0], bp[1], bp[2], bp[3], bp[4], bp[5], bp[6], bp[7]
				s00 += a0 * b0
				s01 += a0 * b1
				s02 += a0 * b2
				s03 += a0 * b3
				s04 += a0 * b4
				s05 += a0 * b5
				s06 += a0 * b6
				s07 += a0 * b7
				s10 += a1 * b0
				s11 += a1 * b1
				s12 += a1 * b2
				s13 += a1 * b3
				s14 += a1 * b4
				s15 += a1 * b5
				s16 += a1 * b6
				s17 += a1 * b7
			}
			store8(c[i*ldc+j:], [8]float32{s00, s01, s02, s03, s04, s05, s06, s07}, alpha, beta, loadC)
			store8(c[(i+1)*ldc+j:], [8]float32{s10, s11, s12, s13, s14, s15, s16, s17}, alpha, beta, loadC)
		}
	}
}

// store8 writes alpha·acc (+ beta·c when loadC) into c[0:8].
func store8(c []float32, acc [8]float32, alpha, beta float32, loadC bool) {
	d := (*[8]float32)(c)
	for j, v := range acc {
		if loadC {
			d[j] = alpha*v + beta*d[j]
		} else {
			d[j] = alpha * v
		}
	}
}
