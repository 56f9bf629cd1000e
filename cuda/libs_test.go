package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTree builds a directory tree under a temp dir with empty files at the
// given relative paths and returns a SearchEnv rooted there with env as its
// environment (values may use $ROOT for the tree's root).
func fakeTree(t *testing.T, files []string, env map[string]string) (SearchEnv, string) {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	vars := map[string]string{}
	for k, v := range env {
		vars[k] = strings.ReplaceAll(v, "$ROOT", root)
	}
	return SearchEnv{
		Getenv: func(k string) string { return vars[k] },
		Glob:   filepath.Glob,
		Stat:   os.Stat,
		Home:   filepath.Join(root, "home"),
		Root:   root,
	}, root
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func TestCandidatesOrder(t *testing.T) {
	env, root := fakeTree(t, nil, map[string]string{
		EnvLibPath:    "$ROOT/mine:$ROOT/mine2",
		"CUDA_HOME":   "$ROOT/cuda-12.4",
		"VIRTUAL_ENV": "$ROOT/venv",
	})
	// Site-packages directories must exist to be globbed.
	for _, d := range []string{
		"venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib",
		"venv/lib/python3.11/site-packages/nvidia/other/lib",
		"home/.local/lib/python3.12/site-packages",
		"usr/lib/python3/dist-packages",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	c := LibNVRTC.Candidates(env)
	j := func(p ...string) string { return filepath.Join(append([]string{root}, p...)...) }
	sp := j("venv/lib/python3.11/site-packages")
	want := []string{
		j("mine", "libnvrtc.so.13"), j("mine", "libnvrtc.so.12"), j("mine", "libnvrtc.so.11.2"),
		j("mine2", "libnvrtc.so.13"),
		"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
		j("cuda-12.4", "lib64", "libnvrtc.so.13"),
		j("cuda-12.4", "lib", "libnvrtc.so.12"),
		j("cuda-12.4", "targets", targetArch()+"-linux", "lib", "libnvrtc.so.11.2"),
		filepath.Join(sp, "nvidia", "cu13", "lib", "libnvrtc.so.13"),
		filepath.Join(sp, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12"),
		filepath.Join(sp, "nvidia", "other", "lib", "libnvrtc.so.12"),
		j("home/.local/lib/python3.12/site-packages", "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12"),
		j("usr/lib/python3/dist-packages", "nvidia", "cu13", "lib", "libnvrtc.so.13"),
		j("usr/local/cuda/lib64", "libnvrtc.so.12"),
		j("usr/lib64", "libnvrtc.so.11.2"),
	}
	last := -1
	for _, w := range want {
		i := indexOf(c, w)
		require.GreaterOrEqual(t, i, 0, "candidate %s missing from %v", w, c)
		assert.Greater(t, i, last, "candidate %s out of order", w)
		last = i
	}
	seen := map[string]bool{}
	for _, p := range c {
		assert.False(t, seen[p], "duplicate candidate %s", p)
		seen[p] = true
	}
	// The nvidia/cuda_nvrtc/lib directory is both a PipDir and a match of
	// nvidia/*/lib: listed once.
	assert.Equal(t, 1, strings.Count(strings.Join(c, "\n"), filepath.Join(sp, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")+"\n"))
}

func TestCandidatesDriverSkipsToolkitAndPip(t *testing.T) {
	env, root := fakeTree(t, nil, map[string]string{"CUDA_HOME": "$ROOT/cuda", "VIRTUAL_ENV": "$ROOT/venv"})
	require.NoError(t, os.MkdirAll(filepath.Join(root, "venv/lib/python3.11/site-packages/nvidia/cu13/lib"), 0o755))
	c := LibCUDA.Candidates(env)
	assert.Equal(t, "libcuda.so.1", c[0])
	for _, p := range c {
		assert.NotContains(t, p, filepath.Join(root, "cuda"), "driver searched in the toolkit")
		assert.NotContains(t, p, "site-packages", "driver searched in a wheel")
	}
	assert.Contains(t, c, filepath.Join(root, "usr/lib/wsl/lib/libcuda.so.1"))
}

// TestCandidatesPythonOnPath: the environment of a python3 on PATH is
// searched though VIRTUAL_ENV is unset; a PATH directory without python3
// adds nothing.
func TestCandidatesPythonOnPath(t *testing.T) {
	env, root := fakeTree(t, []string{"opt/torch/.venv/bin/python3"}, map[string]string{
		"PATH": "$ROOT/usr/bin:$ROOT/opt/torch/.venv/bin:$ROOT/tools/bin",
	})
	for _, d := range []string{
		"opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib",
		"tools/lib/python3.12/site-packages/nvidia/cu13/lib",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	c := LibCublasLt.Candidates(env)
	assert.Contains(t, c, filepath.Join(root, "opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublasLt.so.13"))
	for _, p := range c {
		assert.NotContains(t, p, filepath.Join(root, "tools"), "a PATH directory without python3 was searched")
	}
	assert.Less(t, indexOf(c, filepath.Join(root, "opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublasLt.so.13")),
		indexOf(c, filepath.Join(root, "usr/lib64/libcublasLt.so.13")), "wheels before the system directories")
}

// TestFindOrderAndError plants libraries in a fake tree: an opener that
// accepts one path must be handed the earlier existing candidates first,
// and a search that accepts nothing must name every path tried.
func TestFindOrderAndError(t *testing.T) {
	env, root := fakeTree(t, []string{
		"pip/nvidia/cu13/lib/libnvrtc.so.13",
		"usr/lib64/libnvrtc.so.11.2",
		"mine/libnvrtc.so.12",
	}, map[string]string{EnvLibPath: "$ROOT/mine", "PYTHONPATH": "$ROOT/pip"})
	var tried []string
	tryFail := func(p string) error {
		tried = append(tried, p)
		return errors.New("cannot open shared object file: invalid ELF header")
	}
	_, err := LibNVRTC.Find(env, tryFail)
	require.Error(t, err)
	var le *LoadError
	require.ErrorAs(t, err, &le)
	// Existing files and bare sonames are opened; missing files are not.
	assert.Equal(t, []string{
		filepath.Join(root, "mine/libnvrtc.so.12"),
		"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
		filepath.Join(root, "pip/nvidia/cu13/lib/libnvrtc.so.13"),
		filepath.Join(root, "usr/lib64/libnvrtc.so.11.2"),
	}, tried)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "cuda: NVRTC not found; tried:\n"), msg)
	for _, p := range LibNVRTC.Candidates(env) {
		assert.Contains(t, msg, "\n  "+p+": ", "error does not list %s", p)
	}
	assert.Contains(t, msg, filepath.Join(root, "mine/libnvrtc.so.13")+": no such file")
	assert.Contains(t, msg, filepath.Join(root, "mine/libnvrtc.so.12")+": cannot open shared object file: invalid ELF header")
	assert.True(t, strings.HasSuffix(msg, "\n"+LibNVRTC.Hint), msg)

	// The first path the opener accepts wins.
	want := filepath.Join(root, "pip/nvidia/cu13/lib/libnvrtc.so.13")
	got, err := LibNVRTC.Find(env, func(p string) error {
		if p == want {
			return nil
		}
		return errors.New("no")
	})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// TestFindTooOld: an old copy is passed over for a newer one further down,
// and when only old copies exist the error says so.
func TestFindTooOld(t *testing.T) {
	env, root := fakeTree(t, []string{"a/libnvrtc.so.11.2", "b/libnvrtc.so.12"},
		map[string]string{EnvLibPath: "$ROOT/a:$ROOT/b"})
	old := filepath.Join(root, "a/libnvrtc.so.11.2")
	check := func(p string) error {
		switch p {
		case old:
			return &TooOldError{Found: "11.1", Need: "11.8"}
		case filepath.Join(root, "b/libnvrtc.so.12"):
			return nil
		}
		return errors.New("not loadable")
	}
	got, err := LibNVRTC.Find(env, check)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "b/libnvrtc.so.12"), got)

	require.NoError(t, os.Remove(filepath.Join(root, "b/libnvrtc.so.12")))
	_, err = LibNVRTC.Find(env, check)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cuda: NVRTC too old (found 11.1); tried:")
	assert.Contains(t, err.Error(), old+": version 11.1 is too old, need 11.8 or newer")
}

func TestNaturalLess(t *testing.T) {
	assert.True(t, naturalLess("python3.9", "python3.13"))
	assert.False(t, naturalLess("python3.13", "python3.9"))
	assert.True(t, naturalLess("3.9.18", "3.10.1"))
	assert.True(t, naturalLess("a", "b"))
	assert.True(t, naturalLess("lib", "lib2"))
	assert.False(t, naturalLess("x1", "x1"))
	env := SearchEnv{Glob: func(string) ([]string, error) {
		return []string{"/p/python3.9", "/p/python3.13", "/p/python3.10"}, nil
	}}
	assert.Equal(t, []string{"/p/python3.13", "/p/python3.10", "/p/python3.9"}, globSorted(env, "x"))
}
