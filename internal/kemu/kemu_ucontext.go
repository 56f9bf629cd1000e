//go:build golf_emu_ucontext

package kemu

// Built with -tags golf_emu_ucontext, the fibers switch with
// makecontext/swapcontext instead of the hand-written switch (the fallback
// of targets other than x86-64 and arm64), so the fallback can be tested
// anywhere.

// #cgo CXXFLAGS: -DGOLF_EMU_UCONTEXT
import "C"
