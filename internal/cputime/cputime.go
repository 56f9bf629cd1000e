// Package cputime reads the CPU time the process has used (user and
// system, all threads), the repeatable half of a benchmark on a machine
// shared with other work: wall time there counts the other processes' turns
// too, CPU time only this one's.
package cputime

import "time"

// Now returns the process's CPU time so far, and false where the platform
// does not report it (then 0).
func Now() (time.Duration, bool) { return now() }
