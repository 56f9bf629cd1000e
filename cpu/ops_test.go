package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
)

// Each model op in fp32: the forward against the float64 oracle, the
// backward against central differences of the oracle's forward
// (L = Σ dout·out), parameter gradients checked to accumulate onto what was
// there.

const f32 = backend.F32

// fwdTol is the tolerance of an fp32 forward against the float64 oracle.
const fwdRtol, fwdAtol = 2e-6, 2e-6

func TestRMSNorm(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(1, 1))
	N, C := 10, 7
	x, dout, dres := randVals(r, N*C, 2), randVals(r, N*C, 1), randVals(r, N*C, 1)
	out, rstd := poisoned(b, f32, N, C), poisoned(b, f32, N)
	xt := upload(b, f32, x, N, C)
	b.RMSNormForward(out, rstd, xt)
	wo, wr := oRMSNorm(f64(x), N, C)
	checkClose(t, "out", b.Download(out), wo, fwdRtol, fwdAtol)
	checkClose(t, "rstd", b.Download(rstd), wr, fwdRtol, 0)

	xs, ds := f64(x), f64(dout)
	want := numGrad(xs, func() float64 { o, _ := oRMSNorm(xs, N, C); return dot(ds, o) })
	dx := poisoned(b, f32, N, C)
	b.RMSNormBackward(dx, upload(b, f32, dout, N, C), xt, rstd, nil)
	checkGrad(t, "dx", b.Download(dx), want)

	// dx aliasing dres: dx = dres + ∂L/∂x.
	dxr := upload(b, f32, dres, N, C)
	b.RMSNormBackward(dxr, upload(b, f32, dout, N, C), xt, rstd, dxr)
	checkGrad(t, "dx+dres", sub32(b.Download(dxr), dres), want)
}

func TestResidMix(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(1, 2))
	N, C := 10, 7
	x, x0, mix, dout := randVals(r, N*C, 1), randVals(r, N*C, 1), randVals(r, 2*C, 1), randVals(r, N*C, 1)
	xt, x0t, mt := upload(b, f32, x, N, C), upload(b, f32, x0, N, C), upload(b, f32, mix, 2, C)
	out := poisoned(b, f32, N, C)
	b.ResidMixForward(out, xt, x0t, mt)
	checkClose(t, "out", b.Download(out), oResidMix(f64(x), f64(x0), f64(mix), N, C), fwdRtol, fwdAtol)

	xs, zs, ms, ds := f64(x), f64(x0), f64(mix), f64(dout)
	L := func() float64 { return dot(ds, oResidMix(xs, zs, ms, N, C)) }
	gx, gz, gm := numGrad(xs, L), numGrad(zs, L), numGrad(ms, L)
	dx0Init, dmixInit := randVals(r, N*C, 1), randVals(r, 2*C, 1)
	dx, dx0, dmix := poisoned(b, f32, N, C), upload(b, f32, dx0Init, N, C), upload(b, f32, dmixInit, 2, C)
	b.ResidMixBackward(dx, dx0, dmix, upload(b, f32, dout, N, C), xt, x0t, mt)
	checkGrad(t, "dx", b.Download(dx), gx)
	checkGrad(t, "dx0", sub32(b.Download(dx0), dx0Init), gz)
	checkGrad(t, "dmix", sub32(b.Download(dmix), dmixInit), gm)
}

func TestLinear(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(1, 3))
	for _, sz := range [][3]int{{10, 5, 3}, {1, 1, 1}, {37, 19, 23}} {
		N, I, O := sz[0], sz[1], sz[2]
		t.Run(shapeName(N, I, O), func(t *testing.T) {
			x, w, dout := randVals(r, N*I, 1), randVals(r, O*I, 1), randVals(r, N*O, 1)
			xt, wt := upload(b, f32, x, N, I), upload(b, f32, w, O, I)
			out := poisoned(b, f32, N, O)
			b.LinearForward(out, xt, wt)
			checkClose(t, "out", b.Download(out), oLinear(f64(x), f64(w), N, I, O), 1e-5, 1e-5)

			xs, ws, ds := f64(x), f64(w), f64(dout)
			L := func() float64 { return dot(ds, oLinear(xs, ws, N, I, O)) }
			gx, gw := numGrad(xs, L), numGrad(ws, L)
			dxInit, dwInit := randVals(r, N*I, 1), randVals(r, O*I, 1)
			dx, dw := poisoned(b, f32, N, I), upload(b, f32, dwInit, O, I)
			dt := upload(b, f32, dout, N, O)
			b.LinearBackward(dx, dw, dt, xt, wt, false)
			checkGrad(t, "dx", b.Download(dx), gx)
			checkGrad(t, "dw", sub32(b.Download(dw), dwInit), gw)

			dxa := upload(b, f32, dxInit, N, I)
			b.LinearBackward(dxa, nil, dt, xt, wt, true)
			checkGrad(t, "dx accumulate", sub32(b.Download(dxa), dxInit), gx)
		})
	}
}

func TestQKNormRope(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(1, 4))
	T, N, H, D := 5, 10, 3, 6
	const base = 100 // small so that the angles vary a lot over 5 positions
	for _, withGain := range []bool{true, false} {
		x, dout := randVals(r, N*H*D, 1), randVals(r, N*H*D, 1)
		xt := upload(b, f32, x, N, H, D)
		var gain []float32
		var gt, dgain *backend.Tensor
		dgInit := randVals(r, H, 1)
		if withGain {
			gain = randVals(r, H, 1)
			gt, dgain = upload(b, f32, gain, H), upload(b, f32, dgInit, H)
		}
		out, rstd := poisoned(b, f32, N, H, D), poisoned(b, f32, N, H)
		b.QKNormRopeForward(out, rstd, xt, gt, T, base)
		wo, wr := oQKNormRope(f64(x), f64(gain), N, H, D, T, base)
		checkClose(t, "out", b.Download(out), wo, 1e-5, 1e-5)
		checkClose(t, "rstd", b.Download(rstd), wr, fwdRtol, 0)

		xs, gs, ds := f64(x), f64(gain), f64(dout)
		if !withGain {
			gs = nil
		}
		L := func() float64 { o, _ := oQKNormRope(xs, gs, N, H, D, T, base); return dot(ds, o) }
		dx := poisoned(b, f32, N, H, D)
		b.QKNormRopeBackward(dx, dgain, upload(b, f32, dout, N, H, D), xt, rstd, gt, T, base)
		checkGrad(t, "dx", b.Download(dx), numGrad(xs, L))
		if withGain {
			checkGrad(t, "dgain", sub32(b.Download(dgain), dgInit), numGrad(gs, L))
		}
	}
}

// TestAttention checks both directions against a float64 oracle and
// finite differences, with the tiles shrunk (32 keys per block, one
// register tile of query rows per block) so that the longest sequence
// crosses several key and query blocks and the online softmax rescales.
func TestAttention(t *testing.T) {
	saved := attTile
	defer func() { attTile = saved }()
	attTile.keys, attTile.rowTiles = 32, 1
	b, r := New(), rand.New(rand.NewPCG(1, 5))
	for _, sz := range [][5]int{{5, 2, 4, 2, 6}, {9, 1, 2, 2, 4}, {3, 3, 3, 1, 8}, {70, 2, 2, 1, 2}} {
		T, B, H, Hkv, D := sz[0], sz[1], sz[2], sz[3], sz[4]
		N := B * T
		t.Run(shapeName(sz[:]...), func(t *testing.T) {
			q, k, v := randVals(r, N*H*D, 1), randVals(r, N*Hkv*D, 1), randVals(r, N*Hkv*D, 1)
			dout := randVals(r, N*H*D, 1)
			qt, kt, vt := upload(b, f32, q, N, H, D), upload(b, f32, k, N, Hkv, D), upload(b, f32, v, N, Hkv, D)
			out, lse := poisoned(b, f32, N, H, D), poisoned(b, f32, N, H)
			b.AttentionForward(out, lse, qt, kt, vt, T)
			wo, wl := oAttention(f64(q), f64(k), f64(v), N, H, Hkv, D, T)
			checkClose(t, "out", b.Download(out), wo, 1e-5, 1e-5)
			checkClose(t, "lse", b.Download(lse), wl, 1e-5, 1e-5)

			qs, ks, vs, ds := f64(q), f64(k), f64(v), f64(dout)
			L := func() float64 { o, _ := oAttention(qs, ks, vs, N, H, Hkv, D, T); return dot(ds, o) }
			dq, dk, dv := poisoned(b, f32, N, H, D), poisoned(b, f32, N, Hkv, D), poisoned(b, f32, N, Hkv, D)
			b.AttentionBackward(dq, dk, dv, upload(b, f32, dout, N, H, D), qt, kt, vt, out, lse, T)
			checkGrad(t, "dq", b.Download(dq), numGrad(qs, L))
			checkGrad(t, "dk", b.Download(dk), numGrad(ks, L))
			checkGrad(t, "dv", b.Download(dv), numGrad(vs, L))
		})
	}
}

func TestScaledAdd(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(1, 6))
	N, C := 10, 7
	x, y, s, dout := randVals(r, N*C, 1), randVals(r, N*C, 1), randVals(r, C, 1), randVals(r, N*C, 1)
	yt, st := upload(b, f32, y, N, C), upload(b, f32, s, C)
	out := poisoned(b, f32, N, C)
	b.ScaledAddForward(out, upload(b, f32, x, N, C), yt, st)
	checkClose(t, "out", b.Download(out), oScaledAdd(f64(x), f64(y), f64(s), N, C), fwdRtol, fwdAtol)
	xt := upload(b, f32, x, N, C)
	b.ScaledAddForward(xt, xt, yt, nil) // out aliasing x, s = 1
	checkClose(t, "out=x, s=nil", b.Download(xt), oScaledAdd(f64(x), f64(y), nil, N, C), fwdRtol, fwdAtol)

	xs, ys, ss, ds := f64(x), f64(y), f64(s), f64(dout)
	L := func() float64 { return dot(ds, oScaledAdd(xs, ys, ss, N, C)) }
	dsInit := randVals(r, C, 1)
	dy, dst := poisoned(b, f32, N, C), upload(b, f32, dsInit, C)
	b.ScaledAddBackward(dy, dst, upload(b, f32, dout, N, C), yt, st)
	checkGrad(t, "dy", b.Download(dy), numGrad(ys, L))
	checkGrad(t, "ds", sub32(b.Download(dst), dsInit), numGrad(ss, L))
	b.ScaledAddBackward(dy, nil, upload(b, f32, dout, N, C), yt, nil)
	checkClose(t, "dy, s=nil", b.Download(dy), ds, 0, 0)
}

func TestReluSq(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(1, 7))
	n := 3*block + 17 // several blocks and a ragged one
	x, dout := randVals(r, n, 1), randVals(r, n, 1)
	xt := upload(b, f32, x, n)
	out := poisoned(b, f32, n)
	b.ReluSqForward(out, xt)
	checkClose(t, "out", b.Download(out), oReluSq(f64(x)), fwdRtol, 0)
	dx := poisoned(b, f32, n)
	b.ReluSqBackward(dx, upload(b, f32, dout, n), xt)
	want := make([]float64, n) // 2·max(x,0)·dout: the derivative, away from the kink at 0
	for i, v := range x {
		want[i] = 2 * math.Max(float64(v), 0) * float64(dout[i])
	}
	checkClose(t, "dx", b.Download(dx), want, fwdRtol, 0)
	xs, ds := f64(x[:40]), f64(dout[:40])
	checkGrad(t, "dx (numerical)", b.Download(dx)[:40], numGrad(xs, func() float64 { return dot(ds, oReluSq(xs)) }))
}

func TestSoftcapCE(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(1, 8))
	N, V := 10, 9
	const cap, scale = 3, 0.7 // a small cap makes the tanh bend
	logits, tg := randVals(r, N*V, 4), randIDs(r, N, V)
	lt, tt := upload(b, f32, logits, N, V), uploadIDs(b, tg)
	loss := poisoned(b, f32, N)
	b.SoftcapCEForward(loss, lt, tt, cap)
	checkClose(t, "loss", b.Download(loss), oSoftcapCE(f64(logits), tg, N, V, cap), 1e-5, 1e-6)

	ls := f64(logits)
	L := func() float64 {
		var s float64
		for _, v := range oSoftcapCE(ls, tg, N, V, cap) {
			s += scale * v
		}
		return s
	}
	dl := poisoned(b, f32, N, V)
	b.SoftcapCEBackward(dl, lt, tt, cap, scale)
	checkGrad(t, "dlogits", b.Download(dl), numGrad(ls, L))
}

func TestEmbedding(t *testing.T) {
	b, r := New(), rand.New(rand.NewPCG(1, 9))
	N, V, C := 23, 5, 7 // more tokens than rows: ids repeat
	w, ids, dout := randVals(r, V*C, 1), randIDs(r, N, V), randVals(r, N*C, 1)
	wt, it := upload(b, f32, w, V, C), uploadIDs(b, ids)
	out := poisoned(b, f32, N, C)
	b.EmbeddingForward(out, it, wt)
	want := make([]float64, N*C)
	for n, id := range ids {
		copy(want[n*C:(n+1)*C], f64(w[int(id)*C:(int(id)+1)*C]))
	}
	checkClose(t, "out", b.Download(out), want, 0, 0)

	dwInit := randVals(r, V*C, 1)
	dw := upload(b, f32, dwInit, V, C)
	b.EmbeddingBackward(dw, it, upload(b, f32, dout, N, C))
	gw := make([]float64, V*C)
	for n, id := range ids {
		for c := range C {
			gw[int(id)*C+c] += float64(dout[n*C+c])
		}
	}
	checkGrad(t, "dw", sub32(b.Download(dw), dwInit), gw)
}

func TestShapePanics(t *testing.T) {
	b := New()
	cases := map[string]func(){
		"cpu: LinearForward: x [4 8] vs w [3 9]": func() {
			b.LinearForward(b.New(f32, 4, 3), b.New(f32, 4, 8), b.New(f32, 3, 9))
		},
		"cpu: RMSNormForward: rstd [5], want [4]": func() {
			b.RMSNormForward(b.New(f32, 4, 3), b.New(f32, 5), b.New(f32, 4, 3))
		},
		"cpu: AttentionForward: q heads 3 not a multiple of k heads 2": func() {
			b.AttentionForward(b.New(f32, 4, 3, 2), b.New(f32, 4, 3), b.New(f32, 4, 3, 2), b.New(f32, 4, 2, 2), b.New(f32, 4, 2, 2), 2)
		},
		"cpu: EmbeddingForward: ids[1] = 7 out of range [0, 5)": func() {
			b.EmbeddingForward(b.New(f32, 2, 3), uploadIDs(b, []int32{0, 7}), b.New(f32, 5, 3))
		},
		"cpu: ScaledAddForward: y is bf16 but out is fp32": func() {
			b.ScaledAddForward(b.New(f32, 2, 3), b.New(f32, 2, 3), b.New(backend.BF16, 2, 3), nil)
		},
	}
	for want, f := range cases {
		assert.PanicsWithValue(t, want, f, want)
	}
}

// sub32 is a − b.
func sub32(a, b []float32) []float32 {
	out := make([]float32, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}
