//go:build race

// Package racebuild reports whether the program was built for the race
// detector (go test -race), whose runtime changes what tests of memory
// and allocation can assert: sync.Pool drops items at random, some
// allocations happen twice (bytes.Buffer's growth), and shadow memory
// adds to a process's peak.
package racebuild

// Enabled is true in a -race build.
const Enabled = true
