//go:build darwin && arm64

package darwinfixture

import "syscall"

// platform names the target; syscall.Kevent_t exists on the BSDs and
// darwin, not on Linux, so this only checks against darwin's syscall.
func platform() string {
	var ev syscall.Kevent_t
	ev.Filter = syscall.EVFILT_READ
	_ = ev
	return "darwin/arm64"
}
