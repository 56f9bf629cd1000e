package modeltest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
	"github.com/golf-ml/golf/model"
)

// RunFusedIdentity checks, in every compute dtype b supports, that the
// model's fused passes give the bits of its unfused ones: a training
// microbatch (ForwardBackward) against Forward then Backward with
// model.Unfused set, on the same weights and batch, with the logits in
// one chunk and in chunks of a few rows; the per-row losses and every
// parameter gradient must be identical, and so must the validation loss
// (Loss). The contract defines each fused op as its unfused sequence, so
// any difference is a fused kernel that rounds or sums otherwise.
func RunFusedIdentity(t *testing.T, b backend.Backend) {
	t.Helper()
	for _, dt := range backend.FloatDTypes {
		t.Run(dt.String(), func(t *testing.T) {
			for _, op := range backend.Ops {
				opdt := dt
				if !slices.Contains(backendtest.OpDTypes(op), dt) {
					opdt = backend.F32
				}
				if !b.Supports(op, opdt) {
					t.Skipf("not supported: %s %s on %s", op, opdt, b.Name())
				}
			}
			for _, chunk := range []int{0, 5} {
				t.Run(fmt.Sprintf("logit_chunk_%d", chunk), func(t *testing.T) { runFusedIdentity(t, b, dt, chunk) })
			}
		})
	}
}

// fusedRun is what one pass left: the per-row losses, every gradient by
// name, and the validation loss sum.
type fusedRun struct {
	rows  []float32
	grads map[string][]float32
	val   float64
}

func runFusedIdentity(t *testing.T, b backend.Backend, dt backend.DType, chunk int) {
	model.UseComputeDType(t, dt)
	cfg := trainingConfig()
	cfg.LogitChunkTokens = chunk
	n := trainingBatch * trainingSeqLen
	ids, targets := make([]int32, n), make([]int32, n)
	for i := range ids {
		ids[i] = int32((i*37 + 11) % cfg.VocabSize)
		targets[i] = int32((i*53 + 29) % cfg.VocabSize)
	}
	run := func(unfused bool) fusedRun {
		m, err := model.New(b, cfg, 7)
		if err != nil {
			t.Fatalf("model.New on %s: %v", b.Name(), err)
		}
		defer m.Free()
		// Non-zero output projections, so that every path carries a
		// gradient (the reference initialises them to zero).
		w := m.Weights()
		for name, v := range w {
			for i := range v {
				v[i] += float32(0.02 * math.Sin(float64(i)*0.7+float64(len(name))))
			}
		}
		if err := m.SetWeights(w); err != nil {
			t.Fatalf("SetWeights: %v", err)
		}
		m.Unfused = unfused
		idT, tgT := b.New(backend.I32, n), b.New(backend.I32, n)
		defer b.Free(idT)
		defer b.Free(tgT)
		b.Upload(idT, ids)
		b.Upload(tgT, targets)
		m.CastWeights()
		m.ZeroGrads()
		scale := float32(1.0 / float64(n))
		if unfused {
			m.Forward(idT, tgT, trainingSeqLen)
			m.Backward(scale)
		} else {
			m.ForwardBackward(idT, tgT, trainingSeqLen, scale)
		}
		r := fusedRun{rows: b.Download(m.RowLoss()), grads: map[string][]float32{}}
		for _, p := range m.Params() {
			r.grads[p.Name] = b.Download(p.G)
		}
		r.val = m.Loss(idT, tgT, trainingSeqLen)
		if err := b.Sync(); err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		return r
	}
	unfused, fused := run(true), run(false)
	same := func(what string, got, want []float32) {
		t.Helper()
		backendtest.Close(t, what+": fused against unfused", got, widen(want), backend.F32, backendtest.Tol{Exact: true})
	}
	same("row losses", fused.rows, unfused.rows)
	for name, want := range unfused.grads {
		same("gradient "+name, fused.grads[name], want)
	}
	if fused.val != unfused.val {
		t.Errorf("validation loss: fused %v, unfused %v", fused.val, unfused.val)
	}
}
