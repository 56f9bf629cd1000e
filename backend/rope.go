package backend

import "math"

// RopeTable is the rotary embedding's table for seqLen positions of head
// dim D (even): for position p and pair i < D/2, with θ_i = base^(−2i/D),
//
//	table[(p·D/2 + i)·2]     = cos(p·θ_i)
//	table[(p·D/2 + i)·2 + 1] = sin(p·θ_i)
//
// computed in float64 and rounded to float32, the values every backend's
// QKNormRope uses.
func RopeTable(seqLen, D int, base float32) []float32 {
	half := D / 2
	t := make([]float32, seqLen*half*2)
	for i := range half {
		theta := math.Pow(float64(base), -2*float64(i)/float64(D))
		for p := range seqLen {
			sn, cs := math.Sincos(float64(p) * theta)
			t[(p*half+i)*2], t[(p*half+i)*2+1] = float32(cs), float32(sn)
		}
	}
	return t
}
