// Package darwinfixture is a fixture for darwincheck: it type-checks only
// if the files for darwin/arm64 with cgo are selected (the untagged code
// calls functions that exist only in them) and the non-darwin file, which holds
// a type error, is left out.
package darwinfixture

// Describe uses the darwin-only and the cgo-only halves of the package.
func Describe() (string, int) {
	return platform(), cgoSum([]int32{1, 2, 3})
}
