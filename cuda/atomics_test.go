package cuda

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// atomicUse matches what a CUDA C++ source needs to add concurrently into
// memory: a CUDA atomic function (atomicAdd, atomicCAS, ...) or an inline
// PTX atom./red. instruction. golf's kernels are self-contained (no toolkit
// header), so a float atomic cannot hide in an included file.
var atomicUse = regexp.MustCompile(`\batomic[A-Z][A-Za-z_]*\s*(<[^>]*>)?\s*\(|\b(atom|red)\.[a-z]`)

// lineComment and blockComment are C++ comments, which may say "atomics".
var (
	lineComment  = regexp.MustCompile(`//[^\n]*`)
	blockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
)

// atomicLines returns the lines of src (comments removed, line numbers
// kept) that use an atomic.
func atomicLines(src string) []int {
	src = blockComment.ReplaceAllStringFunc(src, func(c string) string {
		return strings.Repeat("\n", strings.Count(c, "\n"))
	})
	src = lineComment.ReplaceAllString(src, "")
	var out []int
	for i, line := range strings.Split(src, "\n") {
		if atomicUse.MatchString(line) {
			out = append(out, i+1)
		}
	}
	return out
}

// The backward kernels are deterministic because no kernel adds into
// memory concurrently (attention.cu's dK/dV, embedding's scatter, the
// column sums all reduce in a fixed order): no kernel source, nor the
// headers, uses an atomic. Reordered float additions would make two runs
// of a step differ in their last bits, which the CPU emulator cannot show:
// it has no atomic functions, and inline PTX compiles for the GPU only.
func TestKernelsUseNoAtomics(t *testing.T) {
	entries, err := fs.ReadDir(kernelFiles, "kernels")
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		b, err := fs.ReadFile(kernelFiles, path.Join("kernels", e.Name()))
		require.NoError(t, err)
		assert.Empty(t, atomicLines(string(b)), "%s: lines using atomics", e.Name())
		n++
	}
	assert.Equal(t, len(KernelFiles())+2, n, "every kernel file and the two headers (prelude, row code) scanned")
}

// Planted violations: the scan finds each form of atomic, on its line, and
// not the word in comments.
func TestAtomicScanFindsPlantedAtomics(t *testing.T) {
	src := `// no atomics here, atomicAdd( in a comment
__global__ void k(float* p, unsigned* c) {
  atomicAdd(p, 1.0f);
  /* atomicMax(c, 2u);
     still a comment */ unsigned old = atomicCAS (c, 0u, 1u);
  asm volatile("red.global.add.f32 [%0], %1;" :: "l"(p), "f"(1.0f));
  asm volatile("atom.global.exch.b32 %0, [%1], 1;" : "=r"(old) : "l"(c));
  float reduced = 0.f; // reduced. not an instruction
  atomicAdd<float>(p, reduced);
}
`
	assert.Equal(t, []int{3, 5, 6, 7, 9}, atomicLines(src))
}
