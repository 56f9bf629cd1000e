package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
)

// TestAttentionForwardUnits checks that how AttentionForward groups kv
// heads into units (fwdHeads: all of a sequence's heads in one unit, or one
// head per unit) and how many participants run them leaves every output
// bit the same, in F32 and BF16, across several key blocks; D = 64 runs
// bf16 on AMX tiles where the CPU has them (attAMX).
func TestAttentionForwardUnits(t *testing.T) {
	saved := attTile
	defer func() { attTile = saved }()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const T, B, H, Hkv = 75, 2, 8, 4
	const N = T * B
	for _, c := range []struct {
		dt backend.DType
		D  int
	}{{backend.F32, 16}, {backend.BF16, 16}, {backend.BF16, 64}} {
		dt, D := c.dt, c.D
		t.Run(fmt.Sprintf("%v_D%d_amx=%v", dt, D, attAMX(dt, D)), func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 1))
			b := New()
			q := upload(b, dt, randVals(r, N*H*D, 2), N, H, D)
			k := upload(b, dt, randVals(r, N*Hkv*D, 2), N, Hkv, D)
			v := upload(b, dt, randVals(r, N*Hkv*D, 1), N, Hkv, D)
			run := func(pack, procs int) (out, lse []float32) {
				attTile.keys, attTile.fwdPack = 32, pack
				require.Equal(t, map[int]int{1 << 20: Hkv, T * D: 1}[pack], fwdHeads(T, Hkv, D), "heads per unit at budget %d", pack)
				o, l := poisoned(b, dt, N, H, D), poisoned(b, backend.F32, N, H)
				runtime.GOMAXPROCS(procs)
				b.AttentionForward(o, l, q, k, v, T)
				return b.Download(o), b.Download(l)
			}
			wantOut, wantLse := run(1<<20, 1)
			for _, c := range [][2]int{{T * D, 1}, {T * D, 3}, {1 << 20, 3}} {
				out, lse := run(c[0], c[1])
				for i := range wantOut {
					if math.Float32bits(out[i]) != math.Float32bits(wantOut[i]) {
						require.Equal(t, wantOut[i], out[i], "budget %d, %d procs: out[%d]", c[0], c[1], i)
					}
				}
				assert.Equal(t, wantLse, lse, "budget %d, %d procs: lse", c[0], c[1])
			}
		})
	}
}
