//go:build golf_werror

package kemu

// Built with -tags golf_werror (as CI builds it), every warning of the
// runtime's C++ is an error. A user's `go build` never sees -Werror: a new
// compiler's new warning (Apple clang and libc++ on a Mac, say) must not
// break their build.

// #cgo CXXFLAGS: -Werror
import "C"
