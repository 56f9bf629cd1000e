//go:build darwin

package main

// These imports keep go.mod's requirement on darwinkit (which `go mod
// tidy` would otherwise drop while no golf package imports it) and put its
// packages in the graph darwincheck checks by default.
import (
	_ "github.com/progrium/darwinkit/macos/metal"
	_ "github.com/progrium/darwinkit/objc"
)
