package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad flags are refused before any work, naming the flag.
func TestKernelsFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "rocm"}, "--backend rocm: golf kernels reports the cuda library (NVRTC) or the metal library"},
		{[]string{"--backend", "metal", "--arch", "sm_80"}, "--arch: CUDA-only (the NVRTC compile); golf kernels --backend metal takes --dtype only"},
		{[]string{"--backend", "metal", "--no-cache", "--log-dir", "x"}, "--no-cache, --log-dir: CUDA-only"},
		{[]string{"--backend", "metal", "--dtype", "fp8"}, `--dtype: unknown dtype "fp8"`},
		{[]string{"--arch", "sm_80,80"}, `--arch: architecture "80": want sm_<number>`},
		{[]string{"--arch", "sm_61"}, "--arch: architecture sm_61: no limits known"},
		{[]string{"--dtype", "fp8"}, `--dtype: unknown dtype "fp8"`},
		{[]string{"--dtype", ","}, "--dtype: no element type given"},
	} {
		code, out := golf(t, nil, append([]string{"kernels"}, c.args...)...)
		assert.Equal(t, 1, code, "%v: %s", c.args, out)
		assert.Contains(t, out, c.want, "%v", c.args)
	}
}

func TestParseKernelsFlags(t *testing.T) {
	o, err := parseKernelsFlags("cuda", "sm_80,sm_90", "bf16,fp32,bf16")
	require.NoError(t, err)
	assert.Equal(t, []string{"sm_80", "sm_90"}, o.archs)
	assert.Equal(t, []string{"bfloat", "float"}, o.elems)
}
