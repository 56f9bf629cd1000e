package train

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPointJSON: a curve point with a non-finite loss (a step the fp16
// loss scaler skipped) is written as null and read back as NaN, so a
// checkpoint holding it still encodes; finite losses round-trip exactly,
// in the field names checkpoints have always used.
func TestPointJSON(t *testing.T) {
	pts := []Point{{1, 6.931471805599453}, {2, math.NaN()}, {3, math.Inf(1)}, {4, 0.1}}
	b, err := json.Marshal(pts)
	require.NoError(t, err, "a NaN loss must not make the encoding fail")
	assert.Equal(t, `[{"Step":1,"Loss":6.931471805599453},{"Step":2,"Loss":null},{"Step":3,"Loss":null},{"Step":4,"Loss":0.1}]`, string(b))
	var back []Point
	require.NoError(t, json.Unmarshal(b, &back))
	require.Len(t, back, 4)
	assert.Equal(t, 6.931471805599453, back[0].Loss)
	assert.True(t, math.IsNaN(back[1].Loss) && math.IsNaN(back[2].Loss))
	assert.Equal(t, Point{4, 0.1}, back[3])

	var old []Point
	require.NoError(t, json.Unmarshal([]byte(`[{"Step":7,"Loss":5.5}]`), &old), "a checkpoint written before")
	assert.Equal(t, []Point{{7, 5.5}}, old)
}

// TestLossPlotSkipsNonFinite: a curve with a skipped step's NaN loss still
// draws (gonum refuses NaN points), without that point.
func TestLossPlotSkipsNonFinite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loss.png")
	require.NoError(t, WriteLossPlot(path, "skip", []Point{{1, 7}, {2, math.NaN()}, {3, 6.5}}, []Point{{3, 6.6}}))
	assert.FileExists(t, path)
	assert.Len(t, toXY([]Point{{1, 7}, {2, math.NaN()}, {3, math.Inf(-1)}, {4, 6}}), 2)
}
