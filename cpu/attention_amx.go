package cpu

import (
	"math"
	"unsafe"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
	"github.com/golf-ml/golf/internal/vmath"
)

// Attention on AMX tiles (bf16 where gemm.AMX): the loops of
// forwardUnit with the products on gemm.MulPairs. Q, K and V enter the
// tiles as they are stored (bfloat16). The probabilities P, float32 out of
// the online softmax, enter as three bfloat16 terms (gemm.SplitPairs3: P
// to within 2⁻²⁷ of itself) multiplied by V in one pass, so P·V
// keeps float32's accuracy rather than bfloat16's (which MLX's and
// FlashAttention's kernels settle for). The tiles sum in their own order,
// so the results are the float32 loop's to within float32's rounding
// error, not bitwise (TestRoundOnceAMX); they are the same on every run
// and at any GOMAXPROCS, and a row's results do not depend on the unit or
// tile it is computed in.

// attAMX reports whether attention in dtype dt with head size D runs on
// AMX tiles: bf16, AMX on, and heads a whole number of tile columns.
func attAMX(dt backend.DType, D int) bool {
	return dt == backend.BF16 && gemm.AMX() && D%gemm.AMXCols == 0
}

// words views a float32 buffer as 32-bit words (pair-packed operands).
func words(f []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

// amxAttLayout is the pair packing of one sequence's keys and values for
// a head of size D: Kᵀ as the B of S = Q·Kᵀ (⌈T/32⌉ panels of kqD pair
// rows, K = D) and V as the B of P·V (D/32 panels of kqT pair rows,
// K = T).
type amxAttLayout struct {
	kqD, kqT   int // pair rows: of D, of T, each a whole number of tile steps
	ldpK, ldpV int // words between panels
	kLen, vLen int // words per head
}

func newAMXAttLayout(T, D int) amxAttLayout {
	var l amxAttLayout
	l.kqD = roundUp((D+1)/2, gemm.AMXPairs)
	l.kqT = roundUp((T+1)/2, gemm.AMXPairs)
	l.ldpK, l.ldpV = l.kqD*gemm.AMXCols, l.kqT*gemm.AMXCols
	l.kLen = roundUp(T, gemm.AMXCols) / gemm.AMXCols * l.ldpK
	l.vLen = D / gemm.AMXCols * l.ldpV
	return l
}

// forwardUnitAMX is forwardUnit on AMX tiles: query blocks of
// gemm.AMXRows rows, key blocks of attTile.keys.
func (l *attLoop) forwardUnitAMX(w, unit int) {
	b, T, D, H, Hkv, hg := l.b, l.T, l.D, l.H, l.Hkv, l.heads
	G, mr, attKeys := H/Hkv, gemm.AMXRows, attTile.keys
	n0, g := unit/(Hkv/hg)*T, unit%(Hkv/hg)
	lay := newAMXAttLayout(T, D)
	kTs := words(b.buf(w, bufKT, hg*lay.kLen))
	vPs := words(b.buf(w, bufV, hg*lay.vLen))
	k16, v16 := u16s(l.k), u16s(l.v)
	for i := range hg {
		off := n0*Hkv*D + (g*hg+i)*D
		gemm.PairPanels(kTs[i*lay.kLen:], lay.ldpK, k16[off:], Hkv*D, true, D, T)
		gemm.PairPanels(vPs[i*lay.vLen:], lay.ldpV, v16[off:], Hkv*D, false, T, D)
	}
	W := hg * G * D
	qa := words(b.buf(w, bufQ, mr*lay.kqD))
	s, o := b.buf(w, bufS, mr*attKeys), b.buf(w, bufO, mr*W)
	pa := words(b.buf(w, bufDP, mr*3*attKeys/2)) // P's three terms, side by side
	mrow, lrow := b.buf(w, bufRow, hg*G*mr), b.dbuf(w, hg*G*mr)
	q16 := u16s(l.q)
	for t0, rr := 0, (T-1)%mr+1; t0 < T; t0, rr = t0+rr, mr {
		for i := range hg * G * mr {
			mrow[i] = float32(math.Inf(-1))
			lrow[i] = 0
		}
		clear(o[:rr*W])
		tEnd := t0 + rr
		for j := range hg * G { // query head g·hg·G + j, kv head g·hg + j/G
			kT, vP, ot := kTs[j/G*lay.kLen:], vPs[j/G*lay.vLen:], o[j*D:]
			m, lsum := mrow[j*mr:], lrow[j*mr:]
			gemm.PairRows(qa, lay.kqD, q16[(n0+t0)*H*D+(g*hg*G+j)*D:], H*D, rr, D)
			clear(qa[rr*lay.kqD:])
			for u0 := 0; u0 < tEnd; u0 += attKeys {
				n := min(attKeys, tEnd-u0)
				n32 := roundUp(n, gemm.AMXK)
				gemm.MulPairs(mr, n32, lay.kqD, qa, lay.kqD, kT[u0/gemm.AMXCols*lay.ldpK:], lay.ldpK, s, attKeys, l.scale, false)
				vmath.OnlineSoftmax(s, attKeys, rr, n32, t0-u0+1, ot, W, D, m, lsum)
				// P (rows past rr are zero: their queries were) as three
				// bfloat16 terms, multiplied by V in one pass.
				kq := n32 / 2
				gemm.SplitPairs3(pa, pa[kq:], pa[2*kq:], 3*kq, s, attKeys, mr, n32)
				gemm.MulPairsRepeat(mr, D, kq, 3, pa, 3*kq, vP[u0/2*gemm.AMXCols:], lay.ldpV, ot, W, 1, true)
			}
			vmath.OnlineSoftmaxEnd(ot, W, rr, D, lsum)
			for r := range rr {
				l.lse[(n0+t0+r)*H+g*hg*G+j] = m[r] + float32(math.Log(lsum[r]))
			}
		}
		storeHeadRows(l.out, o, n0+t0, rr, Hkv/hg, g, W)
	}
}

// ReorderedSums reports whether this backend's products in dt sum in
// another order than its float32 ones (see backendtest.ReorderedSums):
// bf16 and f16 where gemm.AMX, whose tiles add in an order of their own.
func (b *Backend) ReorderedSums(dt backend.DType) bool {
	return (dt == backend.BF16 || dt == backend.F16) && gemm.AMX()
}

// backwardUnitAMX is backwardUnit on AMX tiles, for kv head hk over one
// sequence: query blocks of R rows (a whole number of tile rows), key
// blocks of attTile.keys. Per key block, S = scale·Q·Kᵀ and dP = dO·Vᵀ
// on the tiles (bfloat16 operands as stored); SoftmaxGrad turns them into
// P and dS in float32. Then, with P and dS as three bfloat16 terms each:
// dVᵀ += dOᵀ·P and dKᵀ += Qᵀ·dS, P and dS the B operands as they lie
// (gemm.SplitPanels3 pairs their rows; dOᵀ and Qᵀ are the A operands,
// their pairs repeated thrice), and dQ += dS·K (gemm.SplitPairs3). dVᵀ
// and dKᵀ are transposed once, at the end of the unit; dK and dQ are
// summed unscaled and multiplied by scale once, before they are stored.
func (l *attLoop) backwardUnitAMX(w, unit int) {
	b, T, D, H, Hkv := l.b, l.T, l.D, l.H, l.Hkv
	G, attKeys, mr := H/Hkv, attTile.keys, gemm.AMXRows
	R := roundUp(attRows(), mr)
	kR := roundUp(R, gemm.AMXK) // query rows as a contraction, zero-padded
	n0, hk := unit/Hkv*T, unit%Hkv
	lay := newAMXAttLayout(T, D)
	kqR := kR / 2
	ldpR := kqR * gemm.AMXCols
	k16, v16, q16, g16 := u16s(l.k), u16s(l.v), u16s(l.q), u16s(l.dout)
	off := n0*Hkv*D + hk*D
	kT := words(b.buf(w, bufKT, lay.kLen))
	vT := words(b.buf(w, bufV, lay.kLen))
	kP := words(b.buf(w, bufKP, lay.vLen))
	gemm.PairPanels(kT, lay.ldpK, k16[off:], Hkv*D, true, D, T)
	gemm.PairPanels(vT, lay.ldpK, v16[off:], Hkv*D, true, D, T)
	gemm.PairPanels(kP, lay.ldpV, k16[off:], Hkv*D, false, T, D)
	// dKᵀ and dVᵀ (D rows of the sequence's keys, up to a whole number of
	// tile columns: a last key block's products run past T, adding zeros).
	ldT := roundUp(T, gemm.AMXCols)
	dKT, dVT := b.buf(w, bufDK, D*ldT), b.buf(w, bufDV, D*ldT)
	clear(dKT)
	clear(dVT)
	qa, ga := words(b.buf(w, bufQ, R*lay.kqD)), words(b.buf(w, bufG, R*lay.kqD))
	qP, gP := words(b.buf(w, bufQP, D/gemm.AMXCols*ldpR)), words(b.buf(w, bufGP, D/gemm.AMXCols*ldpR))
	qA3, gA3 := words(b.buf(w, bufQA3, D*3*kqR)), words(b.buf(w, bufGA3, D*3*kqR))
	s, dp, dQ := b.buf(w, bufS, R*attKeys), b.buf(w, bufDP, R*attKeys), b.buf(w, bufO, R*D)
	splitB := words(b.buf(w, bufSplitT, attKeys*3*kqR))
	splitR := words(b.buf(w, bufSplitR, R*3*attKeys/2))
	rowv := b.buf(w, bufRow, 2*R)
	lseR, delta := rowv[:R], rowv[R:2*R]
	rowsW := b.buf(w, bufOut, 2*R*D) // the block's dout rows, then its out rows, widened
	for j := range G {
		h := hk*G + j
		for t0 := 0; t0 < T; t0 += R {
			rr := min(R, T-t0)
			rq := roundUp(rr, mr) // rows on the tiles; those past rr are zero
			kq := rq / 2          // their pairs, as the contraction of dVᵀ and dKᵀ
			qoff := (n0+t0)*H*D + h*D
			gW, oW := rowsW[:rr*D], rowsW[R*D:R*D+rr*D]
			headRows(gW, l.dout, n0+t0, rr, H, h, D)
			headRows(oW, l.out, n0+t0, rr, H, h, D)
			for r := range rr {
				lseR[r] = l.lse[(n0+t0+r)*H+h]
				delta[r] = float32(vmath.Dot64(gW[r*D:(r+1)*D], oW[r*D:(r+1)*D]))
			}
			gemm.PairRows(qa, lay.kqD, q16[qoff:], H*D, rr, D)
			gemm.PairRows(ga, lay.kqD, g16[qoff:], H*D, rr, D)
			clear(qa[rr*lay.kqD : rq*lay.kqD])
			clear(ga[rr*lay.kqD : rq*lay.kqD])
			// Qᵀ and dOᵀ as A operands: the pairs of two query rows, the
			// words of PairPanels' panels transposed, thrice along each row.
			gemm.PairPanels(qP, ldpR, q16[qoff:], H*D, false, rr, D)
			gemm.PairPanels(gP, ldpR, g16[qoff:], H*D, false, rr, D)
			for t := range D / gemm.AMXCols {
				for rep := range 3 {
					gemm.TransposeWords(qA3[t*gemm.AMXCols*3*kq+rep*kq:], 3*kq, qP[t*ldpR:], gemm.AMXCols, kq, gemm.AMXCols)
					gemm.TransposeWords(gA3[t*gemm.AMXCols*3*kq+rep*kq:], 3*kq, gP[t*ldpR:], gemm.AMXCols, kq, gemm.AMXCols)
				}
			}
			clear(dQ[:rq*D])
			tEnd := t0 + rr
			for u0 := 0; u0 < tEnd; u0 += attKeys {
				nk := min(attKeys, tEnd-u0)
				n32 := roundUp(nk, gemm.AMXK)
				gemm.MulPairs(rq, n32, lay.kqD, qa, lay.kqD, kT[u0/gemm.AMXCols*lay.ldpK:], lay.ldpK, s, attKeys, l.scale, false)
				gemm.MulPairs(rq, n32, lay.kqD, ga, lay.kqD, vT[u0/gemm.AMXCols*lay.ldpK:], lay.ldpK, dp, attKeys, 1, false)
				for r := range rr {
					ps, ds := s[r*attKeys:r*attKeys+n32], dp[r*attKeys:r*attKeys+n32]
					cnt := max(0, min(nk, t0+r-u0+1))
					vmath.SoftmaxGrad(ps[:cnt], ds[:cnt], lseR[r], delta[r])
					clear(ps[cnt:])
					clear(ds[cnt:])
				}
				// Rows rr..rq of s and dp are zero (their queries and
				// douts were). dVᵀ += dOᵀ·P, dKᵀ += Qᵀ·dS over the
				// block's keys.
				ldp := 3 * kq * gemm.AMXCols
				gemm.SplitPanels3(splitB, ldp, s, attKeys, rq, n32)
				gemm.MulPairs(D, n32, 3*kq, gA3, 3*kq, splitB, ldp, dVT[u0:], ldT, 1, true)
				gemm.SplitPanels3(splitB, ldp, dp, attKeys, rq, n32)
				gemm.MulPairs(D, n32, 3*kq, qA3, 3*kq, splitB, ldp, dKT[u0:], ldT, 1, true)
				// dQ += dS·K.
				kqk := n32 / 2
				gemm.SplitPairs3(splitR, splitR[kqk:], splitR[2*kqk:], 3*kqk, dp, attKeys, rq, n32)
				gemm.MulPairsRepeat(rq, D, kqk, 3, splitR, 3*kqk, kP[u0/2*gemm.AMXCols:], lay.ldpV, dQ, D, 1, true)
			}
			vmath.Scale(dQ[:rr*D], dQ[:rr*D], l.scale)
			storeHeadRows(l.dq, dQ, n0+t0, rr, H, h, D)
		}
	}
	tmp := b.buf(w, bufTmp, T*D)
	gemm.Transpose(tmp, D, dKT, ldT, D, T)
	vmath.Scale(tmp, tmp, l.scale)
	storeHeadRows(l.dk, tmp, n0, T, Hkv, hk, D)
	gemm.Transpose(tmp, D, dVT, ldT, D, T)
	storeHeadRows(l.dv, tmp, n0, T, Hkv, hk, D)
}

// AttentionScratchBytes is the scratch one participant of the attention
// loops holds after AttentionForward and AttentionBackward over sequences
// of T rows in dtype dt (H query and Hkv key/value heads of size D): the
// largest request of each participant buffer over the two passes, on the
// path dt takes here (AMX tiles or the float32 loop). TestAttentionScratch
// pins it to what the loops ask for.
func AttentionScratchBytes(T, H, Hkv, D int, dt backend.DType) int64 {
	if T <= 0 || D <= 0 || Hkv <= 0 || H%Hkv != 0 {
		return 0
	}
	G, attKeys, hg := H/Hkv, attTile.keys, fwdHeads(T, Hkv, D)
	W := hg * G * D
	var fwd, bwd [bufCount]int
	var fwdD int
	if attAMX(dt, D) {
		mr := gemm.AMXRows
		lay := newAMXAttLayout(T, D)
		fwd[bufKT], fwd[bufV] = hg*lay.kLen, hg*lay.vLen
		fwd[bufQ], fwd[bufS], fwd[bufO] = mr*lay.kqD, mr*attKeys, mr*W
		fwd[bufDP], fwd[bufRow], fwdD = mr*3*attKeys/2, hg*G*mr, hg*G*mr
		R := roundUp(attRows(), mr)
		kqR := roundUp(R, gemm.AMXK) / 2
		ldT := roundUp(T, gemm.AMXCols)
		bwd[bufKT], bwd[bufV], bwd[bufKP] = lay.kLen, lay.kLen, lay.vLen
		bwd[bufDK], bwd[bufDV], bwd[bufTmp] = D*ldT, D*ldT, T*D
		bwd[bufQ], bwd[bufG] = R*lay.kqD, R*lay.kqD
		bwd[bufQP], bwd[bufGP] = D/gemm.AMXCols*kqR*gemm.AMXCols, D/gemm.AMXCols*kqR*gemm.AMXCols
		bwd[bufQA3], bwd[bufGA3] = D*3*kqR, D*3*kqR
		bwd[bufS], bwd[bufDP], bwd[bufO] = R*attKeys, R*attKeys, R*D
		bwd[bufSplitT], bwd[bufSplitR], bwd[bufRow], bwd[bufOut] = attKeys*3*kqR, R*3*attKeys/2, 2*R, 2*R*D
	} else {
		mr := gemm.TileRows()
		fwd[bufTmp], fwd[bufKT], fwd[bufV] = T*D, hg*gemm.PackedBLen(D, T), hg*gemm.PackedBLen(T, D)
		fwd[bufQ], fwd[bufS], fwd[bufO] = mr*W, mr*attKeys, mr*W
		fwd[bufRow], fwdD, fwd[bufMul] = hg*G*mr, hg*G*mr, gemm.MulScratchLen(max(D, attKeys))
		R := attRows()
		bwd[bufTmp], bwd[bufKT], bwd[bufKP], bwd[bufV] = T*D, gemm.PackedBLen(D, T), gemm.PackedBLen(T, D), gemm.PackedBLen(D, T)
		bwd[bufDK], bwd[bufDV] = T*D, T*D
		bwd[bufQ], bwd[bufG], bwd[bufOut] = R*D, R*D, R*D
		bwd[bufQP], bwd[bufGP] = gemm.PackedBLen(R, D), gemm.PackedBLen(R, D)
		bwd[bufS], bwd[bufDP], bwd[bufO] = R*attKeys, R*attKeys, R*D
		bwd[bufRow], bwd[bufMul] = 2*R, gemm.MulScratchLen(max(D, attKeys, R))
	}
	n := 0
	for k := range bufCount {
		n += max(fwd[k], bwd[k])
	}
	return 4*int64(n) + 8*int64(fwdD)
}
