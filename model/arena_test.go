package model

import (
	"fmt"
	"math/rand/v2"
	"strings"
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

// TestBlockGradRange: block l's span of the arena holds exactly the
// gradients of its ten parameters: ones written over the span reach them
// and no other gradient.
func TestBlockGradRange(t *testing.T) {
	UseComputeDType(t, backend.F32)
	b := cpu.New()
	cfg := Baseline()
	cfg.VocabSize, cfg.NumLayers, cfg.ModelDim, cfg.NumHeads, cfg.NumKVHeads = 67, 3, 40, 4, 2
	m, err := New(b, cfg, 1)
	require.NoError(t, err)
	defer m.Free()
	arena := GradArena(m.Params())
	prevEnd := -1
	for l := 0; l < cfg.NumLayers; l++ {
		off, n, ok := m.BlockGradRange(l)
		require.True(t, ok, "block %d", l)
		assert.Greater(t, off, prevEnd-1, "block %d after block %d", l, l-1)
		prevEnd = off + n
		m.ZeroGrads()
		ones := make([]float32, n)
		for i := range ones {
			ones[i] = 1
		}
		b.Upload(arena.Rows(off, n), ones)
		inBlock := 0
		for _, p := range m.Params() {
			g := b.Download(p.G)
			want := float32(0)
			if strings.HasPrefix(p.Name, fmt.Sprintf("blocks.%d.", l)) {
				want = 1
				inBlock++
			}
			for i, v := range g {
				if v != want {
					assert.Failf(t, "span", "block %d's span: %s[%d] = %v, want %v", l, p.Name, i, v, want)
					break
				}
			}
		}
		assert.Equal(t, 10, inBlock, "block %d's parameters", l)
	}
	_, _, ok := m.BlockGradRange(cfg.NumLayers)
	assert.False(t, ok, "no such block")
}
