package cuda

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixture testdata/resources.cu was compiled by NVRTC 11.8 for sm_80;
// its expectations come from the source (launch bounds 256, 300 floats of
// shared memory) and from ptxas's own report of the compile.
func TestReadCubinFixture(t *testing.T) {
	cubin, err := os.ReadFile("testdata/resources.sm_80.cubin")
	require.NoError(t, err)
	res, err := ReadCubin(cubin)
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.Equal(t, Resources{Registers: 10, MaxThreads: 256, StaticShared: 300 * 4}, res["foo"])
	assert.Equal(t, Resources{Registers: 72}, res["bar"])
}

func TestParsePtxasLogFixture(t *testing.T) {
	log, err := os.ReadFile("testdata/resources.sm_80.log")
	require.NoError(t, err)
	info := ParsePtxasLog(string(log))
	assert.Equal(t, map[string]PtxasInfo{
		"foo": {Registers: 10, Shared: 1200},
		"bar": {Registers: 72},
	}, info)
}

func TestParsePtxasLogSpillsAndDeviceFunctions(t *testing.T) {
	log := strings.Join([]string{
		"ptxas info    : 0 bytes gmem",
		"ptxas info    : Function properties for helper",
		"ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
		"ptxas info    : Compiling entry function 'k' for 'sm_90'",
		"ptxas info    : Function properties for k",
		"ptxas         .     40 bytes stack frame, 36 bytes spill stores, 28 bytes spill loads",
		"ptxas info    : Used 255 registers, 49152 bytes smem, 400 bytes cmem[0]",
	}, "\n")
	assert.Equal(t, map[string]PtxasInfo{
		"k": {Registers: 255, Shared: 49152, StackFrame: 40, SpillStores: 36, SpillLoads: 28},
	}, ParsePtxasLog(log))

	// CUDA 12 and later count the barriers between registers and shared
	// memory.
	log = strings.Join([]string{
		"ptxas info    : Compiling entry function 'b' for 'sm_90'",
		"ptxas info    : Function properties for b",
		"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
		"ptxas info    : Used 95 registers, used 1 barriers, 43072 bytes smem, 400 bytes cmem[0]",
		"ptxas info    : Compiling entry function 'c' for 'sm_90'",
		"ptxas info    : Function properties for c",
		"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
		"ptxas info    : Used 8 registers, used 0 barriers, 380 bytes cmem[0]",
	}, "\n")
	assert.Equal(t, map[string]PtxasInfo{
		"b": {Registers: 95, Shared: 43072},
		"c": {Registers: 8},
	}, ParsePtxasLog(log))
}

// TestParsePtxasLogNVRTC13: logs that NVRTC 13.0 wrote on an H200 machine
// (golf kernels --log-dir), with the fields that version adds to the
// "Used" line ("used N barriers", "N bytes cumulative stack size"). The
// expected numbers are read off the logs' own lines.
func TestParsePtxasLogNVRTC13(t *testing.T) {
	b, err := os.ReadFile("testdata/nvrtc13_attention.sm_80.half.log")
	require.NoError(t, err)
	info := ParsePtxasLog(string(b))
	assert.Len(t, info, 13)
	assert.Equal(t, PtxasInfo{Registers: 128, Shared: 18432, StackFrame: 8, SpillStores: 4, SpillLoads: 4}, info["attention_fwd_tc_half"])
	assert.Equal(t, PtxasInfo{Registers: 181, Shared: 43648}, info["attention_dkv_d128_tc_half"])
	assert.Equal(t, PtxasInfo{Registers: 17}, info["attention_delta_portable_half"])
	assert.Equal(t, PtxasInfo{Registers: 200, Shared: 26624}, info["attention_dq_portable_half"])

	b, err = os.ReadFile("testdata/nvrtc13_attention.sm_90.half.log")
	require.NoError(t, err)
	info = ParsePtxasLog(string(b))
	assert.Len(t, info, 13)
	assert.Equal(t, PtxasInfo{Registers: 121, Shared: 18432}, info["attention_fwd_tc_half"])
}

func TestKernelResourcesMergesAndCrossChecks(t *testing.T) {
	cubin, err := os.ReadFile("testdata/resources.sm_80.cubin")
	require.NoError(t, err)
	log, err := os.ReadFile("testdata/resources.sm_80.log")
	require.NoError(t, err)
	res, err := KernelResources(cubin, string(log), "sm_80")
	require.NoError(t, err)
	assert.Equal(t, 10, res["foo"].Registers)

	assert.Empty(t, res["foo"].NoReport)

	// A log of another compile disagrees with the cubin: its report is not
	// used, and the kernel says why.
	bad := strings.Replace(string(log), "Used 10 registers", "Used 12 registers", 1)
	res, err = KernelResources(cubin, bad, "sm_80")
	require.NoError(t, err)
	assert.Equal(t, "cubin says 10 registers, 1200 B shared; ptxas says 12, 1200", res["foo"].NoReport)
	assert.Equal(t, 10, res["foo"].Registers)
	assert.Equal(t, 1200, res["foo"].StaticShared)

	// A log that lacks a kernel.
	res, err = KernelResources(cubin, "", "sm_80")
	require.NoError(t, err)
	assert.Equal(t, "no ptxas report in the compile log", res["foo"].NoReport)
	assert.Equal(t, 1200, res["foo"].StaticShared)
}

func TestParseNVInfoRejectsTruncation(t *testing.T) {
	_, err := parseNVInfo([]byte{eifmtSVal, eiattrRegCount, 8, 0, 1, 2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "payload of 8 bytes, 2 left")
	_, err = parseNVInfo([]byte{0x07, 0x01, 0, 0})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown record format 0x07")
	recs, err := parseNVInfo([]byte{eifmtHVal, 0x1b, 0xff, 0x00, eifmtNVal, 0x35, 0, 0})
	require.NoError(t, err)
	assert.Equal(t, []nvInfoRecord{{format: eifmtHVal, attr: 0x1b, value: 255}, {format: eifmtNVal, attr: 0x35}}, recs)
}

func TestArchMajor(t *testing.T) {
	for arch, want := range map[string]int{"sm_80": 8, "sm_86": 8, "sm_90": 9, "sm_90a": 9, "sm_100": 10, "sm_75": 7} {
		got, err := archMajor(arch)
		require.NoError(t, err, arch)
		assert.Equal(t, want, got, arch)
	}
	for _, bad := range []string{"80", "sm_", "sm_x", "compute_80", "sm_8"} {
		_, err := archMajor(bad)
		assert.Error(t, err, bad)
	}
}
