package modeltest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/backend/backendtest"
)

// TestTrainingStepOnReference: the reference backend against itself, the
// comparison's plumbing (every compute dtype, every step) with nothing to
// disagree on.
func TestTrainingStepOnReference(t *testing.T) {
	RunTrainingStep(t, backendtest.Reference(), backendtest.Reference())
}

// recorder collects the failures of a comparison run outside t.Run.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Log(...any)                {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Error(args ...any)         { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *recorder) Errorf(f string, a ...any) { r.failures = append(r.failures, fmt.Sprintf(f, a...)) }
func (r *recorder) Fatal(args ...any)         { r.Error(args...); panic(stopped{}) }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); panic(stopped{}) }

// stopped is the panic by which recorder's Fatal ends a run early.
type stopped struct{}

// record runs f with a recorder and returns the failures it reported.
func record(t *testing.T, f func(testing.TB)) []string {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != (stopped{}) {
				panic(p)
			}
		}()
		f(r)
	}()
	return r.failures
}

// TestTrainingStepCatchesMistakes: the comparison fails for a backend with
// one op wrong in a way the model exercises, in every dtype where the
// mistake shows.
func TestTrainingStepCatchesMistakes(t *testing.T) {
	for _, m := range backendtest.Mistakes() {
		for _, dt := range backend.FloatDTypes {
			if m.DTypes != nil && !slices.Contains(m.DTypes, dt) {
				continue
			}
			failures := record(t, func(r testing.TB) { runTrainingStep(r, m.Backend, backendtest.Reference(), dt) })
			if assert.NotEmpty(t, failures, "training step with %s in %v: no failure", m.Name, dt) && testing.Verbose() {
				t.Logf("training step with %s in %v: %d failures, first: %s", m.Name, dt, len(failures), strings.SplitN(failures[0], "\n", 2)[0])
			}
		}
	}
}
