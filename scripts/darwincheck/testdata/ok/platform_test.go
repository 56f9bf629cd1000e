//go:build darwin

package darwinfixture

import "testing"

func TestPlatform(t *testing.T) {
	if got := platform(); got != "darwin/arm64" {
		t.Errorf("platform() = %q, want darwin/arm64", got)
	}
}
