package model

import "github.com/golf-ml/golf/backend"

// UseComputeDType sets ComputeDType to dt for the rest of a test or
// benchmark and restores the previous value when it ends, through
// tb.Cleanup. Every test that needs a dtype other than the default sets it
// with this one helper, so that no test leaks its dtype into the next.
//
// tb is a testing.TB (or any value with its Cleanup); the small interface
// keeps the testing package out of the model's imports.
func UseComputeDType(tb interface{ Cleanup(func()) }, dt backend.DType) {
	old := ComputeDType
	ComputeDType = dt
	tb.Cleanup(func() { ComputeDType = old })
}
