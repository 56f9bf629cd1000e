package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkOnlineSoftmax runs one register tile (14 rows) of attention
// scores through a first key block (every row rescales from m = −Inf) and
// a later one (the maximum mostly stays), at 128 and 256 keys, per
// implementation, in scores per second:
//
//	go test -run NONE -bench OnlineSoftmax ./internal/vmath/
func BenchmarkOnlineSoftmax(b *testing.B) {
	const rows, d = 14, 64
	saved := useAsm
	defer func() { useAsm = saved }()
	for _, width := range []int{128, 256} {
		for _, first := range []bool{true, false} {
			for _, asm := range []bool{false, true} {
				if asm && !saved {
					continue
				}
				name := map[bool]string{false: "go", true: "asm"}[asm]
				b.Run(fmt.Sprintf("keys=%d/first=%v/%s", width, first, name), func(b *testing.B) {
					useAsm = asm
					r := rand.New(rand.NewPCG(1, 1))
					src := make([]float32, rows*width)
					for i := range src {
						src[i] = -8 + 8*r.Float32()
					}
					s, o := make([]float32, rows*width), make([]float32, rows*d)
					m, l := make([]float32, rows), make([]float64, rows)
					for range b.N {
						copy(s, src)
						for i := range m {
							m[i], l[i] = float32(math.Inf(-1)), 0
							if !first {
								m[i], l[i] = 0, 1
							}
						}
						OnlineSoftmax(s, width, rows, width, width-rows+1, o, d, d, m, l)
					}
					b.ReportMetric(float64(b.N)*rows*float64(width)/b.Elapsed().Seconds()/1e6, "Mscore/s")
				})
			}
		}
	}
}
