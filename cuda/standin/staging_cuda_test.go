//go:build cuda

package standin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/cuda"
)

// TestStagingDoubleBuffer uploads through a small staging buffer (two
// halves of 4 KiB) far more than it holds, without waiting: on the
// stand-in the device runs behind (queued copies read the staging memory
// only when the host waits), so a half rewritten before its copies ran
// would deliver the later bytes. Every tensor, some larger than a half
// (split across both), reads back exactly as uploaded; the backend waited
// for an older half (StagingWaits), and only then.
func TestStagingDoubleBuffer(t *testing.T) {
	b := open(t, cuda.Options{Flavour: cuda.PortableFlavour, GEMM: cuda.GEMMKernels, StagingBytes: 8 << 10})
	before := b.Stats()
	var ts []*backend.Tensor
	var want [][]float32
	for i, n := range []int{700, 1000, 3000, 5000, 257, 1024, 9000, 1, 2048} {
		x := b.New(backend.F32, n)
		v := make([]float32, n)
		for j := range v {
			v[j] = float32(i*100000 + j)
		}
		b.Upload(x, v)
		ts, want = append(ts, x), append(want, v)
	}
	d := b.Stats().Sub(before)
	assert.Zero(t, d.Syncs, "no host wait but the staging buffer's")
	assert.Positive(t, d.StagingWaits, "the uploads outran the two halves")
	for i, x := range ts {
		assert.Equal(t, want[i], b.Download(x), "tensor %d", i)
		b.Free(x)
	}
	require.NoError(t, b.Sync())
}
