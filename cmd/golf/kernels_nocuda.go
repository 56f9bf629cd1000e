//go:build !cuda

package main

import (
	"context"
	"fmt"
)

// runKernels needs NVRTC, which only the cuda build loads.
func runKernels(context.Context, kernelsOptions) error {
	return fmt.Errorf("golf kernels --backend cuda needs the CUDA build: go build -tags cuda ./cmd/golf (no cgo or CUDA toolkit needed; NVRTC is loaded at run time)")
}
