//go:build !cuda

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Without the cuda build tag the command says how to get it.
func TestKernelsNeedsCUDABuild(t *testing.T) {
	code, out := golf(t, nil, "kernels", "--arch", "sm_80")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "golf kernels --backend cuda needs the CUDA build: go build -tags cuda ./cmd/golf")
}
