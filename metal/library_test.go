package metal

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/shaders"
)

// hostNamePrefixes lists, per flavour, the "<op>_<flavour>_" strings of the
// registry, written independently of FlavourSource's pattern.
func hostNamePrefixes(f Flavour) []string {
	var out []string
	for _, k := range Kernels {
		out = append(out, strings.TrimSuffix(KernelName(k.Op, k.Dir, f, "x"), "x"))
	}
	return out
}

// TestFlavourSource: the source compiled for a flavour instantiates every
// registry kernel of that flavour and none of the other; the rest of the
// text is unchanged.
func TestFlavourSource(t *testing.T) {
	src, err := shaders.Source()
	require.NoError(t, err)
	for _, f := range []Flavour{Simd, Portable} {
		other := Portable
		if f == Portable {
			other = Simd
		}
		got, err := FlavourSource(src, f)
		require.NoError(t, err)
		for _, p := range hostNamePrefixes(f) {
			assert.Contains(t, got, `instantiate_kernel("`+p+`" #tname`, "%s kernel %s missing", f, p)
		}
		for _, p := range hostNamePrefixes(other) {
			assert.NotContains(t, got, `"`+p+`" #tname`, "%s source still instantiates %s", f, p)
		}
		// Only instantiation calls were removed: the two texts agree once
		// every call is blanked.
		blank := regexp.MustCompile(`instantiate_kernel\([^()]*\)`)
		assert.Equal(t, blank.ReplaceAllString(src, ""), blank.ReplaceAllString(got, ""))
	}
}

// TestFlavourSourceRefusesUnknownFormat: a source whose instantiations the
// filter does not recognise is an error, not a silently unfiltered (or
// emptied) library.
func TestFlavourSourceRefusesUnknownFormat(t *testing.T) {
	src, err := shaders.Source()
	require.NoError(t, err)
	renamed := strings.Replace(src, `instantiate_kernel("relu_sq_fwd_simd_" #tname`, `instantiate_kernel("relu_sq_fwd_simd_" # tname`, 1)
	require.NotEqual(t, src, renamed)
	_, err = FlavourSource(renamed, Portable)
	assert.ErrorContains(t, err, "instantiates")
}

// TestCheckDevice: the systems golf's Metal backend refuses at start-up,
// each with a message naming what is missing, and the flavour and bfloat
// support the rest get.
func TestCheckDevice(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      deviceFacts
		want   []string // substrings of the error; nil: accepted
		simd   bool
		bfloat bool
	}{
		{"macOS 13", deviceFacts{name: "Apple M2", macOSMajor: 13, macOSMinor: 6, appleFamily: 8, metal3: true, unified: true},
			[]string{"macOS 14", "13.6", "--backend cpu"}, false, false},
		{"Intel Mac, integrated GPU", deviceFacts{name: "Intel(R) Iris(TM) Plus Graphics", macOSMajor: 14, appleFamily: 0, metal3: true, unified: true},
			[]string{"Intel(R) Iris(TM) Plus Graphics", "Apple silicon", "--backend cpu"}, false, false},
		{"Intel Mac, discrete GPU", deviceFacts{name: "AMD Radeon Pro 5500M", macOSMajor: 15, appleFamily: 0, metal3: true, unified: false},
			[]string{"AMD Radeon Pro 5500M", "--backend cpu"}, false, false},
		{"no unified memory", deviceFacts{name: "Some GPU", macOSMajor: 15, appleFamily: 7, unified: false},
			[]string{"unified memory", "--backend cpu"}, false, false},
		{"M1", deviceFacts{name: "Apple M1", macOSMajor: 14, appleFamily: 7, metal3: true, unified: true}, nil, true, true},
		{"M3 Max", deviceFacts{name: "Apple M3 Max", macOSMajor: 15, appleFamily: 9, metal3: true, unified: true}, nil, true, true},
		// The hosted runners' GPU: Apple5, neither Apple6 nor Metal3.
		{"paravirtual", deviceFacts{name: "Apple Paravirtual device", macOSMajor: 14, appleFamily: 5, unified: true}, nil, false, false},
		{"Apple6 without Metal3", deviceFacts{name: "A13", macOSMajor: 14, appleFamily: 6, unified: true}, nil, false, true},
	} {
		err := checkDevice(c.f)
		if c.want == nil {
			assert.NoError(t, err, c.name)
			fl, bf := c.f.flavourAndBFloat()
			assert.Equal(t, c.simd, fl == Simd, c.name)
			assert.Equal(t, c.bfloat, bf, c.name)
			continue
		}
		require.Error(t, err, c.name)
		for _, w := range c.want {
			assert.Contains(t, err.Error(), w, c.name)
		}
	}
}

// TestFlavourSourceCompiles compiles the source each flavour's device
// compiles as C++17 against the emulator's metal_stdlib (syntax and
// template instantiation only): removing one flavour's instantiations
// leaves a well-formed translation unit. Apple's compiler checks the same
// files in the macOS workflow (scripts/metalsrc).
func TestFlavourSourceCompiles(t *testing.T) {
	cxx := ""
	for _, name := range []string{"c++", "g++", "clang++"} {
		if p, err := exec.LookPath(name); err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		t.Skip("not supported: no C++ compiler")
	}
	src, err := shaders.Source()
	require.NoError(t, err)
	dir := t.TempDir()
	for _, f := range []Flavour{Simd, Portable} {
		s, err := FlavourSource(src, f)
		require.NoError(t, err)
		path := filepath.Join(dir, "golf_"+f.String()+".metal")
		require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
		out, err := exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-w", "-I", filepath.Join("..", "internal", "kemu", "msl", "include"),
			"-I", filepath.Join("..", "shaders"), "-x", "c++", path).CombinedOutput()
		assert.NoError(t, err, "%s flavour source:\n%s", f, out)
	}
	// A filter that broke an instantiation macro (here: a continuation
	// line cut) must fail to compile.
	s, err := FlavourSource(src, Portable)
	require.NoError(t, err)
	broken := strings.Replace(s, "relu_sq_fwd, T, false) \\\n", "relu_sq_fwd, T, false)\n", 1)
	require.NotEqual(t, s, broken)
	path := filepath.Join(dir, "broken.metal")
	require.NoError(t, os.WriteFile(path, []byte(broken), 0o644))
	_, err = exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-w", "-I", filepath.Join("..", "internal", "kemu", "msl", "include"),
		"-I", filepath.Join("..", "shaders"), "-x", "c++", path).CombinedOutput()
	assert.Error(t, err, "a broken instantiation macro compiled")
}
