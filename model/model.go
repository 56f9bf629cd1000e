package model

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/golf-ml/golf/backend"
)

// Model is the GPT of train_gpt_mlx.py over one backend: fp32 master
// parameters with their fp32 gradient accumulators, the per-step compute
// dtype copies of the matmul weights, and the activation workspaces of the
// row counts it has run.
type Model struct {
	Cfg   Config
	DType backend.DType   // ComputeDType captured by New
	B     backend.Backend // the backend every tensor lives on

	params []*Param
	byName map[string]*Param
	grads  *gradArena // every Param.G is a view of it

	tokEmb *Param // (V, C)
	skipW  *Param // (S, C)
	blocks []block

	embCD *backend.Tensor // CD (V, C): the gather table and the tied head
	cast  bool            // CastWeights has run since the masters were last set

	// Unfused makes the passes call the unfused sequence of every fused op
	// of the contract instead of the fused op: the same bits, more passes
	// over memory (golf bench runs both side by side).
	Unfused bool

	// OnBlockGrads, when set, is called by Backward right after block l's
	// backward is queued: from then on nothing of that Backward writes
	// the gradients of block l's parameters (BlockGradRange), so a
	// data-parallel step can start summing them while the lower blocks'
	// backward runs. Blocks finish from the last to the first.
	OnBlockGrads func(l int)

	train map[int]*workspace // by rows N: forward activations + gradient scratch
	eval  map[int]*workspace // by rows N: forward-only, block scratch shared
	last  *workspace         // the workspace of the latest Forward
	views viewCache          // the views a step makes, kept (views.go)
}

// block holds one transformer block's parameters and the CD copies of its
// matrices.
type block struct {
	cq, ck, cv, proj *Param // (C,C), (KV,C), (KV,C), (C,C)
	qGain            *Param // (H)
	attnScale        *Param // (C)
	mlpScale         *Param // (C)
	residMix         *Param // (2, C)
	fc, mlpProj      *Param // (F,C), (C,F)

	wq, wk, wv, wo, wfc, wmp *backend.Tensor // CD copies of the six matrices
}

// initKind says how New fills a parameter.
type initKind int

const (
	initEmbedding initKind = iota // normal·TiedEmbedInitStd, rounded to CD
	initLinear                    // uniform(±1/sqrt(in)), as MLX nn.Linear
	initZero                      // the output projections
	initQKGain                    // QKGainInit
	initOnes                      // scales and skip weights
	initResidMix                  // rows (ones, zeros)
)

// paramSpec is a parameter's reference name, shape and initialisation.
type paramSpec struct {
	name  string
	shape []int
	init  initKind
}

// specs lists the parameters in the order Params returns them:
//
//	tok_emb.weight, skip_weights, then per block i = 0..L−1:
//	attn.c_q.weight, attn.c_k.weight, attn.c_v.weight, attn.proj.weight,
//	attn.q_gain, attn_scale, mlp_scale, resid_mix, mlp.fc.weight,
//	mlp.proj.weight
func specs(c Config) []paramSpec {
	C, KV, F := c.ModelDim, c.KVDim(), c.MLPMult*c.ModelDim
	ps := []paramSpec{
		{"tok_emb.weight", []int{c.VocabSize, C}, initEmbedding},
		{"skip_weights", []int{c.NumSkipWeights(), C}, initOnes},
	}
	for i := range c.NumLayers {
		b := fmt.Sprintf("blocks.%d.", i)
		ps = append(ps,
			paramSpec{b + "attn.c_q.weight", []int{C, C}, initLinear},
			paramSpec{b + "attn.c_k.weight", []int{KV, C}, initLinear},
			paramSpec{b + "attn.c_v.weight", []int{KV, C}, initLinear},
			paramSpec{b + "attn.proj.weight", []int{C, C}, initZero},
			paramSpec{b + "attn.q_gain", []int{c.NumHeads}, initQKGain},
			paramSpec{b + "attn_scale", []int{C}, initOnes},
			paramSpec{b + "mlp_scale", []int{C}, initOnes},
			paramSpec{b + "resid_mix", []int{2, C}, initResidMix},
			paramSpec{b + "mlp.fc.weight", []int{F, C}, initLinear},
			paramSpec{b + "mlp.proj.weight", []int{C, F}, initZero},
		)
	}
	return ps
}

// NumParams is the number of trainable scalars of cfg:
//
//	V·C + S·C + L·(2·C² + 2·KV·C + H + 2·C + 2·C + 2·F·C)
//
// 17,059,912 for Baseline.
func NumParams(cfg Config) int {
	n := 0
	for _, s := range specs(cfg) {
		n += shapeLen(s.shape)
	}
	return n
}

// StepFLOPsPerToken counts the floating-point operations of one training
// step (forward and backward) per token at sequence length T:
//
//	6·P + 3·L·(2·2·T_avg·C),   T_avg = (T+1)/2
//
// 6·P: every parameter joins one multiply-add (2 FLOPs) per token in the
// forward matmuls and two in the backward (input and weight gradients). The
// embedding's gather is free but the tied head multiplies by the same V·C
// weights, so counting all of P is the usual convention; the control tensors
// are a negligible part of P.
//
// Attention: in the forward each query takes a dot product with T_avg keys
// (causal: on average (T+1)/2 positions) and sums as many values, 2 FLOPs per
// element of D over H heads of D = C/H: 2·2·T_avg·C per layer and token. The
// backward costs twice the forward.
func StepFLOPsPerToken(cfg Config, seqLen int) float64 {
	tAvg := float64(seqLen+1) / 2
	attn := 3 * float64(cfg.NumLayers) * 2 * 2 * tAvg * float64(cfg.ModelDim)
	return 6*float64(NumParams(cfg)) + attn
}

func shapeLen(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// New validates cfg, captures ComputeDType, allocates every parameter on b
// and initialises it as the reference does, deterministically from seed:
// each parameter draws from its own PCG stream seeded by (seed, FNV-1a of its
// name), so no parameter's values depend on another's.
func New(b backend.Backend, cfg Config, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{
		Cfg: cfg, DType: ComputeDType, B: b,
		byName: map[string]*Param{},
		train:  map[int]*workspace{}, eval: map[int]*workspace{},
	}
	// The gradients are views of one arena (gradArena): ZeroGrads is one
	// launch, and so are the loss scaler's unscaling and the clip.
	ps := specs(cfg)
	offs, total := make([]int, len(ps)), 0
	for i, s := range ps {
		offs[i] = total
		total += (shapeLen(s.shape) + gradAlign - 1) / gradAlign * gradAlign
	}
	m.grads = &gradArena{t: b.New(backend.F32, total), count: len(ps)}
	for i, s := range ps {
		g := m.grads.t.Rows(offs[i], shapeLen(s.shape)).Reshape(s.shape...)
		p := &Param{Name: s.name, W: b.New(backend.F32, s.shape...), G: g, arena: m.grads}
		b.Upload(p.W, initValues(cfg, s, m.DType, seed))
		m.params = append(m.params, p)
		m.byName[s.name] = p
	}
	m.tokEmb, m.skipW = m.byName["tok_emb.weight"], m.byName["skip_weights"]
	m.embCD = b.New(m.DType, cfg.VocabSize, cfg.ModelDim)
	m.blocks = make([]block, cfg.NumLayers)
	for i := range m.blocks {
		p := func(s string) *Param { return m.byName[fmt.Sprintf("blocks.%d.%s", i, s)] }
		bl := &m.blocks[i]
		bl.cq, bl.ck, bl.cv, bl.proj = p("attn.c_q.weight"), p("attn.c_k.weight"), p("attn.c_v.weight"), p("attn.proj.weight")
		bl.qGain, bl.attnScale, bl.mlpScale, bl.residMix = p("attn.q_gain"), p("attn_scale"), p("mlp_scale"), p("resid_mix")
		bl.fc, bl.mlpProj = p("mlp.fc.weight"), p("mlp.proj.weight")
		cd := func(q *Param) *backend.Tensor { return b.New(m.DType, q.W.Shape...) }
		bl.wq, bl.wk, bl.wv, bl.wo, bl.wfc, bl.wmp = cd(bl.cq), cd(bl.ck), cd(bl.cv), cd(bl.proj), cd(bl.fc), cd(bl.mlpProj)
	}
	return m, nil
}

// initValues draws one parameter's initial values.
func initValues(cfg Config, s paramSpec, cd backend.DType, seed uint64) []float32 {
	h := fnv.New64a()
	h.Write([]byte(s.name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	v := make([]float32, shapeLen(s.shape))
	switch s.init {
	case initEmbedding:
		// The reference stores tok_emb in COMPUTE_DTYPE; its initial values
		// are the normal draws rounded to that dtype.
		for i := range v {
			v[i] = backend.Round(cd, float32(rng.NormFloat64()*cfg.TiedEmbedInitStd))
		}
	case initLinear:
		bound := 1 / math.Sqrt(float64(s.shape[1]))
		for i := range v {
			v[i] = float32((2*rng.Float64() - 1) * bound)
		}
	case initZero:
	case initQKGain:
		for i := range v {
			v[i] = float32(cfg.QKGainInit)
		}
	case initOnes:
		for i := range v {
			v[i] = 1
		}
	case initResidMix:
		for i := range s.shape[1] {
			v[i] = 1
		}
	}
	return v
}

// Params returns every parameter in the documented order of specs:
// tok_emb.weight, skip_weights, then each block's ten tensors.
func (m *Model) Params() []*Param { return m.params }

// Param returns the parameter with the reference flat name, or nil.
func (m *Model) Param(name string) *Param { return m.byName[name] }

// ZeroGrads zeroes every gradient accumulator (once per optimizer step):
// one Zero of the arena that holds them.
func (m *Model) ZeroGrads() {
	m.B.Zero(m.grads.t)
}

// CastWeights rounds every matmul weight (tok_emb and the six matrices of
// each block) from its fp32 master to its CD copy. Call it once per
// optimizer step, after the update and before the next Forward; the masters
// are only read.
func (m *Model) CastWeights() {
	m.B.Cast(m.embCD, m.tokEmb.W)
	for i := range m.blocks {
		bl := &m.blocks[i]
		m.B.Cast(bl.wq, bl.cq.W)
		m.B.Cast(bl.wk, bl.ck.W)
		m.B.Cast(bl.wv, bl.cv.W)
		m.B.Cast(bl.wo, bl.proj.W)
		m.B.Cast(bl.wfc, bl.fc.W)
		m.B.Cast(bl.wmp, bl.mlpProj.W)
	}
	m.cast = true
}

// SetWeights uploads master weights by reference name. Every parameter must
// be present with its exact element count, and no other name may appear.
// The CD copies are stale afterwards until CastWeights runs.
func (m *Model) SetWeights(w map[string][]float32) error {
	for name := range w {
		if m.byName[name] == nil {
			return fmt.Errorf("model: unknown parameter %q", name)
		}
	}
	for _, p := range m.params {
		v, ok := w[p.Name]
		if !ok {
			return fmt.Errorf("model: parameter %q missing", p.Name)
		}
		if len(v) != p.W.Len() {
			return fmt.Errorf("model: parameter %q has %d values, want %d (shape %v)", p.Name, len(v), p.W.Len(), p.W.Shape)
		}
	}
	for _, p := range m.params {
		m.B.Upload(p.W, w[p.Name])
	}
	m.cast = false
	return nil
}

// Weights downloads every master weight by reference name.
func (m *Model) Weights() map[string][]float32 {
	w := make(map[string][]float32, len(m.params))
	for _, p := range m.params {
		w[p.Name] = m.B.Download(p.W)
	}
	return w
}

// Grads downloads every gradient accumulator by reference name.
func (m *Model) Grads() map[string][]float32 {
	g := make(map[string][]float32, len(m.params))
	for _, p := range m.params {
		g[p.Name] = m.B.Download(p.G)
	}
	return g
}

// Free releases every tensor of the model: parameters, gradients, the CD
// weight copies and the workspaces. The model must not be used afterwards.
func (m *Model) Free() {
	m.FreeWorkspaces()
	for _, p := range m.params {
		m.B.Free(p.W)
	}
	m.B.Free(m.grads.t)
	m.B.Free(m.embCD)
	for i := range m.blocks {
		bl := &m.blocks[i]
		for _, t := range []*backend.Tensor{bl.wq, bl.wk, bl.wv, bl.wo, bl.wfc, bl.wmp} {
			m.B.Free(t)
		}
	}
	m.params, m.byName, m.blocks, m.embCD, m.grads = nil, nil, nil, nil, nil
}

// FreeWorkspaces releases every activation workspace; the next Forward or
// Loss allocates afresh.
func (m *Model) FreeWorkspaces() {
	for _, ws := range m.train {
		ws.free(m.B)
	}
	for _, ws := range m.eval {
		ws.free(m.B)
	}
	m.train, m.eval, m.last, m.views = map[int]*workspace{}, map[int]*workspace{}, nil, nil
}

// BlockGradRange is the span [off, off+n) of the gradient arena
// (GradArena) that holds the gradients of block l's parameters and
// nothing else's (the arena's padding after them included); ok is false
// when they do not form one such span.
func (m *Model) BlockGradRange(l int) (off, n int, ok bool) {
	if l < 0 || l >= len(m.blocks) || m.grads == nil {
		return 0, 0, false
	}
	bl := &m.blocks[l]
	mine := map[*Param]bool{}
	for _, p := range []*Param{bl.cq, bl.ck, bl.cv, bl.proj, bl.qGain, bl.attnScale, bl.mlpScale, bl.residMix, bl.fc, bl.mlpProj} {
		mine[p] = true
	}
	lo, hi := -1, -1
	for i, p := range m.params {
		if !mine[p] {
			continue
		}
		if lo >= 0 && i != hi+1 {
			return 0, 0, false // another parameter lies between two of the block's
		}
		if lo < 0 {
			lo = i
		}
		hi = i
	}
	if lo < 0 || hi-lo+1 != len(mine) {
		return 0, 0, false
	}
	end := m.grads.t.Len()
	if hi+1 < len(m.params) {
		end = m.params[hi+1].G.Offset
	}
	off = m.params[lo].G.Offset
	return off, end - off, true
}
