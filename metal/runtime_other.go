//go:build !(darwin && cgo)

package metal

import "errors"

// NewDarwinRuntime returns an error: the darwinkit runtime exists only in
// darwin builds with cgo (runtime_darwin.go).
func NewDarwinRuntime() (Runtime, error) {
	return nil, errors.New("metal: Metal needs macOS with cgo")
}

// ObjCCallsPerDispatch is 0: no runtime of this build calls Objective-C.
func ObjCCallsPerDispatch(rt Runtime) float64 { return 0 }
