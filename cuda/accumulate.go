package cuda

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// Accumulate adds alpha·Σ x into the device accumulator acc (F32 [2]: the
// sum and its Kahan compensation, value acc[0] − acc[1]) with kernels
// only, as metal/accumulate.go: y = alpha·Σx − c; t = sum + y;
// c = (t − sum) − y; sum = t. Nothing waits.
func (b *Backend) Accumulate(acc, x *backend.Tensor, alpha float32) {
	checkDType("Accumulate", backend.F32, acc)
	if len(acc.Shape) != 1 || acc.Shape[0] != 2 {
		panic(fmt.Sprintf("cuda: Accumulate: acc %v, want F32[2]", acc))
	}
	ewCheckFloat("Accumulate", x)
	if x.Len() == 0 || alpha == 0 {
		return
	}
	if b.accScratch == nil {
		b.accScratch = b.New(backend.F32, 2)
	}
	y, t := b.accScratch.Rows(0, 1), b.accScratch.Rows(1, 1)
	sum, c := acc.Rows(0, 1), acc.Rows(1, 1)
	b.Zero(y)
	b.Reduce(y, x, backend.ReduceSum)
	if alpha != 1 {
		b.Scale(y, alpha)
	}
	b.Axpy(y, c, -1)   // y = s − c
	b.Cast(t, sum)     // t = sum
	b.Axpy(t, y, 1)    // t = sum + y
	b.Cast(c, t)       // c = t
	b.Axpy(c, sum, -1) // c = t − sum
	b.Axpy(c, y, -1)   // c = (t − sum) − y
	b.Cast(sum, t)     // sum = t
}

// ReadScalar waits for the stream (the one host wait of a step that logs)
// and returns acc[0] − acc[1] in float64, with the error Sync would return.
func (b *Backend) ReadScalar(acc *backend.Tensor) (float64, error) {
	checkDType("ReadScalar", backend.F32, acc)
	if len(acc.Shape) != 1 || acc.Shape[0] != 2 {
		panic(fmt.Sprintf("cuda: ReadScalar: acc %v, want F32[2]", acc))
	}
	v, err := b.read(acc)
	if b.err != nil {
		err, b.err = b.err, nil
	}
	if err != nil {
		return math.NaN(), err
	}
	hi := math.Float32frombits(binary.LittleEndian.Uint32(v))
	lo := math.Float32frombits(binary.LittleEndian.Uint32(v[4:]))
	return float64(hi) - float64(lo), nil
}
