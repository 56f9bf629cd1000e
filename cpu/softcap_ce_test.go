package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/cputime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oSoftcapCEGrad is the float64 gradient of Σ_n scale·loss[n] in the
// logits, scale·(softmax(z) − onehot)·(1 − tanh²(x/cap)) with z =
// cap·tanh(x/cap), and the size of its softmax term, scale·p·(1 − tanh²),
// against which the target's cancelling p − 1 is judged.
func oSoftcapCEGrad(logits []float64, tg []int32, N, V int, cap, scale float64) (d, mag []float64) {
	d, mag = make([]float64, N*V), make([]float64, N*V)
	for n := range N {
		z := make([]float64, V)
		m := math.Inf(-1)
		for v := range V {
			z[v] = cap * math.Tanh(logits[n*V+v]/cap)
			m = math.Max(m, z[v])
		}
		var s float64
		for _, zv := range z {
			s += math.Exp(zv - m)
		}
		for v := range V {
			p := math.Exp(z[v]-m) / s
			th := math.Tanh(logits[n*V+v] / cap)
			mag[n*V+v] = scale * p * (1 - th*th)
			if v == int(tg[n]) {
				p--
			}
			d[n*V+v] = scale * p * (1 - th*th)
		}
	}
	return d, mag
}

// TestSoftcapCEPaths runs the loss and its gradient against float64 over
// both shifts (the cap, and the row maximum for caps above
// vmath.SoftcapShiftMax), every storage the op reads and writes directly
// (F32, BF16) or through a float32 row (F16), and row lengths around the
// kernels' blocks of 8 and 16 and units of 64.
func TestSoftcapCEPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 71))
	const N, scale = 7, 0.125
	for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
		for _, cap := range []float64{30, 3, 50} {
			for _, V := range []int{1, 8, 17, 70, 1030} {
				what := fmt.Sprintf("%v cap=%v V=%d", dt, cap, V)
				// Logits up to about 2·cap: rows mix the odd polynomial
				// and the exponential branch of tanh.
				logits := rounded(dt, randVals(r, N*V, cap))
				tg := randIDs(r, N, V)
				b := New()
				lt, tt := upload(b, dt, logits, N, V), uploadIDs(b, tg)
				loss := poisoned(b, f32, N)
				b.SoftcapCEForward(loss, lt, tt, float32(cap))
				// Each z is off by a few float32 ulp of the cap (tanh is
				// within 3 ulp, then ×cap and −shift round): the loss by
				// twice that, each p relatively by as much.
				zErr := 8 * cap * 0x1p-24
				want := oSoftcapCE(f64(logits), tg, N, V, cap)
				for n, got := range b.Download(loss) {
					assert.InDelta(t, want[n], float64(got), 2*zErr+1e-6*math.Abs(want[n]), "%s loss[%d]", what, n)
				}

				dl := poisoned(b, dt, N, V)
				b.SoftcapCEBackward(dl, lt, tt, float32(cap), scale)
				wantD, mag := oSoftcapCEGrad(f64(logits), tg, N, V, cap, scale)
				// 16-bit storage adds the rounding of the store, and
				// float16 its subnormal spacing, 2⁻²⁴.
				rel, abs := 2*zErr+1e-6, 1e-9*scale
				if dt != backend.F32 {
					rel += dtypeEps(dt)
				}
				if dt == backend.F16 {
					abs = 0x1p-24
				}
				for i, got := range b.Download(dl) {
					require.InDelta(t, wantD[i], float64(got), rel*(math.Abs(wantD[i])+mag[i])+abs, "%s dlogits[%d]", what, i)
				}
			}
		}
	}
}

// dtypeEps is the spacing of dt's numbers at 1 (its relative rounding
// error is half of it).
func dtypeEps(dt backend.DType) float64 {
	switch dt {
	case backend.BF16:
		return 0x1p-7
	case backend.F16:
		return 0x1p-10
	}
	return 0x1p-23
}

// TestSoftcapCEInPlace: the gradient written over its own logits equals
// the one written elsewhere, bit for bit.
func TestSoftcapCEInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 72))
	const N, V = 9, 300
	for _, dt := range []backend.DType{backend.F32, backend.BF16, backend.F16} {
		logits, tg := rounded(dt, randVals(r, N*V, 20)), randIDs(r, N, V)
		b := New()
		lt, tt := upload(b, dt, logits, N, V), uploadIDs(b, tg)
		dl := poisoned(b, dt, N, V)
		b.SoftcapCEBackward(dl, lt, tt, 30, 0.5)
		b.SoftcapCEBackward(lt, lt, tt, 30, 0.5)
		assert.Equal(t, b.Download(dl), b.Download(lt), "%v: in place", dt)
	}
}

// TestSoftcapCEExtremes: rows far below the cap lose nothing to the shift
// (every z = −cap gives log V however deep: at the largest cap that
// shifts by itself e^{−2·cap} is still a normal float32, and above it the
// row's maximum is the shift), infinite logits cap to ±cap, and a NaN
// spoils only its own row.
func TestSoftcapCEExtremes(t *testing.T) {
	const V = 37
	b := New()
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		name string
		cap  float32
		row  func(v int) float32
		want float64
	}{
		{"all at -cap", 30, func(int) float32 { return -1e6 }, math.Log(V)},
		{"all at -cap, cap 40", 40, func(int) float32 { return -inf }, math.Log(V)},
		{"all at -cap, cap 60 (shift by the maximum)", 60, func(int) float32 { return -inf }, math.Log(V)},
		{"all at +cap", 30, func(int) float32 { return inf }, math.Log(V)},
		{"target at +cap, rest at -cap", 20, func(v int) float32 {
			if v == 0 {
				return inf
			}
			return -inf
		}, math.Log(1 + (V-1)*math.Exp(-40))},
	} {
		row := make([]float32, 2*V)
		for v := range V {
			row[v] = c.row(v)
			row[V+v] = 0.5
		}
		row[V+3] = float32(math.NaN())
		lt, tt := upload(b, f32, row, 2, V), uploadIDs(b, []int32{0, 1})
		loss := poisoned(b, f32, 2)
		b.SoftcapCEForward(loss, lt, tt, c.cap)
		got := b.Download(loss)
		assert.InDelta(t, c.want, float64(got[0]), 1e-6, c.name)
		assert.True(t, math.IsNaN(float64(got[1])), "%s: the NaN row's loss is %v", c.name, got[1])

		dl := poisoned(b, f32, 2, V)
		b.SoftcapCEBackward(dl, lt, tt, c.cap, 1)
		d := b.Download(dl)
		for v := range V {
			assert.False(t, math.IsNaN(float64(d[v])), "%s: dlogits[0,%d] is NaN", c.name, v)
			assert.True(t, math.IsNaN(float64(d[V+v])), "%s: dlogits[1,%d] = %v in the NaN row", c.name, v, d[V+v])
		}
	}
}

// TestSoftcapCETables: 16-bit logits large enough to build the tables of
// every pattern (and the calls after, which reuse them) give bit for bit
// the losses and gradients computed row by row (calls too small to build
// them, on a backend without them), in place too.
func TestSoftcapCETables(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 73))
	const N, V, rows = 72, 1030, 8 // N·V ≥ 65536 > rows·V
	for _, dt := range []backend.DType{backend.BF16, backend.F16} {
		for _, cap := range []float32{30, 5} {
			logits, tg := rounded(dt, randVals(r, N*V, 2*float64(cap))), randIDs(r, N, V)
			b := New()
			lt, tt := upload(b, dt, logits, N, V), uploadIDs(b, tg)
			loss, dl := poisoned(b, f32, N), poisoned(b, dt, N, V)
			b.SoftcapCEForward(loss, lt, tt, cap)
			b.SoftcapCEBackward(dl, lt, tt, cap, 0.25)
			require.NotNil(t, b.loops.ce.tabs.te, "%v cap %v: no tables built", dt, cap)
			gotLoss, gotD := b.Download(loss), b.Download(dl)

			ref := New()
			for n0 := 0; n0 < N; n0 += rows {
				lr := upload(ref, dt, logits[n0*V:(n0+rows)*V], rows, V)
				tr := uploadIDs(ref, tg[n0:n0+rows])
				lossR, dR := poisoned(ref, f32, rows), poisoned(ref, dt, rows, V)
				ref.SoftcapCEForward(lossR, lr, tr, cap)
				ref.SoftcapCEBackward(dR, lr, tr, cap, 0.25)
				assert.Equal(t, b32(ref.Download(lossR)), b32(gotLoss[n0:n0+rows]), "%v cap %v: loss of rows %d..", dt, cap, n0)
				assert.Equal(t, b32(ref.Download(dR)), b32(gotD[n0*V:(n0+rows)*V]), "%v cap %v: dlogits of rows %d..", dt, cap, n0)
			}
			require.Nil(t, ref.loops.ce.tabs.te, "the reference built tables")

			b.SoftcapCEBackward(lt, lt, tt, cap, 0.25)
			assert.Equal(t, b32(gotD), b32(b.Download(lt)), "%v cap %v: in place", dt, cap)
		}
	}
}

// b32 is v's bit patterns (NaNs compare by their bits).
func b32(v []float32) []uint32 {
	u := make([]uint32, len(v))
	for i, f := range v {
		u[i] = math.Float32bits(f)
	}
	return u
}

// BenchmarkSoftcapCEPass times the forward and the backward pass apart
// over the baseline's logits (N = 8192, V = 1024, N(0, 1) as golf bench
// has them, cap 30) in F32 and BF16, and reports logits per CPU second of
// the process, the repeatable figure on a shared machine.
func BenchmarkSoftcapCEPass(b *testing.B) {
	const N, V = 8192, 1024
	for _, dt := range []backend.DType{backend.F32, backend.BF16} {
		be, r := New(), rand.New(rand.NewPCG(3, 3))
		logits := upload(be, dt, rounded(dt, randVals(r, N*V, 1)), N, V)
		tg := uploadIDs(be, randIDs(r, N, V))
		loss, dl := be.New(backend.F32, N), be.New(dt, N, V)
		for _, pass := range []string{"fwd", "bwd"} {
			b.Run(fmt.Sprintf("%v/%s", dt, pass), func(b *testing.B) {
				c0, _ := cputime.Now()
				for range b.N {
					if pass == "fwd" {
						be.SoftcapCEForward(loss, logits, tg, 30)
					} else {
						be.SoftcapCEBackward(dl, logits, tg, 30, 1.0/N)
					}
				}
				if c1, ok := cputime.Now(); ok && c1 > c0 {
					b.ReportMetric(float64(c1-c0)/float64(b.N)/1e6, "cpu-ms/op")
					b.ReportMetric(N*V*float64(b.N)/(c1-c0).Seconds()/1e6, "Mlogits/cpu-s")
				}
			})
		}
	}
}
