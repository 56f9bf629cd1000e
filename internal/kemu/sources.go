package kemu

import (
	"embed"
	"io/fs"
)

//go:embed runtime.cc runtime.h fiber.cc fiber.h kemu.h
var sources embed.FS

// Sources holds the runtime's C++ (runtime.cc, runtime.h, fiber.cc,
// fiber.h, kemu.h), for builds outside cgo: the CUDA stand-in driver
// (package cudacpp) compiles the same runtime into a shared library. This
// file needs no cgo, so the package builds (with only Sources) where cgo
// is off.
func Sources() fs.FS { return sources }
