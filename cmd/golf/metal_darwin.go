//go:build darwin && cgo

package main

import (
	"github.com/golf-ml/golf/backend"
	"github.com/golf-ml/golf/metal"
	"github.com/golf-ml/golf/train"
)

// On macOS the Metal backend over the darwinkit runtime is available to
// --backend metal and --backend auto.
func init() {
	train.RegisterBackend("metal", func() (backend.Backend, error) {
		rt, err := metal.NewDarwinRuntime()
		if err != nil {
			return nil, err
		}
		return metal.New(rt), nil
	})
}
