// Package dl opens shared libraries with purego, reading dlerror on the
// thread that called dlopen.
//
// dlerror's message is thread-local. purego.Dlopen calls dlopen and then
// dlerror as two foreign calls, and the Go scheduler may move the
// goroutine to another OS thread between them; dlerror then reports that
// thread's state, usually nothing, and a failed open loses its reason.
// Open pins the goroutine to its thread for the pair.
package dl

import (
	"errors"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// Open dlopens path with mode (purego.RTLD_*). A failure's error is
// dlerror's reason with the path it repeats removed ("file too short",
// "cannot open shared object file: ..."), or "dlopen failed, no reason
// given" when the loader gives none.
func Open(path string, mode int) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(path, mode)
	if err == nil {
		return h, nil
	}
	msg := strings.TrimPrefix(err.Error(), path+": ")
	if msg == "" {
		msg = "dlopen failed, no reason given"
	}
	return 0, errors.New(msg)
}
