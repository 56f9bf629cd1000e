//go:build cuda

package train

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/golf-ml/golf/cuda"
	"github.com/golf-ml/golf/cuda/standin"
)

// autoChild runs this test binary as a child that opens --backend auto with
// GOLF_CUDA_LIB_PATH=libPath (the loader opens the driver once per
// process) and returns the backend's name and the reason.
func autoChild(t *testing.T, libPath string) (name, why string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAutoCUDA$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GOLF_TRAIN_AUTO_CHILD=1", cuda.EnvLibPath+"="+libPath)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`(?m)^AUTO name=(\S+) why=(.*)$`).FindSubmatch(out)
	require.NotNil(t, m, "%s", out)
	return string(m[1]), string(m[2])
}

// TestAutoCUDA: on Linux, --backend auto trains on CUDA when the cuda
// build finds a device (here the stand-in driver), and otherwise on the CPU
// with the reason in one line (the library search's summary, not its list
// of every path tried).
func TestAutoCUDA(t *testing.T) {
	if os.Getenv("GOLF_TRAIN_AUTO_CHILD") != "" {
		b, why, err := OpenBackend("auto")
		require.NoError(t, err)
		fmt.Printf("AUTO name=%s why=%s\n", b.Name(), why)
		return
	}
	lib, err := standin.Build()
	if err == nil {
		_, err = cuda.LoadNVRTC()
	}
	if err != nil {
		if os.Getenv("GOLF_REQUIRE_CUDA_LIBS") == "1" {
			t.Fatal(err)
		}
		t.Skipf("not supported: %v", err)
	}
	name, why := autoChild(t, lib.Dir)
	assert.Equal(t, "cuda", name)
	assert.Equal(t, "auto: cuda device available", why)

	name, why = autoChild(t, t.TempDir())
	if name == "cuda" {
		t.Skip("not supported: this machine has a CUDA driver of its own, so auto cannot fall back")
	}
	assert.Equal(t, "cpu", name)
	assert.Regexp(t, `^auto: no GPU backend usable \(metal: not built into this binary; cuda: cuda: CUDA driver not found \(\d+ paths tried; GOLF_CUDA_LIB_PATH adds directories\)\)$`, why)
}
