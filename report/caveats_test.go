package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What golf's smoke logs (testdata/golf*, `golf train --smoke` on the
// embedded data) say against train_gpt.py's defaults: 20 iterations of
// 4096 tokens, 256-token sequences, 4 layers of 256 wide with 4 heads and
// 2 KV heads (2,101,776 parameters), no wallclock cap, validated on the
// embedded brown_sp1024 (55,808 tokens).
const (
	smokeData   = "validated on brown_sp1024 (golf's embedded sample data, 55808 tokens), not FineWeb's validation split (fineweb10B_sp1024, 62021632 tokens)"
	smokeConfig = "configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): iterations 20 [20000], max_wallclock_seconds 0 [600], " +
		"train_batch_tokens 4096 [524288], train_seq_len 256 [1024], model_params 2101776 [17059912], num_layers 4 [9], model_dim 256 [512], num_heads 4 [8], num_kv_heads 2 [4]"
)

// Two seeds of a smoke run pass the one-sample test against a worse
// score: the report says record, and says plainly, beside it, why these
// runs are no record run.
func TestCaveatsToyRecord(t *testing.T) {
	x := 5.9
	opts := DefaultOptions()
	opts.Against = &x
	rep, err := Build([]string{"testdata/golf/x_seed1.txt", "testdata/golf/x_seed2.txt"}, opts)
	require.NoError(t, err)
	require.True(t, rep.Test.Record, "the t-test alone: p = %g", rep.Test.P)
	want := []string{
		"runs: only 2 scored runs (seeds 1, 2); a record claim shows at least 3 seeds",
		"runs: " + smokeData,
		"runs: " + smokeConfig,
	}

	var out bytes.Buffer
	require.NoError(t, rep.WriteText(&out))
	text := out.String()
	verdict := strings.Index(text, "verdict: a record at p < 0.01")
	require.GreaterOrEqual(t, verdict, 0, text)
	assert.Contains(t, text[verdict:], "\ncaveats: the record verdict is the t-test's alone; a record claim must also answer these:\n  - "+strings.Join(want, "\n  - ")+"\n")

	sub := toMap(t, rep.Submission(Meta{}))
	assert.Equal(t, true, sub["significance_test"].(map[string]any)["record"])
	assert.Equal(t, []any{want[0], want[1], want[2]}, sub["caveats"])
	path := filepath.Join(t.TempDir(), "submission.json")
	require.NoError(t, rep.WriteJSON(path, Meta{}))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "{\n  \"caveats\": [\n    \"runs: only 2 scored runs"), "the caveats come first:\n%s", data)
}

// Three seeds against three: no seed caveat; the data and configuration
// caveats, the same for both groups, are said once for both.
func TestCaveatsBothGroups(t *testing.T) {
	opts := DefaultOptions()
	opts.AgainstRuns = []string{"testdata/golf"}
	rep, err := Build([]string{"testdata/golf_series"}, opts)
	require.NoError(t, err)
	require.True(t, rep.Test.Record)
	assert.Equal(t, []string{"runs and against runs: " + smokeData, "runs and against runs: " + smokeConfig}, rep.Caveats)

	// Two against runs: their own seed caveat.
	opts.AgainstRuns = []string{"testdata/golf/x_seed1.txt", "testdata/golf/x_seed3.txt"}
	rep, err = Build([]string{"testdata/golf_series"}, opts)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Caveats)
	assert.Equal(t, "against runs: only 2 scored runs (seeds 1, 3); a record claim shows at least 3 seeds", rep.Caveats[0])
}

// The public records: FineWeb's full validation split, three seeds each;
// what they changed from the baseline is said, value by value (their logs'
// train_batch_tokens, train_seq_len, iterations and model_params lines).
func TestCaveatsPublicRecords(t *testing.T) {
	opts := DefaultOptions()
	opts.Margin = 0
	opts.AgainstRuns = []string{leakyReLU}
	rep, err := Build([]string{valCalib}, opts)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"runs: configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): train_batch_tokens 786432 [524288], train_seq_len 2048 [1024], model_params 27067484 [17059912]",
		"against runs: configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): iterations 9000 [20000], train_batch_tokens 786432 [524288], train_seq_len 2048 [1024], model_params 26928220 [17059912]",
	}, rep.Caveats)
}

// The data caveat: FineWeb's folder with fewer tokens than the split, and
// logs that do not say; a train_gpt_mlx.py log on the full split has none.
func TestCaveatsData(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/reference/mlx_seed7.txt")
	require.NoError(t, err)
	for _, s := range []string{"1", "2", "3"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "full_seed"+s+".txt"), data, 0o644))
	}
	rep, err := Build([]string{dir}, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, []string{
		"runs: configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): iterations 200 [20000], max_wallclock_seconds 0 [600], train_batch_tokens 8192 [524288]",
	}, rep.Caveats, "three seeds (from the file names) on ./data/datasets/fineweb10B_sp1024/fineweb_val_*.bin tokens:62021632, the baseline's shape")

	part := filepath.Join(dir, "part_seed4.txt")
	cut := bytes.Replace(data, []byte("fineweb_val_*.bin tokens:62021632"), []byte("fineweb_val_*.bin tokens:1048576"), 1)
	require.NoError(t, os.WriteFile(part, cut, 0o644))
	rep, err = Build([]string{part}, DefaultOptions())
	require.NoError(t, err)
	assert.Contains(t, rep.Caveats, "runs: validated on fineweb10B_sp1024 with 1048576 tokens (a part of the split), not FineWeb's validation split (fineweb10B_sp1024, 62021632 tokens)")

	bare := t.TempDir()
	writeLog(t, bare, "a.txt", 1, 2.0, 1.2)
	writeLog(t, bare, "b.txt", 2, 2.1, 1.3)
	writeLog(t, bare, "c.txt", 3, 2.2, 1.4)
	rep, err = Build([]string{bare}, DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, []string{
		"runs: 3 logs name no validation data (no val_loader line), so they do not show FineWeb's validation split (fineweb10B_sp1024, 62021632 tokens)",
		"runs: configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): model_params 100 [17059912], vocab_size 8 [1024]",
	}, rep.Caveats)
	// No test: the caveats close the report.
	var out bytes.Buffer
	require.NoError(t, rep.WriteText(&out))
	assert.True(t, strings.HasSuffix(out.String(), "\ncaveats (for a record claim):\n  - runs: 3 logs name no validation data"+
		" (no val_loader line), so they do not show FineWeb's validation split (fineweb10B_sp1024, 62021632 tokens)\n"+
		"  - runs: configuration differs from the baseline record's (train_gpt.py's defaults, in brackets): model_params 100 [17059912], vocab_size 8 [1024]\n"), out.String())
}
