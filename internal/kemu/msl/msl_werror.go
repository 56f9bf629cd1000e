//go:build golf_werror

package msl

// Built with -tags golf_werror (as CI builds it), every warning of the
// emulator's C++ and of the shaders compiled into it (the MSL prelude and shaders/*.metal; package kemu has its own) is an error. A user's
// `go build` never sees -Werror: a new compiler's new warning (Apple clang
// and libc++ on a Mac, say) must not break their build.

// #cgo CXXFLAGS: -Werror
import "C"
