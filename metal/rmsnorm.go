package metal

import (
	"fmt"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// rmsnorm: shaders/rmsnorm.metal, one threadgroup per row, each thread
// taking 4-element chunks of it (rowThreads), moved as vectors where
// vecAligned in the backward (the forward, whose buffer slots the
// emulator's own tests fix, reads element by element).

func init() { supported[backend.OpRMSNorm] = true }

// RMSNormForward normalises each row without a weight:
//
//	rstd[n] = 1/sqrt(mean_c x[n,c]² + RMSNormEps)
//	out[n,c] = x[n,c]·rstd[n]
//	out CD (N, C), rstd F32 (N), x CD (N, C)
func (b *Backend) RMSNormForward(out, rstd, x *backend.Tensor) {
	const op = "RMSNormForward"
	normFloat(op, x.DType, out, x)
	checkDType(op, backend.F32, rstd)
	N, C := normRows(op, "x", x)
	normShape(op, "out", out, N, C)
	normShape(op, "rstd", rstd, N)
	if N == 0 || C == 0 {
		return
	}
	p := b.pipe("rmsnorm", "fwd", x.DType)
	b.a.rmsnorm = shaders.RMSNormArgs{Rows: uint32(N), Cols: uint32(C), Eps: backend.RMSNormEps}
	b.begin()
	b.arg(x)
	b.arg(out)
	b.arg(rstd)
	bytesArg(b, &b.a.rmsnorm) // no aligned argument: the forward reads element by element
	b.dispatch(p, [3]int{N, 1, 1}, [3]int{rowThreads(p, C), 1, 1})
}

// RMSNormBackward, with x̂ = x·rstd:
//
//	dx[n,c] = dres[n,c] + rstd[n]·(dout[n,c] − x̂[n,c]·mean_c'(dout[n,c']·x̂[n,c']))
//	dx CD (N, C), dout CD (N, C), x CD (N, C), rstd F32 (N), dres CD (N, C) or nil
//
// dx may alias dres.
func (b *Backend) RMSNormBackward(dx, dout, x, rstd, dres *backend.Tensor) {
	const op = "RMSNormBackward"
	normFloat(op, x.DType, dx, dout, x)
	checkDType(op, backend.F32, rstd)
	N, C := normRows(op, "x", x)
	normShape(op, "dx", dx, N, C)
	normShape(op, "dout", dout, N, C)
	normShape(op, "rstd", rstd, N)
	hasRes := uint32(0)
	if dres != nil {
		checkDType(op, x.DType, dres)
		normShape(op, "dres", dres, N, C)
		hasRes = 1
	} else {
		dres = dout // bound but never read
	}
	if N == 0 || C == 0 {
		return
	}
	p := b.pipe("rmsnorm", "bwd", x.DType)
	b.a.rmsnormBwd = shaders.RMSNormBwdArgs{Rows: uint32(N), Cols: uint32(C), HasRes: hasRes}
	b.begin()
	b.arg(dout)
	b.arg(x)
	b.arg(rstd)
	b.arg(dres)
	b.arg(dx)
	bytesArg(b, &b.a.rmsnormBwd)
	b.alignedArg(vecAligned(C, dout, x, dres, dx))
	b.dispatch(p, [3]int{N, 1, 1}, [3]int{rowThreads(p, C), 1, 1})
}

// alignFlags holds the two values of the vector kernels' aligned
// argument (shaders/golf_rows.h), bound as inline bytes and never written.
var alignFlags = [2]uint32{0, 1}

// vecAligned is true when a kernel over rows of cols elements may move
// every 4-element chunk of ts as one vector: cols is a multiple of 4 and
// each tensor starts on a 4-element boundary (buffers start 16-byte
// aligned), so every chunk is whole and aligned.
func vecAligned(cols int, ts ...*backend.Tensor) bool {
	if cols%4 != 0 {
		return false
	}
	for _, t := range ts {
		if t.Offset%4 != 0 {
			return false
		}
	}
	return true
}

// alignedArg binds the next [[buffer(i)]] to a vector kernel's aligned
// argument: 1 when ok (vecAligned), else 0.
func (b *Backend) alignedArg(ok bool) {
	i := 0
	if ok {
		i = 1
	}
	bytesArg(b, &alignFlags[i])
}

// rowThreads is the threadgroup size of a row kernel whose threads take
// 4-element chunks of a row of cols elements (golf_rows.h): normThreads
// over the row's chunks, so that the threads cover the row once (the
// baseline's C = 512: 128 threads, one chunk each).
func rowThreads(p Pipeline, cols int) int {
	return normThreads(p, rowChunks(cols))
}

// rowChunks is the number of 4-element chunks of a row of cols elements.
func rowChunks(cols int) int { return (cols + 3) / 4 }

// normThreads is the threadgroup size of a kernel that gives one
// threadgroup to a row of cols elements: whole simdgroups, enough to cover
// the row once, at most 256 (a row of the baseline's C = 512 is then two
// elements per thread) and at most what the pipeline allows.
func normThreads(p Pipeline, cols int) int {
	t := min(256, (cols+31)/32*32, p.MaxThreads()/32*32)
	return max(t, min(32, p.MaxThreads()))
}

// normRows checks that t is 2-D and returns its rows and columns.
func normRows(op, name string, t *backend.Tensor) (rows, cols int) {
	if len(t.Shape) != 2 {
		panic(fmt.Sprintf("metal: %s: %s %v is not 2-D", op, name, t))
	}
	return t.Shape[0], t.Shape[1]
}

// normShape panics unless t has exactly the shape dims.
func normShape(op, name string, t *backend.Tensor, dims ...int) {
	ok := len(t.Shape) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = t.Shape[i] == dims[i]
	}
	if !ok {
		normShapeFail(op, name, t, dims)
	}
}

// normShapeFail panics for normShape; it copies dims, so that the caller's
// argument slice stays on the stack.
func normShapeFail(op, name string, t *backend.Tensor, dims []int) {
	panic(fmt.Sprintf("metal: %s: %s %v, want shape %v", op, name, t, append([]int(nil), dims...)))
}

// normFloat panics unless dt is a float dtype and every tensor has it.
func normFloat(op string, dt backend.DType, ts ...*backend.Tensor) {
	if dt != backend.F32 && dt != backend.F16 && dt != backend.BF16 {
		panic(fmt.Sprintf("metal: %s: dtype %v, want a float dtype", op, dt))
	}
	checkDType(op, dt, ts...)
}
