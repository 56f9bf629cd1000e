package gemm

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireAMX skips a test that runs tile instructions on a CPU (or kernel)
// without AMX, saying so.
func requireAMX(t *testing.T) {
	t.Helper()
	if !amxOK {
		t.Skip("no AMX-BF16 on this CPU or no tile permission from the kernel: the AMX kernel cannot run here")
	}
}

// TestAMXArgsLayout: the field offsets amx_amd64.s hard-codes.
func TestAMXArgsLayout(t *testing.T) {
	var p amxArgs
	want := map[string][2]uintptr{
		"a": {unsafe.Offsetof(p.a), 64}, "aRow": {unsafe.Offsetof(p.aRow), 72},
		"aPanel": {unsafe.Offsetof(p.aPanel), 80}, "b": {unsafe.Offsetof(p.b), 88},
		"bPanel": {unsafe.Offsetof(p.bPanel), 96}, "kChunks": {unsafe.Offsetof(p.kChunks), 104},
		"mt": {unsafe.Offsetof(p.mt), 112}, "nt": {unsafe.Offsetof(p.nt), 120},
		"ld": {unsafe.Offsetof(p.ld), 128}, "ldStride": {unsafe.Offsetof(p.ldStride), 136},
		"ldMode": {unsafe.Offsetof(p.ldMode), 144}, "st": {unsafe.Offsetof(p.st), 152},
		"stStride": {unsafe.Offsetof(p.stStride), 160}, "stMode": {unsafe.Offsetof(p.stMode), 168},
		"scratch": {unsafe.Offsetof(p.scratch), 176}, "alpha": {unsafe.Offsetof(p.alpha), 184},
		"kRep": {unsafe.Offsetof(p.kRep), 192}, "aStream": {unsafe.Offsetof(p.aStream), 200},
	}
	for name, o := range want {
		assert.Equal(t, o[1], o[0], "offset of amxArgs.%s", name)
	}
	src, err := os.ReadFile("amx_amd64.s")
	require.NoError(t, err)
	for name, o := range want {
		def := fmt.Sprintf("#define A_%s %d\n", strings.ToUpper(name), o[1])
		assert.Contains(t, string(src), def, "amx_amd64.s's offset of %s", name)
	}
}

// TestAMXEncodings assembles the Intel-syntax comment of every
// byte-encoded instruction in amx_amd64.s with the system's assembler (GNU
// as) and compares the bytes; a copy with one wrong register byte must
// fail the comparison.
func TestAMXEncodings(t *testing.T) {
	as, err := exec.LookPath("as")
	if err != nil {
		t.Skip("no GNU as to check the AMX encodings against")
	}
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Skip("no objcopy to extract the assembled bytes")
	}
	src, err := os.ReadFile("amx_amd64.s")
	require.NoError(t, err)
	n, bad := amxEncodingMismatches(t, as, objcopy, src)
	assert.Equal(t, 28, n, "byte-encoded instructions found in amx_amd64.s")
	assert.Empty(t, bad)

	// tdpbf16ps tmm3, tmm5, tmm7 with tmm3, tmm5, tmm6's ModRM byte.
	planted := bytes.Replace(src, []byte("BYTE $0x5c; BYTE $0xdd // tdpbf16ps tmm3"), []byte("BYTE $0x5c; BYTE $0xd5 // tdpbf16ps tmm3"), 1)
	require.NotEqual(t, src, planted)
	_, bad = amxEncodingMismatches(t, as, objcopy, planted)
	assert.Len(t, bad, 1, "a wrong byte is caught")
}

// amxEncodingMismatches returns how many byte-encoded instructions src
// defines and those whose bytes differ from the assembler's.
func amxEncodingMismatches(t *testing.T, as, objcopy string, src []byte) (int, []string) {
	t.Helper()
	re := regexp.MustCompile(`^#define (\w+) ((?:BYTE \$0x[0-9a-f]{2}; )*BYTE \$0x[0-9a-f]{2}) // (.+)$`)
	var names, insns []string
	var want [][]byte
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var enc []byte
		for _, f := range strings.Split(m[2], "; ") {
			v, err := strconv.ParseUint(strings.TrimPrefix(f, "BYTE $0x"), 16, 8)
			require.NoError(t, err)
			enc = append(enc, byte(v))
		}
		names, insns, want = append(names, m[1]), append(insns, m[3]), append(want, enc)
	}
	dir := t.TempDir()
	text := ".intel_syntax noprefix\n" + strings.Join(insns, "\n") + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.s"), []byte(text), 0o644))
	out, err := exec.Command(as, "--64", "-o", filepath.Join(dir, "a.o"), filepath.Join(dir, "a.s")).CombinedOutput()
	if err != nil && strings.Contains(string(out), "tmm") {
		t.Skipf("this assembler predates AMX: %s", out)
	}
	require.NoError(t, err, "as: %s", out)
	out, err = exec.Command(objcopy, "-O", "binary", "-j", ".text", filepath.Join(dir, "a.o"), filepath.Join(dir, "a.bin")).CombinedOutput()
	require.NoError(t, err, "objcopy: %s", out)
	got, err := os.ReadFile(filepath.Join(dir, "a.bin"))
	require.NoError(t, err)
	var bad []string
	off := 0
	for i, enc := range want {
		require.LessOrEqual(t, off+len(enc), len(got), "%s: assembled text too short", names[i])
		if g := got[off : off+len(enc)]; !bytes.Equal(g, enc) {
			bad = append(bad, fmt.Sprintf("%s (%s): % x, as gives % x", names[i], insns[i], enc, g))
		}
		off += len(enc)
	}
	require.Equal(t, len(got), off, "assembled length")
	return len(names), bad
}

// amxShapes cross the AMX blocks: edge rows and columns (32×32 blocks),
// more than one K block (512) with an odd last one, K under one tile step
// (32), and a B panel boundary (4096 columns).
var amxShapes = [][3]int{
	{1, 1, 1}, {32, 32, 32}, {65, 70, 301}, {33, 33, 1100}, {128, 96, 512}, {5, 4100, 40}, {300, 64, 17},
}

// TestAMXWithinBound: every element of C within the float32 error bound of
// the float64 product, for every layout and beta ∈ {0, 1}, A and B
// unchanged, C's padding untouched.
func TestAMXWithinBound(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(91, 92))
	withBKernel(namedBKernel{name: "amx", amx: true}, func() {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, d := range amxShapes {
					for _, beta := range []float32{0, 1} {
						tc := newCase(rng, tA, tB, d[0], d[1], d[2], 1, beta)
						a, b, c := tc.operands16(rng)
						t.Run(tc.String(), func(t *testing.T) { check16(t, tc, a, b, c) })
					}
				}
			}
		}
	})
}

// TestAMXBlockIndependent: an element of C does not depend on where it
// falls in the blocking: the product of a sub-block of A's rows and B's
// columns equals, bitwise, the same elements of the whole product, which
// the kernel computed in other blocks, over other edges and with another
// number of workers.
func TestAMXBlockIndependent(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(93, 94))
	withBKernel(namedBKernel{name: "amx", amx: true}, func() {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				tc := newCase(rng, tA, tB, 131, 150, 700, 1, 1)
				a, b, c0 := tc.operands16(rng)
				requireBlockIndependent(t, tc, c0, func(m, n, aOff, bOff int, c []float32) {
					Bgemm(tA, tB, m, n, tc.k, 1, a[aOff:], tc.lda, b[bOff:], tc.ldb, 1, c, tc.ldc)
				})
			}
		}
	})
}

// requireBlockIndependent checks that product (C = op(A)·op(B) + C over
// the m×n block whose A and B start at aOff and bOff, into c) gives a
// sub-block of tc bitwise as the whole product gives it there, at one and
// at GOMAXPROCS participants, for sub-blocks across the AMX blocks' edges.
func requireBlockIndependent(t *testing.T, tc gemmCase, c0 []float32, product func(m, n, aOff, bOff int, c []float32)) {
	t.Helper()
	whole := append([]float32(nil), c0...)
	product(tc.m, tc.n, 0, 0, whole)
	for _, sub := range [][4]int{{5, 7, 40, 50}, {32, 32, 99, 118}, {130, 149, 1, 1}, {0, 0, 131, 150}} {
		i0, j0, m, n := sub[0], sub[1], sub[2], sub[3]
		aOff, bOff := i0*tc.lda, j0
		if tc.transA {
			aOff = i0
		}
		if tc.transB {
			bOff = j0 * tc.ldb
		}
		got := append([]float32(nil), c0...)
		for _, procs := range []int{1, runtime.GOMAXPROCS(0)} {
			prev := runtime.GOMAXPROCS(procs)
			copy(got, c0)
			product(m, n, aOff, bOff, got[i0*tc.ldc+j0:])
			runtime.GOMAXPROCS(prev)
			for i := range m {
				r := (i0+i)*tc.ldc + j0
				requireSameBits(t, whole[r:r+n], got[r:r+n], fmt.Sprintf("%v: row %d of the %d×%d block at (%d, %d), GOMAXPROCS %d", tc, i0+i, m, n, i0, j0, procs))
			}
		}
	}
}

// TestAMXBgemm16 checks the 16-bit destination on AMX: Bgemm16 stores
// exactly Bgemm's float32 result (on C widened from its 16-bit values when
// beta = 1) rounded once to bfloat16, over one and several K blocks, and
// leaves C's padding alone.
func TestAMXBgemm16(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(95, 96))
	withBKernel(namedBKernel{name: "amx", amx: true}, func() {
		for _, d := range [][3]int{{65, 70, 301}, {33, 33, 1100}, {64, 64, 512}} {
			for _, beta := range []float32{0, 1} {
				tc := newCase(rng, rng.IntN(2) == 0, rng.IntN(2) == 0, d[0], d[1], d[2], 1, beta)
				a, b, cf := tc.operands16(rng)
				c16 := make([]uint16, len(cf))
				for i := range cf {
					c16[i] = toBF16(cf[i])
					if i%tc.ldc >= tc.n {
						c16[i] = 0xbeef // padding sentinel
					}
				}
				want := widenBF16s(c16)
				Bgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, a, tc.lda, b, tc.ldb, beta, want, tc.ldc)
				got := append([]uint16(nil), c16...)
				Bgemm16(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, a, tc.lda, b, tc.ldb, beta, got, tc.ldc, false, make([]float32, len(cf)))
				for i := range got {
					w := toBF16(want[i])
					if i%tc.ldc >= tc.n {
						w = 0xbeef
					}
					if got[i] != w {
						require.Failf(t, "Bgemm16 on AMX", "%v: element %d = %#04x, want %#04x (Bgemm's %g rounded)", tc, i, got[i], w, want[i])
					}
				}
			}
		}
	})
}

// TestAMXSpecialValues: infinities and NaNs propagate as IEEE sums do
// (Inf·x + finite = Inf, Inf − Inf and NaN inputs give NaN), and a product
// rounded to bfloat16 keeps a NaN a NaN.
func TestAMXSpecialValues(t *testing.T) {
	requireAMX(t)
	withBKernel(namedBKernel{name: "amx", amx: true}, func() {
		const k = 40
		one, inf, ninf, nan := toBF16(1), uint16(0x7f80), uint16(0xff80), uint16(0x7fc0)
		a := make([]uint16, 4*k)
		for i := range a {
			a[i] = one
		}
		a[0*k+3] = inf                  // row 0: +Inf
		a[1*k+3], a[1*k+30] = inf, ninf // row 1: Inf − Inf
		a[2*k+17] = nan                 // row 2: NaN
		b := make([]uint16, k)
		for i := range b {
			b[i] = toBF16(0.5)
		}
		c := make([]float32, 4)
		Bgemm(false, false, 4, 1, k, 1, a, k, b, 1, 0, c, 1)
		assert.Equal(t, float32(math.Inf(1)), c[0], "row with +Inf")
		assert.True(t, c[1] != c[1], "row with Inf − Inf: %v", c[1])
		assert.True(t, c[2] != c[2], "row with NaN: %v", c[2])
		assert.Equal(t, float32(20), c[3], "40 × 1 × 0.5")
		c16 := make([]uint16, 4)
		Bgemm16(false, false, 4, 1, k, 1, a, k, b, 1, 0, c16, 1, false, nil)
		assert.Equal(t, inf, c16[0], "row with +Inf, rounded")
		assert.Greater(t, c16[1]&0x7fff, uint16(0x7f80), "row with Inf − Inf, rounded: a NaN")
		assert.Greater(t, c16[2]&0x7fff, uint16(0x7f80), "row with NaN, rounded: a NaN")
		assert.Equal(t, toBF16(20), c16[3], "40 × 1 × 0.5, rounded")
	})
}

// TestTransposeKeepsWordBits: the transA packing transposes pair words
// as float32 (Transpose on a floats view); every 32-bit pattern, signalling
// NaNs included, must come through unchanged, over whole 16×16 blocks and
// ragged edges.
func TestTransposeKeepsWordBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(97, 98))
	for _, d := range [][2]int{{1, 1}, {16, 16}, {17, 33}, {40, 16}, {5, 70}, {256, 112}} {
		rows, cols := d[0], d[1]
		lds, ldd := cols+3, rows+5
		src := make([]uint32, rows*lds)
		for i := range src {
			src[i] = rng.Uint32()
			if i%7 == 0 {
				src[i] = 0x7f800001 | src[i]&0x803fffff // a signalling NaN
			}
		}
		dst := make([]uint32, cols*ldd)
		for i := range dst {
			dst[i] = 0xdeadbeef
		}
		TransposeWords(dst, ldd, src, lds, rows, cols)
		for i := range cols {
			for q := range ldd {
				want := uint32(0xdeadbeef)
				if q < rows {
					want = src[q*lds+i]
				}
				if dst[i*ldd+q] != want {
					require.Failf(t, "Transpose of words", "%d×%d: dst[%d][%d] = %#x, want %#x", rows, cols, i, q, dst[i*ldd+q], want)
				}
			}
		}
	}
}

// TestMulPairs: the tile products on pair-packed operands (PairRows,
// PairPanels, MulPairs) against the float64 product, scaled and
// accumulating, B either way round; unscaled they give bitwise what Bgemm
// gives on AMX (the same tile steps in the same order).
func TestMulPairs(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(99, 100))
	for _, d := range [][3]int{{32, 32, 32}, {64, 96, 64}, {32, 64, 256}, {96, 32, 30}, {32, 32, 33}} {
		m, n, k := d[0], d[1], d[2]
		kq := roundUp((k+1)/2, AMXPairs)
		for _, trans := range []bool{false, true} {
			for _, mode := range []struct {
				alpha float32
				acc   bool
			}{{1, false}, {0.125, false}, {0.3, false}, {1, true}} {
				lda, ldb, ldc := k+3, n+5, n+2
				if trans {
					ldb = k + 1
				}
				a := toBF16s(randMatrix(rng, m, lda))
				bRows := k
				if trans {
					bRows = n
				}
				b := toBF16s(randMatrix(rng, bRows, ldb))
				c := randMatrix(rng, m, ldc)
				c0 := append([]float32(nil), c...)
				pa := make([]uint32, m*(kq+1))
				PairRows(pa, kq+1, a, lda, m, k)
				ldp := kq * AMXCols
				pb := make([]uint32, n/AMXCols*ldp)
				PairPanels(pb, ldp, b, ldb, trans, k, n)
				MulPairs(m, n, kq, pa, kq+1, pb, ldp, c, ldc, mode.alpha, mode.acc)
				for i := range m {
					for j := range ldc {
						if j >= n {
							require.Equal(t, c0[i*ldc+j], c[i*ldc+j], "padding of C")
							continue
						}
						var want, mag float64
						for p := range k {
							bi := p*ldb + j
							if trans {
								bi = j*ldb + p
							}
							bv := b[bi]
							x := float64(bf16Float(a[i*lda+p])) * float64(bf16Float(bv))
							want += x
							mag += math.Abs(x)
						}
						want *= float64(mode.alpha)
						mag *= math.Abs(float64(mode.alpha))
						if mode.acc {
							want += float64(c0[i*ldc+j])
							mag += math.Abs(float64(c0[i*ldc+j]))
						}
						bound := float64(k+3)*0x1p-24*mag + 0x1p-24*math.Abs(want)
						if math.Abs(float64(c[i*ldc+j])-want) > bound {
							require.Failf(t, "MulPairs", "%v trans=%v alpha=%g acc=%v: C[%d][%d] = %g, want %g ± %g", d, trans, mode.alpha, mode.acc, i, j, c[i*ldc+j], want, bound)
						}
					}
				}
				if mode.alpha == 1 && !mode.acc {
					want := make([]float32, m*ldc)
					Bgemm(false, trans, m, n, k, 1, a, lda, b, ldb, 0, want, ldc)
					for i := range m {
						requireSameBits(t, want[i*ldc:i*ldc+n], c[i*ldc:i*ldc+n], fmt.Sprintf("%v trans=%v: MulPairs row %d against Bgemm's", d, trans, i))
					}
				}
			}
		}
	}
}

// TestSplitPairs3: each float32 is the sum of its three bfloat16 terms to
// within 2⁻²⁷ of itself, the terms are the roundings the contract names
// (computed here in float64), and they are packed as pair words.
func TestSplitPairs3(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(101, 102))
	rows, k, lds, ldd := 5, 64, 70, 40
	src := make([]float32, rows*lds)
	for i := range src {
		src[i] = float32(math.Ldexp(rng.Float64(), -rng.IntN(30)))
	}
	src[3], src[4], src[5] = 0, 1, float32(math.Float32frombits(0x3f808000)) // a tie
	src[6], src[7] = 0x1p-130, -0x1p-127                                     // subnormals
	d1, d2, d3 := make([]uint32, rows*ldd), make([]uint32, rows*ldd), make([]uint32, rows*ldd)
	SplitPairs3(d1, d2, d3, ldd, src, lds, rows, k)
	rne := func(x float64) (uint16, float64) { // nearest bfloat16, ties to even, subnormals read as zero
		f := float32(x)
		require.Equal(t, x, float64(f), "a difference not exact in float32")
		if math.Abs(x) < 0x1p-126 {
			return uint16(math.Float32bits(f)>>16) & 0x8000, 0
		}
		u := math.Float32bits(f)
		lo, hi := u&0xffff0000, (u&0xffff0000)+0x10000
		// Distances in magnitude: the bit patterns order |f| whatever the sign.
		af := math.Abs(float64(f))
		dl, dh := af-math.Abs(float64(math.Float32frombits(lo))), math.Abs(float64(math.Float32frombits(hi)))-af
		if dh < dl || dh == dl && (lo>>16)&1 == 1 {
			lo = hi
		}
		return uint16(lo >> 16), float64(math.Float32frombits(lo))
	}
	for r := range rows {
		for i := range k {
			x := float64(src[r*lds+i])
			h, hv := rne(x)
			m, mv := rne(x - hv)
			l, lv := rne(x - hv - mv)
			require.LessOrEqual(t, math.Abs(x-hv-mv-lv), max(0x1p-27*math.Abs(x), 0x1p-126), "element %d of row %d: %g", i, r, x)
			shift := 16 * (1 - i%2)
			for j, d := range [][]uint32{d1, d2, d3} {
				got := uint16(d[r*ldd+i/2] >> shift)
				want := []uint16{h, m, l}[j]
				if got != want {
					require.Failf(t, "SplitPairs3", "row %d element %d (%g): term %d = %#04x, want %#04x", r, i, x, j+1, got, want)
				}
			}
		}
	}
}

// TestMulPairsRepeatSplit: a float32 A split into three bfloat16 terms
// (SplitPairs3) and multiplied in one MulPairsRepeat pass against bfloat16
// B is the float64 product to within float32's error bound, and the terms
// cover A: the same pass on the first term alone misses by bfloat16's.
func TestMulPairsRepeatSplit(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(103, 104))
	const m, n, k = 64, 64, 96
	kq := k / 2
	a := randMatrix(rng, m, k)
	b := toBF16s(randMatrix(rng, k, n))
	pb := make([]uint32, n/AMXCols*kq*AMXCols)
	PairPanels(pb, kq*AMXCols, b, n, false, k, n)
	pa := make([]uint32, m*3*kq)
	SplitPairs3(pa, pa[kq:], pa[2*kq:], 3*kq, a, k, m, k)
	c := make([]float32, m*n)
	MulPairsRepeat(m, n, kq, 3, pa, 3*kq, pb, kq*AMXCols, c, n, 1, false)
	c1 := make([]float32, m*n)
	MulPairs(m, n, kq, pa, 3*kq, pb, kq*AMXCols, c1, n, 1, false)
	worst1 := 0.0
	for i := range m {
		for j := range n {
			var want, mag float64
			for p := range k {
				x := float64(a[i*k+p]) * float64(bf16Float(b[p*n+j]))
				want += x
				mag += math.Abs(x)
			}
			bound := float64(k+3)*0x1p-24*mag + 3*0x1p-27*mag
			require.InDelta(t, want, float64(c[i*n+j]), bound, "C[%d][%d]", i, j)
			worst1 = max(worst1, math.Abs(float64(c1[i*n+j])-want)/mag)
		}
	}
	assert.Greater(t, worst1, 0x1p-12, "the first term alone: bfloat16's error")
}

// TestSplitPanels3: the terms SplitPanels3 packs are, element by element
// and bit for bit, those SplitPairs3 gives (packed along the other
// dimension), they add up to each element to within 2⁻²⁷ of it, and
// MulPairs on them (A's pairs repeated thrice) is the float64 product to
// within float32's error bound, where the first term alone misses by
// bfloat16's.
func TestSplitPanels3(t *testing.T) {
	requireAMX(t)
	rng := rand.New(rand.NewPCG(105, 106))
	const m, n, k = 64, 96, 64
	lds := n + 5
	src := randMatrix(rng, k, lds)
	// Magnitudes far from 1, a zero and a negative zero.
	src[3], src[lds+7], src[2*lds+1], src[5*lds+9], src[9*lds] = 3e-30, -7e25, 0, float32(math.Copysign(0, -1)), -1.5e-20
	kq := k / 2
	ldp := 3*kq*AMXCols + 2*AMXCols
	dst := make([]uint32, n/AMXCols*ldp)
	for i := range dst {
		dst[i] = 0xdeadbeef
	}
	SplitPanels3(dst, ldp, src, lds, k, n)
	// The same elements split along their rows.
	nq := n / 2
	r1, r2, r3 := make([]uint32, k*nq), make([]uint32, k*nq), make([]uint32, k*nq)
	SplitPairs3(r1, r2, r3, nq, src, lds, k, n)
	half := func(w uint32, high bool) uint16 {
		if high {
			return uint16(w >> 16)
		}
		return uint16(w)
	}
	for p := range k {
		for j := range n {
			x := src[p*lds+j]
			var sum float64
			for term, rows := range [][]uint32{r1, r2, r3} {
				got := half(dst[j/AMXCols*ldp+(term*kq+p/2)*AMXCols+j%AMXCols], p%2 == 0)
				want := half(rows[p*nq+j/2], j%2 == 0)
				require.Equal(t, want, got, "term %d of src[%d][%d] = %g", term, p, j, x)
				sum += float64(bf16Float(got))
			}
			bound := math.Max(0x1p-27*math.Abs(float64(x)), 0x1p-126)
			require.InDelta(t, float64(x), sum, bound, "src[%d][%d]: the three terms", p, j)
		}
	}
	for tp := range n / AMXCols {
		for i := 3 * kq * AMXCols; i < ldp; i++ {
			require.Equal(t, uint32(0xdeadbeef), dst[tp*ldp+i], "panel %d's words past its three terms", tp)
		}
	}

	// A (bfloat16) times the split B.
	a := toBF16s(randMatrix(rng, m, k))
	pa := make([]uint32, m*kq)
	PairRows(pa, kq, a, k, m, k)
	a3 := make([]uint32, m*3*kq)
	for i := range m {
		for r := range 3 {
			copy(a3[i*3*kq+r*kq:i*3*kq+(r+1)*kq], pa[i*kq:(i+1)*kq])
		}
	}
	c := make([]float32, m*n)
	MulPairs(m, n, 3*kq, a3, 3*kq, dst, ldp, c, n, 1, false)
	c1 := make([]float32, m*n)
	MulPairs(m, n, kq, a3, 3*kq, dst, ldp, c1, n, 1, false)
	worst1 := 0.0
	for i := range m {
		for j := range n {
			var want, mag float64
			for p := range k {
				x := float64(bf16Float(a[i*k+p])) * float64(src[p*lds+j])
				want += x
				mag += math.Abs(x)
			}
			bound := float64(k+3)*0x1p-24*mag + 3*0x1p-27*mag + 0x1p-120
			require.InDelta(t, want, float64(c[i*n+j]), bound, "C[%d][%d]", i, j)
			worst1 = max(worst1, math.Abs(float64(c1[i*n+j])-want)/mag)
		}
	}
	assert.Greater(t, worst1, 0x1p-12, "the first term alone: bfloat16's error")
}
