package cpu

import (
	"math"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/internal/gemm"
	"github.com/golf-ml/golf/internal/parallel"
	"github.com/golf-ml/golf/internal/vmath"
)

// Flash-style causal attention. Work is split over units (a sequence and
// one kv head, or in the forward pass a group of kv heads); a unit packs
// its keys and values once (as the micro-panels the GEMM micro-kernel
// reads) and then runs every query block of every query head of its group
// against them, key block by key block, with an online softmax: nothing
// larger than a query block × key block tile of scores is ever held, per
// participant. All products are gemm.MulPacked calls on float32 tiles
// (bf16 and f16 operands widened as they are loaded, so the arithmetic is
// the same in every dtype), each summed over its k in order.
//
// attTile holds the tile sizes: keys per key block (a multiple of every
// kernel's nr), register tiles of query rows per backward query block, and
// the forward pass's budget of packed key (or value) floats per unit
// (fwdHeads). Tests shrink them to cross many blocks with short sequences.
var attTile = struct{ keys, rowTiles, fwdPack int }{keys: 256, rowTiles: 8, fwdPack: 1 << 16}

// attRows is the number of query rows per backward block: a whole number
// of the micro-kernel's register tiles.
func attRows() int { return attTile.rowTiles * gemm.TileRows() }

// Participant buffers of the attention loops (Backend.buf indices).
const (
	bufTmp    = iota // K or V rows of the unit, (T, D); AMX backward: dK or dV
	bufKT            // Kᵀ packed: B of S = Q·Kᵀ
	bufV             // V packed (forward: B of P·V) or Vᵀ packed (backward: B of dO·Vᵀ)
	bufKP            // K packed: B of dQ = dS·K
	bufQ             // query tile (R, D); forward: (mr, W) of all the unit's heads
	bufS             // scores, then P (R, attKeys)
	bufO             // output accumulator (forward, like bufQ) or dQ accumulator (backward, (R, D))
	bufDP            // dP, then dS (R, attKeys)
	bufG             // dout tile (R, D)
	bufOut           // out tile (R, D)
	bufQP            // Q tile packed: B of dK += dSᵀ·Q
	bufGP            // dout tile packed: B of dV += Pᵀ·dO
	bufDK            // dK of the unit, (T, D); AMX: dKᵀ, (D, T)
	bufDV            // dV of the unit, (T, D); AMX: dVᵀ, (D, T)
	bufMul           // gemm.MulPacked scratch
	bufRow           // per-row running max (forward) or lse and δ (backward)
	bufQA3           // AMX backward: Qᵀ's pairs thrice, A of dKᵀ += Qᵀ·dS
	bufGA3           // AMX backward: dOᵀ's pairs thrice, A of dVᵀ += dOᵀ·P
	bufSplitT        // AMX backward: P or dS as three bfloat16 terms, B panels
	bufSplitR        // AMX backward: dS's three bfloat16 terms in pair rows
	bufCount
)

// attShapes checks q, out (N, H, D), k, v (N, Hkv, D), lse (N, H), with N a
// multiple of seqLen and H a multiple of Hkv; it returns N, H, Hkv, D.
func attShapes(op string, out, lse, q, k, v *backend.Tensor, seqLen int) (N, H, Hkv, D int) {
	s := wantRank(op, "q", q, 3)
	N, H, D = s[0], s[1], s[2]
	Hkv = wantRank(op, "k", k, 3)[1]
	wantShape(op, "k", k, N, Hkv, D)
	wantShape(op, "v", v, N, Hkv, D)
	wantShape(op, "out", out, N, H, D)
	wantShape(op, "lse", lse, N, H)
	if Hkv == 0 || H%Hkv != 0 {
		fail(op, "q heads %d not a multiple of k heads %d", H, Hkv)
	}
	if seqLen <= 0 || N%seqLen != 0 {
		fail(op, "rows %d not a multiple of seqLen %d", N, seqLen)
	}
	return N, H, Hkv, D
}

// headRows loads head h (of Hx) of rows [n0, n0+R) of t (·, Hx, D) into dst
// (R·D).
func headRows(dst []float32, t *backend.Tensor, n0, R, Hx, h, D int) {
	off := (n0*Hx + h) * D
	if f, ok := half16(t); ok {
		vmath.WidenRows(f, dst, D, u16s(t)[off:], Hx*D, R, D)
		return
	}
	vmath.CopyRows(dst, D, f32s(t)[off:], Hx*D, R, D)
}

// headTile returns head h (of Hx) of rows [n0, n0+R) of t (·, Hx, D) as
// float32 rows of stride ld, copied (or widened) into buf with ld = D:
// read in place, a tile's rows would lie Hx·D floats apart (2 KiB at the
// baseline's shapes), where the micro-kernel's fourteen rows fall into
// one or two L1 sets and evict each other; contiguous, the tile is reused
// from L1 for every key tile.
func headTile(buf []float32, t *backend.Tensor, n0, R, Hx, h, D int) (rows []float32, ld int) {
	headRows(buf, t, n0, R, Hx, h, D)
	return buf, D
}

// packHead packs head h of rows [n0, n0+T) of t (·, Hx, D) for the
// micro-kernel: as B = headᵀ (D × T) when trans, else B = head (T × D).
// F32 and BF16 are read in place; F16 is widened into tmp (T·D) first.
func packHead(dst, tmp []float32, t *backend.Tensor, n0, T, Hx, h, D int, trans bool) {
	k, n := T, D
	if trans {
		k, n = D, T
	}
	off, ld := (n0*Hx+h)*D, Hx*D
	switch t.DType {
	case backend.F32:
		gemm.PackB(dst, f32s(t)[off:], ld, trans, k, n)
	case backend.BF16:
		// tmp (T·D) covers PackB16's scratch (nr·k) when T ≥ nr; shorter
		// sequences widen first.
		if len(tmp) >= gemm.PackB16ScratchLen(k) {
			gemm.PackB16(dst, u16s(t)[off:], ld, trans, k, n, tmp)
			return
		}
		headRows(tmp, t, n0, T, Hx, h, D)
		gemm.PackB(dst, tmp, D, trans, k, n)
	default:
		headRows(tmp, t, n0, T, Hx, h, D)
		gemm.PackB(dst, tmp, D, trans, k, n)
	}
}

// storeHeadRows rounds src (R·D) into head h of rows [n0, n0+R) of t.
func storeHeadRows(t *backend.Tensor, src []float32, n0, R, Hx, h, D int) {
	off := (n0*Hx + h) * D
	if f, ok := half16(t); ok {
		vmath.NarrowRows(f, u16s(t)[off:], Hx*D, src, D, R, D)
		return
	}
	vmath.CopyRows(f32s(t)[off:], Hx*D, src, D, R, D)
}

// attLoop is the body of AttentionForward and AttentionBackward over
// units (sequence, kv head).
type attLoop struct {
	b                  *Backend
	backward           bool
	amx                bool // the products on AMX tiles (attAMX)
	T, H, Hkv, D       int
	heads              int // kv heads per forward unit (fwdHeads)
	scale              float32
	q, k, v, out, dout *backend.Tensor
	dq, dk, dv         *backend.Tensor
	lse                []float32
}

func (l *attLoop) Run(w, lo, hi int) {
	for unit := lo; unit < hi; unit++ {
		if l.backward && l.amx {
			l.backwardUnitAMX(w, unit)
		} else if l.backward {
			l.backwardUnit(w, unit)
		} else if l.amx {
			l.forwardUnitAMX(w, unit)
		} else {
			l.forwardUnit(w, unit)
		}
	}
}

// runAttention runs the attention loop over N/T·Hkv units (b.mu held).
func (b *Backend) runAttention(units int, l attLoop) {
	b.begin()
	a := &b.loops.att
	*a = l
	a.b = b
	parallel.For(units, 1, a)
	*a = attLoop{}
}

// AttentionForward is causal grouped-query attention over sequences of
// seqLen = T rows; query head h reads key/value head h/(H/Hkv):
//
//	s[t,u] = scale·q[t,h]·k[u,hk] for u ≤ t, scale = 1/sqrt(D)
//	lse[t,h] = log Σu exp(s[t,u]);  out[t,h] = Σu exp(s[t,u]−lse)·v[u,hk]
//	out, q CD (N, H, D), k, v CD (N, Hkv, D), lse F32 (N, H)
//
// Per query row, key blocks are visited in order with an online softmax
// (vmath.OnlineSoftmax): m the running maximum, ℓ the running Σ exp(s − m)
// (each block's sum in 16 float32 lanes, combined in float64, added to ℓ in
// float64), o the running Σ exp(s − m)·v; a new block with maximum m' > m
// rescales ℓ and o by exp(m − m'). exp is vmath.ExpFMA. Finally
// out = o·float32(1/ℓ) and lse = m + log ℓ. A row's results depend only on
// the row and the block sizes, not on the unit or tile it is computed in.
func (b *Backend) AttentionForward(out, lse, q, k, v *backend.Tensor, seqLen int) {
	const op = "AttentionForward"
	wantCD(op, []string{"out", "q", "k", "v"}, out, q, k, v)
	wantF32(op, []string{"lse"}, lse)
	N, H, Hkv, D := attShapes(op, out, lse, q, k, v, seqLen)
	if N == 0 || D == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	hg := fwdHeads(seqLen, Hkv, D)
	b.runAttention(N/seqLen*(Hkv/hg), attLoop{amx: attAMX(q.DType, D), T: seqLen, H: H, Hkv: Hkv, D: D, heads: hg, scale: float32(1 / math.Sqrt(float64(D))),
		q: q, k: k, v: v, out: out, lse: f32s(lse)})
}

// fwdHeads is the number of kv heads a forward unit takes: the most (a
// divisor of Hkv) whose packed keys and values stay within
// attTile.fwdPack floats each. Units of several heads read q and write out
// in whole rows of all their query heads, sequentially, where the
// hardware prefetchers keep up; one head of a long sequence already fills
// the budget and reuses its keys across many query blocks.
func fwdHeads(T, Hkv, D int) int {
	hg := 1
	for g := 2; g <= Hkv; g++ {
		if Hkv%g == 0 && g*T*D <= attTile.fwdPack {
			hg = g
		}
	}
	return hg
}

// forwardUnit runs every query head of kv heads [g·hg, (g+1)·hg) over one
// sequence, a query block of one register tile (mr rows) at a time: its
// scores for one head and key block stay in L1 from the product that
// writes them through the softmax to the product that reads them.
func (l *attLoop) forwardUnit(w, unit int) {
	b, T, D, H, Hkv, hg := l.b, l.T, l.D, l.H, l.Hkv, l.heads
	G, mr, nr, attKeys := H/Hkv, gemm.TileRows(), gemm.TileCols(), attTile.keys
	n0, g := unit/(Hkv/hg)*T, unit%(Hkv/hg)
	tmp := b.buf(w, bufTmp, T*D)
	kLen, vLen := gemm.PackedBLen(D, T), gemm.PackedBLen(T, D)
	kTs, vPs := b.buf(w, bufKT, hg*kLen), b.buf(w, bufV, hg*vLen)
	for i := range hg {
		packHead(kTs[i*kLen:], tmp, l.k, n0, T, Hkv, g*hg+i, D, true)
		packHead(vPs[i*vLen:], tmp, l.v, n0, T, Hkv, g*hg+i, D, false)
	}
	// A block holds mr query rows of the unit's hg·G query heads: W floats
	// that lie side by side in q and out, read and written in one piece.
	W := hg * G * D
	qT, s, o := b.buf(w, bufQ, mr*W), b.buf(w, bufS, mr*attKeys), b.buf(w, bufO, mr*W)
	mrow, lrow := b.buf(w, bufRow, hg*G*mr), b.dbuf(w, hg*G*mr)
	mul := b.buf(w, bufMul, gemm.MulScratchLen(max(D, attKeys)))
	// The first block takes the T mod mr rows left over by whole register
	// tiles: it sees the fewest keys, so the rows its micro-kernel computes
	// in vain cost the least there.
	for t0, rr := 0, (T-1)%mr+1; t0 < T; t0, rr = t0+rr, mr {
		// An F32 q is read in place; other dtypes are widened into qT.
		qA, qld := qT, W
		if l.q.DType == backend.F32 {
			qA, qld = f32s(l.q)[(n0+t0)*H*D+g*W:], H*D
		} else {
			headRows(qT, l.q, n0+t0, rr, Hkv/hg, g, W)
		}
		for i := range hg * G * mr {
			mrow[i] = float32(math.Inf(-1))
			lrow[i] = 0
		}
		clear(o[:rr*W])
		tEnd := t0 + rr         // keys [0, tEnd)
		for j := range hg * G { // query head g·hg·G + j, kv head g·hg + j/G
			kT, vP, ot := kTs[j/G*kLen:], vPs[j/G*vLen:], o[j*D:]
			m, lsum := mrow[j*mr:], lrow[j*mr:]
			for u0 := 0; u0 < tEnd; u0 += attKeys {
				// Only the keys up to the block's last query: the causal
				// triangle, not the rectangle. Row i sees keys [u0, t0+i];
				// the block's earlier rows see zeros past their diagonal.
				n := min(attKeys, tEnd-u0)
				gemm.MulPacked(rr, roundUp(n, nr), D, l.scale, qA[j*D:], qld, 1, kT[u0/nr*D*nr:], D*nr, 0, s, attKeys, mul)
				vmath.OnlineSoftmax(s, attKeys, rr, n, t0-u0+1, ot, W, D, m, lsum)
				gemm.MulPacked(rr, D, n, 1, s, attKeys, 1, vP[u0*nr:], T*nr, 1, ot, W, mul)
			}
			vmath.OnlineSoftmaxEnd(ot, W, rr, D, lsum)
			for r := range rr {
				l.lse[(n0+t0+r)*H+g*hg*G+j] = m[r] + float32(math.Log(lsum[r]))
			}
		}
		storeHeadRows(l.out, o, n0+t0, rr, Hkv/hg, g, W)
	}
}

// AttentionBackward recomputes P = exp(s − lse) and, with
// δ[t,h] = Σd dout[t,h,d]·out[t,h,d] (float64, rounded to float32):
//
//	dv[u] = Σt P[t,u]·dout[t];  dP = dout·vᵀ;  dS = P·(dP − δ)
//	dq[t] = scale·Σu dS[t,u]·k[u];  dk[u] = scale·Σt dS[t,u]·q[t]
//	dq CD (N, H, D), dk, dv CD (N, Hkv, D), overwritten
//	dout, out, q CD (N, H, D), k, v CD (N, Hkv, D), lse F32 (N, H)
//
// dk and dv sum over the query heads of each group. Each unit (sequence,
// kv head) keeps its dk and dv in float32 and adds into them query block
// after query block, head after head, in a fixed order; key blocks as in
// AttentionForward.
func (b *Backend) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse *backend.Tensor, seqLen int) {
	const op = "AttentionBackward"
	wantCD(op, []string{"dq", "dk", "dv", "dout", "q", "k", "v", "out"}, dq, dk, dv, dout, q, k, v, out)
	wantF32(op, []string{"lse"}, lse)
	N, H, Hkv, D := attShapes(op, out, lse, q, k, v, seqLen)
	wantShape(op, "dq", dq, N, H, D)
	wantShape(op, "dout", dout, N, H, D)
	wantShape(op, "dk", dk, N, Hkv, D)
	wantShape(op, "dv", dv, N, Hkv, D)
	if N == 0 || D == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runAttention(N/seqLen*Hkv, attLoop{backward: true, amx: attAMX(q.DType, D), T: seqLen, H: H, Hkv: Hkv, D: D, scale: float32(1 / math.Sqrt(float64(D))),
		q: q, k: k, v: v, out: out, dout: dout, dq: dq, dk: dk, dv: dv, lse: f32s(lse)})
}

// backwardUnit runs every query head of kv head hk over one sequence.
func (l *attLoop) backwardUnit(w, unit int) {
	b, T, D, H, Hkv := l.b, l.T, l.D, l.H, l.Hkv
	G, R, mr, nr, attKeys := H/Hkv, attRows(), gemm.TileRows(), gemm.TileCols(), attTile.keys
	n0, hk := unit/Hkv*T, unit%Hkv
	tmp := b.buf(w, bufTmp, T*D)
	kT := b.buf(w, bufKT, gemm.PackedBLen(D, T))
	kP := b.buf(w, bufKP, gemm.PackedBLen(T, D))
	vT := b.buf(w, bufV, gemm.PackedBLen(D, T))
	packHead(kT, tmp, l.k, n0, T, Hkv, hk, D, true)
	packHead(kP, tmp, l.k, n0, T, Hkv, hk, D, false)
	packHead(vT, tmp, l.v, n0, T, Hkv, hk, D, true)
	dK, dV := b.buf(w, bufDK, T*D), b.buf(w, bufDV, T*D)
	clear(dK)
	clear(dV)
	qBuf, gBuf, oBuf := b.buf(w, bufQ, R*D), b.buf(w, bufG, R*D), b.buf(w, bufOut, R*D)
	qP, gP := b.buf(w, bufQP, gemm.PackedBLen(R, D)), b.buf(w, bufGP, gemm.PackedBLen(R, D))
	s, dp, dQ := b.buf(w, bufS, R*attKeys), b.buf(w, bufDP, R*attKeys), b.buf(w, bufO, R*D)
	rowv := b.buf(w, bufRow, 2*R)
	lseR, delta := rowv[:R], rowv[R:]
	mul := b.buf(w, bufMul, gemm.MulScratchLen(max(D, attKeys, R)))
	for j := range G {
		h := hk*G + j
		for t0 := 0; t0 < T; t0 += R {
			rr := min(R, T-t0)
			qT, qld := headTile(qBuf, l.q, n0+t0, rr, H, h, D)
			gT, gld := headTile(gBuf, l.dout, n0+t0, rr, H, h, D)
			oT, old := headTile(oBuf, l.out, n0+t0, rr, H, h, D)
			for r := range rr {
				lseR[r] = l.lse[(n0+t0+r)*H+h]
				delta[r] = float32(vmath.Dot64(gT[r*gld:r*gld+D], oT[r*old:r*old+D]))
			}
			gemm.PackB(qP, qT, qld, false, rr, D)
			gemm.PackB(gP, gT, gld, false, rr, D)
			clear(dQ[:rr*D])
			tEnd := t0 + rr
			for u0 := 0; u0 < tEnd; u0 += attKeys {
				nk := min(attKeys, tEnd-u0)
				for r0 := 0; r0 < rr; r0 += mr {
					rows, n := tileKeys(r0, mr, rr, t0, u0, nk)
					if n > 0 {
						gemm.MulPacked(rows, roundUp(n, nr), D, l.scale, qT[r0*qld:], qld, 1, kT[u0/nr*D*nr:], D*nr, 0, s[r0*attKeys:], attKeys, mul)
						gemm.MulPacked(rows, roundUp(n, nr), D, 1, gT[r0*gld:], gld, 1, vT[u0/nr*D*nr:], D*nr, 0, dp[r0*attKeys:], attKeys, mul)
					}
				}
				for r := range rr {
					ps, ds := s[r*attKeys:r*attKeys+nk], dp[r*attKeys:r*attKeys+nk]
					cnt := max(0, min(nk, t0+r-u0+1))
					vmath.SoftmaxGrad(ps[:cnt], ds[:cnt], lseR[r], delta[r])
					clear(ps[cnt:])
					clear(ds[cnt:])
				}
				// s holds P and dp holds dS for keys [u0, u0+nk), zero above
				// the diagonal. Key tile by key tile, dV and dK sum over the
				// query rows that see the tile's first key.
				for i0 := 0; i0 < nk; i0 += mr {
					keys := min(mr, nk-i0)
					r1 := max(0, u0+i0-t0) // first query row at or after key u0+i0
					if r1 >= rr {
						break
					}
					gemm.MulPacked(keys, D, rr-r1, 1, s[r1*attKeys+i0:], 1, attKeys, gP[r1*nr:], rr*nr, 1, dV[(u0+i0)*D:], D, mul)
					gemm.MulPacked(keys, D, rr-r1, l.scale, dp[r1*attKeys+i0:], 1, attKeys, qP[r1*nr:], rr*nr, 1, dK[(u0+i0)*D:], D, mul)
				}
				for r0 := 0; r0 < rr; r0 += mr {
					rows, n := tileKeys(r0, mr, rr, t0, u0, nk)
					if n > 0 {
						gemm.MulPacked(rows, D, n, l.scale, dp[r0*attKeys:], attKeys, 1, kP[u0*nr:], T*nr, 1, dQ[r0*D:], D, mul)
					}
				}
			}
			storeHeadRows(l.dq, dQ, n0+t0, rr, H, h, D)
		}
	}
	storeHeadRows(l.dk, dK, n0, T, Hkv, hk, D)
	storeHeadRows(l.dv, dV, n0, T, Hkv, hk, D)
}

// tileKeys returns the rows of the register tile of query rows
// [r0, r0+mr) of a block of rr rows starting at query t0, and how many
// keys of the key block [u0, u0+nk) its last query sees (≤ 0: none).
func tileKeys(r0, mr, rr, t0, u0, nk int) (rows, keys int) {
	rows = min(mr, rr-r0)
	return rows, min(nk, t0+r0+rows-u0)
}

// roundUp is n rounded up to a multiple of m: a score tile's width, so
// that it ends on whole micro-panels (the keys past the diagonal are
// computed and masked; past the sequence the packed keys are zero).
func roundUp(n, m int) int { return (n + m - 1) / m * m }
