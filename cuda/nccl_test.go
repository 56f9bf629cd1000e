package cuda

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The error names the call, the code by name and number, NCCL's
// description and, when NCCL has one, its last error.
func TestNCCLErrorMessage(t *testing.T) {
	e := &NCCLError{Call: "ncclAllReduce", Code: NCCLRemoteError,
		Text: ncclErrorText("remote process exited or there was a network error", "socketProgress: Connection closed by remote peer")}
	assert.Equal(t, "cuda: ncclAllReduce: ncclRemoteError (6): remote process exited or there was a network error; "+
		"last error: socketProgress: Connection closed by remote peer", e.Error())
	var err error = fmt.Errorf("step 12: %w", e)
	var ne *NCCLError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, NCCLRemoteError, ne.Code)

	assert.Equal(t, "unhandled system error", ncclErrorText("unhandled system error", ""))
	assert.Equal(t, "last error: bootstrap timeout", ncclErrorText("", "bootstrap timeout"))
	assert.Equal(t, "cuda: ncclCommInitRank: ncclResult_t(42) (42)", (&NCCLError{Call: "ncclCommInitRank", Code: 42}).Error())
	assert.False(t, errors.Is(e, ErrContextClosed))
}

// NCCL_CONFIG_INITIALIZER of NCCL 2.22's nccl.h: sizeof(ncclConfig_t)
// (48 on 64-bit Linux), 0xcafebeef, NCCL_VERSION(2, 22, 3), every
// attribute NCCL_CONFIG_UNDEF_INT (INT_MIN) and netName NULL. (The header
// itself is the oracle of TestNCCLHeaderValues, tag cuda.)
func TestDefaultNCCLConfig(t *testing.T) {
	c := DefaultNCCLConfig()
	const intMin = -1 << 31
	assert.Equal(t, NCCLConfig{Size: 48, Magic: 0xcafebeef, Version: 22203, Blocking: intMin, CGAClusterSize: intMin,
		MinCTAs: intMin, MaxCTAs: intMin, SplitShare: intMin}, c)
	assert.Equal(t, uintptr(48), unsafe.Sizeof(c))
	assert.Nil(t, c.NetName)
	// Each call is a fresh value.
	c.Blocking = 0
	assert.Equal(t, int32(intMin), DefaultNCCLConfig().Blocking)
}

func TestNCCLVersions(t *testing.T) {
	assert.Equal(t, 22203, NCCLVersion(2, 22, 3))
	assert.Equal(t, 2804, NCCLVersion(2, 8, 4)) // the old encoding, before 2.9
	assert.Equal(t, "2.22.3", ncclVersionString(22203))
	assert.Equal(t, "2.18.0", ncclVersionString(MinNCCL))
	assert.Equal(t, "2.8.4", ncclVersionString(2804))
}

func TestNCCLNames(t *testing.T) {
	assert.Equal(t, "ncclBfloat16", NCCLBfloat16.String())
	assert.Equal(t, "ncclDataType_t(10)", NCCLDataType(10).String())
	assert.Equal(t, "ncclAvg", NCCLAvg.String())
	assert.Equal(t, "ncclRedOp_t(-1)", NCCLRedOp(-1).String())
	assert.Equal(t, "ncclInProgress", NCCLInProgress.String())
	for dt, size := range map[NCCLDataType]int{NCCLInt8: 1, NCCLUint8: 1, NCCLFloat16: 2, NCCLBfloat16: 2,
		NCCLInt32: 4, NCCLUint32: 4, NCCLFloat32: 4, NCCLInt64: 8, NCCLUint64: 8, NCCLFloat64: 8, 10: 0} {
		assert.Equal(t, size, dt.Size(), "%v", dt)
	}
}

// libnccl.so.2 is searched as the other libraries are: GOLF_CUDA_LIB_PATH
// first, the bare soname, PyTorch's wheel (site-packages/nvidia/nccl/lib),
// the system; when no copy opens, the one error lists every path tried.
func TestLibNCCLSearch(t *testing.T) {
	env, root := fakeTree(t, []string{
		"venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"usr/lib/x86_64-linux-gnu/libnccl.so.2",
	}, map[string]string{EnvLibPath: "$ROOT/mine", "VIRTUAL_ENV": "$ROOT/venv"})
	c := LibNCCL.Candidates(env)
	wheel := root + "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
	require.GreaterOrEqual(t, len(c), 4)
	assert.Equal(t, []string{root + "/mine/libnccl.so.2", "libnccl.so.2"}, c[:2])
	assert.Greater(t, indexOf(c, wheel), 1)
	assert.Greater(t, indexOf(c, root+"/usr/lib64/libnccl.so.2"), indexOf(c, wheel), "the wheel before the system")

	var tried []string
	_, err := LibNCCL.Find(env, func(p string) error {
		tried = append(tried, p)
		return errors.New("version `GLIBC_2.38' not found")
	})
	require.Error(t, err)
	assert.Equal(t, []string{"libnccl.so.2", wheel}, tried[:2])
	msg := err.Error()
	assert.Contains(t, msg, "cuda: NCCL not found; tried:\n")
	for _, p := range c {
		assert.Contains(t, msg, "\n  "+p+": ")
	}
	assert.Contains(t, msg, wheel+": version `GLIBC_2.38' not found")
	assert.Contains(t, msg, "nvidia-nccl-cu12")

	got, err := LibNCCL.Find(env, func(p string) error {
		if p == wheel {
			return nil
		}
		return errors.New("no")
	})
	require.NoError(t, err)
	assert.Equal(t, wheel, got)
}
