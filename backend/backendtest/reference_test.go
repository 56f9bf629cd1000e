package backendtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
)

// TestSuiteOnReference: a backend that computes exactly and rounds once
// passes the whole suite.
func TestSuiteOnReference(t *testing.T) {
	RunAll(t, Reference())
}

// recorder collects the failures of cases run outside t.Run.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Log(...any)                {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Error(args ...any)         { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *recorder) Errorf(f string, a ...any) { r.failures = append(r.failures, fmt.Sprintf(f, a...)) }

// firstFailure runs the cases of op in dt on b until one fails, and returns
// its first message ("" when every case passes).
func firstFailure(t *testing.T, b backend.Backend, op backend.Op, dt backend.DType) string {
	for _, c := range casesOf(op) {
		r := &recorder{TB: t}
		runCase(r, b, op, dt, c)
		if len(r.failures) > 0 {
			return c.name() + ": " + r.failures[0]
		}
	}
	return ""
}

// TestSuiteCatchesFaults: for every storage-level fault the reference can
// inject, the cases of each op the fault affects must report a failure.
func TestSuiteCatchesFaults(t *testing.T) {
	all := backend.Ops
	withViews := []backend.Op{backend.OpEmbedding, backend.OpRMSNorm, backend.OpResidMix,
		backend.OpLinear, backend.OpQKNormRope, backend.OpAttention,
		backend.OpResidMixRMSNorm, backend.OpScaledAddRMSNorm, backend.OpQKNormRopePair, backend.OpRMSNormResidMixBackward}
	accumulating := []backend.Op{backend.OpScale, backend.OpAxpy, backend.OpReduce, backend.OpEmbedding,
		backend.OpResidMix, backend.OpLinear, backend.OpQKNormRope, backend.OpScaledAdd,
		backend.OpAdam, backend.OpMuon, backend.OpQKNormRopePair, backend.OpRMSNormResidMixBackward,
		backend.OpLinearReluSq}
	cdOutputs := []backend.Op{backend.OpCast, backend.OpEmbedding, backend.OpRMSNorm, backend.OpResidMix,
		backend.OpLinear, backend.OpQKNormRope, backend.OpAttention, backend.OpScaledAdd,
		backend.OpReluSq, backend.OpSoftcapCE,
		backend.OpResidMixRMSNorm, backend.OpScaledAddRMSNorm, backend.OpQKNormRopePair,
		backend.OpRMSNormResidMixBackward, backend.OpSoftcapCEFused, backend.OpLinearReluSq}
	// rounding: the ops whose CD outputs are computed, not copied
	// (EmbeddingForward only gathers values already in CD).
	rounding := slices.DeleteFunc(slices.Clone(cdOutputs), func(op backend.Op) bool { return op == backend.OpEmbedding })
	var withInputs []backend.Op // every op but Scale, whose only operand is updated in place
	for _, op := range all {
		if op != backend.OpScale {
			withInputs = append(withInputs, op)
		}
	}
	for _, c := range []struct {
		fault fault
		ops   []backend.Op
		dts   []backend.DType // nil: every dtype of the op
	}{
		{faultUnwrittenLast, all, nil},
		{faultOverwriteAccum, accumulating, nil},
		{faultModifyInput, withInputs, nil},
		{faultWriteOutside, withViews, nil},
		{faultIgnoreOffset, withViews, nil},
		{faultPerturb, cdOutputs, []backend.DType{backend.BF16, backend.F16}},
		{faultTruncate, rounding, []backend.DType{backend.BF16, backend.F16}},
		{faultLowPrecision, all, []backend.DType{backend.F32}},
	} {
		b := &reference{fault: c.fault}
		for _, op := range c.ops {
			for _, dt := range OpDTypes(op) {
				if c.dts != nil && !slices.Contains(c.dts, dt) {
					continue
				}
				expectFailure(t, string(c.fault), b, op, dt)
			}
		}
	}
}

func expectFailure(t *testing.T, what string, b backend.Backend, op backend.Op, dt backend.DType) {
	t.Helper()
	msg := firstFailure(t, b, op, dt)
	if assert.NotEmpty(t, msg, "%s: no case of %s %s failed", what, op, dt) && testing.Verbose() {
		t.Logf("%s, %s %s: %s", what, op, dt, strings.SplitN(msg, "\n", 2)[0])
	}
}

// TestSuiteCatchesMistakes: each op's mistake fails at least one case of
// that op in every dtype.
func TestSuiteCatchesMistakes(t *testing.T) {
	for _, op := range []backend.Op{
		backend.OpAxpy, backend.OpReduce, backend.OpEmbedding, backend.OpRMSNorm, backend.OpResidMix,
		backend.OpLinear, backend.OpQKNormRope, backend.OpScaledAdd, backend.OpReluSq,
		backend.OpSoftcapCE, backend.OpAdam, backend.OpMuon, backend.OpNewtonSchulz,
	} {
		for _, dt := range OpDTypes(op) {
			expectFailure(t, "mistake in "+string(op), mistake{&reference{}, op}, op, dt)
		}
	}
	for _, dt := range backend.FloatDTypes {
		for kind, what := range []string{"across sequences", "head h mod Hkv", "no 1/sqrt(D)"} {
			expectFailure(t, "attention "+what, attnMistake{&reference{}, kind}, backend.OpAttention, dt)
		}
		expectFailure(t, "interleaved RoPE", ropeInterleaved{&reference{}}, backend.OpQKNormRope, dt)
	}
}

// TestSkipsUnsupported: every (op, dtype) a backend does not support is
// reported as skipped, never passed.
func TestSkipsUnsupported(t *testing.T) {
	b := unsupported{&reference{}}
	for _, op := range backend.Ops {
		for _, dt := range OpDTypes(op) {
			skipped := false
			t.Run(string(op)+"_"+dt.String(), func(t *testing.T) {
				defer func() { skipped = t.Skipped() }()
				runOpDType(t, b, op, dt)
			})
			assert.True(t, skipped, "%s %s: not reported as skipped", op, dt)
		}
	}
}

type unsupported struct{ *reference }

func (unsupported) Supports(backend.Op, backend.DType) bool { return false }
