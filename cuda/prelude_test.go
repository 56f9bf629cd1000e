package cuda

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/shaders"
)

// preludeHarness is a host C++ program around golf_prelude.cuh's
// conversions as the CPU emulator compiles them (no __CUDA_ARCH__, so no
// PTX: the integer round-to-nearest-even code). It reads little-endian
// uint32 float bit patterns on stdin and writes, per input, the bf16 bits,
// the fp16 bits, and the float of fp16 bits (the input's low 16 bits)
// widened back.
const preludeHarness = `
#include <cstdio>
#include <cstring>
#include <cmath>
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(n)
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
struct golf_dim3 { unsigned x, y, z; };
static golf_dim3 threadIdx, blockIdx, blockDim, gridDim;
static inline void __syncthreads() {}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int) { return v; }
template <class T> static inline T __shfl_sync(unsigned, T v, unsigned) { return v; }
#include "golf_prelude.cuh"
int main() {
  unsigned u;
  while (std::fread(&u, 4, 1, stdin) == 1) {
    const float f = golf_bits_f32(u);
    const unsigned out[3] = {bf16_round_bits(f), fp16_round_bits(f), golf_f32_bits(fp16_bits_f32((u16)(u & 0xffffu)))};
    std::fwrite(out, 4, 3, stdout);
  }
  return 0;
}
`

// The prelude's integer conversions (the emulator's, and the GPU's under
// -DGOLF_NO_PTX) round exactly as the Go backend: every bf16 and fp16
// rounding case — each exponent and sign with the bits below the rounding
// point just under, at and just over the halfway point, odd and even —
// and every binary16 widened back, against backend.BF16Bits, F16Bits and
// F16Float.
func TestPreludeConversionsMatchGo(t *testing.T) {
	cxx := ""
	for _, c := range []string{"c++", "clang++", "g++"} {
		if p, err := exec.LookPath(c); err == nil {
			cxx = p
			break
		}
	}
	require.NotEmpty(t, cxx, "the tests need a C++ compiler (README)")
	dir := t.TempDir()
	prelude, err := fs.ReadFile(kernelFiles, "kernels/golf_prelude.cuh")
	require.NoError(t, err)
	args, err := fs.ReadFile(shaders.FS(), "golf_args.h")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "golf_prelude.cuh"), prelude, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "golf_args.h"), args, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "harness.cc"), []byte(preludeHarness), 0o644))
	bin := filepath.Join(dir, "harness")
	out, err := exec.Command(cxx, "-std=c++17", "-O1", "-fno-fast-math", "-Wall", "-Wno-unused-function",
		"-Wno-unused-variable", "-I", dir, "-o", bin, filepath.Join(dir, "harness.cc")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	var inputs []uint32
	// Rounding cases: every sign and exponent (and the top mantissa
	// bits) with the dropped bits of each format at their edges.
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff} {
			inputs = append(inputs, hi<<16|lo)
		}
	}
	for hi := uint32(0); hi < 1<<19; hi += 3 {
		for _, lo := range []uint32{0, 0x0fff, 0x1000, 0x1001, 0x1fff} {
			inputs = append(inputs, hi<<13|lo)
		}
	}
	inputs = append(inputs, math.Float32bits(65504), math.Float32bits(65519.99), math.Float32bits(65520),
		math.Float32bits(0x1p-25), math.Float32bits(0x1.000002p-25), math.Float32bits(0x1p-24), 0x7fc00001, 0xffc00000)
	in := make([]byte, 4*len(inputs))
	for i, u := range inputs {
		binary.LittleEndian.PutUint32(in[4*i:], u)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	got, err := cmd.Output()
	require.NoError(t, err)
	require.Len(t, got, 12*len(inputs))
	bad := 0
	for i, u := range inputs {
		f := math.Float32frombits(u)
		b := binary.LittleEndian.Uint32(got[12*i:])
		h := binary.LittleEndian.Uint32(got[12*i+4:])
		w := binary.LittleEndian.Uint32(got[12*i+8:])
		wantW := math.Float32bits(backend.F16Float(uint16(u)))
		if b != uint32(backend.BF16Bits(f)) || h != uint32(backend.F16Bits(f)) || w != wantW {
			if bad < 10 {
				assert.Fail(t, "conversion differs", "input %#08x: bf16 %#04x want %#04x, fp16 %#04x want %#04x, widen %#08x want %#08x",
					u, b, backend.BF16Bits(f), h, backend.F16Bits(f), w, wantW)
			}
			bad++
		}
	}
	assert.Zero(t, bad, "of %d inputs", len(inputs))
}
