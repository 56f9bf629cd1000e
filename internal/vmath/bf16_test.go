package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// bf16Cases is a million random float32 bit patterns (every class: NaNs of
// both signs, infinities, subnormals) with the rounding edges put in: ties
// to even below and above, the largest finite value, NaNs whose payload
// lies only in the low 16 bits.
func bf16Cases() []float32 {
	r := rand.New(rand.NewPCG(17, 18))
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = math.Float32frombits(r.Uint32())
	}
	edges := []uint32{
		0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001, 0x7f7fffff, 0xff7fffff, 0x7f7f8000,
		0x7f800000, 0xff800000, 0x7f800001, 0xff800001, 0x7fc00000, 0x00008000, 0x80018000, 0, 0x80000000,
	}
	for i, u := range edges {
		x[i] = math.Float32frombits(u)
	}
	return x
}

func TestToBF16(t *testing.T) {
	x := bf16Cases()
	forImpls(t, func(t *testing.T) {
		for _, n := range append(sizes, len(x)) {
			dst := make([]uint16, n+8)
			for i := range dst {
				dst[i] = 0xdead
			}
			ToBF16(dst[:n], x[:n])
			for i, v := range x[:n] {
				if want := backend.BF16Bits(v); dst[i] != want {
					require.Equal(t, want, dst[i], "ToBF16 n=%d: [%d] = %#08x", n, i, math.Float32bits(v))
				}
			}
			for i := n; i < n+8; i++ {
				require.Equal(t, uint16(0xdead), dst[i], "ToBF16 n=%d wrote past the end at %d", n, i)
			}
		}
	})
}

func TestFromBF16(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	forImpls(t, func(t *testing.T) {
		for _, n := range append(sizes, len(src)) {
			dst, check := guarded(n)
			FromBF16(dst, src[:n])
			check(t, fmt.Sprintf("FromBF16 n=%d", n))
			for i, b := range src[:n] {
				if want := backend.BF16Float(b); math.Float32bits(dst[i]) != math.Float32bits(want) {
					require.Equal(t, math.Float32bits(want), math.Float32bits(dst[i]), "FromBF16 n=%d: [%d] = %#04x → %v, want %v (bits)", n, i, b, dst[i], want)
				}
			}
		}
	})
}
