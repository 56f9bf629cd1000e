package gemm

import "math"

// Register tile of the bfloat16 micro-kernel: a BMR×BNR block of C per call.
const (
	BMR = 14
	BNR = 32
)

// bkernelFunc computes one BMR×BNR tile of C from a packed A micro-panel a
// of K pairs (see pair), word (i, q) at a[i*rs+q*qs], and a packed B
// micro-panel b (kq, BNR):
//
//	acc[i][j] = Σ_q a[i*rs+q*qs]·b[q*BNR+j]   (· is the two-term bf16 dot product)
//	c[i*ldc+j] = alpha·acc[i][j] + beta·c[i*ldc+j]   (loadC)
//	c[i*ldc+j] = alpha·acc[i][j]                      (!loadC)
//
// The sum runs over q in increasing order; each step adds the product of the
// high halves of the two words (the pair's first k) and then that of the
// low halves to the float32 accumulator, each product exact and each sum
// rounded to nearest even, with bfloat16 subnormals read as zero and
// subnormal sums flushed to zero: the arithmetic of VDPBF16PS. c holds at
// least (BMR-1)·ldc+BNR elements.
type bkernelFunc func(kq int, a, b []uint32, c []float32, ldc, rs, qs int, alpha, beta float32, loadC bool)

// bkernel is the micro-kernel Bgemm uses, or nil where the CPU has no
// bfloat16 dot product: Bgemm then widens its operands while packing and
// runs Sgemm's float32 loop. Tests switch it to kernelBGo and to nil.
var bkernel bkernelFunc

// kernelBGo is the portable bfloat16 micro-kernel: the arithmetic of
// VDPBF16PS in plain Go, one row of the tile at a time.
func kernelBGo(kq int, a, b []uint32, c []float32, ldc, rs, qs int, alpha, beta float32, loadC bool) {
	b = b[:kq*BNR]
	_ = c[(BMR-1)*ldc+BNR-1]
	for i := range BMR {
		var acc [BNR]float32
		for q := range kq {
			a0, a1 := pairHalves(a[i*rs+q*qs])
			for j, bv := range b[q*BNR : q*BNR+BNR] {
				b0, b1 := pairHalves(bv)
				s := flushSubnormal(acc[j] + a0*b0)
				acc[j] = flushSubnormal(s + a1*b1)
			}
		}
		row := c[i*ldc : i*ldc+BNR]
		for j, v := range acc {
			if loadC {
				row[j] = alpha*v + beta*row[j]
			} else {
				row[j] = alpha * v
			}
		}
	}
}

// pairHalves widens the two bfloat16 of a pair (see pair), subnormals read
// as zero.
func pairHalves(w uint32) (first, second float32) {
	return flushSubnormal(bf16Float(uint16(w >> 16))), flushSubnormal(bf16Float(uint16(w)))
}

// flushSubnormal replaces a subnormal x by a zero of the same sign.
func flushSubnormal(x float32) float32 {
	if x != 0 && math.Abs(float64(x)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(x)))
	}
	return x
}
