package metal

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/golf-ml/golf/backend"
)

// accumulate: the device accumulator of the backend contract, composed of
// the elementwise family's kernels (elementwise.go), so it needs no kernel
// of its own: the term s = alpha·Σ x by Reduce (and Scale) into a scratch
// scalar, then one Kahan step on (sum, c) = (acc[0], acc[1]),
//
//	y = s − c;  t = sum + y;  c = (t − sum) − y;  sum = t
//
// each operation one float32 rounding (Axpy with alpha ±1 adds exactly
// one rounded sum; a float → float Cast copies), ten or eleven dispatches
// of one element. A dedicated kernel folding the Kahan step into Reduce's
// final pass would make it two.

func init() { supported[backend.OpAccumulate] = true }

// Accumulate adds alpha·Σ x into the compensated accumulator acc (F32 [2],
// value acc[0] − acc[1]).
func (b *Backend) Accumulate(acc, x *backend.Tensor, alpha float32) {
	checkDType("Accumulate", backend.F32, acc)
	if len(acc.Shape) != 1 || acc.Shape[0] != 2 {
		panic(fmt.Sprintf("metal: Accumulate: acc %v, want F32[2]", acc))
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

// ReadScalar waits for the work that last used acc and returns
// acc[0] − acc[1], with the first error since the last Sync (cleared) or
// the runtime's fatal one.
func (b *Backend) ReadScalar(acc *backend.Tensor) (float64, error) {
	checkDType("ReadScalar", backend.F32, acc)
	if len(acc.Shape) != 1 || acc.Shape[0] != 2 {
		panic(fmt.Sprintf("metal: ReadScalar: acc %v, want F32[2]", acc))
	}
	d := acc.Data.(*devTensor)
	err := b.rt.Wait(d.lastUse)
	if b.err != nil {
		err, b.err = b.err, nil
	}
	v := b.readable(acc)
	hi := math.Float32frombits(binary.LittleEndian.Uint32(v))
	lo := math.Float32frombits(binary.LittleEndian.Uint32(v[4:]))
	return float64(hi) - float64(lo), err
}
