// Package gemm is the matrix multiply under the CPU backend: Sgemm on
// float32 operands and Bgemm on bfloat16 operands, both accumulating and
// returning float32, with serial variants (SgemmSerial, BgemmSerial) for
// callers that are themselves one participant of a parallel loop, 16-bit
// outputs rounded once tile by tile as the last K block finishes (Sgemm16,
// Bgemm16), the lower triangle of a symmetric product (SgemmLower), and
// tile-level products on an A read in place and a B packed once
// (PackB, MulPacked) for the CPU backend's attention.
//
// Sgemm follows the GotoBLAS/BLIS structure. Dimension legend: M, N, K are
// the sizes of C = op(A)·op(B) (M×N) and of the shared dimension K; mr×nr is
// the register tile of the micro-kernel; MC, KC, NC are the cache blocks.
//
//	for jc := 0; jc < N; jc += NC          // B panel: KC×NC, shared, L3
//	  for pc := 0; pc < K; pc += KC        // fixed order: one rounding sequence
//	    pack op(B)[pc:pc+KC, jc:jc+NC]     // nr-wide micro-panels, zero-padded
//	    for ic := 0; ic < M; ic += MC      // A block: MC×KC, per worker, L2
//	      pack op(A)[ic:ic+MC, pc:pc+KC]   // mr-tall micro-panels, zero-padded
//	      for jr := 0; jr < NC; jr += nr   // B micro-panel: KC×nr, L1
//	        for ir := 0; ir < MC; ir += mr
//	          C[ir:ir+mr, jr:jr+nr] = alpha·Apanel·Bpanel + beta'·C
//
// where beta' is beta on the first K block and 1 afterwards. Packing reads
// A and B through their transposes, so the four (transA, transB) cases share
// one macro-kernel. The block sizes live in one table (blocking).
//
// Micro-kernels (chosen at start-up through golang.org/x/sys/cpu): with
// AVX-512, a 14×32 tile in 28 ZMM accumulators, per k two 64-byte loads of
// the packed B row, fourteen broadcasts of the A column and 28
// VFMADD231PS; with AVX2 and FMA, a 6×16 tile in twelve YMM accumulators;
// on arm64, the same 6×16 tile in 24 NEON accumulators (per k one 64-byte
// load of B, six load-and-replicates of A, 24 FMLA); elsewhere a portable
// 6×16 kernel in Go. Every one sums each element over k in order with
// fused multiply-adds (the Go kernel through fma32: arm64's FMADDS, or an
// exact emulation), so Sgemm returns the same bits on every CPU and
// architecture; a NaN result is some NaN, its sign and payload
// unspecified (which operand's NaN an FMA passes on may differ between the
// instruction sets and the Go emulation). The kernels read the A panel
// through a row and a k stride, so a caller with A already laid out
// (attention's tiles) need not pack it. Tiles that overhang the edge of C
// go through a scratch tile, so every element of C sees the same
// instruction sequence. The packing of 14-row A panels and of transposed
// B panels runs on AVX-512 (16×16 transposes in registers) where the
// kernel does.
//
// Bgemm runs the same loop nest with K packed in pairs, the operand of
// VDPBF16PS (AVX512-BF16): one 32-bit word holds the bfloat16 of two
// consecutive k, an odd K block ending in a zero. Its micro-kernel computes
// a BMR×BNR = 14×32 tile in 28 ZMM accumulators: per K pair two 64-byte
// loads of the packed B row and, per row, two VDPBF16PS with the A pair
// broadcast from memory. Each VDPBF16PS adds the exact product of the high
// halves, then that of the low halves, to the float32 accumulator, rounding
// each sum; the packing puts the earlier k in the high half, so every
// element of C is summed in Sgemm's order with Sgemm's roundings, and with
// the same K blocks (blocking.KC) Bgemm returns bitwise what Sgemm returns
// on the operands widened to float32 — except that VDPBF16PS reads
// bfloat16 subnormals as zero and flushes subnormal sums to zero. The A
// block is packed row by row (each row a rotated copy) when A's rows run
// along K and pair by pair otherwise; the kernel addresses either through
// a row and a pair stride. Packing and the kernel are AVX-512 assembly; the
// portable kernel (kernelBGo) is the oracle its tests run everywhere. On
// CPUs without AVX512-BF16, and on Intel's, where VDPBF16PS issues at half
// the rate of the float32 FMA (see isIntel), Bgemm widens A and B to
// float32 while packing them for Sgemm's kernel: bitwise Sgemm's result,
// without the flushing.
//
// On Intel Xeons with AMX (Sapphire Rapids and later; Linux, which grants
// the tile state on request), Bgemm and Bgemm16 with alpha = 1 and beta ∈
// {0, 1} run on the tile unit instead (amx_amd64.go): TDPBF16PS on 16×16
// tiles of C, the same pair packing, K blocks of 512, a 32×32 block of C
// per kernel step, 16-bit C rounded in the kernel. Some 5-6 times the
// float32 kernel's rate; but the unit adds the products in an order of its
// own, so there Bgemm is within Sgemm's error bound rather than bitwise
// Sgemm's, still the same on every run and at any GOMAXPROCS. SetAMX and
// GOLF_NO_AMX=1 turn it off.
//
// Parallelism: each (B panel, K block) step is two loops over the shared
// worker pool of package parallel (GOMAXPROCS participants, no goroutine
// started per call): the packing of the B panel's micro-panels, then the
// product over units of C — A blocks of up to MC rows, or nr-column strips
// when M is short. A participant owns whole output tiles and the K blocks
// are visited in one fixed order, so each element of C is summed in the
// same order whatever the number of workers: results are bitwise
// independent of GOMAXPROCS. Jobs and their packing buffers are pooled, so
// a call does not allocate in the steady state.
package gemm
