//go:build cuda

package cuda

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/model"
)

// Workspace is the cuBLASLt workspace golf gives every plan (32 MiB, what
// NVIDIA recommends for Hopper).
const testWorkspace = 32 << 20

func requireCublasLt(t *testing.T) *CublasLt {
	t.Helper()
	l, err := LoadCublasLt()
	needLib(t, err)
	return l
}

func TestCublasLtLoads(t *testing.T) {
	l := requireCublasLt(t)
	assert.GreaterOrEqual(t, l.Version, MinCublasLt)
	assert.Equal(t, "11.11.3", versionString(111103))
	t.Logf("cuBLASLt %s at %s", versionString(l.Version), l.Path)
}

// smokeConfig is the model of `golf train --smoke` (cmd/golf's preset):
// 4 layers of width 256, 4 heads, 2 key/value heads, 4096-token steps of
// 256-token sequences.
func smokeConfig() model.Config {
	c := model.Baseline()
	c.NumLayers, c.ModelDim, c.NumHeads, c.NumKVHeads = 4, 256, 4, 2
	return c
}

// Every GEMM a training step issues, at the baseline (8192-token chunks,
// 8 per step) and smoke (4096 tokens, 1 chunk) configurations, in every
// compute dtype: its descriptor, four layouts and preference are created by
// the real cuBLASLt, and every attribute is read back and compared
// (CheckPlan).
func TestCublasLtPlansForEveryStepGEMM(t *testing.T) {
	l := requireCublasLt(t)
	seen := map[string]bool{}
	for _, c := range []struct {
		cfg            model.Config
		rows, chunks   int
		wantDistinctGE int
	}{
		{model.Baseline(), 8192, 8, 20},
		{smokeConfig(), 4096, 1, 20},
	} {
		for _, dt := range backend.FloatDTypes {
			for _, g := range StepGEMMs(c.cfg, c.rows, c.chunks, dt, 5) {
				if seen[g.Key()] {
					continue
				}
				seen[g.Key()] = true
				p, err := l.NewPlan(g, testWorkspace)
				require.NoError(t, err, "%s %s", g.Name, g.Key())
				assert.NoError(t, l.CheckPlan(p), "%s %s", g.Name, g.Key())
				l.DestroyPlan(p)
			}
		}
	}
	t.Logf("%d distinct cuBLASLt plans", len(seen))
	assert.GreaterOrEqual(t, len(seen), 40)
}

// Planted violations: CheckPlan catches an attribute id that names another
// attribute (TRANSA written through id 0, COMPUTE_TYPE), and cuBLASLt
// itself refuses an attribute of the wrong size.
func TestCublasLtCheckPlanCatchesWrongIDsAndSizes(t *testing.T) {
	l := requireCublasLt(t)
	g := GEMM{Name: "planted", M: 64, N: 32, K: 16, TransB: true, AB: backend.BF16, CD: backend.BF16}
	p, err := l.NewPlan(g, testWorkspace)
	require.NoError(t, err)
	defer l.DestroyPlan(p)
	require.NoError(t, l.CheckPlan(p))

	wide := uint64(cublasOpT)
	err = l.SetDesc(p, ltDescTransA, unsafe.Pointer(&wide), 8)
	require.Error(t, err, "an 8-byte TRANSA must be refused")
	assert.Contains(t, err.Error(), "CUBLAS_STATUS_INVALID_VALUE")

	// cuBLASLt takes any int32 as a compute type here (it validates later),
	// so only the read-back can see the mistake.
	op := int32(cublasOpT)
	require.NoError(t, l.SetDesc(p, 0, unsafe.Pointer(&op), 4))
	err = l.CheckPlan(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "COMPUTE_TYPE (attribute 0): read 1 (4 bytes), want 68")

	p2, err := l.NewPlan(g, testWorkspace)
	require.NoError(t, err)
	defer l.DestroyPlan(p2)
	rows := uint64(999)
	require.NoError(t, l.SetLayout(p2, 1, ltLayoutRows, unsafe.Pointer(&rows), 8))
	err = l.CheckPlan(p2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "layout B ROWS (attribute 2): read 999")
}
