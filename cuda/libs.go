package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Library describes one CUDA shared library that golf loads at run time:
// the sonames it accepts, newest first, and where pip wheels put it.
type Library struct {
	Name    string   // what the user reads: "NVRTC"
	Sonames []string // newest first: libnvrtc.so.13, .12, .11.2
	// PipDirs are directories under site-packages/nvidia that hold the
	// library in NVIDIA's wheels (nvidia-cuda-nvrtc-cu12: nvidia/cuda_nvrtc/lib;
	// the CUDA 13 wheels: nvidia/cu13/lib). nvidia/*/lib is searched after
	// them.
	PipDirs []string
	// Driver marks libcuda: it comes with the NVIDIA driver, never from a
	// toolkit or a wheel, so only the loader's own search and the system
	// directories are tried.
	Driver bool
	// Hint says how to install the library.
	Hint string
}

// The libraries of the CUDA backend (NCCL only for data-parallel
// training).
var (
	LibCUDA = Library{
		Name:    "CUDA driver",
		Sonames: []string{"libcuda.so.1"},
		Driver:  true,
		Hint:    "install the NVIDIA driver (libcuda.so.1 comes with it, not with the CUDA toolkit)",
	}
	LibNVRTC = Library{
		Name:    "NVRTC",
		Sonames: []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"},
		PipDirs: []string{"cu13/lib", "cuda_nvrtc/lib"},
		Hint: "install NVRTC 11.8 or newer: the CUDA toolkit, `pip install nvidia-cuda-nvrtc-cu12`, " +
			"or on Debian `scripts/ci/cuda_libs.sh` (libnvrtc11.2 from non-free); " +
			"or point GOLF_CUDA_LIB_PATH at the directory that holds it",
	}
	LibCublasLt = Library{
		Name:    "cuBLASLt",
		Sonames: []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"},
		PipDirs: []string{"cu13/lib", "cublas/lib"},
		Hint: "install cuBLASLt: the CUDA toolkit, `pip install nvidia-cublas-cu12`, " +
			"or on Debian `scripts/ci/cuda_libs.sh` (libcublaslt11 from non-free); " +
			"or point GOLF_CUDA_LIB_PATH at the directory that holds it",
	}
	// LibNCCL is NCCL 2: PyTorch's wheels carry it as
	// site-packages/nvidia/nccl/lib/libnccl.so.2 (nvidia-nccl-cu12).
	LibNCCL = Library{
		Name:    "NCCL",
		Sonames: []string{"libnccl.so.2"},
		PipDirs: []string{"nccl/lib"},
		Hint: "install NCCL 2.18 or newer: `pip install nvidia-nccl-cu12` (PyTorch brings it), " +
			"NVIDIA's libnccl2 package, or your distribution's; " +
			"or point GOLF_CUDA_LIB_PATH at the directory that holds libnccl.so.2",
	}
)

// EnvLibPath names the environment variable of extra library directories
// (colon-separated), searched before everything else.
const EnvLibPath = "GOLF_CUDA_LIB_PATH"

// SearchEnv is what the search reads from the machine; tests replace it
// with a fake directory tree. Getenv and Glob default to os.Getenv and
// filepath.Glob, Stat to os.Stat, Home to the user's home directory, Root
// (prefixed to every system path) to "".
type SearchEnv struct {
	Getenv func(string) string
	Glob   func(string) ([]string, error)
	Stat   func(string) (os.FileInfo, error)
	Home   string
	Root   string
}

// DefaultSearchEnv reads the real machine.
func DefaultSearchEnv() SearchEnv {
	home, _ := os.UserHomeDir()
	return SearchEnv{Getenv: os.Getenv, Glob: filepath.Glob, Stat: os.Stat, Home: home}
}

// Candidates lists, in the order they are tried, every path the loader
// tries for l. A bare soname (no slash) is handed to the dynamic loader,
// which searches LD_LIBRARY_PATH, the ld.so cache and the default
// directories; the others are files. Order:
//
//  1. each directory of GOLF_CUDA_LIB_PATH (the user's explicit choice);
//  2. the bare sonames (whatever the loader finds: a system install, an
//     LD_LIBRARY_PATH set by a module system or a container);
//  3. CUDA_HOME and CUDA_PATH: lib64, lib, targets/<arch>-linux/lib;
//  4. pip wheels in every Python site-packages directory found cheaply
//     (VIRTUAL_ENV, CONDA_PREFIX, the environment of each python3 on PATH,
//     PYTHONPATH, ~/.local, pyenv, /usr/local and /usr/lib Python
//     directories): nvidia/<PipDirs>, then nvidia/*/lib;
//     and CONDA_PREFIX/lib, where conda packages put the libraries;
//  5. the system directories (/usr/local/cuda/lib64, the multiarch and lib64
//     directories, WSL's driver directory).
//
// Within a directory the sonames go newest first. Duplicates are dropped.
// The driver (Driver) skips steps 3 and 4.
func (l Library) Candidates(env SearchEnv) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	inDirs := func(dirs []string) {
		for _, d := range dirs {
			for _, s := range l.Sonames {
				add(filepath.Join(d, s))
			}
		}
	}
	inDirs(splitList(env.Getenv(EnvLibPath)))
	for _, s := range l.Sonames {
		add(s)
	}
	if !l.Driver {
		inDirs(toolkitDirs(env))
		inDirs(l.pipDirs(env))
	}
	inDirs(systemDirs(env, l.Driver))
	return out
}

// splitList splits a colon-separated directory list, dropping empty parts.
func splitList(s string) []string {
	var out []string
	for _, p := range filepath.SplitList(s) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// toolkitDirs are the library directories of CUDA_HOME and CUDA_PATH.
func toolkitDirs(env SearchEnv) []string {
	var out []string
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		root := env.Getenv(v)
		if root == "" {
			continue
		}
		out = append(out, filepath.Join(root, "lib64"), filepath.Join(root, "lib"),
			filepath.Join(root, "targets", targetArch()+"-linux", "lib"))
	}
	return out
}

// targetArch is the CUDA toolkit's name for this machine's architecture.
func targetArch() string {
	if runtime.GOARCH == "arm64" {
		return "sbsa"
	}
	return "x86_64"
}

// sitePackages returns the Python package directories found without
// running Python: environment variables, the prefix of each python3 on
// PATH (a virtual environment whose bin directory is on PATH but which was
// never activated, as in images that put PyTorch's venv there) and the
// usual install prefixes, globbed for every python3.x.
func sitePackages(env SearchEnv) []string {
	var pats []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := env.Getenv(v); p != "" {
			pats = append(pats, filepath.Join(p, "lib", "python3*", "site-packages"))
		}
	}
	stat := env.Stat
	if stat == nil {
		stat = os.Stat
	}
	for _, d := range splitList(env.Getenv("PATH")) {
		if _, err := stat(filepath.Join(d, "python3")); err == nil && filepath.IsAbs(d) {
			pats = append(pats, filepath.Join(filepath.Dir(d), "lib", "python3*", "site-packages"))
		}
	}
	out := splitList(env.Getenv("PYTHONPATH"))
	if env.Home != "" {
		pats = append(pats,
			filepath.Join(env.Home, ".local", "lib", "python3*", "site-packages"),
			filepath.Join(env.Home, ".pyenv", "versions", "*", "lib", "python3*", "site-packages"),
			filepath.Join(env.Home, "miniconda3", "lib", "python3*", "site-packages"),
			filepath.Join(env.Home, "anaconda3", "lib", "python3*", "site-packages"))
	}
	pats = append(pats,
		filepath.Join(env.Root, "/usr/local/lib", "python3*", "dist-packages"),
		filepath.Join(env.Root, "/usr/local/lib", "python3*", "site-packages"),
		filepath.Join(env.Root, "/usr/lib", "python3", "dist-packages"),
		filepath.Join(env.Root, "/usr/lib", "python3*", "site-packages"),
		filepath.Join(env.Root, "/opt/conda/lib", "python3*", "site-packages"))
	for _, p := range pats {
		out = append(out, globSorted(env, p)...)
	}
	return out
}

// pipDirs are the directories of l inside NVIDIA's wheels, and conda's lib.
func (l Library) pipDirs(env SearchEnv) []string {
	var out []string
	for _, sp := range sitePackages(env) {
		for _, d := range l.PipDirs {
			out = append(out, filepath.Join(sp, "nvidia", d))
		}
		out = append(out, globSorted(env, filepath.Join(sp, "nvidia", "*", "lib"))...)
	}
	if p := env.Getenv("CONDA_PREFIX"); p != "" {
		out = append(out, filepath.Join(p, "lib"))
	}
	return out
}

// systemDirs are the distribution's library directories.
func systemDirs(env SearchEnv, driver bool) []string {
	multi := "x86_64-linux-gnu"
	if runtime.GOARCH == "arm64" {
		multi = "aarch64-linux-gnu"
	}
	var dirs []string
	if !driver {
		dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/"+targetArch()+"-linux/lib")
	}
	dirs = append(dirs, "/usr/lib/"+multi, "/usr/lib64", "/usr/lib", "/usr/local/lib")
	if driver {
		dirs = append(dirs, "/usr/lib/"+multi+"/nvidia/current", "/usr/lib/wsl/lib")
	}
	for i, d := range dirs {
		dirs[i] = filepath.Join(env.Root, d)
	}
	return dirs
}

// globSorted is env.Glob with the matches in descending natural order
// (numbers compared as numbers: python3.13 before python3.9), so the
// newest Python comes first; a bad pattern matches nothing.
func globSorted(env SearchEnv, pat string) []string {
	m, err := env.Glob(pat)
	if err != nil {
		return nil
	}
	sort.Slice(m, func(i, j int) bool { return naturalLess(m[j], m[i]) })
	return m
}

// naturalLess compares strings with runs of digits compared by value.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da != "" && db != "" {
			na, nb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digitPrefix is the leading run of ASCII digits of s.
func digitPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// Find tries the candidates of l in order and returns the first path for
// which try succeeds. A candidate file that does not exist is recorded
// without calling try. try opens the library and checks it (symbols,
// version); a *TooOldError from it is recorded and the search goes on, so
// a newer copy further down the list still wins. When nothing succeeds the
// error is a *LoadError listing every attempt.
func (l Library) Find(env SearchEnv, try func(path string) error) (string, error) {
	stat := env.Stat
	if stat == nil {
		stat = os.Stat
	}
	e := &LoadError{Lib: l}
	var old []string
	for _, p := range l.Candidates(env) {
		if strings.ContainsRune(p, '/') {
			if _, err := stat(p); err != nil {
				e.Attempts = append(e.Attempts, Attempt{p, "no such file"})
				continue
			}
		}
		err := try(p)
		if err == nil {
			return p, nil
		}
		var tooOld *TooOldError
		if errors.As(err, &tooOld) {
			old = append(old, tooOld.Found)
		}
		e.Attempts = append(e.Attempts, Attempt{p, err.Error()})
	}
	if len(old) > 0 {
		e.Reason = fmt.Sprintf("too old (found %s)", strings.Join(old, ", "))
	}
	return "", e
}

// TooOldError is what a check returns for a library older than golf needs.
type TooOldError struct {
	Found, Need string
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("version %s is too old, need %s or newer", e.Found, e.Need)
}

// Attempt is one path the loader tried and why it did not do.
type Attempt struct {
	Path string
	Err  string
}

// LoadError says that no usable copy of a library was found: every path
// tried, each with its reason, and how to install the library.
type LoadError struct {
	Lib      Library
	Attempts []Attempt
	// Reason, when set, replaces "not found" in the first line (a library
	// was found but is too old, say).
	Reason string
}

func (e *LoadError) Error() string {
	var b strings.Builder
	reason := e.Reason
	if reason == "" {
		reason = "not found"
	}
	fmt.Fprintf(&b, "cuda: %s %s; tried:", e.Lib.Name, reason)
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, "\n  %s: %s", a.Path, a.Err)
	}
	fmt.Fprintf(&b, "\n%s", e.Lib.Hint)
	return b.String()
}

// Summary is err in one line, for a log: a LoadError is its first line
// with the number of paths tried ("cuda: CUDA driver not found (3 paths
// tried; GOLF_CUDA_LIB_PATH adds directories)"); any other error its first
// line.
func Summary(err error) string {
	if err == nil {
		return ""
	}
	var le *LoadError
	if errors.As(err, &le) {
		reason := le.Reason
		if reason == "" {
			reason = "not found"
		}
		return fmt.Sprintf("cuda: %s %s (%d paths tried; %s adds directories)", le.Lib.Name, reason, len(le.Attempts), EnvLibPath)
	}
	return firstLine(err)
}

// firstLine is the first line of err's message.
func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
