//go:build linux

// Package linuxonly has no files for darwin: ./... must skip it, as go
// build does, and naming it must be an error.
package linuxonly

var broken int = "never checked for darwin"
