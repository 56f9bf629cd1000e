package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
)

// Property tests over every op, run from one list of cases:
//   - round once: an op run in bf16/fp16 gives exactly the fp32 op's result
//     on the same (rounded) inputs, rounded once on store;
//   - determinism: results are bitwise the same for any GOMAXPROCS.

// dims are the sizes a case runs at.
type dims struct {
	T, B, C, H, Hkv, D, V, I, O, Elems int
}

var (
	smallDims = dims{T: 6, B: 2, C: 10, H: 4, Hkv: 2, D: 6, V: 11, I: 10, O: 7, Elems: 2*block + 3}
	// bigDims are large enough that every op splits its work over goroutines
	// and attention crosses a key block (attTile.keys = 256).
	bigDims = dims{T: 256 + 6, B: 3, C: 40, H: 4, Hkv: 2, D: 10, V: 70, I: 40, O: 56, Elems: 3*grain + 5}
	// rowDims have rows of whole blocks of 16 and a head dim of 32, where
	// the 16-bit row ops run their fused kernels (which read and round
	// bfloat16 and binary16 in registers) on CPUs that have them.
	rowDims = dims{T: 6, B: 2, C: 48, H: 4, Hkv: 2, D: 32, V: 11, I: 10, O: 7, Elems: 2*block + 3}
)

// env hands a case its tensors: CD tensors are stored in cd and hold values
// already rounded to round, F32 tensors hold random values. Every output is
// recorded as it is produced.
type env struct {
	b         *Backend
	r         *rand.Rand
	cd, round backend.DType
	d         dims
	outs      []result
}

type result struct {
	name string
	cd   bool
	vals []float32
}

func (e *env) cdIn(scale float64, shape ...int) *backend.Tensor {
	t := e.b.New(e.cd, shape...)
	e.b.Upload(t, rounded(e.round, randVals(e.r, t.Len(), scale)))
	return t
}

func (e *env) f32In(scale float64, shape ...int) *backend.Tensor {
	t := e.b.New(f32, shape...)
	e.b.Upload(t, randVals(e.r, t.Len(), scale))
	return t
}

func (e *env) ids(n, limit int) *backend.Tensor { return uploadIDs(e.b, randIDs(e.r, n, limit)) }

func (e *env) cdOut(shape ...int) *backend.Tensor  { return poisoned(e.b, e.cd, shape...) }
func (e *env) f32Out(shape ...int) *backend.Tensor { return poisoned(e.b, f32, shape...) }

// out records an F32 result.
func (e *env) out(name string, t *backend.Tensor) {
	e.outs = append(e.outs, result{name, false, e.b.Download(t)})
}

// outCD records a CD result; in an fp32 run it is then rounded to e.round
// in place, as storing it in that dtype would have, before it feeds
// another op.
func (e *env) outCD(name string, t *backend.Tensor) {
	v := e.b.Download(t)
	e.outs = append(e.outs, result{name, true, v})
	if t.DType == f32 {
		e.b.Upload(t, rounded(e.round, v))
	}
}

type opCase struct {
	name string
	run  func(e *env)
}

var opCases = []opCase{
	{"embedding", func(e *env) {
		d := e.d
		N := d.T * d.B
		ids, w := e.ids(N, d.V), e.cdIn(1, d.V, d.C)
		out := e.cdOut(N, d.C)
		e.b.EmbeddingForward(out, ids, w)
		e.outCD("out", out)
		dw := e.f32In(1, d.V, d.C)
		e.b.EmbeddingBackward(dw, ids, e.cdIn(1, N, d.C))
		e.out("dw", dw)
	}},
	{"rmsnorm", func(e *env) {
		d := e.d
		N := d.T * d.B
		x := e.cdIn(2, N, d.C)
		out, rstd := e.cdOut(N, d.C), e.f32Out(N)
		e.b.RMSNormForward(out, rstd, x)
		e.outCD("out", out)
		e.out("rstd", rstd)
		dx := e.cdIn(1, N, d.C)
		e.b.RMSNormBackward(dx, e.cdIn(1, N, d.C), x, rstd, dx)
		e.outCD("dx", dx)
	}},
	{"resid_mix", func(e *env) {
		d := e.d
		N := d.T * d.B
		x, x0, mix := e.cdIn(1, N, d.C), e.cdIn(1, N, d.C), e.f32In(1, 2, d.C)
		out := e.cdOut(N, d.C)
		e.b.ResidMixForward(out, x, x0, mix)
		e.outCD("out", out)
		dx, dx0, dmix := e.cdOut(N, d.C), e.f32In(1, N, d.C), e.f32In(1, 2, d.C)
		e.b.ResidMixBackward(dx, dx0, dmix, e.cdIn(1, N, d.C), x, x0, mix)
		e.outCD("dx", dx)
		e.out("dx0", dx0)
		e.out("dmix", dmix)
	}},
	{"linear", func(e *env) {
		d := e.d
		N := d.T * d.B
		x, w := e.cdIn(1, N, d.I), e.cdIn(1, d.O, d.I)
		out := e.cdOut(N, d.O)
		e.b.LinearForward(out, x, w)
		e.outCD("out", out)
		dout := e.cdIn(1, N, d.O)
		dx, dw := e.cdOut(N, d.I), e.f32In(1, d.O, d.I)
		e.b.LinearBackward(dx, dw, dout, x, w, false)
		e.outCD("dx", dx)
		e.out("dw", dw)
		dxa := e.cdIn(1, N, d.I)
		e.b.LinearBackward(dxa, nil, dout, x, w, true)
		e.outCD("dx accumulated", dxa)
	}},
	{"qk_norm_rope", func(e *env) {
		d := e.d
		N := d.T * d.B
		x, gain := e.cdIn(1, N, d.H, d.D), e.f32In(1, d.H)
		out, rstd := e.cdOut(N, d.H, d.D), e.f32Out(N, d.H)
		e.b.QKNormRopeForward(out, rstd, x, gain, d.T, 10000)
		e.outCD("out", out)
		e.out("rstd", rstd)
		dx, dgain := e.cdOut(N, d.H, d.D), e.f32In(1, d.H)
		e.b.QKNormRopeBackward(dx, dgain, e.cdIn(1, N, d.H, d.D), x, rstd, gain, d.T, 10000)
		e.outCD("dx", dx)
		e.out("dgain", dgain)
	}},
	{"attention", func(e *env) {
		d := e.d
		N := d.T * d.B
		q, k, v := e.cdIn(1, N, d.H, d.D), e.cdIn(1, N, d.Hkv, d.D), e.cdIn(1, N, d.Hkv, d.D)
		out, lse := e.cdOut(N, d.H, d.D), e.f32Out(N, d.H)
		e.b.AttentionForward(out, lse, q, k, v, d.T)
		e.outCD("out", out)
		e.out("lse", lse)
		dq, dk, dv := e.cdOut(N, d.H, d.D), e.cdOut(N, d.Hkv, d.D), e.cdOut(N, d.Hkv, d.D)
		e.b.AttentionBackward(dq, dk, dv, e.cdIn(1, N, d.H, d.D), q, k, v, out, lse, d.T)
		e.outCD("dq", dq)
		e.outCD("dk", dk)
		e.outCD("dv", dv)
	}},
	{"scaled_add", func(e *env) {
		d := e.d
		N := d.T * d.B
		x, y, s := e.cdIn(1, N, d.C), e.cdIn(1, N, d.C), e.f32In(1, d.C)
		e.b.ScaledAddForward(x, x, y, s)
		e.outCD("out", x)
		dy, ds := e.cdOut(N, d.C), e.f32In(1, d.C)
		e.b.ScaledAddBackward(dy, ds, e.cdIn(1, N, d.C), y, s)
		e.outCD("dy", dy)
		e.out("ds", ds)
	}},
	{"relu_sq", func(e *env) {
		n := e.d.Elems
		x := e.cdIn(1, n)
		out := e.cdOut(n)
		e.b.ReluSqForward(out, x)
		e.outCD("out", out)
		dx := e.cdOut(n)
		e.b.ReluSqBackward(dx, e.cdIn(1, n), x)
		e.outCD("dx", dx)
	}},
	{"softcap_ce", func(e *env) {
		d := e.d
		N := d.T * d.B
		logits, tg := e.cdIn(5, N, d.V), e.ids(N, d.V)
		loss := e.f32Out(N)
		e.b.SoftcapCEForward(loss, logits, tg, 10)
		e.out("loss", loss)
		dl := e.cdOut(N, d.V)
		e.b.SoftcapCEBackward(dl, logits, tg, 10, 0.25)
		e.outCD("dlogits", dl)
	}},
	{"cast_axpy_reduce", func(e *env) {
		n := e.d.Elems
		src := e.f32In(1, n)
		dst := e.cdOut(n)
		e.b.Cast(dst, src)
		e.outCD("cast", dst)
		acc := e.f32In(1, n)
		e.b.Axpy(acc, dst, -0.375)
		e.out("axpy", acc)
		for _, k := range []backend.ReduceKind{backend.ReduceSum, backend.ReduceSumSquares, backend.ReduceNonFinite} {
			s := e.f32In(1, 1)
			e.b.Reduce(s, dst, k)
			e.out("reduce", s)
		}
	}},
}

// runCase runs c on a fresh backend with a fixed seed.
func runCase(c opCase, d dims, cd, round backend.DType) []result {
	e := &env{b: New(), r: rand.New(rand.NewPCG(7, 7)), cd: cd, round: round, d: d}
	c.run(e)
	return e.outs
}

// TestRoundOnce: every op in bf16 and f16 gives bitwise its float32
// result on the same (rounded) inputs, rounded once. The bfloat16 matrix
// products keep this only where they sum in Sgemm's order, so AMX is off
// here (TestRoundOnceAMX covers it).
func TestRoundOnce(t *testing.T) {
	defer gemm.SetAMX(gemm.SetAMX(false))
	for _, c := range opCases {
		for _, dt := range []backend.DType{backend.BF16, backend.F16} {
			for _, d := range []struct {
				name string
				dims
			}{{"small", smallDims}, {"rows16", rowDims}} {
				t.Run(c.name+"/"+dt.String()+"/"+d.name, func(t *testing.T) {
					want := runCase(c, d.dims, f32, dt)
					got := runCase(c, d.dims, dt, dt)
					for i, w := range want {
						if w.cd {
							w.vals = rounded(dt, w.vals)
						}
						sameBits(t, w.name, got[i].vals, w.vals)
					}
				})
			}
		}
	}
}

func TestDeterminism(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range opCases {
		for _, dt := range []backend.DType{f32, backend.BF16, backend.F16} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				runtime.GOMAXPROCS(1)
				want := runCase(c, bigDims, dt, dt)
				runtime.GOMAXPROCS(3)
				got := runCase(c, bigDims, dt, dt)
				for i, w := range want {
					sameBits(t, w.name, got[i].vals, w.vals)
				}
			})
		}
	}
}

// TestRoundOnceAMX is TestRoundOnce in bf16 and f16 with the matrix
// products on AMX tiles (f16 operands as two bf16 terms each), which add
// in an order of their own: the linear op's outputs are within one
// rounding of the dtype (the 16-bit ones) or the float32 error of a
// K-term sum (dw) of the float32 result, every other op bitwise.
func TestRoundOnceAMX(t *testing.T) {
	defer gemm.SetAMX(gemm.SetAMX(true))
	if !gemm.AMX() {
		t.Skip("no AMX-BF16 on this CPU: the bfloat16 products cannot run on tiles here")
	}
	for _, dt := range []backend.DType{backend.BF16, backend.F16} {
		ulp := 0x1p-7 // one unit in the last place of the dtype's 8 or 11 bits
		if dt == backend.F16 {
			ulp = 0x1p-10
		}
		for _, c := range opCases {
			t.Run(dt.String()+"/"+c.name, func(t *testing.T) {
				roundOnceAMXCase(t, c, dt, ulp)
			})
		}
	}
}

// roundOnceAMXCase is TestRoundOnceAMX's check of one op case in dt.
func roundOnceAMXCase(t *testing.T, c opCase, dt backend.DType, ulp float64) {
	want := runCase(c, smallDims, f32, dt)
	got := runCase(c, smallDims, dt, dt)
	for i, w := range want {
		if w.cd {
			w.vals = rounded(dt, w.vals)
		}
		if c.name != "linear" {
			sameBits(t, w.name, got[i].vals, w.vals)
			continue
		}
		want64 := make([]float64, len(w.vals))
		scale := 0.0
		for j, v := range w.vals {
			want64[j] = float64(v)
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		if w.cd {
			checkClose(t, w.name, got[i].vals, want64, ulp, 0)
		} else {
			checkClose(t, w.name, got[i].vals, want64, 1e-5, 1e-5*scale)
		}
	}
}
