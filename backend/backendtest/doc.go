// Package backendtest is the conformance suite every backend of golf runs
// in one line from its own tests:
//
//	func TestConformance(t *testing.T) { backendtest.RunAll(t, cpu.New()) }
//
// # What it runs
//
// Every op of backend.Ops, forward and backward, in every dtype the op is
// defined for (F32, BF16, F16 as the compute dtype; F32 only for Scale and
// the optimizer ops), over the cases listed in cases.go: small structs, one
// per shape and variant, in the manner of ggml's test-backend-ops. Shapes
// hit the awkward paths of tiled and vectorised kernels (widths 1, 31, 33,
// 4099; matmul sizes at powers of two ±1..2; attention lengths that are no
// multiple of a tile; wide, tall and square Newton–Schulz). Variants cover
// what the contract permits: dx aliasing dres in RMSNormBackward, out
// aliasing x in ScaledAddForward, nil gain, dres, dx, dw, s, dy, ds,
// accumulate=true, and Rows views with a non-zero Offset.
//
// A pair (op, dtype) the backend does not support is reported as a skipped
// subtest "not supported: ..." — visible in -v output, never a silent pass.
//
// Each case draws fresh inputs from math/rand/v2 seeded by op, dtype and
// case name, so a failure reproduces, identically on every backend. Inputs
// are rounded to their tensor's dtype before upload (and read back to prove
// the upload exact), so the float64 oracle in oracle.go sees exactly what
// the backend sees. Overwritten outputs are poisoned with NaN, so an element
// the op never writes fails; accumulated outputs start from random known
// values, so the check proves the op adds to them. Every output element is
// checked; afterwards every input is read back and must be unmodified, and
// the padding rows around views must be untouched.
//
// # Tolerance policy
//
// The contract makes every op compute in float32 and round once, on store,
// to the output dtype. The allowed difference from the float64 oracle value
// w of an element is therefore (close.go, one table of constants)
//
//	storeULPs·eps(dt)·|w| + λ·sqrt(K)·2^-24·mag + subnormal(dt)
//
// whose terms are:
//
//   - storeULPs·eps(dt)·|w|, one ulp of the output dtype: the rounding on
//     store (half an ulp) with room for a float32 result next to a
//     rounding boundary. This is the term that matters for BF16 and F16.
//   - λ·sqrt(K)·2^-24·mag: float32 arithmetic. K is the length of the
//     longest reduction behind the element (C for a norm, I for a linear
//     output, N for a weight gradient), and mag is Σ|terms| of the
//     computation, which each case derives from its inputs with the oracle
//     run on absolute values or a short explicit formula. λ = 6 is Higham
//     and Mary's probabilistic rounding-error bound at a failure
//     probability far below one per suite run. Using Σ|terms| rather than
//     |w| is what makes outputs that are differences (RMSNorm and QK-norm
//     backward, resid-mix and Adam updates, cross-entropy gradients) come
//     out right: their error scales with the terms, not with the result.
//   - Attention, softmax and cross-entropy get more: exp turns an absolute
//     error of its argument (a score, a softcapped logit, a log-sum-exp)
//     into a relative error of its result, so the magnitudes of terms that
//     pass through exp carry a factor 1 + 2·max|argument|; likewise RoPE's
//     angle p·θ is formed in float32, so its terms carry 1 + p·θ, and
//     Newton–Schulz's carry the growth of earlier steps' errors.
//   - subnormal(dt): the absolute rounding quantum below the normal range
//     (2^-24 for F16).
//
// Ops that only move or round values (Cast, Upload, EmbeddingForward,
// Reduce's non-finite count) must be bit-exact, round-to-nearest-even
// included, against an independent float64 rounding (roundTo).
//
// On failure Close prints the number of elements off, the largest absolute
// and relative errors with their indices, the element furthest outside its
// allowance, and the first few failing elements.
//
// # Rounded once: bit-exact against the backend's own float32
//
// The oracle's allowance of an ulp cannot tell a right rounding from a
// wrong one: a kernel that truncates its BF16 result, rounds twice, or
// computes in half precision stays within it. So in BF16 and F16 every
// case runs twice. Its float32 twin runs first: the same inputs (already
// rounded to the dtype, drawn from the same seed), with every tensor of the
// compute dtype made in F32 instead, so the backend's F32 kernel computes
// the float32 result f. Then the case runs as written, and every output in
// BF16 or F16 must be exactly f rounded to nearest even (roundedOnce),
// which is the contract: compute in float32, round once on store.
//
// This holds bit for bit wherever a backend's float32 and low-precision
// kernels do the same float32 arithmetic (one template over the storage
// type, or a low-precision GEMM whose products and sums are exactly
// float32's), and the CPU and Metal backends pass it unrelaxed. The one
// exception the suite makes is where f lies exactly halfway between two
// values of the dtype: the contract lets an op accumulate "in float32 or
// better", and a value wider than float32 rounds to f in the twin and may
// round to either neighbour in BF16 or F16. Away from such ties no value
// rounds to f and to another value than f's rounding, so the check stays
// exact there. A backend whose low-precision kernel sums in another order
// than its F32 kernel (a tensor-core GEMM beside an FMA loop, say) would
// differ from f's rounding wherever f lies within float32's accumulated
// rounding error of a boundary between two values of the dtype; such a
// backend would need the check relaxed to that window (the λ·sqrt(K)·u32·mag
// term of the case's tolerance) around boundaries, and no backend needs it
// today. A truncating or twice-rounding kernel is off at about half of all
// elements, far from any boundary, and fails either way.
//
// # What it does not run
//
// The whole-model training comparison (a few optimizer steps of a tiny GPT
// on two backends: loss, every gradient, every updated weight) needs the
// model and optim packages, so it lives above them, in package modeltest:
//
//	func TestTrainingStep(t *testing.T) {
//		modeltest.RunTrainingStep(t, cpu.New(), backendtest.Reference())
//	}
//
// This package depends on backend alone; layering_test.go asserts that no
// package under backend/ imports model or optim.
//
// # The oracle and the reference backend
//
// oracle.go implements each op from its doc comment in backend/backend.go
// with plain float64 loops, sharing no code with any backend (attention
// materialises full score rows; that is fine for a reference).
// Reference (reference.go) wraps the oracle as a backend that computes in
// float64 and rounds once on store: the contract's ideal.
//
// The suite's own tests prove each part: oracle_test.go checks every
// backward against central finite differences of its forward and the rest
// against properties with known answers; reference_test.go runs the suite
// on Reference (which must pass), on Reference with injected faults
// (unwritten elements, overwritten accumulators, modified inputs, writes
// outside a view, ignored offsets, off-by-ulps results, truncated instead
// of rounded low-precision results, bfloat16 arithmetic) and with plausible mistakes in single ops (swapped operands,
// wrong head grouping, interleaved RoPE, missing scale, softcap or bias
// correction, ...), each of which must fail.
package backendtest
