//go:build cuda

package cuda

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/golf-ml/golf/internal/dl"
)

// symbol binds one C function of a library to a Go function variable
// (fptr points to it). An optional symbol that is missing leaves the
// variable nil.
type symbol struct {
	name     string
	fptr     any
	optional bool
}

// bindSymbols resolves every symbol in h; a missing required symbol is an
// error naming all the missing ones (the library is too old or not the one
// we think).
func bindSymbols(h uintptr, syms []symbol) error {
	var missing []string
	addrs := make([]uintptr, len(syms))
	for i, s := range syms {
		a, err := purego.Dlsym(h, s.name)
		if err != nil || a == 0 {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		addrs[i] = a
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing symbols %s", strings.Join(missing, ", "))
	}
	for i, s := range syms {
		if addrs[i] != 0 {
			purego.RegisterFunc(s.fptr, addrs[i])
		}
	}
	return nil
}

// openLibrary searches l (Library.Find) and opens the first candidate that
// dlopen accepts and check approves; check gets the handle and may bind
// symbols and read versions. The handle stays open for the process's life.
func openLibrary(l Library, env SearchEnv, mode int, check func(h uintptr, path string) error) (uintptr, string, error) {
	var handle uintptr
	path, err := l.Find(env, func(p string) error {
		h, err := dl.Open(p, mode)
		if err != nil {
			return err
		}
		if err := check(h, p); err != nil {
			purego.Dlclose(h)
			return err
		}
		handle = h
		return nil
	})
	if err != nil {
		return 0, "", err
	}
	return handle, path, nil
}

// loadedPath returns the file the dynamic loader mapped for a library
// opened by soname (prefix "libnvrtc.so."), read from /proc/self/maps;
// name itself when it is already a path or cannot be resolved.
func loadedPath(name string) string {
	if strings.ContainsRune(name, '/') {
		return name
	}
	prefix := name
	if i := strings.Index(name, ".so"); i >= 0 {
		prefix = name[:i+len(".so")]
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return name
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		p := fields[len(fields)-1]
		if strings.HasPrefix(filepath.Base(p), prefix) && strings.HasPrefix(p, "/") {
			return p
		}
	}
	return name
}

// cString returns a NUL-terminated copy of s; the caller keeps the slice
// alive for as long as C reads it.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// cStrings returns NUL-terminated copies of ss and an array of pointers to
// them (nil for an empty list). The backing slices are returned so that
// the caller can keep them alive across the call.
func cStrings(ss []string) ([]*byte, [][]byte) {
	if len(ss) == 0 {
		return nil, nil
	}
	bufs := make([][]byte, len(ss))
	ptrs := make([]*byte, len(ss))
	for i, s := range ss {
		bufs[i] = cString(s)
		ptrs[i] = &bufs[i][0]
	}
	return ptrs, bufs
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var n int
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// firstOrNil is &s[0], or nil for an empty slice.
func firstOrNil[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}
