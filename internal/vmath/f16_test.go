package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// f16Value is the value of binary16 bits b from the format's definition,
// in float64 (exact): (−1)^s · 2^(e−15) · (1 + m/2¹⁰) for 0 < e < 31,
// (−1)^s · m · 2^−24 for e = 0, ±Inf or NaN for e = 31.
func f16Value(b uint16) float64 {
	s, e, m := b>>15, int(b>>10)&0x1f, float64(b&0x3ff)
	var v float64
	switch {
	case e == 31 && m != 0:
		return math.NaN()
	case e == 31:
		v = math.Inf(1)
	case e == 0:
		v = math.Ldexp(m, -24)
	default:
		v = math.Ldexp(1+m/1024, e-15)
	}
	if s == 1 {
		v = -v
	}
	return v
}

// f16Oracle rounds a non-NaN x to binary16 bits by scaling in float64
// (exact for a float32) and math.RoundToEven: subnormals are whole
// multiples of 2^−24, normals 11-bit significands, and from 65520 up (half
// an ulp above 65504) the result is infinite.
func f16Oracle(x float32) uint16 {
	a := math.Abs(float64(x))
	var sign uint16
	if math.Signbit(float64(x)) {
		sign = 0x8000
	}
	switch {
	case a >= 65520:
		return sign | 0x7c00
	case a < 0x1p-14:
		return sign | uint16(math.RoundToEven(math.Ldexp(a, 24))) // 0x400 when rounding up to the smallest normal
	}
	_, e := math.Frexp(a) // a = f·2^e, f in [0.5, 1)
	e--                   // a in [2^e, 2^(e+1))
	m := math.RoundToEven(math.Ldexp(a, 10-e))
	if m == 2048 {
		m, e = 1024, e+1
	}
	return sign | uint16(e+15)<<10 | uint16(m-1024)
}

func isNaN16(b uint16) bool { return b&0x7c00 == 0x7c00 && b&0x3ff != 0 }

// f16Cases are the inputs of TestToF16: a million random float32 bit
// patterns (every class), a million with exponents in and around the half
// range (2^−26 to 2^17), every midpoint between adjacent halves with its
// float32 neighbours either side (the ties, positive and negative), and the
// named edges.
func f16Cases() []float32 {
	r := rand.New(rand.NewPCG(23, 24))
	var x []float32
	edges := []float32{
		0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		65504, -65504, 65519.998, 65520, -65520, 65536, math.MaxFloat32, -math.MaxFloat32,
		0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1.8p-24, 0x1p-14, 0x1.ff8p-15, 0x1.ffcp-15, 0x1p-26,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-126, 1, 1 + 0x1p-11, 1 + 0x3p-11, -(1 + 0x1p-11),
		2049, 2051, 4097, 4099, -2049,
	}
	x = append(x, edges...)
	for range 1 << 20 {
		x = append(x, math.Float32frombits(r.Uint32()))
	}
	for range 1 << 20 {
		u := r.Uint32()&0x807fffff | (102+r.Uint32N(42))<<23
		x = append(x, math.Float32frombits(u))
	}
	for h := uint32(0); h < 0x7c00; h++ { // every finite non-negative half
		mid := float32((f16Value(uint16(h)) + f16Value(uint16(h+1))) / 2) // exact: 12 significant bits
		u := math.Float32bits(mid)
		for _, v := range []uint32{u - 1, u, u + 1} {
			x = append(x, math.Float32frombits(v), math.Float32frombits(v|0x80000000))
		}
	}
	return x
}

// TestF16Oracle pins the float64 oracle of TestToF16 to the format's
// definition: every finite half rounds to itself, and the named edges.
func TestF16Oracle(t *testing.T) {
	for b := range 1 << 16 {
		if v := f16Value(uint16(b)); !math.IsNaN(v) && !math.IsInf(v, 0) {
			if got := f16Oracle(float32(v)); got != uint16(b) {
				require.Equal(t, uint16(b), got, "f16Oracle(%v)", v)
			}
		}
	}
	for _, c := range []struct {
		x    float32
		want uint16
	}{
		{65519.998, 0x7bff}, {65520, 0x7c00}, {-65520, 0xfc00}, {0x1p-25, 0}, {0x1.000002p-25, 1},
		{0x1.8p-24, 2}, {0x1.ffcp-15, 0x400}, {1 + 0x1p-11, 0x3c00}, {1 + 0x3p-11, 0x3c02}, {2049, 0x6800}, {2051, 0x6802},
	} {
		assert.Equal(t, c.want, f16Oracle(c.x), "f16Oracle(%v)", c.x)
	}
}

func TestToF16(t *testing.T) {
	x := f16Cases()
	require.GreaterOrEqual(t, len(x), 2_000_000, "cases")
	forImpls(t, func(t *testing.T) {
		for _, n := range append(sizes, len(x)) {
			for _, off := range []int{0, 3} {
				if off+n > len(x) {
					continue
				}
				src := x[off : off+n]
				dst := make([]uint16, n+8)
				for i := range dst {
					dst[i] = 0xdead
				}
				ToF16(dst[:n], src)
				for i, v := range src {
					got := dst[i]
					if v != v {
						require.True(t, isNaN16(got), "ToF16 n=%d: [%d] = NaN %#08x → %#04x, want a NaN", n, i, math.Float32bits(v), got)
						require.Equal(t, uint16(math.Float32bits(v)>>31), got>>15, "ToF16 n=%d: [%d] = NaN %#08x → %#04x: sign", n, i, math.Float32bits(v), got)
						continue
					}
					if want := backend.F16Bits(v); got != want {
						require.Equal(t, want, got, "ToF16 n=%d: [%d] = %#08x against backend.F16Bits", n, i, math.Float32bits(v))
					}
					if want := f16Oracle(v); got != want {
						require.Equal(t, want, got, "ToF16 n=%d: [%d] = %#08x against the oracle", n, i, math.Float32bits(v))
					}
				}
				for i := n; i < n+8; i++ {
					require.Equal(t, uint16(0xdead), dst[i], "ToF16 n=%d wrote past the end at %d", n, i)
				}
			}
		}
	})
}

func TestFromF16(t *testing.T) {
	src := make([]uint16, 1<<16+3)
	for i := range src {
		src[i] = uint16(i)
	}
	forImpls(t, func(t *testing.T) {
		for _, n := range append(sizes, 1<<16) {
			for _, off := range []int{0, 3} {
				in := src[off : off+n]
				dst, check := guarded(n)
				FromF16(dst, in)
				check(t, fmt.Sprintf("FromF16 n=%d", n))
				for i, b := range in {
					got := dst[i]
					if isNaN16(b) {
						require.True(t, got != got, "FromF16 n=%d: [%d] = NaN %#04x → %#08x, want a NaN", n, i, b, math.Float32bits(got))
						require.Equal(t, b>>15 == 1, math.Signbit(float64(got)), "FromF16 n=%d: [%d] = NaN %#04x → %#08x: sign bit", n, i, b, math.Float32bits(got))
						continue
					}
					if want := backend.F16Float(b); math.Float32bits(got) != math.Float32bits(want) {
						require.Equal(t, math.Float32bits(want), math.Float32bits(got), "FromF16 n=%d: [%d] = %#04x against backend.F16Float (bits)", n, i, b)
					}
					if want := f16Value(b); float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
						require.Equal(t, want, float64(got), "FromF16 n=%d: [%d] = %#04x", n, i, b)
						require.Equal(t, math.Signbit(want), math.Signbit(float64(got)), "FromF16 n=%d: [%d] = %#04x → %v: sign bit", n, i, b, got)
					}
				}
			}
		}
	})
}

func BenchmarkToF16(b *testing.B) {
	x, dst := benchRow(-20, 20), make([]uint16, benchN)
	benchImpls(b, func(b *testing.B) {
		for range b.N {
			ToF16(dst, x)
		}
	})
}

func BenchmarkFromF16(b *testing.B) {
	src, dst := make([]uint16, benchN), make([]float32, benchN)
	ToF16(src, benchRow(-20, 20))
	benchImpls(b, func(b *testing.B) {
		for range b.N {
			FromF16(dst, src)
		}
	})
}

// TestAxpy16: Axpy16 adds alpha times each 16-bit element, widened as
// backend.BF16Float or backend.F16Float widens it, the product and the
// sum each rounded to float32 (as Axpy on the widened x), over every tail
// length and every class of 16-bit pattern.
func TestAxpy16(t *testing.T) {
	forImpls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(57, 58))
		for _, f16 := range []bool{false, true} {
			for _, n := range sizes {
				x := make([]uint16, n)
				for i := range x {
					x[i] = uint16(r.Uint32())
				}
				dst := make([]float32, n)
				for i := range dst {
					dst[i] = float32(r.NormFloat64())
				}
				want := append([]float32(nil), dst...)
				for i, u := range x {
					w := backend.BF16Float(u)
					if f16 {
						w = backend.F16Float(u)
					}
					want[i] = float32(float64(want[i]) + float64(float32(float64(w)*-0.75)))
				}
				Axpy16(dst, x, -0.75, f16)
				checkSame(t, fmt.Sprintf("Axpy16 f16=%v n=%d", f16, n), dst, want)
			}
		}
	})
}
