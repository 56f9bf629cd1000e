package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// sumRanks is an all-reduce among n goroutines, each with its own
// backend: every call waits for all n, then each gets the float32 sum of
// the n tensors, added in rank order.
type sumRanks struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	gen   int
	parts [][]float32
	count int
	sum   []float32
}

func newSumRanks(n int) *sumRanks {
	s := &sumRanks{n: n, parts: make([][]float32, n)}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *sumRanks) reduce(b backend.Backend, rank int) func(*backend.Tensor) error {
	return func(t *backend.Tensor) error {
		mine := b.Download(t)
		s.mu.Lock()
		gen := s.gen
		s.parts[rank] = mine
		s.count++
		if s.count == s.n {
			sum := make([]float32, len(mine))
			for _, p := range s.parts {
				for i, v := range p {
					sum[i] += v
				}
			}
			s.sum, s.count = sum, 0
			s.gen++
			s.cond.Broadcast()
		}
		for gen == s.gen {
			s.cond.Wait()
		}
		sum := s.sum
		s.mu.Unlock()
		b.Upload(t, sum)
		return nil
	}
}

// TestMuonShareBitwise: Muon shared among 1, 2 and 3 ranks (each solving
// its matrices, the updates summed) leaves every rank's weights and
// momentum buffers bitwise those of the unshared step, over several steps.
func TestMuonShareBitwise(t *testing.T) {
	shapes := [][2]int{{64, 32}, {32, 64}, {48, 48}, {16, 128}, {30, 17}}
	const steps = 3
	type init struct{ w, g [][]float32 }
	rng := rand.New(rand.NewPCG(8, 9))
	var in []init
	for s := 0; s < steps; s++ {
		var x init
		for _, sh := range shapes {
			x.w = append(x.w, randn(rng, sh[0]*sh[1], 0.1))
			x.g = append(x.g, randn(rng, sh[0]*sh[1], 0.01))
		}
		in = append(in, x)
	}
	// run trains one rank and returns its weights and buffers.
	run := func(rank, size int, sum *sumRanks) [][]float32 {
		b := cpu.New()
		var ps []*model.Param
		for i, sh := range shapes {
			ps = append(ps, newParam(b, fmt.Sprint("w", i), in[0].w[i], nil, sh[0], sh[1]))
		}
		mu := NewMuon(b, ps, 0.02, 5)
		defer mu.Free()
		if sum != nil {
			mu.Share(rank, size, sum.reduce(b, rank))
		}
		for s := 0; s < steps; s++ {
			for i, p := range ps {
				b.Upload(p.G, in[s].g[i])
			}
			mu.Step(0.95, 1)
		}
		require.NoError(t, mu.ShareErr())
		var out [][]float32
		for i, p := range ps {
			out = append(out, b.Download(p.W), b.Download(mu.bufs[i]))
		}
		return out
	}
	want := run(0, 1, nil)
	for _, size := range []int{2, 3} {
		sum := newSumRanks(size)
		got := make([][][]float32, size)
		var wg sync.WaitGroup
		for r := 0; r < size; r++ {
			wg.Add(1)
			go func(r int) {
				defer wg.Done()
				got[r] = run(r, size, sum)
			}(r)
		}
		wg.Wait()
		for r := 0; r < size; r++ {
			for k := range want {
				for i := range want[k] {
					if math.Float32bits(want[k][i]) != math.Float32bits(got[r][k][i]) {
						assert.Failf(t, "not bitwise", "%d ranks, rank %d: tensor %d element %d: %v, unshared %v", size, r, k, i, got[r][k][i], want[k][i])
						break
					}
				}
			}
		}
	}
}
