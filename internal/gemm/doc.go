// Package gemm is the matrix multiply under the CPU backend: Sgemm on
// float32 operands and Bgemm on bfloat16 operands, both accumulating and
// returning float32.
//
// Sgemm follows the GotoBLAS/BLIS structure. Dimension legend: M, N, K are
// the sizes of C = op(A)·op(B) (M×N) and of the shared dimension K; MR×NR is
// the register tile of the micro-kernel; MC, KC, NC are the cache blocks.
//
//	for jc := 0; jc < N; jc += NC          // B panel: KC×NC, shared, L3
//	  for pc := 0; pc < K; pc += KC        // fixed order: one rounding sequence
//	    pack op(B)[pc:pc+KC, jc:jc+NC]     // NR-wide micro-panels, zero-padded
//	    for ic := 0; ic < M; ic += MC      // A block: MC×KC, per worker, L2
//	      pack op(A)[ic:ic+MC, pc:pc+KC]   // MR-tall micro-panels, zero-padded
//	      for jr := 0; jr < NC; jr += NR   // B micro-panel: KC×NR, L1
//	        for ir := 0; ir < MC; ir += MR
//	          C[ir:ir+MR, jr:jr+NR] = alpha·Apanel·Bpanel + beta'·C
//
// where beta' is beta on the first K block and 1 afterwards. Packing reads
// A and B through their transposes, so the four (transA, transB) cases share
// one macro-kernel. The block sizes live in one table (blocking).
//
// The micro-kernel computes a 6×16 tile: twelve YMM accumulators (6 rows ×
// 2 vectors of 8), per k step two 8-wide loads of the packed B row, six
// broadcasts of the packed A column and twelve VFMADD231PS. It is written in
// Go assembly for amd64 with AVX2 and FMA (chosen at start-up through
// golang.org/x/sys/cpu) and in plain Go elsewhere. Tiles that overhang the
// edge of C go through a 6×16 scratch tile, so every element of C sees the
// same instruction sequence.
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
// CPUs without AVX512-BF16, Bgemm widens A and B to float32 while packing
// them for Sgemm's kernel.
//
// Parallelism: the packing of each B panel is split over NR micro-panels, and
// the product over MR-row (or, when M is short, NR-column) tiles of C, across
// GOMAXPROCS workers. A worker owns whole output tiles and the K blocks are
// visited in one fixed order, so each element of C is summed in the same
// order whatever the number of workers: results are bitwise independent of
// GOMAXPROCS. Packing buffers are pooled, so a call does not allocate in the
// steady state.
package gemm
