// Package gemm is the float32 matrix multiply under the CPU backend.
package gemm

// Sgemm computes, row-major,
//
//	C = alpha·op(A)·op(B) + beta·C
//
// where op(A) is m×k (A is k×m when transA), op(B) is k×n (B is n×k when
// transB), and lda, ldb, ldc are row strides in elements. beta == 0 ignores
// C's previous contents (NaNs included). Work is spread over GOMAXPROCS.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float32
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}
