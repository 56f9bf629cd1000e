package model

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
)

// TestGradArena: every gradient is a view of one F32 arena at a 256-byte
// aligned offset, in Params order without overlap; GradArena finds it for
// the whole parameter list only; ZeroGrads clears every gradient and the
// gaps between them stay zero through a backward pass.
func TestGradArena(t *testing.T) {
	UseComputeDType(t, backend.F32)
	b := cpu.New()
	cfg := Baseline()
	cfg.VocabSize, cfg.NumLayers, cfg.ModelDim, cfg.NumHeads, cfg.NumKVHeads = 67, 3, 40, 4, 2
	m, err := New(b, cfg, 1)
	require.NoError(t, err)
	defer m.Free()
	params := m.Params()
	arena := GradArena(params)
	require.NotNil(t, arena)
	assert.Nil(t, GradArena(params[1:]), "a subset of the parameters")
	assert.Nil(t, GradArena([]*Param{{Name: "x", G: b.New(backend.F32, 3)}}), "a parameter made elsewhere")

	end := 0
	for _, p := range params {
		assert.Zero(t, (p.G.Offset*4)%256, "%s at element %d", p.Name, p.G.Offset)
		assert.GreaterOrEqual(t, p.G.Offset, end, "%s overlaps its predecessor", p.Name)
		assert.Equal(t, p.W.Shape, p.G.Shape, p.Name)
		end = p.G.Offset + p.G.Len()
	}
	assert.LessOrEqual(t, end, arena.Len())

	ids, tg := randomBatch(b, rand.New(rand.NewPCG(3, 4)), 2*16, cfg.VocabSize)
	m.CastWeights()
	m.ZeroGrads()
	m.LossAndGrad(ids, tg, 16, 1)
	all := b.Download(arena)
	inside := make([]bool, len(all))
	nonzero := 0
	for _, p := range params {
		assert.Equal(t, all[p.G.Offset:p.G.Offset+p.G.Len()], b.Download(p.G), "%s is not its range of the arena", p.Name)
		for i := p.G.Offset; i < p.G.Offset+p.G.Len(); i++ {
			inside[i] = true
			if all[i] != 0 {
				nonzero++
			}
		}
	}
	assert.Positive(t, nonzero, "the backward pass wrote no gradient")
	for i, v := range all {
		if !inside[i] {
			require.Zero(t, v, "gap element %d of the arena", i)
		}
	}
	m.ZeroGrads()
	for _, p := range params {
		for i, v := range b.Download(p.G) {
			require.Zero(t, v, "%s[%d] after ZeroGrads", p.Name, i)
		}
	}
}
