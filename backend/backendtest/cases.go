package backendtest

import "github.com/golf-ml/golf/backend"

// suiteCases is every case of the suite, grouped by op. Sizes are chosen to
// hit the odd paths of tiled and vectorised kernels: widths 1, 31, 33 and
// 4099 (on one or two rows, to keep the suite fast), matmul sizes at powers
// of two ±1..2, attention lengths that are multiples of no tile, and
// Newton–Schulz on wide, tall and square matrices. Variants cover the
// aliasing and nil arguments the contract permits and Rows views with a
// non-zero Offset.
var suiteCases = []opCase{
	castCase{n: 1}, castCase{n: 33}, castCase{n: 4099},
	castCase{n: 4099, upload: true},

	scaleCase{n: 1, s: -3}, scaleCase{n: 33, s: 0.37}, scaleCase{n: 4099, s: 1e-3},

	axpyCase{n: 1, alpha: 1}, axpyCase{n: 31, alpha: -0.7}, axpyCase{n: 4099, alpha: 3e-2},

	reduceCase{n: 1, kind: backend.ReduceSum},
	reduceCase{n: 33, kind: backend.ReduceSum},
	reduceCase{n: 4099, kind: backend.ReduceSum, mean: 1},
	reduceCase{n: 100003, kind: backend.ReduceSum},
	reduceCase{n: 1, kind: backend.ReduceSumSquares},
	reduceCase{n: 31, kind: backend.ReduceSumSquares},
	reduceCase{n: 4099, kind: backend.ReduceSumSquares},
	reduceCase{n: 100003, kind: backend.ReduceSumSquares},
	reduceCase{n: 1, kind: backend.ReduceNonFinite},
	reduceCase{n: 33, kind: backend.ReduceNonFinite},
	reduceCase{n: 4099, kind: backend.ReduceNonFinite},

	embeddingCase{N: 1, V: 1, C: 1},
	embeddingCase{N: 17, V: 7, C: 31},
	embeddingCase{N: 33, V: 64, C: 33},
	embeddingCase{N: 2, V: 5, C: 4099},
	embeddingCase{N: 65, V: 1031, C: 8},
	embeddingCase{N: 9, V: 7, C: 33, view: true},

	rmsNormCase{N: 1, C: 1},
	rmsNormCase{N: 3, C: 31},
	rmsNormCase{N: 17, C: 33},
	rmsNormCase{N: 5, C: 64},
	rmsNormCase{N: 2, C: 4099},
	// Widths whose threadgroups (one thread per element, whole simdgroups)
	// are not powers of two: 96, 192 and 224 threads.
	rmsNormCase{N: 3, C: 80},
	rmsNormCase{N: 2, C: 192},
	rmsNormCase{N: 2, C: 200},
	rmsNormCase{N: 4, C: 33, view: true},

	residMixCase{N: 1, C: 1},
	residMixCase{N: 3, C: 31},
	residMixCase{N: 17, C: 33},
	residMixCase{N: 2, C: 4099},
	residMixCase{N: 5, C: 33, view: true},

	linearCase{N: 1, O: 1, I: 1},
	linearCase{N: 1, O: 7, I: 65},
	linearCase{N: 7, O: 15, I: 17},
	linearCase{N: 17, O: 31, I: 33},
	linearCase{N: 33, O: 63, I: 15},
	linearCase{N: 65, O: 33, I: 63},
	linearCase{N: 15, O: 65, I: 31},
	linearCase{N: 31, O: 17, I: 7},
	linearCase{N: 63, O: 1, I: 33},
	linearCase{N: 64, O: 64, I: 64},
	linearCase{N: 2, O: 3, I: 4099},
	linearCase{N: 1025, O: 3, I: 5},
	linearCase{N: 17, O: 31, I: 33, accu: true},
	linearCase{N: 17, O: 31, I: 33, noDx: true},
	linearCase{N: 17, O: 31, I: 33, noDw: true, accu: true},
	linearCase{N: 17, O: 15, I: 33, view: true},
	linearCase{N: 7, O: 33, I: 17, accu: true, view: true},

	qkNormRopeCase{B: 1, T: 1, Hx: 1, D: 2, base: 10000},
	qkNormRopeCase{B: 2, T: 17, Hx: 4, D: 8, base: 10000},
	qkNormRopeCase{B: 1, T: 33, Hx: 8, D: 64, base: 10000},
	qkNormRopeCase{B: 2, T: 33, Hx: 3, D: 64, base: 500, noGain: true},
	qkNormRopeCase{B: 1, T: 1024, Hx: 1, D: 16, base: 10000},
	qkNormRopeCase{B: 2, T: 17, Hx: 2, D: 8, base: 10000, view: true},

	attentionCase{B: 1, T: 1, H: 1, Hkv: 1, D: 2},
	attentionCase{B: 2, T: 17, H: 4, Hkv: 2, D: 8},
	attentionCase{B: 1, T: 33, H: 8, Hkv: 1, D: 64},
	attentionCase{B: 2, T: 33, H: 1, Hkv: 1, D: 8},
	attentionCase{B: 1, T: 17, H: 8, Hkv: 1, D: 2},
	attentionCase{B: 3, T: 1, H: 4, Hkv: 2, D: 64},
	attentionCase{B: 2, T: 33, H: 4, Hkv: 2, D: 64},
	attentionCase{B: 1, T: 67, H: 4, Hkv: 2, D: 8},
	// Head dims of the larger tile shape (64 < D ≤ 128), T a multiple of
	// no tile (8, 16, 32, 64).
	attentionCase{B: 1, T: 37, H: 2, Hkv: 1, D: 80},
	attentionCase{B: 1, T: 45, H: 2, Hkv: 1, D: 96},
	attentionCase{B: 2, T: 41, H: 2, Hkv: 1, D: 128},
	attentionCase{B: 2, T: 17, H: 4, Hkv: 2, D: 8, view: true},

	scaledAddCase{N: 1, C: 1},
	scaledAddCase{N: 3, C: 31},
	scaledAddCase{N: 17, C: 33},
	scaledAddCase{N: 2, C: 4099},
	scaledAddCase{N: 5, C: 33, noS: true},
	scaledAddCase{N: 5, C: 33, alias: true},
	scaledAddCase{N: 5, C: 33, noDy: true},
	scaledAddCase{N: 5, C: 33, noDs: true, noS: true},

	reluSqCase{shape: []int{1}},
	reluSqCase{shape: []int{33}},
	reluSqCase{shape: []int{4099}},
	reluSqCase{shape: []int{2, 3, 31}},

	softcapCECase{N: 1, V: 1, cap: 30, sigma: 1, scale: 1},
	softcapCECase{N: 3, V: 31, cap: 30, sigma: 20, scale: 0.37},
	softcapCECase{N: 17, V: 33, cap: 5, sigma: 10, scale: 1.0 / 17},
	softcapCECase{N: 8, V: 1024, cap: 30, sigma: 30, scale: 65536.0 / 8},
	softcapCECase{N: 2, V: 4099, cap: 30, sigma: 3, scale: 0.5},
	softcapCECase{N: 3, V: 200, cap: 30, sigma: 3, scale: 1}, // 224 threads: not a power of two

	residMixRMSNormCase{N: 1, C: 1},
	residMixRMSNormCase{N: 3, C: 31},
	residMixRMSNormCase{N: 17, C: 33},
	residMixRMSNormCase{N: 2, C: 200},
	residMixRMSNormCase{N: 5, C: 512},
	residMixRMSNormCase{N: 2, C: 4099},
	residMixRMSNormCase{N: 4, C: 33, view: true},

	scaledAddRMSNormCase{N: 1, C: 1},
	scaledAddRMSNormCase{N: 3, C: 31},
	scaledAddRMSNormCase{N: 17, C: 33},
	scaledAddRMSNormCase{N: 2, C: 200},
	scaledAddRMSNormCase{N: 5, C: 512, alias: true},
	scaledAddRMSNormCase{N: 2, C: 4099},
	scaledAddRMSNormCase{N: 5, C: 33, noS: true},
	scaledAddRMSNormCase{N: 4, C: 33, alias: true, view: true},

	qkNormRopePairCase{B: 1, T: 1, Hq: 1, Hk: 1, D: 2, qGain: true, base: 10000},
	qkNormRopePairCase{B: 2, T: 17, Hq: 4, Hk: 2, D: 8, qGain: true, base: 10000},
	qkNormRopePairCase{B: 1, T: 33, Hq: 8, Hk: 4, D: 64, qGain: true, base: 10000},
	qkNormRopePairCase{B: 2, T: 33, Hq: 3, Hk: 1, D: 64, base: 500},
	qkNormRopePairCase{B: 1, T: 17, Hq: 2, Hk: 3, D: 8, qGain: true, kGain: true, base: 10000},
	qkNormRopePairCase{B: 2, T: 17, Hq: 4, Hk: 2, D: 8, qGain: true, base: 10000, view: true},

	rmsNormResidMixBwdCase{N: 1, C: 1},
	rmsNormResidMixBwdCase{N: 3, C: 31},
	rmsNormResidMixBwdCase{N: 17, C: 33},
	rmsNormResidMixBwdCase{N: 2, C: 200},
	rmsNormResidMixBwdCase{N: 130, C: 33},
	rmsNormResidMixBwdCase{N: 5, C: 512},
	rmsNormResidMixBwdCase{N: 2, C: 4099},
	rmsNormResidMixBwdCase{N: 17, C: 33, noRes: true},
	rmsNormResidMixBwdCase{N: 5, C: 33, view: true},

	softcapCEFusedCase{N: 1, V: 1, cap: 30, sigma: 1, scale: 1},
	softcapCEFusedCase{N: 3, V: 31, cap: 30, sigma: 20, scale: 0.37},
	softcapCEFusedCase{N: 17, V: 33, cap: 5, sigma: 10, scale: 1.0 / 17},
	softcapCEFusedCase{N: 8, V: 1024, cap: 30, sigma: 30, scale: 65536.0 / 8},
	softcapCEFusedCase{N: 2, V: 4099, cap: 30, sigma: 3, scale: 0.5},
	softcapCEFusedCase{N: 3, V: 200, cap: 30, sigma: 3, scale: 1},

	// Non-multiples of the 64×64 GEMM tile in every dim (odd widths), a
	// tile-aligned shape, dw nil, and k ≥ 1024 on few output tiles (a
	// split k on backends that split such products).
	linearReluSqCase{N: 1, I: 1, O: 1},
	linearReluSqCase{N: 70, I: 40, O: 65},
	linearReluSqCase{N: 128, I: 64, O: 96},
	linearReluSqCase{N: 17, I: 33, O: 31, noDw: true},
	linearReluSqCase{N: 9, I: 1030, O: 1027},
	linearScaledAddCase{N: 1, I: 1, O: 1},
	linearScaledAddCase{N: 70, I: 40, O: 65},
	linearScaledAddCase{N: 128, I: 64, O: 96},
	linearScaledAddCase{N: 17, I: 33, O: 31, noS: true},
	linearScaledAddCase{N: 66, I: 48, O: 70, alias: true},
	linearScaledAddCase{N: 9, I: 1030, O: 1027},

	adamCase{n: 1, hp: backend.AdamParams{LR: 0.05, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 1}},
	adamCase{n: 33, hp: backend.AdamParams{LR: 0.05, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 2}},
	adamCase{n: 4099, hp: backend.AdamParams{LR: 0.04, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 10}},
	adamCase{n: 257, hp: backend.AdamParams{LR: 0.05, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 1000}},
	adamCase{n: 31, hp: backend.AdamParams{LR: 1e-3, Beta1: 0.8, Beta2: 0.999, Eps: 1e-3, Step: 3}},

	muonCase{n: 1, mu: 0.95}, muonCase{n: 33, mu: 0.85}, muonCase{n: 4099, mu: 0.95},

	newtonSchulzCase{R: 1, C: 1, steps: 5},
	newtonSchulzCase{R: 1, C: 17, steps: 5},
	newtonSchulzCase{R: 17, C: 1, steps: 5},
	newtonSchulzCase{R: 15, C: 33, steps: 5},
	newtonSchulzCase{R: 33, C: 15, steps: 5},
	newtonSchulzCase{R: 31, C: 31, steps: 5},
	newtonSchulzCase{R: 64, C: 65, steps: 5},
	newtonSchulzCase{R: 9, C: 7, steps: 1},
	newtonSchulzCase{R: 7, C: 9, steps: 0},
	newtonSchulzCase{R: 3, C: 5, steps: 5, zero: true},
}
