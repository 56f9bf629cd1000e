//go:build !darwin

package darwinfixture

// platform is never checked for darwin; its type error proves it.
func platform() string {
	var n int = "not darwin"
	return n
}
