package cuda

import "fmt"

// Lt is cuBLASLt as the backend uses it: the real library (*CublasLt,
// build tag cuda) or a stand-in. Every call needs the device's context
// current: call it through a Context.
type Lt interface {
	// NewHandle is cublasLtCreate.
	NewHandle() (LtHandle, error)
	// DestroyHandle is cublasLtDestroy.
	DestroyHandle(h LtHandle) error
	// NewPlan creates g's descriptor, layouts and preference with a
	// workspace limit (no device needed).
	NewPlan(g GEMM, workspace uint64) (*LtPlan, error)
	// CheckPlan reads every attribute of p back and compares it with
	// what golf meant.
	CheckPlan(p *LtPlan) error
	// SelectAlgo asks the heuristics for p's algorithm.
	SelectAlgo(h LtHandle, p *LtPlan) error
	// Matmul enqueues the backend's row-major
	// D = alpha·op(a)·op(b) + beta·c on stream (device pointers).
	Matmul(h LtHandle, p *LtPlan, alpha, beta float32, a, b, c, d, workspace, stream uintptr) error
	// DestroyPlan releases what NewPlan created.
	DestroyPlan(p *LtPlan)
}

// LtHandle is a cuBLASLt context (cublasLtHandle_t); creating one needs a
// device.
type LtHandle uintptr

// LtPlan is everything one GEMM needs from cuBLASLt, created once per
// shape (GEMM.Key) and reused every step: the operation descriptor, the
// four layouts, the heuristic preference with its workspace limit, and —
// once SelectAlgo has run on a device — the chosen algorithm.
type LtPlan struct {
	GEMM       GEMM
	Lt         LtMatmul
	Workspace  uint64
	desc, pref uintptr
	layouts    [4]uintptr // A, B, C, D
	algo       [ltHeuristicResultSize]byte
	hasAlgo    bool
}

// LtWorkspace is the cuBLASLt workspace the backend allocates once and
// gives every plan: 32 MiB, what NVIDIA recommends for Hopper.
const LtWorkspace = 32 << 20

// ltPlans caches one plan per GEMM key.
type ltPlans struct {
	lt     Lt
	handle LtHandle
	plans  map[string]*LtPlan
}

// plan returns the plan of g, creating, checking and choosing its
// algorithm on first use (run on the context's thread).
func (c *ltPlans) plan(g GEMM) (*LtPlan, error) {
	k := g.Key()
	if p, ok := c.plans[k]; ok {
		return p, nil
	}
	p, err := c.lt.NewPlan(g, LtWorkspace)
	if err != nil {
		return nil, fmt.Errorf("cuda: cuBLASLt plan for %s: %w", k, err)
	}
	if err := c.lt.CheckPlan(p); err != nil {
		c.lt.DestroyPlan(p)
		return nil, err
	}
	if err := c.lt.SelectAlgo(c.handle, p); err != nil {
		c.lt.DestroyPlan(p)
		return nil, err
	}
	c.plans[k] = p
	return p, nil
}

// close destroys every plan and the handle.
func (c *ltPlans) close() error {
	for _, p := range c.plans {
		c.lt.DestroyPlan(p)
	}
	c.plans = nil
	return c.lt.DestroyHandle(c.handle)
}
