package train

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cpu"
)

// mibLine finds "  <name>  <x> MiB" in a golf info listing.
func mibLine(t *testing.T, out, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s+([0-9.]+) MiB\s*$`).FindStringSubmatch(out)
	require.NotNil(t, m, "no line %q in\n%s", name, out)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestInfoTotalIsWhatCheckMemoryCompares: golf info's plan lists the
// shorter last validation batch among the backend's tensors (with its
// length, from the split), its peak is the sum of the plan's lines, and
// its total is the figure CheckMemory refuses a run above: found here by
// bisecting the memory a test machine has until CheckMemory lets the run
// through.
func TestInfoTotalIsWhatCheckMemoryCompares(t *testing.T) {
	dp, tp := embeddedData(t)
	cfg := planConfigs(dp, tp)["smoke"]
	seqs := valShardSeqs(t, dp, cfg.TrainSeqLen)
	lastTokens := seqs % (cfg.ValBatchSize / cfg.TrainSeqLen) * cfg.TrainSeqLen
	require.Positive(t, lastTokens)

	withMachine(t, 64<<30)
	var out strings.Builder
	require.NoError(t, WriteInfo(&out, cfg, cpu.New(), "test"))
	info := out.String()
	t.Logf("%s", info)

	plan, beside, ok := strings.Cut(info[strings.Index(info, "memory plan:"):], "beside the plan")
	require.True(t, ok, "no host share in\n%s", info)
	assert.Contains(t, plan, fmt.Sprintf("last validation batch (%d tokens)", lastTokens))
	assert.NotContains(t, beside, "validation", "validation workspaces are the backend's tensors: in the plan")
	peak := mibLine(t, plan, `peak (the run's "peak memory allocated")`)
	sum := 0.0
	for _, m := range regexp.MustCompile(`(?m)^\s*(.+?)\s+([0-9.]+) MiB\s*$`).FindAllStringSubmatch(plan, -1) {
		if !strings.HasPrefix(m[1], "peak") {
			v, _ := strconv.ParseFloat(m[2], 64)
			sum += v
		}
	}
	assert.InDelta(t, peak, sum, 0.1*8, "the peak is the sum of the plan's lines (each rounded to 0.1 MiB)")
	total := mibLine(t, beside, "total with the plan (what golf train checks)")

	// The least memory CheckMemory accepts the run with.
	lo, hi := uint64(0), uint64(64<<30)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		withMachine(t, mid)
		if _, err := CheckMemory(cfg, cpu.New()); err != nil {
			require.Contains(t, err.Error(), "the run needs")
			lo = mid
		} else {
			hi = mid
		}
	}
	assert.Equal(t, fmt.Sprintf("%.1f", total), fmt.Sprintf("%.1f", float64(hi)/(1<<20)),
		"golf info's total against the memory CheckMemory needs (%d bytes)", hi)
}
