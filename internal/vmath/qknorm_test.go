package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// qkShape is one shape of the fused query/key kernels: rows of hx heads
// of d elements.
type qkShape struct{ rows, hx, d int }

// qkShapes crosses head dims with and without whole blocks of 8 (and
// with half a multiple of 8, which the assembly takes) with 1, 2, 8 and
// 17 heads (more than a group of the backward kernels) and 1 or 3 rows.
func qkShapes() []qkShape {
	var s []qkShape
	for _, d := range []int{2, 6, 8, 10, 16, 34, 64, 128} {
		for _, hx := range []int{1, 2, 8, 17} {
			for _, rows := range []int{1, 3} {
				s = append(s, qkShape{rows, hx, d})
			}
		}
	}
	return s
}

// qkData is the input of one test case.
type qkData struct {
	qkShape
	x, dout, cs, sn, gain []float32
}

// newQKData draws heads at magnitudes from 1e-3 to 1e3, cosines and sines
// of random angles, gains of both signs. With special, some heads are all
// zero or hold an infinity or a NaN, dout carries specials, and one gain
// is zero.
func newQKData(r *rand.Rand, s qkShape, special bool) qkData {
	q := qkData{qkShape: s}
	n, half := s.rows*s.hx*s.d, s.d/2
	q.x, q.dout = make([]float32, n), make([]float32, n)
	for k := range s.rows * s.hx {
		scale := math.Pow(10, 6*r.Float64()-3)
		for i := range s.d {
			q.x[k*s.d+i] = float32(scale * r.NormFloat64())
			q.dout[k*s.d+i] = float32(r.NormFloat64())
		}
	}
	q.cs, q.sn = make([]float32, s.rows*half), make([]float32, s.rows*half)
	for i := range q.cs {
		a := 2 * math.Pi * r.Float64()
		q.cs[i], q.sn[i] = float32(math.Cos(a)), float32(math.Sin(a))
	}
	q.gain = make([]float32, s.hx)
	for h := range q.gain {
		q.gain[h] = float32(2*r.Float64() - 1)
	}
	if special {
		heads := s.rows * s.hx
		zero, inf, nan := r.IntN(heads), r.IntN(heads), r.IntN(heads)
		clear(q.x[zero*s.d : (zero+1)*s.d])
		q.x[inf*s.d+r.IntN(s.d)] = float32(math.Inf(1 - 2*r.IntN(2)))
		q.x[nan*s.d+r.IntN(s.d)] = float32(math.NaN())
		for i := range q.dout {
			if r.IntN(16) == 0 {
				q.dout[i] = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32}[r.IntN(6)]
			}
		}
		q.gain[r.IntN(s.hx)] = 0
	}
	return q
}

func (q qkData) String() string { return fmt.Sprintf("rows %d hx %d D %d", q.rows, q.hx, q.d) }

// TestQKNormRopeOracle checks both kernels, Go and assembly, against the
// formulas evaluated in float64: rstd within an ulp, every other output
// within 2⁻¹⁸ of the magnitudes it is computed from (a few float32
// roundings), dgain likewise.
func TestQKNormRopeOracle(t *testing.T) {
	const eps = 1e-5
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 1))
		for _, s := range qkShapes() {
			q := newQKData(r, s, false)
			D, half := s.d, s.d/2
			n := len(q.x)
			out, rstd := make([]float32, n), make([]float32, s.rows*s.hx)
			QKNormRope(out, rstd, q.x, q.cs, q.sn, q.gain, D, eps)
			dx, dgain := make([]float32, n), make([]float64, s.hx)
			for h := range dgain {
				dgain[h] = 0.25 * float64(h+1) // accumulated into
			}
			QKNormRopeGrad(dx, dgain, q.dout, q.x, rstd, q.cs, q.sn, q.gain, D)

			wantDgain, dgainMag := make([]float64, s.hx), make([]float64, s.hx)
			for h := range wantDgain {
				wantDgain[h] = 0.25 * float64(h+1)
			}
			for k := range s.rows * s.hx {
				row, h := k/s.hx, k%s.hx
				x, g, dy := q.x[k*D:(k+1)*D], float64(q.gain[h]), q.dout[k*D:(k+1)*D]
				c, sn := q.cs[row*half:(row+1)*half], q.sn[row*half:(row+1)*half]
				ss := 0.0
				for _, v := range x {
					ss += float64(v) * float64(v)
				}
				wantR := 1 / math.Sqrt(ss/float64(D)+eps)
				require.InEpsilon(t, wantR, float64(rstd[k]), 0x1p-23, "%v head %d: rstd", q, k)

				// Forward from the exact rstd.
				for i := range half {
					a, b := float64(x[i])*wantR, float64(x[i+half])*wantR
					ci, si := float64(c[i]), float64(sn[i])
					mag := math.Abs(g) * (math.Abs(a*ci) + math.Abs(b*si) + math.Abs(a*si) + math.Abs(b*ci))
					assert.InDelta(t, g*(a*ci-b*si), float64(out[k*D+i]), 0x1p-20*mag+1e-300, "%v head %d: out[%d]", q, k, i)
					assert.InDelta(t, g*(a*si+b*ci), float64(out[k*D+i+half]), 0x1p-20*mag+1e-300, "%v head %d: out[%d]", q, k, i+half)
				}

				// Backward from the rstd the kernel returned.
				rs := float64(rstd[k])
				u, y, du := make([]float64, D), make([]float64, D), make([]float64, D)
				for d := range D {
					u[d] = float64(x[d]) * rs
				}
				duMag := make([]float64, D)
				for i := range half {
					ci, si := float64(c[i]), float64(sn[i])
					y[i], y[i+half] = u[i]*ci-u[i+half]*si, u[i]*si+u[i+half]*ci
					ga, gc := float64(dy[i]), float64(dy[i+half])
					du[i], du[i+half] = g*(ga*ci+gc*si), g*(gc*ci-ga*si)
					duMag[i] = math.Abs(g) * (math.Abs(ga*ci) + math.Abs(gc*si))
					duMag[i+half] = math.Abs(g) * (math.Abs(gc*ci) + math.Abs(ga*si))
				}
				m, mMag := 0.0, 0.0
				for d := range D {
					m += du[d] * u[d] / float64(D)
					mMag += math.Abs(du[d]*u[d]) / float64(D)
					wantDgain[h] += float64(dy[d]) * y[d]
					dgainMag[h] += math.Abs(float64(dy[d]) * y[d])
				}
				for d := range D {
					want := rs * (du[d] - u[d]*m)
					tol := 0x1p-18 * rs * (duMag[d] + math.Abs(u[d])*mMag)
					assert.InDelta(t, want, float64(dx[k*D+d]), tol+1e-300, "%v head %d: dx[%d]", q, k, d)
				}
			}
			for h := range dgain {
				assert.InDelta(t, wantDgain[h], dgain[h], 0x1p-20*dgainMag[h]+1e-300, "%v: dgain[%d]", q, h)
			}
		}
	})
}

// qkSeparate is the fused kernels' reference at the bit level: the
// separate vmath kernels they replace, called per head as the CPU
// backend called them before.
func qkSeparate(q qkData, eps float64) (out, rstd, dx []float32, dgain []float64) {
	D, half := q.d, q.d/2
	out, rstd, dx = make([]float32, len(q.x)), make([]float32, q.rows*q.hx), make([]float32, len(q.x))
	dgain = make([]float64, q.hx)
	u, y := make([]float32, D), make([]float32, D)
	for k := range q.rows * q.hx {
		row, h := k/q.hx, k%q.hx
		x, o := q.x[k*D:(k+1)*D], out[k*D:(k+1)*D]
		c, s := q.cs[row*half:(row+1)*half], q.sn[row*half:(row+1)*half]
		rs := float32(1 / math.Sqrt(SumSq64(x)/float64(D)+eps))
		rstd[k] = rs
		Scale(u, x, rs)
		Rope(o, u, c, s, q.gain[h])

		gh := q.dout[k*D : (k+1)*D]
		Rope(y, u, c, s, 1)
		dgain[h] += Dot64(gh, y)
		RopeT(y, gh, c, s, q.gain[h])
		m := float32(Dot64(y, u) / float64(D))
		RMSGrad(dx[k*D:(k+1)*D], y, u, nil, rs, m)
	}
	return out, rstd, dx, dgain
}

// sameF64 reports whether a and b are the same float64, NaN matching NaN.
func sameF64(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

// TestQKNormRopeBitwise: the fused kernels, Go and assembly, return bit
// for bit what the separate kernels return, with zero, infinite and NaN
// heads, special gradients and a zero gain; they write nothing past their
// outputs, and give the same bits in place (out = x; dx = dout; dx = x)
// and without dgain.
func TestQKNormRopeBitwise(t *testing.T) {
	const eps = 1e-6
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 2))
		for _, s := range qkShapes() {
			for _, special := range []bool{false, true} {
				q := newQKData(r, s, special)
				wantOut, wantR, wantDx, wantDg := qkSeparate(q, eps)
				n := len(q.x)

				out, outOK := guarded(n)
				rstd, rstdOK := guarded(s.rows * s.hx)
				QKNormRope(out, rstd, q.x, q.cs, q.sn, q.gain, s.d, eps)
				outOK(t, "out")
				rstdOK(t, "rstd")
				checkSame(t, q.String()+": rstd", rstd, wantR)
				checkSame(t, q.String()+": out", out, wantOut)

				inPlace := append([]float32(nil), q.x...)
				QKNormRope(inPlace, make([]float32, len(rstd)), inPlace, q.cs, q.sn, q.gain, s.d, eps)
				checkSame(t, q.String()+": out in place", inPlace, wantOut)

				dx, dxOK := guarded(n)
				dgain := make([]float64, s.hx)
				QKNormRopeGrad(dx, dgain, q.dout, q.x, rstd, q.cs, q.sn, q.gain, s.d)
				dxOK(t, "dx")
				checkSame(t, q.String()+": dx", dx, wantDx)
				for h := range dgain {
					require.True(t, sameF64(wantDg[h], dgain[h]), "%v: dgain[%d] = %v, want %v", q, h, dgain[h], wantDg[h])
				}

				QKNormRopeGrad(dx, nil, q.dout, q.x, rstd, q.cs, q.sn, q.gain, s.d)
				checkSame(t, q.String()+": dx without dgain", dx, wantDx)
				onDout := append([]float32(nil), q.dout...)
				QKNormRopeGrad(onDout, nil, onDout, q.x, rstd, q.cs, q.sn, q.gain, s.d)
				checkSame(t, q.String()+": dx in dout", onDout, wantDx)
				onX := append([]float32(nil), q.x...)
				QKNormRopeGrad(onX, nil, q.dout, onX, rstd, q.cs, q.sn, q.gain, s.d)
				checkSame(t, q.String()+": dx in x", onX, wantDx)
			}
		}
	})
}

// TestQKNormRopeAsmMatchesGo runs many random shapes the assembly takes
// through both implementations and compares the bits directly.
func TestQKNormRopeAsmMatchesGo(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels on this build or CPU")
	}
	defer func(saved bool) { useAsm = saved }(useAsm)
	r := rand.New(rand.NewPCG(13, 3))
	for range 200 {
		s := qkShape{rows: 1 + r.IntN(5), hx: 1 + r.IntN(9), d: 16 * (1 + r.IntN(9))}
		q := newQKData(r, s, r.IntN(2) == 0)
		var outs [2][]float32
		var dxs [2][]float32
		var dgs [2][]float64
		for i, asm := range []bool{false, true} {
			useAsm = asm
			out, rstd := make([]float32, len(q.x)), make([]float32, s.rows*s.hx)
			QKNormRope(out, rstd, q.x, q.cs, q.sn, q.gain, s.d, 1e-6)
			dx, dg := make([]float32, len(q.x)), make([]float64, s.hx)
			QKNormRopeGrad(dx, dg, q.dout, q.x, rstd, q.cs, q.sn, q.gain, s.d)
			outs[i], dxs[i], dgs[i] = append(out, rstd...), dx, dg
		}
		checkSame(t, q.String()+": out and rstd", outs[1], outs[0])
		checkSame(t, q.String()+": dx", dxs[1], dxs[0])
		for h := range dgs[0] {
			require.True(t, sameF64(dgs[0][h], dgs[1][h]), "%v: dgain[%d]: asm %v, go %v", q, h, dgs[1][h], dgs[0][h])
		}
	}
}

// TestQKNormRopeShapes: shape mistakes panic with the function's name.
func TestQKNormRopeShapes(t *testing.T) {
	x, out, rstd := make([]float32, 2*2*8), make([]float32, 2*2*8), make([]float32, 2*2)
	cs, sn, gain := make([]float32, 2*4), make([]float32, 2*4), make([]float32, 2)
	require.NotPanics(t, func() { QKNormRope(out, rstd, x, cs, sn, gain, 8, 1e-6) })
	require.NotPanics(t, func() { QKNormRopeGrad(out, make([]float64, 2), x, x, rstd, cs, sn, gain, 8) })
	bad := map[string]func(){
		"odd D":       func() { QKNormRope(out, rstd, x, cs, sn, gain, 7, 1e-6) },
		"x length":    func() { QKNormRope(out[:30], rstd, x[:30], cs, sn, gain, 8, 1e-6) },
		"out length":  func() { QKNormRope(out[:16], rstd, x, cs, sn, gain, 8, 1e-6) },
		"cs length":   func() { QKNormRope(out, rstd, x, cs[:4], sn[:4], gain, 8, 1e-6) },
		"sn length":   func() { QKNormRope(out, rstd, x, cs, sn[:4], gain, 8, 1e-6) },
		"rstd heads":  func() { QKNormRope(out, rstd[:3], x, cs, sn, gain, 8, 1e-6) },
		"no gain":     func() { QKNormRope(out, rstd, x, cs, sn, nil, 8, 1e-6) },
		"dgain heads": func() { QKNormRopeGrad(out, make([]float64, 3), x, x, rstd, cs, sn, gain, 8) },
		"dout length": func() { QKNormRopeGrad(out, nil, x[:16], x, rstd, cs, sn, gain, 8) },
	}
	for name, f := range bad {
		assert.Contains(t, panicMessage(f), "vmath: QKNormRope", name)
	}
}

// panicMessage returns what f panics with, "" if it returns.
func panicMessage(f func()) (msg string) {
	defer func() {
		if e := recover(); e != nil {
			msg = fmt.Sprint(e)
		}
	}()
	f()
	return ""
}

// qk16 is a 16-bit row type of the fused kernels: its kernels, its
// conversions, its significand's bits, and for the tests two gains whose
// outputs fall in its subnormal range and overflow it (0: none) and a
// scale that makes a head's inputs subnormal.
type qk16 struct {
	name                 string
	has                  func(D int) bool
	fwd                  func(out []uint16, rstd []float32, x []uint16, cs, sn, gain []float32, D int, eps float64)
	grad                 func(dx []uint16, dgain []float64, dout, x []uint16, rstd, cs, sn, gain []float32, D int)
	widen                func(dst []float32, src []uint16)
	round                func(dst []uint16, src []float32)
	mant                 uint
	tiny, huge, subInput float32
}

var (
	qkBF16 = qk16{
		name: "bf16", has: HasQKNormRopeBF16, fwd: QKNormRopeBF16, grad: QKNormRopeGradBF16,
		widen: FromBF16, round: ToBF16, mant: 7, tiny: 0x1p-130, subInput: 0x1p-120,
	}
	// Binary16's subnormals lie below 2⁻¹⁴, its largest finite value is
	// 65504: gains of 2⁻¹⁸ and 3·10⁴ on outputs of magnitude about 1.
	qkF16 = qk16{
		name: "f16", has: HasQKNormRopeF16, fwd: QKNormRopeF16, grad: QKNormRopeGradF16,
		widen: FromF16, round: ToF16, mant: 10, tiny: 0x1p-18, huge: 3e4, subInput: 0x1p-16,
	}
)

// qk16Kinds counts the values of a test's rows that take the conversions'
// edge cases.
type qk16Kinds struct {
	subIn, subOut, overflow int
}

// count adds x's subnormals to *sub and to overflow its infinities whose
// float32 value in wide (nil: none) is finite.
func (c *qk16Kinds) count(k qk16, sub *int, x []uint16, wide []float32) {
	inf := uint16(0x7fff >> k.mant << k.mant)
	for i, b := range x {
		switch {
		case b&inf == 0 && b&(1<<k.mant-1) != 0:
			*sub++
		case wide != nil && b&0x7fff == inf && !math.IsInf(float64(wide[i]), 0):
			c.overflow++
		}
	}
}

// rows rounds float32 rows to the type.
func (k qk16) rows(x []float32) []uint16 {
	b := make([]uint16, len(x))
	k.round(b, x)
	return b
}

// checkSame16 fails unless got and want hold the same bits, naming the
// first element that differs.
func checkSame16(t *testing.T, what string, got, want []uint16) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: length", what)
	for i := range got {
		if got[i] != want[i] {
			require.Failf(t, "bits differ", "%s[%d] = %#04x, want %#04x", what, i, got[i], want[i])
		}
	}
}

// TestQKNormRopeBF16: the bfloat16 kernels return bit for bit FromBF16,
// the float32 kernels and ToBF16 in turn (see testQKNormRope16); both
// roundings, the integer one and VCVTNEPS2BF16's where the CPU has it,
// and with VCVTNEPS2BF16 both backward kernels at head dim 64, the
// one-pass one (qkNormRopeGrad64BF16) and the generated one.
func TestQKNormRopeBF16(t *testing.T) {
	if !HasQKNormRopeBF16(64) {
		t.Skip("no bfloat16 kernels on this build or CPU (AVX-512)")
	}
	defer func(c, g bool) { useCvtBF16, useGrad64 = c, g }(useCvtBF16, useGrad64)
	type mode struct{ cvt, grad64 bool }
	modes := []mode{{false, false}}
	if useCvtBF16 {
		modes = append(modes, mode{true, true}, mode{true, false})
	}
	for _, m := range modes {
		useCvtBF16, useGrad64 = m.cvt, m.grad64
		t.Run(fmt.Sprintf("cvt=%v,grad64=%v", m.cvt, m.grad64), func(t *testing.T) {
			testQKNormRope16(t, qkBF16, rand.NewPCG(13, 4))
		})
	}
}

// TestQKNormRopeF16: the binary16 kernels return bit for bit FromF16, the
// float32 kernels and ToF16 in turn (see testQKNormRope16), outputs in
// binary16's subnormal range and past 65504 included; both backward
// kernels at head dim 64, the one-pass one (qkNormRopeGrad64F16) and the
// generated one.
func TestQKNormRopeF16(t *testing.T) {
	if !HasQKNormRopeF16(64) {
		t.Skip("no binary16 kernels on this build or CPU (AVX-512)")
	}
	defer func(g bool) { useGrad64 = g }(useGrad64)
	for _, grad64 := range []bool{true, false} {
		useGrad64 = grad64
		t.Run(fmt.Sprintf("grad64=%v", grad64), func(t *testing.T) {
			testQKNormRope16(t, qkF16, rand.NewPCG(13, 6))
		})
	}
}

// testQKNormRope16 checks k's kernels against widening, the float32
// kernels and rounding, bit for bit, with zero, infinite and NaN heads, a
// head of subnormal inputs, special gradients, a zero gain and gains
// whose outputs are subnormal or overflow the type, in place too (out =
// x; dx = dout; dx = x), with the gain gradient accumulated onto nonzero
// values and without it, writing nothing past their outputs.
func testQKNormRope16(t *testing.T, k qk16, src rand.Source) {
	const eps = 1e-6
	r := rand.New(src)
	var shapes []qkShape
	for _, d := range []int{32, 64, 128} {
		for _, hx := range []int{1, 2, 3, 8, 17} {
			shapes = append(shapes, qkShape{1, hx, d}, qkShape{3, hx, d})
		}
	}
	for range 100 {
		shapes = append(shapes, qkShape{rows: 1 + r.IntN(5), hx: 1 + r.IntN(20), d: 32 * (1 + r.IntN(6))})
	}
	var kinds qk16Kinds
	for _, s := range shapes {
		for _, special := range []bool{false, true} {
			q := newQKData(r, s, special)
			if special {
				if s.hx > 1 {
					q.gain[1] = k.tiny
				}
				if s.hx > 2 && k.huge != 0 {
					q.gain[2] = k.huge
				}
				last := (s.rows*s.hx - 1) * s.d
				for i := range s.d {
					q.x[last+i] *= k.subInput
				}
			}
			x16, dout16 := k.rows(q.x), k.rows(q.dout)
			n := len(q.x)
			what := k.name + " " + q.String()

			// The reference: widen, the float32 kernels, round.
			xw, gw := make([]float32, n), make([]float32, n)
			k.widen(xw, x16)
			k.widen(gw, dout16)
			outW, wantR := make([]float32, n), make([]float32, s.rows*s.hx)
			QKNormRope(outW, wantR, xw, q.cs, q.sn, q.gain, s.d, eps)
			dxW, wantDg := make([]float32, n), make([]float64, s.hx)
			for h := range wantDg {
				wantDg[h] = 0.25 * float64(h+1) // accumulated into
			}
			QKNormRopeGrad(dxW, wantDg, gw, xw, wantR, q.cs, q.sn, q.gain, s.d)
			wantOut, wantDx := k.rows(outW), k.rows(dxW)
			kinds.count(k, &kinds.subIn, x16, nil)
			kinds.count(k, &kinds.subOut, wantOut, outW)
			kinds.count(k, &kinds.subOut, wantDx, dxW)

			out := make([]uint16, n+8)
			rstd := make([]float32, s.rows*s.hx)
			k.fwd(out[:n], rstd, x16, q.cs, q.sn, q.gain, s.d, eps)
			checkSame(t, what+": rstd", rstd, wantR)
			checkSame16(t, what+": out", out[:n], wantOut)
			checkSame16(t, what+": out written past its end", out[n:], make([]uint16, 8))
			inPlace := append([]uint16(nil), x16...)
			k.fwd(inPlace, rstd, inPlace, q.cs, q.sn, q.gain, s.d, eps)
			checkSame16(t, what+": out in place", inPlace, wantOut)

			dx := make([]uint16, n+8)
			dg := make([]float64, s.hx)
			for h := range dg {
				dg[h] = 0.25 * float64(h+1)
			}
			k.grad(dx[:n], dg, dout16, x16, wantR, q.cs, q.sn, q.gain, s.d)
			checkSame16(t, what+": dx", dx[:n], wantDx)
			checkSame16(t, what+": dx written past its end", dx[n:], make([]uint16, 8))
			for h := range dg {
				require.True(t, sameF64(wantDg[h], dg[h]), "%s: dgain[%d] = %v, want %v", what, h, dg[h], wantDg[h])
			}
			onDout := append([]uint16(nil), dout16...)
			k.grad(onDout, nil, onDout, x16, wantR, q.cs, q.sn, q.gain, s.d)
			checkSame16(t, what+": dx in dout", onDout, wantDx)
			onX := append([]uint16(nil), x16...)
			k.grad(onX, nil, dout16, onX, wantR, q.cs, q.sn, q.gain, s.d)
			checkSame16(t, what+": dx in x", onX, wantDx)
		}
	}
	t.Logf("%s: %d subnormal inputs, %d subnormal outputs, %d outputs overflowing", k.name, kinds.subIn, kinds.subOut, kinds.overflow)
	assert.Positive(t, kinds.subIn, "subnormal inputs")
	assert.Positive(t, kinds.subOut, "subnormal outputs")
	if k.huge != 0 {
		assert.Positive(t, kinds.overflow, "outputs overflowing")
	}
}

// TestQKNormRope16Unavailable: without AVX-512, or for a head dim that is
// not a multiple of 32, the bfloat16 and binary16 kernels report so and
// panic with their name rather than compute.
func TestQKNormRope16Unavailable(t *testing.T) {
	defer func(a, b bool) { useAsm, use512 = a, b }(useAsm, use512)
	x, out, rstd := make([]uint16, 2*48), make([]uint16, 2*48), make([]float32, 2)
	cs, sn, gain := make([]float32, 24), make([]float32, 24), make([]float32, 2)
	for _, k := range []qk16{qkBF16, qkF16} {
		assert.False(t, k.has(48), "%s: D = 48", k.name)
	}
	assert.Contains(t, panicMessage(func() { QKNormRopeBF16(out, rstd, x, cs, sn, gain, 48, 1e-6) }), "vmath: QKNormRopeBF16")
	assert.Contains(t, panicMessage(func() { QKNormRopeF16(out, rstd, x, cs, sn, gain, 48, 1e-6) }), "vmath: QKNormRopeF16")
	useAsm, use512 = true, false
	for _, k := range []qk16{qkBF16, qkF16} {
		assert.False(t, k.has(64), "%s: without AVX-512", k.name)
	}
	assert.Contains(t, panicMessage(func() { QKNormRopeGradBF16(out, nil, x, x, rstd, cs, sn, gain, 64) }), "vmath: QKNormRopeGradBF16")
	assert.Contains(t, panicMessage(func() { QKNormRopeGradF16(out, nil, x, x, rstd, cs, sn, gain, 64) }), "vmath: QKNormRopeGradF16")
}

// TestQKNormRope16Shapes: shape mistakes panic with the 16-bit function's
// name.
func TestQKNormRope16Shapes(t *testing.T) {
	for _, k := range []qk16{qkBF16, qkF16} {
		if !k.has(32) {
			t.Skipf("no %s kernels on this build or CPU (AVX-512)", k.name)
		}
		x, out, rstd := make([]uint16, 2*2*32), make([]uint16, 2*2*32), make([]float32, 2*2)
		cs, sn, gain := make([]float32, 2*16), make([]float32, 2*16), make([]float32, 2)
		require.NotPanics(t, func() { k.fwd(out, rstd, x, cs, sn, gain, 32, 1e-6) }, k.name)
		require.NotPanics(t, func() { k.grad(out, make([]float64, 2), x, x, rstd, cs, sn, gain, 32) }, k.name)
		bad := map[string]func(){
			"x length":    func() { k.fwd(out[:96], rstd, x[:96], cs, sn, gain, 32, 1e-6) },
			"out length":  func() { k.fwd(out[:64], rstd, x, cs, sn, gain, 32, 1e-6) },
			"cs length":   func() { k.fwd(out, rstd, x, cs[:16], sn[:16], gain, 32, 1e-6) },
			"rstd heads":  func() { k.fwd(out, rstd[:3], x, cs, sn, gain, 32, 1e-6) },
			"dx length":   func() { k.grad(out[:64], nil, x, x, rstd, cs, sn, gain, 32) },
			"dgain heads": func() { k.grad(out, make([]float64, 3), x, x, rstd, cs, sn, gain, 32) },
			"dout length": func() { k.grad(out, nil, x[:64], x, rstd, cs, sn, gain, 32) },
		}
		for name, f := range bad {
			assert.Contains(t, panicMessage(f), "vmath: QKNormRope", "%s: %s", k.name, name)
			assert.Contains(t, panicMessage(f), strings.ToUpper(k.name), "%s: %s", k.name, name)
		}
	}
}
