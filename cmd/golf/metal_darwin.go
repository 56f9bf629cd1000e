//go:build darwin && cgo

package main

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/metal"
	"github.com/golf-ml/golf/train"
)

// On macOS the Metal backend over the darwinkit runtime is available to
// --backend metal and --backend auto. Opening it refuses systems it cannot
// run on (macOS before 14, an Intel Mac's GPU, a GPU without unified
// memory) with a message, which --backend auto logs before falling back to
// the CPU, and builds every pipeline before any work.
func init() {
	train.RegisterBackend("metal", func() (backend.Backend, error) {
		rt, err := metal.NewDarwinRuntime()
		if err != nil {
			return nil, err
		}
		b, err := metal.Open(rt)
		if err != nil {
			rt.Close()
			return nil, err
		}
		return b, nil
	})
}
