package cpu

import "github.com/golf-ml/golf/backend"

// Accumulate adds alpha·Σ x into the compensated accumulator acc (F32 [2],
// value acc[0] − acc[1]): Σ x in float64 in a fixed order (Reduce's), the
// new total in float64, stored as its float32 rounding and the rounding's
// error.
func (b *Backend) Accumulate(acc, x *backend.Tensor, alpha float32) {
	const op = "Accumulate"
	wantF32(op, []string{"acc"}, acc)
	wantShape(op, "acc", acc, 2)
	wantFloat(op, []string{"x"}, x)
	b.mu.Lock()
	sum := b.sumBlocks(x, backend.ReduceSum)
	b.mu.Unlock()
	a := f32s(acc)
	total := float64(a[0]) - float64(a[1]) + float64(alpha)*sum
	hi := float32(total)
	a[0], a[1] = hi, float32(float64(hi)-total)
}

// ReadScalar returns the value of the accumulator acc (ops are synchronous:
// nothing to wait for, no error).
func (b *Backend) ReadScalar(acc *backend.Tensor) (float64, error) {
	const op = "ReadScalar"
	wantF32(op, []string{"acc"}, acc)
	wantShape(op, "acc", acc, 2)
	a := f32s(acc)
	return float64(a[0]) - float64(a[1]), nil
}
