package metal

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
	"github.com/golf-ml/golf/optim"
)

// dryBaseline builds the baseline model (9×512) and its optimizer on the
// dry runtime, in bf16, with an 8,192-token batch of sequence length 1024.
func dryBaseline(t *testing.T) (*Backend, *model.Model, *optim.Split, *backend.Tensor, *backend.Tensor) {
	t.Helper()
	model.UseComputeDType(t, backend.BF16)
	b, err := Open(NewDryRuntime(DryCaps(Simd)))
	require.NoError(t, err)
	m, err := model.New(b, model.Baseline(), 1)
	require.NoError(t, err)
	opt, err := optim.NewSplit(b, m.Params(), optim.DefaultHyper())
	require.NoError(t, err)
	ids, tg := b.New(backend.I32, 8192), b.New(backend.I32, 8192)
	return b, m, opt, ids, tg
}

// TestPredictBaselineStep runs the baseline training step's real dispatch
// stream on the dry runtime and checks the FLOPs the kernels' formulas add
// up to against the model's arithmetic worked out from its shapes, and the
// command buffers against their bounds.
func TestPredictBaselineStep(t *testing.T) {
	b, m, opt, ids, tg := dryBaseline(t)
	const tokens, T, L, C, KV, F, V, H, D = 8192, 1024, 9, 512, 256, 1024, 1024, 8, 64
	step := func() {
		m.CastWeights()
		m.ZeroGrads()
		m.Forward(ids, tg, T)
		m.Backward(1.0 / tokens)
	}
	step() // first use: rotary tables, scratch
	require.NoError(t, b.ResetPrediction())
	step()
	p, err := b.Predict()
	require.NoError(t, err)
	assert.Zero(t, p.Unknown, "every dispatch costed by its kernel's formula")

	var gemm, attn float64
	for _, k := range p.Kernels {
		switch k.Name {
		case "gemm_nn_bfloat", "gemm_nt_bfloat", "gemm_tn_bfloat", "gemm_tt_bfloat",
			"gemm_f32_nn_bfloat", "gemm_f32_nt_bfloat", "gemm_f32_tn_bfloat", "gemm_f32_tt_bfloat":
			gemm += k.Cost.FLOPs
		case "gemm_nt_relu_sq_bfloat", "gemm_nn_drelu_sq_bfloat":
			// The MLP's fused GEMMs: the product, and 2 FLOPs per
			// (token, hidden unit) in the epilogue (relu², its backward).
			gemm += k.Cost.FLOPs - float64(k.Calls)*2*tokens*F
		case "gemm_nt_scaled_add_bfloat":
			// The MLP's projection with the residual add: the product,
			// and 2 FLOPs per (token, channel) in the epilogue (x + s·y).
			gemm += k.Cost.FLOPs - float64(k.Calls)*2*tokens*C
		case "attention_fwd_bfloat", "attention_dq_bfloat", "attention_dkv_bfloat", "attention_dq_ds_bfloat":
			attn += k.Cost.FLOPs
		case "attention_dkv_ds_bfloat":
			// Less its own δ: 2·D FLOPs per query row and head of every
			// query tile a 64-row key tile stages (rows k0 .. T−1).
			rows := 0
			for k0 := 0; k0 < T; k0 += 64 {
				rows += T - k0
			}
			attn += k.Cost.FLOPs - float64(k.Calls)*2*D*float64(tokens/T*H*rows)
		case "attention_delta_bfloat":
			assert.Fail(t, "a δ pass in the step", "dK/dV computes δ at D = 64 (%d calls)", k.Calls)
		}
	}
	// Every matmul weight (the tied V×C head and, per block, q, proj C×C,
	// k, v KV×C, fc and its projection F×C) joins 2 FLOPs per token forward
	// and 4 backward.
	weights := float64(V*C + L*(2*C*C+2*KV*C+2*F*C))
	assert.InEpsilon(t, 6*tokens*weights, gemm, 1e-12)
	// Attention: 4·D FLOPs per causal pair forward, 8·D for dk, dv (S and
	// dP recomputed, dS stored) and 2·D for dq from the stored dS,
	// 8·H·T(T+1)/2 pairs per layer.
	pairs := 8.0 * H * T * (T + 1) / 2
	assert.InEpsilon(t, L*14*D*pairs, attn, 1e-12)

	st := b.Stats()
	assert.LessOrEqual(t, st.MaxBufferDispatches, defaultMaxDispatches)
	// No buffer is longer than the bound, except one that holds a single
	// dispatch longer than the bound by itself.
	m1, ok := p.Chip("M1")
	require.True(t, ok)
	assert.LessOrEqual(t, st.MaxBufferSeconds, max(defaultMaxSeconds, m1.MaxDispatch), "a command buffer predicted longer than the bound on the %s", slowestChip.Name)
	assert.LessOrEqual(t, m1.MaxBuffer, max(defaultMaxSeconds, m1.MaxDispatch))
	t.Logf("baseline fwd+bwd: %d dispatches, %d command buffers, M1 %.0f ms (max %.1f ms/buffer)",
		p.Dispatches, p.CommandBuffers, 1e3*m1.Seconds, 1e3*m1.MaxBuffer)

	// The optimizer step: Newton–Schulz on each block matrix, 5 iterations
	// of three products of the (r, c) iterate, r ≤ c, the first two (X·Xᵀ
	// and A·A) symmetric: only the (r² + Σh²)/2 elements of the tiles on
	// and above the diagonal computed (h the tiles' heights; all tiles are
	// whole at r = 256 and 512).
	require.NoError(t, b.ResetPrediction())
	opt.Step(0, 1)
	p, err = b.Predict()
	require.NoError(t, err)
	var ns float64
	for _, k := range p.Kernels {
		switch k.Name {
		case "gemm_nn_float", "gemm_nt_float", "gemm_nn_sym_float", "gemm_nt_sym_float":
			ns += k.Cost.FLOPs
		}
	}
	iter := func(r, c float64) float64 {
		sym := (r*r + r*gemmTile) / 2
		return 2*sym*c + 2*sym*r + 2*r*r*c
	}
	want := L * 5 * (2*iter(C, C) + 2*iter(KV, C) + 2*iter(C, F))
	assert.InEpsilon(t, want, ns, 1e-12)
}

// TestWritePrediction: the printed table names the model as a model,
// lists every chip of the table, and compares with MLX's M3 figure for an
// 8,192-token step.
func TestWritePrediction(t *testing.T) {
	b, m, opt, ids, tg := dryBaseline(t)
	m.CastWeights()
	m.ZeroGrads()
	m.Forward(ids, tg, 1024)
	m.Backward(1.0 / 8192)
	opt.Step(0, 1)
	var out bytes.Buffer
	require.NoError(t, b.WritePrediction(&out, "test step", 8192))
	s := out.String()
	t.Log("\n" + s)
	assert.Contains(t, s, "a model, not a measurement")
	for _, c := range Chips {
		assert.Regexp(t, `(?m)^ *`+c.Name+`  +\d+ `, s, "no row for the %s", c.Name)
	}
	assert.Contains(t, s, "1024 ms per 8192-token step")
	assert.NotContains(t, s, "warning")
	// The per-family table: each family of the step with its fractions.
	assert.Contains(t, s, "predicted time per kernel family")
	for _, f := range []*Family{famGEMM16, famGEMM32, famAttnFwd, famAttnDqDS, famAttnDkv, famRows} {
		assert.Regexp(t, `(?m)^ *`+regexp.QuoteMeta(f.Name)+`  +\d+  +[0-9.]+  +[0-9.]+  +`+regexp.QuoteMeta(fmt.Sprintf("%.2f", f.Compute))+`  +`+regexp.QuoteMeta(fmt.Sprintf("%.2f", f.Bandwidth))+` `, s, "no row for %s", f.Name)
	}
	// Not on another runtime.
	assert.ErrorIs(t, (&Backend{}).ResetPrediction(), errNotDry)
}

// TestFamilies: every registry kernel, in both flavours and every element
// type, belongs to a family with efficiencies in (0, 1], a structure and a
// source; the families of the simd step are those the table lists.
func TestFamilies(t *testing.T) {
	listed := map[*Family]bool{}
	for _, f := range Families {
		listed[f] = true
		assert.NotEmpty(t, f.Name)
		assert.NotEmpty(t, f.Structure, f.Name)
		assert.NotEmpty(t, f.Source, f.Name)
		assert.True(t, f.Compute > 0 && f.Compute <= 1, f.Name)
		assert.True(t, f.Bandwidth > 0 && f.Bandwidth <= 1, f.Name)
	}
	for _, k := range Kernels {
		for _, fl := range []Flavour{Simd, Portable} {
			for _, e := range ElemTypes {
				f := familyOf(k, fl, e)
				if assert.NotNil(t, f, "%v %v %s", k, fl, e) {
					assert.True(t, listed[f], "%v %v %s: family %q not in Families", k, fl, e, f.Name)
				}
			}
		}
	}
	assert.Same(t, famGEMM16, familyOf(Kernel{"gemm", "nt"}, Simd, "bfloat"))
	assert.Same(t, famGEMM32, familyOf(Kernel{"gemm", "nn"}, Simd, "float"))
	assert.Same(t, famGEMMPortable, familyOf(Kernel{"gemm", "nn"}, Portable, "bfloat"))
	assert.Same(t, famVector, familyOf(Kernel{"gemm_f32", "reduce"}, Simd, "bfloat"))
	assert.Same(t, famAttnDkv, familyOf(Kernel{"attention", "dkv"}, Simd, "half"))
	assert.Same(t, famAttnDkv, familyOf(Kernel{"attention", "dkv_ds"}, Simd, "bfloat"))
	assert.Same(t, famAttnDqDS, familyOf(Kernel{"attention", "dq_ds"}, Simd, "bfloat"))
	assert.Same(t, famAttnPortable, familyOf(Kernel{"attention", "dq_ds"}, Portable, "bfloat"))
	assert.Same(t, famAttnFwd, familyOf(Kernel{"attention", "fwd"}, Simd, "half"))
	assert.Same(t, famAttnFwd32, familyOf(Kernel{"attention", "fwd"}, Simd, "float"))
	assert.Same(t, famAttnDkv32, familyOf(Kernel{"attention", "dkv_ds"}, Simd, "float"))
	assert.Same(t, famAttnDqDS32, familyOf(Kernel{"attention", "dq_ds"}, Simd, "float"))
	assert.Same(t, famVector, familyOf(Kernel{"relu_sq", "fwd4"}, Simd, "bfloat"))
	assert.Same(t, famVector, familyOf(Kernel{"muon", "momentum_sumsq"}, Portable, "float"))
	assert.Same(t, famVector, familyOf(Kernel{"newton_schulz", "scale4"}, Simd, "float"))
	assert.Same(t, famVector, familyOf(Kernel{"newton_schulz", "scale_t"}, Simd, "float"))
	assert.Same(t, famVector, familyOf(Kernel{"muon", "axpy_t"}, Simd, "float"))
	assert.Same(t, famEltwise, familyOf(Kernel{"newton_schulz", "store"}, Simd, "float"))
	assert.Same(t, famReduce, familyOf(Kernel{"newton_schulz", "sumsq"}, Simd, "float"))

	// A family's dispatch is costed at its own fractions.
	m3, _ := ChipOf("Apple M3")
	c := Cost{FLOPs: 1e9}
	assert.InEpsilon(t, 1e9/(10*128*2*1.398e9*0.60)+4e-6, m3.PredictFamily(c, famAttnFwd32, true), 1e-12)
	c = Cost{Bytes: 1e8}
	assert.InEpsilon(t, 1e8/(100e9*0.60)+4e-6, m3.PredictFamily(c, famRows, true), 1e-12)
}
