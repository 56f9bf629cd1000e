//go:build darwin

package darwinfixture

import "testing"

func TestPlatform(t *testing.T) {
	var got int = platform() // want:test "cannot use platform\(\) \(value of type string\) as int value"
	_ = got
}
