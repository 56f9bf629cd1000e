package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
)

func TestUploadDownload(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(2, 1))
	v := randVals(r, 37, 3)
	v[0], v[1], v[2] = float32(math.Inf(1)), float32(math.NaN()), 1+1.0/256 // a bf16 tie: rounds to even (1)
	for _, dt := range backend.FloatDTypes {
		got := b.Download(upload(b, dt, v, 37))
		for i := range v {
			w := backend.Round(dt, v[i])
			if math.IsNaN(float64(w)) {
				assert.True(t, math.IsNaN(float64(got[i])), "%v element %d: got %v, want NaN", dt, i, got[i])
			} else {
				assert.Equal(t, w, got[i], "%v element %d", dt, i)
			}
		}
	}
	assert.Equal(t, float32(1), b.Download(upload(b, backend.BF16, []float32{1 + 1.0/256}, 1))[0], "bf16 tie 1+1/256 rounds to even")
	ids := []int32{3, -1, 1 << 20}
	got := b.Download(uploadIDs(b, ids))
	for i, id := range ids {
		assert.Equal(t, float32(id), got[i], "i32 element %d", i)
	}
}

// TestViews runs an op on a Rows view and checks that only those rows change.
func TestViews(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(2, 2))
	N, C := 9, 5
	for _, dt := range backend.FloatDTypes {
		x := rounded(dt, randVals(r, N*C, 1))
		xt := upload(b, dt, x, N, C)
		outv := randVals(r, N*C, 1)
		out := upload(b, dt, outv, N, C)
		rstd := b.New(f32, N)
		b.RMSNormForward(out.Rows(2, 4), rstd.Rows(3, 4), xt.Rows(4, 4))
		wo, wr := oRMSNorm(f64(x[4*C:8*C]), 4, C)
		got := b.Download(out)
		tol := dt.Eps()
		checkClose(t, dt.String()+" view rows", got[2*C:6*C], wo, tol, tol)
		checkClose(t, dt.String()+" rows before", got[:2*C], f64(rounded(dt, outv[:2*C])), 0, 0)
		checkClose(t, dt.String()+" rows after", got[6*C:], f64(rounded(dt, outv[6*C:])), 0, 0)
		checkClose(t, dt.String()+" rstd view", b.Download(rstd)[3:7], wr, 1e-6, 0)
		rs := b.Download(rstd)
		assert.Equal(t, []float32{0, 0}, []float32{rs[0], rs[8]}, "%v: rstd outside the view written: %v", dt, rs)
	}
}

func TestZeroCast(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(2, 3))
	v := randVals(r, 50, 100)
	for _, from := range backend.FloatDTypes {
		src := upload(b, from, v, 5, 10)
		sv := b.Download(src)
		for _, to := range backend.FloatDTypes {
			dst := poisoned(b, to, 50)
			b.Cast(dst, src)
			checkClose(t, from.String()+"->"+to.String(), b.Download(dst), f64(rounded(to, sv)), 0, 0)
			b.Zero(dst)
			checkClose(t, "zero "+to.String(), b.Download(dst), make([]float64, 50), 0, 0)
		}
	}
	ids := uploadIDs(b, []int32{4, 5})
	b.Zero(ids)
	assert.Equal(t, []float32{0, 0}, b.Download(ids), "zero i32")
}

func TestScaleAxpyReduce(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(2, 4))
	n := 2*grain + 77
	v, w := randVals(r, n, 1), randVals(r, n, 1)
	x := upload(b, f32, v, n)
	b.Scale(x, -2.5)
	want := make([]float64, n)
	for i := range v {
		want[i] = float64(float32(-2.5 * float64(v[i]))) // the exact product, rounded once
	}
	checkClose(t, "scale", b.Download(x), want, 0, 0)

	for _, dt := range backend.FloatDTypes {
		xs := rounded(dt, w)
		acc := upload(b, f32, v, n)
		b.Axpy(acc, upload(b, dt, xs, n), 0.3)
		for i := range v {
			want[i] = float64(v[i]) + float64(float32(0.3))*float64(xs[i])
		}
		checkClose(t, "axpy "+dt.String(), b.Download(acc), want, 1e-7, 1e-7)

		var sum, ss float64
		for _, e := range xs {
			sum += float64(e)
			ss += float64(e) * float64(e)
		}
		for _, c := range []struct {
			kind backend.ReduceKind
			want float64
		}{{backend.ReduceSum, sum + 1.5}, {backend.ReduceSumSquares, ss + 1.5}} {
			d := upload(b, f32, []float32{1.5}, 1)
			b.Reduce(d, upload(b, dt, xs, n), c.kind)
			checkClose(t, "reduce "+dt.String(), b.Download(d), []float64{c.want}, 1e-6, 0)
		}
		bad := append([]float32(nil), xs...)
		bad[3], bad[grain+1], bad[n-1] = float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1))
		d := upload(b, f32, []float32{2}, 1)
		b.Reduce(d, upload(b, dt, bad, n), backend.ReduceNonFinite)
		checkClose(t, "nonfinite "+dt.String(), b.Download(d), []float64{5}, 0, 0)
	}
}

func TestAdam(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(2, 5))
	n := 1000
	p, g, m, v := randVals(r, n, 1), randVals(r, n, 1), randVals(r, n, 0.1), randVals(r, n, 0.1)
	for i := range v {
		v[i] *= v[i]
	}
	hp := backend.AdamParams{LR: 0.01, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 3}
	pt, mt, vt := upload(b, f32, p, n), upload(b, f32, m, n), upload(b, f32, v, n)
	b.AdamStep(pt, upload(b, f32, g, n), mt, vt, hp)
	wp, wm, wv := make([]float64, n), make([]float64, n), make([]float64, n)
	b1, b2 := float64(hp.Beta1), float64(hp.Beta2)
	for i := range n {
		gi := float64(g[i])
		wm[i] = b1*float64(m[i]) + (1-b1)*gi
		wv[i] = b2*float64(v[i]) + (1-b2)*gi*gi
		mh := wm[i] / (1 - math.Pow(b1, 3))
		vh := wv[i] / (1 - math.Pow(b2, 3))
		wp[i] = float64(p[i]) - float64(hp.LR)*mh/(math.Sqrt(vh)+float64(hp.Eps))
	}
	checkClose(t, "m", b.Download(mt), wm, 1e-6, 1e-7)
	checkClose(t, "v", b.Download(vt), wv, 1e-6, 1e-9)
	checkClose(t, "p", b.Download(pt), wp, 1e-6, 1e-7)
}

func TestMuon(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(2, 6))
	n := 300
	g, buf := randVals(r, n, 1), randVals(r, n, 1)
	bt, gt := upload(b, f32, buf, n), upload(b, f32, g, n)
	b.MuonMomentum(bt, gt, gt, 0.95) // geff aliasing g
	wb, we := make([]float64, n), make([]float64, n)
	for i := range n {
		wb[i] = float64(float32(0.95))*float64(buf[i]) + float64(g[i])
		we[i] = float64(g[i]) + float64(float32(0.95))*wb[i]
	}
	checkClose(t, "buf", b.Download(bt), wb, 1e-6, 1e-7)
	checkClose(t, "geff", b.Download(gt), we, 1e-6, 1e-7)

	for _, sz := range [][2]int{{7, 7}, {5, 13}, {29, 6}} {
		R, C := sz[0], sz[1]
		gv := randVals(r, R*C, 1)
		out := poisoned(b, f32, R, C)
		b.NewtonSchulz(out, upload(b, f32, gv, R, C), 5)
		want := oNewtonSchulz(f64(gv), R, C, 5)
		checkClose(t, "newton-schulz "+shapeName(R, C), b.Download(out), want, 1e-4, 1e-4)
		// Five steps bring the singular values near 1 (Muon's point): their
		// root mean square is between 0.5 and 1.5.
		assert.InDelta(t, 1, frob(want)/math.Sqrt(float64(min(R, C))), 0.5, "newton-schulz %v: rms singular value", sz)
	}
}

func frob(v []float64) float64 { return math.Sqrt(dot(v, v)) }
