package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cpu"
	"github.com/golf-ml/golf/model"
)

// unbatched hides a backend's MuonBatcher: only backend.Backend's methods
// are promoted.
type unbatched struct{ backend.Backend }

// TestMuonBatchedBitwise: Muon on the CPU backend's MuonUpdate (matrices
// side by side) leaves every weight and momentum buffer bitwise as the
// matrix-by-matrix path does, over several steps, for wide, tall and
// square matrices, at one and at several participants.
func TestMuonBatchedBitwise(t *testing.T) {
	b := cpu.New()
	_, ok := backend.Backend(b).(backend.MuonBatcher)
	require.True(t, ok, "the CPU backend batches Muon")
	_, ok = backend.Backend(unbatched{b}).(backend.MuonBatcher)
	require.False(t, ok)
	shapes := [][2]int{{64, 32}, {32, 64}, {48, 48}, {16, 128}, {130, 17}, {1, 40}}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 3} {
		runtime.GOMAXPROCS(procs)
		rng := rand.New(rand.NewPCG(5, 6))
		var pa, pb []*model.Param
		for i, s := range shapes {
			w := randn(rng, s[0]*s[1], 0.1)
			pa = append(pa, newParam(b, fmt.Sprint("a", i), w, make([]float32, len(w)), s[0], s[1]))
			pb = append(pb, newParam(b, fmt.Sprint("b", i), w, make([]float32, len(w)), s[0], s[1]))
		}
		ma, mb := NewMuon(b, pa, 0.05, 5), NewMuon(unbatched{b}, pb, 0.05, 5)
		for step := range 3 {
			for i, s := range shapes {
				g := randn(rng, s[0]*s[1], 1)
				b.Upload(pa[i].G, g)
				b.Upload(pb[i].G, g)
			}
			ma.Step(0.95, 1-0.2*float64(step))
			mb.Step(0.95, 1-0.2*float64(step))
			for i := range shapes {
				for _, x := range [][2]*backend.Tensor{{pa[i].W, pb[i].W}, {ma.bufs[i], mb.bufs[i]}} {
					got, want := b.Download(x[0]), b.Download(x[1])
					for j := range want {
						if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
							require.Failf(t, "batched Muon", "GOMAXPROCS %d, step %d, matrix %v: element %d = %v, matrix by matrix %v", procs, step, shapes[i], j, got[j], want[j])
						}
					}
				}
			}
		}
		ma.Free()
		mb.Free()
	}
}
