package cuda

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// countingLt is an Lt that counts what the plan cache asks of it; a plan
// of a GEMM named "bad" fails CheckPlan.
type countingLt struct {
	created, checked, selected, destroyed map[string]int
	workspace                             uint64
}

func newCountingLt() *countingLt {
	return &countingLt{created: map[string]int{}, checked: map[string]int{}, selected: map[string]int{}, destroyed: map[string]int{}}
}

func (c *countingLt) NewHandle() (LtHandle, error)   { return 1, nil }
func (c *countingLt) DestroyHandle(h LtHandle) error { return nil }
func (c *countingLt) NewPlan(g GEMM, workspace uint64) (*LtPlan, error) {
	c.created[g.Key()]++
	c.workspace = workspace
	return &LtPlan{GEMM: g, Workspace: workspace}, nil
}
func (c *countingLt) CheckPlan(p *LtPlan) error {
	c.checked[p.GEMM.Key()]++
	if p.GEMM.Name == "bad" {
		return errors.New("planted: attribute read back differs")
	}
	return nil
}
func (c *countingLt) SelectAlgo(h LtHandle, p *LtPlan) error {
	c.selected[p.GEMM.Key()]++
	return nil
}
func (c *countingLt) Matmul(LtHandle, *LtPlan, float32, float32, uintptr, uintptr, uintptr, uintptr, uintptr, uintptr) error {
	return nil
}
func (c *countingLt) DestroyPlan(p *LtPlan) { c.destroyed[p.GEMM.Key()]++ }

// The plan cache creates, checks and chooses the algorithm of a shape's
// plan once, however often and under whatever name the shape comes back,
// with the 32 MiB workspace; another shape (or dtype, or beta) is another
// plan; a plan that fails its read-back is destroyed, reported, and not
// kept; close destroys every plan.
func TestLtPlansOncePerShape(t *testing.T) {
	lt := newCountingLt()
	c := &ltPlans{lt: lt, handle: 1, plans: map[string]*LtPlan{}}
	q := GEMM{Name: "attn.c_q forward", M: 8192, N: 512, K: 512, TransB: true, AB: backend.BF16, CD: backend.BF16}
	proj := q
	proj.Name = "attn.proj forward" // the same shape under another name
	dx := q
	dx.Beta = 1
	f16 := q
	f16.AB, f16.CD = backend.F16, backend.F16
	for range 3 {
		for _, g := range []GEMM{q, proj, dx, f16} {
			p, err := c.plan(g)
			require.NoError(t, err)
			assert.Equal(t, g.Key(), p.GEMM.Key())
		}
	}
	for _, g := range []GEMM{q, dx, f16} {
		assert.Equal(t, 1, lt.created[g.Key()], g.Key())
		assert.Equal(t, 1, lt.checked[g.Key()], g.Key())
		assert.Equal(t, 1, lt.selected[g.Key()], g.Key())
	}
	assert.Len(t, c.plans, 3)
	assert.EqualValues(t, 32<<20, lt.workspace)

	bad := GEMM{Name: "bad", M: 3, N: 5, K: 7, AB: backend.F32, CD: backend.F32}
	_, err := c.plan(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "planted")
	assert.Equal(t, 1, lt.destroyed[bad.Key()])
	assert.Zero(t, lt.selected[bad.Key()])
	assert.Len(t, c.plans, 3)

	require.NoError(t, c.close())
	for _, g := range []GEMM{q, dx, f16} {
		assert.Equal(t, 1, lt.destroyed[g.Key()], g.Key())
	}
}
