// Package gemm is the float32 matrix multiply under the CPU backend.
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
// Parallelism: the packing of each B panel is split over NR micro-panels, and
// the product over MR-row (or, when M is short, NR-column) tiles of C, across
// GOMAXPROCS workers. A worker owns whole output tiles and the K blocks are
// visited in one fixed order, so each element of C is summed in the same
// order whatever the number of workers: results are bitwise independent of
// GOMAXPROCS. Packing buffers are pooled, so a call does not allocate in the
// steady state.
package gemm
