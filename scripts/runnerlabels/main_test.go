package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testList(t *testing.T) map[string]label {
	t.Helper()
	l, err := readList(strings.NewReader("# comment\ncurrent macos-15 Xcode 16\ncurrent ubuntu-24.04\nretired macos-14 gone in November\n"))
	require.NoError(t, err)
	return l
}

// TestCheck: each form of runs-on, with current, retired and unknown
// labels, and the problems named by line.
func TestCheck(t *testing.T) {
	labels := testList(t)
	for _, c := range []struct {
		name, workflow string
		want           []string // each problem's prefix "LINE: ..." and a word of it
	}{
		{"scalar current", "jobs:\n  a:\n    runs-on: macos-15\n", nil},
		{"scalar retired", "jobs:\n  a:\n    runs-on: macos-14\n", []string{"3: runner label macos-14 is retired (gone in November)"}},
		{"quoted retired", "jobs:\n  a:\n    runs-on: \"macos-14\" # the old one\n", []string{"3: runner label macos-14 is retired"}},
		{"flow list", "jobs:\n  a:\n    runs-on: [macos-15, 'macos-14']\n", []string{"3: runner label macos-14 is retired"}},
		{"block list", "jobs:\n  a:\n    runs-on:\n      - ubuntu-24.04\n      - macos-14\n    steps:\n      - run: echo\n",
			[]string{"5: runner label macos-14 is retired"}},
		{"unknown", "jobs:\n  a:\n    runs-on: macos-13\n", []string{"3: runner label macos-13 is not in L"}},
		{"expression", "jobs:\n  a:\n    runs-on: ${{ matrix.os }}\n", []string{"3: runs-on \"${{ matrix.os }}\" is not a literal label"}},
		{"commented out", "jobs:\n  a:\n    # runs-on: macos-14\n    runs-on: macos-15\n", nil},
		{"matrix", "jobs:\n  a:\n    strategy:\n      matrix:\n        runner: [macos-15, macos-14]\n    runs-on: ${{ matrix.runner }}\n",
			[]string{"5: runner label macos-14 is retired"}},
		{"matrix block list", "jobs:\n  a:\n    strategy:\n      matrix:\n        os:\n          - macos-14\n        go: [1, 2]\n    runs-on: ${{ matrix.os }}\n",
			[]string{"5: runner label macos-14 is retired"}},
		{"matrix of another job", "jobs:\n  a:\n    strategy:\n      matrix:\n        os: [macos-15]\n    runs-on: macos-15\n  b:\n    runs-on: ${{ matrix.os }}\n",
			[]string{"8: runs-on \"${{ matrix.os }}\" is not a literal label"}},
		{"two jobs", "jobs:\n  a:\n    runs-on: macos-15\n  b:\n    runs-on: macos-14\n", []string{"5: runner label macos-14 is retired"}},
	} {
		got := check(c.workflow, labels, "L")
		require.Len(t, got, len(c.want), "%s: %v", c.name, got)
		for i, w := range c.want {
			assert.True(t, strings.HasPrefix(got[i], w), "%s: %q does not start with %q", c.name, got[i], w)
		}
	}
}

// TestReadListRejects: a malformed list is an error naming the line.
func TestReadListRejects(t *testing.T) {
	_, err := readList(strings.NewReader("current a\nmaybe b\n"))
	assert.ErrorContains(t, err, "line 2")
	_, err = readList(strings.NewReader("current a\nretired a\n"))
	assert.ErrorContains(t, err, "label a listed twice")
}

// TestRepository: the repository's workflows pass against its list, and
// the planted fixture on a retired runner fails (.ci/run runs the command
// on both as well).
func TestRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	f, err := os.Open(filepath.Join(root, ".github", "runners.txt"))
	require.NoError(t, err)
	defer f.Close()
	labels, err := readList(f)
	require.NoError(t, err)
	workflows, err := filepath.Glob(filepath.Join(root, ".github", "workflows", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, workflows)
	for _, w := range workflows {
		text, err := os.ReadFile(w)
		require.NoError(t, err)
		assert.NotEmpty(t, runsOn(string(text)), "%s has no runs-on", w)
		assert.Empty(t, check(string(text), labels, "runners.txt"), w)
	}
	text, err := os.ReadFile(filepath.Join(root, ".github", "lint-fixtures", "retired_runner.yml"))
	require.NoError(t, err)
	got := check(string(text), labels, "runners.txt")
	require.Len(t, got, 2, "%v", got)
	assert.Contains(t, got[0], "macos-14 is retired")
	assert.Contains(t, got[1], "macos-13 is retired")
}
