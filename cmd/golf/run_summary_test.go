package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunEndsWithSummary: a finished run's output ends with one block: the
// score (the log's final line's numbers), the time, and every file the run
// wrote, each of which exists.
func TestRunEndsWithSummary(t *testing.T) {
	dp, tp := dataset(t)
	out := filepath.Join(t.TempDir(), "out")
	args := append([]string{"train", "--data-path", dp, "--tokenizer-path", tp, "--out-dir", out,
		"--backend", "cpu", "--run-id", "sum"}, tinyFlags...)
	code, output := golf(t, nil, args...)
	require.Equal(t, 0, code, output)

	lines := strings.Split(strings.TrimRight(output, "\n"), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "run sum done: ") {
			start = i
		}
	}
	require.GreaterOrEqual(t, start, 0, "no closing block:\n%s", output)
	block := lines[start:]
	require.GreaterOrEqual(t, len(block), 3, "%q", block)

	m := regexp.MustCompile(`^run sum done: 1/1 steps in (\S+) \(training (\S+)\)$`).FindStringSubmatch(block[0])
	require.NotNil(t, m, block[0])
	for _, d := range m[1:] {
		v, err := time.ParseDuration(d)
		require.NoError(t, err)
		assert.Greater(t, v, time.Duration(0))
	}

	log := readFile(t, filepath.Join(out, "sum.txt"))
	final := regexp.MustCompile(`(?m)^final_int8_zlib_roundtrip_exact val_loss:(\S+) val_bpb:(\S+)$`).FindStringSubmatch(log)
	require.NotNil(t, final, log)
	assert.Regexp(t, `^score: val_loss `+regexp.QuoteMeta(final[1])+` val_bpb `+regexp.QuoteMeta(final[2])+`\b`, block[1])

	require.Equal(t, "files:", block[2])
	var listed []string
	for _, l := range block[3:] {
		f := strings.Fields(l)
		require.NotEmpty(t, f, "an empty line in the block")
		assert.True(t, strings.HasPrefix(l, "  "), "a file line: %q", l)
		st, err := os.Stat(f[0])
		if assert.NoError(t, err, "a listed file") {
			assert.NotZero(t, st.Size(), f[0])
		}
		listed = append(listed, f[0])
	}
	var written []string
	require.NoError(t, filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, p)
		}
		return err
	}))
	sort.Strings(listed)
	sort.Strings(written)
	assert.Equal(t, written, listed, "every file written, and only those")
	for _, s := range []string{"sum.txt", "sum.metrics.jsonl", "sum_model.npz", "sum_model.int8.ptz", "sum_model.summary.json", "sum_loss.png"} {
		assert.Contains(t, listed, filepath.Join(out, s))
	}
}
