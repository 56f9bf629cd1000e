// Package darwinfixture is the broken twin of ../ok: the same package
// with type errors, each on a line ending in a want comment that holds a
// regexp for the message (want:test in files that only a check with tests
// reads), which darwincheck must report there and nowhere else.
package darwinfixture

// Describe uses the darwin-only and the cgo-only halves of the package.
func Describe() (string, int) {
	return platform(), cgoSum([]int32{1, 2, 3})
}
