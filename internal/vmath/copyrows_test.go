package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCopyRows: every element of each row lands at its place, bits kept
// (NaN payloads, negative zeros), and nothing between or after the rows of
// dst is written, for widths the vector kernel takes (multiples of 16,
// with and without a tail of four vectors) and widths it leaves to copy.
func TestCopyRows(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	forImpls(t, func(t *testing.T) {
		for _, cols := range []int{16, 32, 48, 64, 80, 128, 144, 1, 17, 63} {
			for _, rows := range []int{1, 2, 7} {
				lds, ldd := cols+r.IntN(40), cols+r.IntN(3)*16
				src := make([]float32, (rows-1)*lds+cols)
				for i := range src {
					src[i] = math.Float32frombits(r.Uint32())
				}
				const sentinel = 0x7fc0dead
				dst := make([]float32, rows*ldd+16)
				for i := range dst {
					dst[i] = math.Float32frombits(sentinel)
				}
				CopyRows(dst, ldd, src, lds, rows, cols)
				for i, v := range dst {
					row, col := i/ldd, i%ldd
					want := uint32(sentinel)
					if row < rows && col < cols {
						want = math.Float32bits(src[row*lds+col])
					}
					if math.Float32bits(v) != want {
						require.Equal(t, want, math.Float32bits(v), "cols %d rows %d lds %d ldd %d: dst[%d] (row %d, col %d)", cols, rows, lds, ldd, i, row, col)
					}
				}
			}
		}
	})
}

func TestCopyRowsPanics(t *testing.T) {
	assert.Panics(t, func() { CopyRows(make([]float32, 64), 8, make([]float32, 64), 16, 2, 16) }, "cols wider than ldd")
	assert.Panics(t, func() { CopyRows(make([]float32, 64), 16, make([]float32, 20), 16, 2, 16) }, "src too short")
	assert.NotPanics(t, func() { CopyRows(nil, 0, nil, 0, 0, 16) }, "no rows")
}

// BenchmarkCopyRows copies an attention head's rows out of activations
// far larger than the caches (64 floats a row, 512 apart: 8 heads of 64;
// 64 MiB), by CopyRows and by a copy per row, into a tile that stays in
// L1.
func BenchmarkCopyRows(b *testing.B) {
	const cols, lds, rows, tile = 64, 512, 1 << 15, 256
	src := make([]float32, lds*rows)
	for i := range src {
		src[i] = float32(i & 1023) // pages of their own, not the zero page
	}
	dst := make([]float32, cols*tile)
	run := func(b *testing.B, f func(r0 int)) {
		for b.Loop() {
			for r0 := 0; r0 < rows; r0 += tile {
				f(r0)
			}
		}
		b.SetBytes(cols * 4 * rows)
	}
	b.Run("CopyRows", func(b *testing.B) {
		run(b, func(r0 int) { CopyRows(dst, cols, src[r0*lds:], lds, tile, cols) })
	})
	b.Run("copy", func(b *testing.B) {
		run(b, func(r0 int) {
			for r := range tile {
				copy(dst[r*cols:(r+1)*cols], src[(r0+r)*lds:(r0+r)*lds+cols])
			}
		})
	})
}

// TestWidenNarrowRows: WidenRows gives each pattern's float32 (the
// backend's definitions of both formats, every class of pattern) and
// NarrowRows each float32's rounding (ties, subnormals, overflow, NaNs:
// for binary16 any NaN of the sign), at its place, writing nothing else.
func TestWidenNarrowRows(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	wide := bf16Cases()
	forHalves(t, func(t *testing.T, h half16) {
		for _, cols := range []int{16, 64, 80, 1, 24} {
			for _, rows := range []int{1, 3} {
				lds, ldd := cols+r.IntN(20), cols+r.IntN(3)*16
				src16 := make([]uint16, (rows-1)*lds+cols)
				for i := range src16 {
					src16[i] = uint16(r.Uint32())
				}
				dst := make([]float32, rows*ldd+16)
				for i := range dst {
					dst[i] = -7
				}
				WidenRows(h.f, dst, ldd, src16, lds, rows, cols)
				for i, v := range dst {
					row, col := i/ldd, i%ldd
					if row >= rows || col >= cols {
						require.Equal(t, float32(-7), v, "cols %d rows %d: WidenRows wrote dst[%d]", cols, rows, i)
						continue
					}
					want := h.widen(src16[row*lds+col])
					if !same(v, want) {
						require.Equal(t, math.Float32bits(want), math.Float32bits(v), "cols %d rows %d: widened [%d,%d]", cols, rows, row, col)
					}
				}

				srcF := make([]float32, (rows-1)*lds+cols)
				for i := range srcF {
					srcF[i] = wide[r.IntN(len(wide))]
				}
				srcF[0] = wide[r.IntN(16)] // a rounding edge
				d16 := make([]uint16, rows*ldd+16)
				for i := range d16 {
					d16[i] = 0xdead
				}
				NarrowRows(h.f, d16, ldd, srcF, lds, rows, cols)
				for i, v := range d16 {
					row, col := i/ldd, i%ldd
					if row >= rows || col >= cols {
						require.Equal(t, uint16(0xdead), v, "cols %d rows %d: NarrowRows wrote dst[%d]", cols, rows, i)
						continue
					}
					want := h.round(srcF[row*lds+col])
					same16(t, h, fmt.Sprintf("cols %d rows %d: narrowed [%d,%d] of %#x", cols, rows, row, col, math.Float32bits(srcF[row*lds+col])), []uint16{v}, []uint16{want})
				}
			}
		}
	})
}
