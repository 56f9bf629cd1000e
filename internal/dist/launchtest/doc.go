// Package launchtest tests dist.Launch by running its own test binary as
// the launched ranks. It is a package of its own so that package dist's
// other tests still run under qemu-user, which cannot start a child
// process.
package launchtest
