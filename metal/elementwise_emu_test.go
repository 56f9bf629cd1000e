//go:build cgo

package metal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
)

// ewTestNormal returns n samples of N(0, 1).
func ewTestNormal(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// ewTestUpload makes a tensor of dt holding vals and returns it with the
// values as stored (rounded to dt), widened to float64.
func ewTestUpload(b *Backend, dt backend.DType, vals []float32, shape ...int) (*backend.Tensor, []float64) {
	t := b.New(dt, shape...)
	b.Upload(t, vals)
	got := b.Download(t)
	w := make([]float64, len(got))
	for i, v := range got {
		w[i] = float64(v)
	}
	return t, w
}

// TestZeroKernel zeroes Rows views of every dtype: the view's elements
// become +0, the rows around it keep their values.
func TestZeroKernel(t *testing.T) {
	const rows, cols = 7, 13
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, dt := range []backend.DType{backend.F32, backend.F16, backend.BF16, backend.I32} {
			x := b.New(dt, rows, cols)
			if dt == backend.I32 {
				ids := make([]int32, rows*cols)
				for i := range ids {
					ids[i] = int32(-i - 1)
				}
				b.Upload(x, ids)
			} else {
				vals := make([]float32, rows*cols)
				for i := range vals {
					vals[i] = -float32(i + 1)
				}
				b.Upload(x, vals)
			}
			b.Zero(x.Rows(2, 3))
			got := b.Download(x)
			require.NoError(t, b.Sync(), "%s %v: Sync", f, dt)
			for i, v := range got { // up to the first wrong element
				if i >= 2*cols && i < 5*cols {
					if !assert.Equal(t, uint32(0), math.Float32bits(v), "%s %v: element %d = %v after Zero, want +0 (bits)", f, dt, i, v) {
						break
					}
				} else if !assert.Equal(t, -float32(i+1), v, "%s %v: element %d outside the view", f, dt, i) {
					break
				}
			}
			b.Zero(x)
			for i, v := range b.Download(x) {
				if !assert.Zero(t, v, "%s %v: element %d after zeroing the whole tensor", f, dt, i) {
					break
				}
			}
		}
	}
}

// TestColumnSumsRowBlocks runs the column-parallel backward kernels of
// ScaledAdd and ResidMix on more rows than the conformance suite (several
// row blocks, an uneven last block, the block count at its cap) against a
// float64 oracle, twice into equal accumulators (bit-identical results),
// starting with a scratch too small so that it grows.
func TestColumnSumsRowBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, sh := range [][2]int{{300, 37}, {9001, 3}} {
			N, C := sh[0], sh[1]
			for _, dt := range []backend.DType{backend.F32, backend.BF16} {
				name := fmt.Sprintf("%s N%d C%d %v", f, N, C, dt)
				if b.ew.partials != nil {
					b.Free(b.ew.partials)
				}
				b.ew.partials = b.New(backend.F32, 4) // forces the scratch to grow
				dout, g := ewTestUpload(b, dt, ewTestNormal(rng, N*C), N, C)
				y, yv := ewTestUpload(b, dt, ewTestNormal(rng, N*C), N, C)
				x0, x0v := ewTestUpload(b, dt, ewTestNormal(rng, N*C), N, C)
				s, sv := ewTestUpload(b, backend.F32, ewTestNormal(rng, C), C)
				mix, mixv := ewTestUpload(b, backend.F32, ewTestNormal(rng, 2*C), 2, C)
				acc0 := ewTestNormal(rng, 2*C)
				ds1, ds0 := ewTestUpload(b, backend.F32, acc0[:C], C)
				ds2, _ := ewTestUpload(b, backend.F32, acc0[:C], C)
				dmix1, dmix0 := ewTestUpload(b, backend.F32, acc0, 2, C)
				dmix2, _ := ewTestUpload(b, backend.F32, acc0, 2, C)
				dx0, dx0v := ewTestUpload(b, backend.F32, ewTestNormal(rng, N*C), N, C)
				dy, dx := b.New(dt, N, C), b.New(dt, N, C)

				b.ScaledAddBackward(dy, ds1, dout, y, s)
				b.ScaledAddBackward(nil, ds2, dout, y, s)
				b.ResidMixBackward(dx, dx0, dmix1, dout, y, x0, mix)
				wantDs, magDs := append([]float64(nil), ds0...), make([]float64, C)
				wantDmix, magDmix := append([]float64(nil), dmix0...), make([]float64, 2*C)
				wantDy, wantDx := make([]float64, N*C), make([]float64, N*C)
				magDx0 := make([]float64, N*C)
				for c := range C {
					magDs[c], magDmix[c], magDmix[C+c] = math.Abs(ds0[c]), math.Abs(dmix0[c]), math.Abs(dmix0[C+c])
				}
				for n := range N {
					for c := range C {
						i := n*C + c
						wantDy[i] = sv[c] * g[i]
						wantDs[c] += g[i] * yv[i]
						magDs[c] += math.Abs(g[i] * yv[i])
						wantDx[i] = mixv[c] * g[i]
						magDx0[i] = math.Abs(dx0v[i]) + math.Abs(mixv[C+c]*g[i])
						dx0v[i] += mixv[C+c] * g[i]
						wantDmix[c] += g[i] * yv[i]
						wantDmix[C+c] += g[i] * x0v[i]
						magDmix[c] += math.Abs(g[i] * yv[i])
						magDmix[C+c] += math.Abs(g[i] * x0v[i])
					}
				}
				backendtest.Close(t, name+" dy", b.Download(dy), wantDy, dt, backendtest.Tol{K: 1})
				backendtest.Close(t, name+" ds", b.Download(ds1), wantDs, backend.F32, backendtest.Tol{K: N + 1, Mag: magDs})
				backendtest.Close(t, name+" ds twice", b.Download(ds2), ewTestWiden(b.Download(ds1)), backend.F32, backendtest.Tol{Exact: true})
				backendtest.Close(t, name+" dx", b.Download(dx), wantDx, dt, backendtest.Tol{K: 1})
				backendtest.Close(t, name+" dx0", b.Download(dx0), dx0v, backend.F32, backendtest.Tol{K: 2, Mag: magDx0})
				backendtest.Close(t, name+" dmix", b.Download(dmix1), wantDmix, backend.F32, backendtest.Tol{K: N + 1, Mag: magDmix})

				// The same dmix again from a fresh dx0: bit-identical.
				b.Zero(dx0)
				b.ResidMixBackward(dx, dx0, dmix2, dout, y, x0, mix)
				backendtest.Close(t, name+" dmix twice", b.Download(dmix2), ewTestWiden(b.Download(dmix1)), backend.F32, backendtest.Tol{Exact: true})
				require.NoError(t, b.Sync(), "%s: Sync", name)
			}
		}
	}
}

func ewTestWiden(v []float32) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = float64(x)
	}
	return w
}

// TestEmbeddingLongSequences runs the embedding over many chunks of tokens
// (N much larger than the threadgroup), with ids outside [0, V): the
// forward must give zero rows for them, and the backward must skip them and
// add the others in token order, bit for bit as a sequential float32 loop.
func TestEmbeddingLongSequences(t *testing.T) {
	const N, V, C = 2500, 5, 40
	rng := rand.New(rand.NewPCG(5, 6))
	ids := make([]int32, N)
	for i := range ids {
		ids[i] = int32(rng.IntN(V))
	}
	ids[7], ids[100], ids[N-1] = -1, V, 1<<30
	for _, f := range []Flavour{Simd, Portable} {
		b := New(NewEmulatedRuntime(f))
		for _, dt := range []backend.DType{backend.F32, backend.F16} {
			name := fmt.Sprintf("%s %v", f, dt)
			idt := b.New(backend.I32, N)
			b.Upload(idt, ids)
			w, wv := ewTestUpload(b, dt, ewTestNormal(rng, V*C), V, C)
			out := b.New(dt, N, C)
			b.EmbeddingForward(out, idt, w)
			want := make([]float64, N*C)
			for n, id := range ids {
				if id >= 0 && id < V {
					copy(want[n*C:(n+1)*C], wv[int(id)*C:(int(id)+1)*C])
				}
			}
			backendtest.Close(t, name+" forward", b.Download(out), want, dt, backendtest.Tol{Exact: true})

			dout := b.New(dt, N, C)
			b.Upload(dout, ewTestNormal(rng, N*C))
			g := b.Download(dout)
			init := ewTestNormal(rng, V*C)
			dw := b.New(backend.F32, V, C)
			b.Upload(dw, init)
			b.EmbeddingBackward(dw, idt, dout)
			seq := append([]float32(nil), init...)
			for n, id := range ids {
				if id < 0 || id >= V {
					continue
				}
				for c := range C {
					seq[int(id)*C+c] += g[n*C+c]
				}
			}
			backendtest.Close(t, name+" backward", b.Download(dw), ewTestWiden(seq), backend.F32, backendtest.Tol{Exact: true})
			require.NoError(t, b.Sync(), "%s: Sync", name)
		}
	}
}

// ewTestNullRuntime is a Runtime whose Dispatch only counts: it isolates
// the host code's allocations from the runtime's.
type ewTestNullRuntime struct {
	nullStream
	dispatches int
}

type ewTestNullPipeline struct{ name string }

func (p ewTestNullPipeline) Name() string    { return p.name }
func (p ewTestNullPipeline) MaxThreads() int { return 1024 }

func (r *ewTestNullRuntime) Caps() Caps {
	return Caps{Name: "null", BFloat: true, MaxThreadsPerGroup: 1024, ThreadgroupMemory: 32 << 10}
}
func (r *ewTestNullRuntime) NewBuffer(n int) (Buffer, error) {
	return &goBuffer{b: make([]byte, n)}, nil
}
func (r *ewTestNullRuntime) Free(Buffer) {}
func (r *ewTestNullRuntime) Pipeline(name string) (Pipeline, error) {
	return ewTestNullPipeline{name}, nil
}
func (r *ewTestNullRuntime) Dispatch(Pipeline, [3]int, [3]int, []Arg, []int) error {
	r.dispatches++
	return nil
}
func (r *ewTestNullRuntime) Sync() error  { return nil }
func (r *ewTestNullRuntime) Close() error { return nil }

// TestElementwiseFamilyNoAllocs checks that, once pipelines and scratch
// exist, the ops of this family encode their dispatches without
// allocating.
func TestElementwiseFamilyNoAllocs(t *testing.T) {
	const N, V, C = 6, 9, 40
	rt := &ewTestNullRuntime{}
	b := New(rt)
	x, y, out := b.New(backend.BF16, N, C), b.New(backend.BF16, N, C), b.New(backend.BF16, N, C)
	f32, f32b, s := b.New(backend.F32, N, C), b.New(backend.F32, N, C), b.New(backend.F32, C)
	mix, dmix, sum := b.New(backend.F32, 2, C), b.New(backend.F32, 2, C), b.New(backend.F32, 1)
	ids, w, dw := b.New(backend.I32, N), b.New(backend.BF16, V, C), b.New(backend.F32, V, C)
	step := func() {
		b.Zero(f32)
		b.Zero(ids)
		b.Cast(f32, x)
		b.Cast(out, f32)
		b.Scale(f32, 0.5)
		b.Axpy(f32b, x, 2)
		b.Reduce(sum, x, backend.ReduceSumSquares)
		b.ScaledAddForward(out, x, y, s)
		b.ScaledAddBackward(out, s, x, y, nil)
		b.ResidMixForward(out, x, y, mix)
		b.ResidMixBackward(out, f32, dmix, x, y, y, mix)
		b.EmbeddingForward(out, ids, w)
		b.EmbeddingBackward(dw, ids, x)
	}
	step()
	assert.Equal(t, 16, rt.dispatches, "dispatches per step") // Reduce, ScaledAddBackward and ResidMixBackward are two each
	assert.Zero(t, testing.AllocsPerRun(5, step), "allocations per step")
}
