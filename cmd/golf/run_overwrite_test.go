package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadInputRunIDReuse runs two real trainings with one RUN_ID: the
// second is refused before any work (exit 1, OUT_DIR unchanged, the message
// saying how to go on), also when only the artifacts are left; with
// --overwrite it runs and replaces the first: a log of its own steps only
// (golf report: steps 1/1, not 2/1), its own metrics and artifacts.
func TestBadInputRunIDReuse(t *testing.T) {
	dp, tp := dataset(t)
	out := filepath.Join(t.TempDir(), "out")
	base := append([]string{"train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out, "--backend", "cpu"}, tinyFlags...)
	args := func(extra ...string) []string {
		return append(append(append([]string{}, base...), "--run-id", "again"), extra...)
	}
	code, first := golf(t, nil, args("--iterations", "2")...)
	require.Equal(t, 0, code, first)
	logPath := filepath.Join(out, "again.txt")
	firstLog := readFile(t, logPath)

	paths := map[string]string{dp: "$DATA", tp: "$TOK", out: "$OUT"}
	refused := func(class string, want ...string) {
		t.Run(class, func(t *testing.T) {
			before := listing(t, out)
			a := args("--iterations", "1")
			code, output, rss := golfRSS(t, []string{refusalLimit}, a...)
			recordRefusal(t, "train", class, elide(a, len(tinyFlags)+9), nil, code, output, paths, unchanged(before, listing(t, out)))
			assert.Equal(t, 1, code, output)
			for _, w := range want {
				assert.Contains(t, output, w)
			}
			assertRefusalRSS(t, rss)
			assert.Equal(t, before, listing(t, out), "OUT_DIR changed")
			assert.NotContains(t, output, "step:", "training started")
		})
	}
	refused("RUN_ID of a finished run", "RUN_ID=again already has a finished run in "+out,
		"again.txt: final_int8_zlib_roundtrip_exact val_loss:", "give another RUN_ID, or --overwrite to replace its log and artifacts")
	assert.Equal(t, firstLog, readFile(t, logPath))

	// The log gone, the artifacts still there.
	require.NoError(t, os.Rename(logPath, logPath+".kept"))
	refused("RUN_ID with an earlier run's artifacts", "RUN_ID=again already has artifacts of an earlier run in "+out,
		"again_model.npz", "again_model.int8.ptz", "--overwrite to replace them")
	require.NoError(t, os.Rename(logPath+".kept", logPath))

	oldNPZ := readFile(t, filepath.Join(out, "again_model.npz"))
	code, second := golf(t, nil, args("--iterations", "1", "--overwrite")...)
	require.Equal(t, 0, code, second)
	log := readFile(t, logPath)
	assert.NotContains(t, log, firstLog, "the old log is replaced, not appended to")
	assert.Equal(t, 1, strings.Count(log, "\nrun_id:again\n"), "one run in the log")
	assert.Equal(t, 1, strings.Count(log, "\nfinal_int8_zlib_roundtrip_exact "))
	for _, m := range regexp.MustCompile(`(?m)^step:\d+/(\d+) `).FindAllStringSubmatch(log, -1) {
		assert.Equal(t, "1", m[1], "a step line of another run: %s", m[0])
	}
	assert.NotEqual(t, oldNPZ, readFile(t, filepath.Join(out, "again_model.npz")), "the artifacts are the new run's")
	metrics := readFile(t, filepath.Join(out, "again.metrics.jsonl"))
	assert.Equal(t, 1, strings.Count(metrics, `"train_loss"`), "the metrics of the new run's one step:\n%s", metrics)

	code, rep := golf(t, nil, "report", out)
	require.Equal(t, 0, code, rep)
	assert.Regexp(t, `(?m)^\S*again\.txt +golf +\d+ +1/1 `, rep)
	assert.NotContains(t, rep, "2/1")
}
