//go:build !unix

package cputime

import "time"

func now() (time.Duration, bool) { return 0, false }
